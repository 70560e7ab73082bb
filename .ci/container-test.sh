#!/usr/bin/env bash
# The container test (docker/README.md): builds docker/Dockerfile with podman, runs the image with host networking,
# drives it with kvoctl from outside, stops it (SIGTERM, exit 0), starts it again on the same volume and finds the
# data; then runs `make dist`'s tarball on a Debian 12 without libuv or a Swift toolchain (README.md#quick-start). Without a registry the base images are made locally with debootstrap and cached by tag
# (../shared/notes/containers.md). Prints `SKIP: ...` and exits 0 where podman cannot be installed or cannot run.
#
# usage: .ci/container-test.sh [--install] [--keep]
#   --install   apt-get install podman, buildah, runc and debootstrap when missing (implied when CI is set)
#   --keep      leave the test containers and volume behind for inspection
# environment:
#   KVOD_CONTAINER_DIR  podman's settings and storage (default ~/.cache/kvod-container; keeps the base images)
#   KVOD_SWIFT_IMAGE, KVOD_RUNTIME_IMAGE  use these base images instead of building the stand-ins
#   KVOD_DIST_TARBALL   the tarball to check (default: .ci/dist.sh makes one in the scratch folder)
#   DEBIAN_MIRROR       debootstrap's mirror (default: the one apt uses here)
set -euo pipefail
cd "$(dirname "$0")/.."

install=false
keep=false
[ -n "${CI:-}" ] && install=true
for argument in "$@"; do
    case "$argument" in
        --install) install=true ;;
        --keep) keep=true ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "container-test: unknown argument $argument" >&2; exit 64 ;;
    esac
done

# Bumping a tag rebuilds that base image (do it when the package lists below change).
RUNTIME_BASE=localhost/kvod-bookworm-min:2
SWIFT_STANDIN=localhost/kvod-swift-standin:6.3-bookworm-1
IMAGE=localhost/kvod:container-test
BARE_BASE=localhost/kvod-bookworm-bare:1   # the runtime base without libuv1: where the tarball runs
SUITE=bookworm
STANDIN_PACKAGES=(binutils libc6-dev libgcc-12-dev libstdc++-12-dev libcurl4 libxml2 libsqlite3-0 libncurses6 libedit2
    zlib1g-dev pkg-config git ca-certificates)

started=$SECONDS
step_started=$SECONDS
timings=()
log() { echo "container-test: $*"; }
skip() { echo "SKIP: container test: $*"; exit 0; }
fail() { print_timings; echo "FAIL: container test: $*" >&2; exit 1; }
step() { step_started=$SECONDS; log "== $*"; }
done_step() { timings+=("$(printf '%4ds  %s' $((SECONDS - step_started)) "$1")"); }
print_timings() {
    log "timings:"
    for line in "${timings[@]}"; do echo "  $line"; done
    echo "  $(printf '%4ds' $((SECONDS - started)))  total"
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
    else return 1; fi
}

# MARK: - tools

step "tools"
missing=()
for tool in podman buildah runc debootstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
    $install || skip "${missing[*]} not installed (run with --install or CI=true to apt-get them)"
    command -v apt-get >/dev/null || skip "${missing[*]} missing and there is no apt-get"
    log "installing ${missing[*]}"
    as_root apt-get update -qq >/dev/null 2>&1 || skip "apt-get update failed (not root, or no Debian mirror)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah runc debootstrap >/dev/null 2>&1 \
        || skip "apt-get install podman buildah runc debootstrap failed"
fi
done_step "tools ($(podman --version 2>/dev/null || echo podman))"

# MARK: - podman settings

# Three defaults fail in sandboxes like ours: open-files and process limits above the hard limits, and crun on a
# hybrid cgroup layout. The settings live in the scratch folder, pointed at by environment variables; /etc is untouched.
step "podman settings"
scratch=${KVOD_CONTAINER_DIR:-${HOME:-/tmp}/.cache/kvod-container}
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] || [ "$nofile" -gt 20000 ] && nofile=20000
nproc=$(ulimit -Hu); [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
cat >"$scratch/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
cat >"$scratch/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$scratch/storage"
runroot = "$scratch/runroot"
EOF
export CONTAINERS_CONF=$scratch/containers.conf CONTAINERS_STORAGE_CONF=$scratch/storage.conf
podman info >"$scratch/podman-info.txt" 2>&1 || skip "podman cannot run here: $(tail -n 1 "$scratch/podman-info.txt")"
done_step "podman settings ($scratch)"

# MARK: - base images

have_image() { podman image exists "$1"; }
# podman 4 without systemd complains on every run, stop and rm of a container with a HEALTHCHECK that it cannot
# set up a timer for; the check itself works (`podman healthcheck run`), so that noise is dropped.
podman_quiet() { podman "$@" 2> >(grep -v -F '/run/systemd/private' >&2); }

# The Debian mirror apt uses here (deb822 `URIs:` or one-line `deb URL SUITE`), for debootstrap and the images' apt.
debian_mirror() {
    if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
    local url
    url=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | sed -n -E 's/^URIs:[[:space:]]*//p; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//p' \
        | tr ' ' '\n' | grep -E '^https?://.*/debian/?$' | head -n 1 || true)
    echo "${url:-http://deb.debian.org/debian}"
}

if [ -n "${KVOD_SWIFT_IMAGE:-}${KVOD_RUNTIME_IMAGE:-}" ]; then
    swift_image=${KVOD_SWIFT_IMAGE:-swift:6.3-bookworm}
    runtime_image=${KVOD_RUNTIME_IMAGE:-debian:bookworm-slim}
    build_volumes=()
    log "using the given base images $swift_image and $runtime_image"
else
    swift_image=$SWIFT_STANDIN
    runtime_image=$RUNTIME_BASE
    # The builder stand-in mounts this machine's toolchain (and its package mirror) read-only, at the same path.
    swift_path=$(command -v swift || true)
    [ -n "$swift_path" ] || skip "no Swift toolchain on PATH to mount into the builder stand-in"
    swift_bin=$(cd -P "$(dirname "$swift_path")" && pwd)
    toolchain=${swift_bin%/usr/bin}
    case "$toolchain" in
        "" | / | /usr | "$swift_bin") skip "the Swift toolchain ($swift_bin) is not a self-contained folder to mount" ;;
    esac
    build_volumes=(-v "$toolchain:$toolchain:ro")
    # git on this machine may read github.com from a local mirror (url.<mirror>.insteadOf); the stand-in does the same.
    package_mirror=$(git config --system --get-regexp '^url\..*\.insteadof$' 2>/dev/null \
        | awk '$2 == "https://github.com/" { sub(/^url\./, "", $1); sub(/\.insteadof$/, "", $1); print $1; exit }' \
        || true)
    if [ -n "$package_mirror" ] && [ -d "$package_mirror" ]; then
        build_volumes+=(-v "${package_mirror%/}:${package_mirror%/}:ro")
    else
        package_mirror=""
    fi

    step "runtime base $RUNTIME_BASE"
    if have_image "$RUNTIME_BASE"; then
        done_step "runtime base (cached)"
    else
        command -v debootstrap >/dev/null || skip "debootstrap is not installed (run with --install)"
        [ "$(id -u)" -eq 0 ] || skip "debootstrap needs root"
        mirror=$(debian_mirror)
        rootfs=$(mktemp -d "$scratch/rootfs.XXXXXX")
        log "debootstrap --variant=minbase $SUITE from $mirror"
        if ! debootstrap --variant=minbase --include=libuv1,ca-certificates "$SUITE" "$rootfs" "$mirror" \
            >"$scratch/debootstrap.log" 2>&1; then
            tail -n 20 "$scratch/debootstrap.log" >&2
            rm -rf "$rootfs"
            fail "debootstrap failed (log: $scratch/debootstrap.log)"
        fi
        # Like the official slim image: no apt caches, no documentation, manual pages or translations, and apt
        # settings that work against this machine's mirror.
        rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/* \
            "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
        grep -h -E '^Acquire::Check-(Valid-Until|Date)' /etc/apt/apt.conf.d/* >"$rootfs/etc/apt/apt.conf.d/99mirror" \
            2>/dev/null || rm -f "$rootfs/etc/apt/apt.conf.d/99mirror"
        tar -C "$rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$RUNTIME_BASE" >/dev/null
        rm -rf "$rootfs"
        done_step "runtime base (debootstrap)"
    fi

    step "builder stand-in $SWIFT_STANDIN"
    if have_image "$SWIFT_STANDIN"; then
        done_step "builder stand-in (cached)"
    else
        context=$(mktemp -d "$scratch/standin.XXXXXX")
        # Like swift:6.3-bookworm: swift on PATH (here from the mounted toolchain), git reading the package mirror.
        {
            echo "FROM $RUNTIME_BASE"
            echo "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\"
            echo "    ${STANDIN_PACKAGES[*]} && rm -rf /var/lib/apt/lists/*"
            [ -z "$package_mirror" ] || echo "RUN git config --system url.${package_mirror%/}/.insteadOf https://github.com/"
            echo "ENV PATH=$toolchain/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        } >"$context/Containerfile"
        podman build --network host -q -t "$SWIFT_STANDIN" -f "$context/Containerfile" "$context" >/dev/null \
            || fail "building the builder stand-in failed"
        rm -rf "$context"
        done_step "builder stand-in (apt-get on the runtime base)"
    fi
fi

# MARK: - image

step "image $IMAGE"
# Docker's image format: the OCI format has no HEALTHCHECK, and podman would drop it. TMPDIR puts buildah's
# RUN --mount=type=cache folder in the scratch folder too (else /var/tmp/buildah-cache).
mkdir -p "$scratch/tmp"
TMPDIR=$scratch/tmp podman build --format docker --network host "${build_volumes[@]}" \
    --build-arg SWIFT_IMAGE="$swift_image" --build-arg RUNTIME_IMAGE="$runtime_image" \
    -f docker/Dockerfile -t "$IMAGE" . >"$scratch/build.log" 2>&1 \
    || { tail -n 40 "$scratch/build.log" >&2; fail "podman build failed (log: $scratch/build.log)"; }
# The previous image and the build stage are left untagged by each build; in this storage they are only ours.
podman image prune -f >/dev/null
size=$(podman image inspect -f '{{.Size}}' "$IMAGE")
# The binaries as shipped (stripped, Swift runtime inside), read from the exported file system: the image has no shell
# or stat. kvod links no Foundation, so a jump here means it crept back; kvoctl has FoundationEssentials, through
# swift-argument-parser.
probe=$(podman create --no-healthcheck "$IMAGE") || fail "cannot create a container to read the binaries' sizes"
binaries=$(podman export "$probe" | tar -tv --numeric-owner usr/local/bin/kvod usr/local/bin/kvoctl 2>/dev/null) || true
podman rm -f "$probe" >/dev/null
describe_binary() {
    echo "$binaries" | awk -v name="usr/local/bin/$1" '
        $6 == name && $1 ~ /^l/ { printf "%s -> %s", $6, $8; found = 1 }
        $6 == name && $1 ~ /^-/ { printf "%s %.1f MB", $6, $3 / 1e6; found = 1 }
        END { if (!found) exit 1 }'
}
kvod_size=$(describe_binary kvod) || fail "the image has no /usr/local/bin/kvod"
kvoctl_size=$(describe_binary kvoctl) || fail "the image has no /usr/local/bin/kvoctl"
log "sizes: image $((size / 1000000)) MB; ${kvod_size#usr/local/bin/}; ${kvoctl_size#usr/local/bin/}"
kvod_bytes=$(echo "$binaries" | awk '$6 == "usr/local/bin/kvod" { print $3 }')
# The limit is 15 MB (issue 13, docker/README.md).
[ "${kvod_bytes:-0}" -le $((15 * 1000 * 1000)) ] \
    || fail "kvod is $kvod_bytes bytes in the image (limit 15 MB): did Foundation or swift-argument-parser come back?"
[ "$size" -le $((100 * 1000 * 1000)) ] || fail "the image is $size bytes (limit 100 MB, docker/README.md)"
done_step "image build ($((size / 1000000)) MB)"

# MARK: - run, stop, restart

step "container run"
# Both kvoctl builds work; without one, kvoctl from the image runs in its own container: still outside kvod's.
if [ -x .build/release/kvoctl ]; then kvoctl=(.build/release/kvoctl)
elif [ -x .build/debug/kvoctl ]; then kvoctl=(.build/debug/kvoctl)
else kvoctl=(podman run --rm --network host --no-healthcheck --entrypoint kvoctl "$IMAGE"); fi

free_port() {
    local port
    for _ in $(seq 100); do
        port=$((20000 + RANDOM % 30000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return 0; fi
    done
    return 1
}
port=$(free_port) || fail "no free port"
suffix=$$-$RANDOM
container=kvod-test-$suffix
volume=kvod-test-data-$suffix

cleanup() {
    status=$?
    if $keep; then
        log "kept container $container and volume $volume (--keep)"
    else
        podman rm -f -v -t 0 "$container" >/dev/null 2>&1 || true
        podman volume rm -f "$volume" >/dev/null 2>&1 || true
    fi
    exit $status
}
trap cleanup EXIT

podman volume create "$volume" >/dev/null

start_kvod() {
    # No health-check timer (podman wants systemd for it); `podman healthcheck run` below runs the check once.
    podman_quiet run -d --name "$container" --network host --health-interval disable -e KVOD_PORT="$port" \
        -v "$volume:/data" "$IMAGE" >/dev/null
    local deadline=$((SECONDS + 30))
    until "${kvoctl[@]}" ping --host 127.0.0.1 --port "$port" --timeout 2 >/dev/null 2>&1; do
        if [ "$(podman inspect -f '{{.State.Running}}' "$container")" != true ] || [ $SECONDS -ge $deadline ]; then
            podman logs "$container" >&2 || true
            fail "kvod did not answer ping on port $port"
        fi
        sleep 0.2
    done
    podman logs "$container" 2>/dev/null | grep -q "kvod listening on 0.0.0.0:$port" \
        || fail "kvod's log has no 'kvod listening on 0.0.0.0:$port'"
    # The image's own HEALTHCHECK (kvoctl ping inside the container, port from KVOD_PORT).
    podman healthcheck run "$container" >/dev/null || fail "the image's health check failed"
}

stop_kvod() {
    podman_quiet stop -t 10 "$container" >/dev/null
    local code
    code=$(podman inspect -f '{{.State.ExitCode}}' "$container")
    [ "$code" = 0 ] || { podman logs "$container" >&2; fail "kvod exited $code on SIGTERM, not 0"; }
    podman_quiet rm "$container" >/dev/null
}

start_kvod
# The image has no `id`: podman reads the user of kvod's process (PID 1), named from the image's /etc/passwd.
user=$(podman top "$container" user | awk 'NR == 2 { print $1 }')
[ "$user" = kvod ] || [ "$user" = 10001 ] || fail "kvod runs as user '$user', not kvod (10001)"
"${kvoctl[@]}" set --port "$port" containerTest '{"written":"before the restart","numbers":[1,2,3]}' >/dev/null \
    || fail "kvoctl set containerTest failed"
"${kvoctl[@]}" set --port "$port" person.firstName Ada >/dev/null || fail "kvoctl set person.firstName failed"
value=$("${kvoctl[@]}" get --port "$port" containerTest) || fail "kvoctl get containerTest failed"
case "$value" in *'before the restart'*) ;; *) fail "kvoctl get containerTest read back '$value'" ;; esac
done_step "start, health check, kvoctl set/get (port $port)"

step "stop (SIGTERM) and restart on the same volume"
stop_kvod
start_kvod
restored=$("${kvoctl[@]}" get --port "$port" containerTest 2>/dev/null || true)
first_name=$("${kvoctl[@]}" get --port "$port" person.firstName 2>/dev/null || true)
stop_kvod
done_step "stop, restart, get, stop"

[ "$restored" = "$value" ] && [ "$first_name" = '"Ada"' ] \
    || fail "after the restart on the same volume containerTest is '${restored}' and person.firstName '${first_name}'"
log "the image: built, ran, answered, stopped with exit 0 on SIGTERM, and kept its data across the restart"

# MARK: - the tarball

# `make dist`'s tarball on a Debian 12 with neither a Swift toolchain nor libuv: the runtime base with libuv1 purged
# (debian:bookworm-slim has none to purge). KVOD_DIST_TARBALL names a tarball already made; else .ci/dist.sh makes one
# (about 2.5 min for a first release build on 2 cores, seconds when .build-dist is up to date).
step "tarball on a bare Debian 12"
tarball=${KVOD_DIST_TARBALL:-}
if [ -z "$tarball" ]; then
    tarball=$(bash .ci/dist.sh "$scratch/dist" 2>"$scratch/dist.log" | tail -n 1) \
        || { tail -n 40 "$scratch/dist.log" >&2; fail ".ci/dist.sh failed (log: $scratch/dist.log)"; }
fi
[ -f "$tarball" ] || fail "no tarball at '$tarball'"
tarball=$(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball")
if ! have_image "$BARE_BASE"; then
    context=$(mktemp -d "$scratch/bare.XXXXXX")
    {
        echo "FROM $runtime_image"
        echo "RUN if dpkg -s libuv1 >/dev/null 2>&1; then dpkg --purge libuv1; fi"
    } >"$context/Containerfile"
    podman build --network host -q -t "$BARE_BASE" -f "$context/Containerfile" "$context" >/dev/null \
        || fail "building $BARE_BASE failed"
    rm -rf "$context"
fi
port=$(free_port) || fail "no free port"
# Inside: no libuv and no Swift anywhere; unpack, both --version, kvod serving the default model, kvoctl talking to
# it, SIGTERM and exit 0. Bounded: 30 s for kvod to answer.
podman run --rm --network host --name "kvod-tarball-$suffix" -v "$tarball:/tmp/kvod.tar.gz:ro" -e PORT="$port" \
    "$BARE_BASE" bash -euo pipefail -c '
        if ls /usr/lib/*/libuv* /usr/lib/*/libswift* 2>/dev/null | grep -q .; then echo "not bare: $(ls /usr/lib/*/libuv* /usr/lib/*/libswift*)"; exit 1; fi
        cd /tmp && tar xzf kvod.tar.gz && cd kvod-*/
        bin/kvod --version && bin/kvoctl --version
        bin/kvod --port "$PORT" >/tmp/kvod.log 2>&1 & pid=$!
        for _ in $(seq 300); do bin/kvoctl ping --port "$PORT" --timeout 1 >/dev/null 2>&1 && break; sleep 0.1; done
        bin/kvoctl set --port "$PORT" person.firstName Ada >/dev/null
        test "$(bin/kvoctl get --port "$PORT" person.fullName)" = "\"Ada \""
        kill -TERM "$pid"; wait "$pid" || { cat /tmp/kvod.log; exit 1; }
        echo "kvod and kvoctl ran from the tarball; kvod stopped with exit 0"' >"$scratch/tarball.log" 2>&1 \
    || { cat "$scratch/tarball.log" >&2; fail "the tarball did not run on $BARE_BASE"; }
sed 's/^/  /' "$scratch/tarball.log"
done_step "tarball ($(basename "$tarball"), $(($(stat -c %s "$tarball") / 1000000)) MB) on $BARE_BASE"

print_timings
log "PASS: the image built, ran, answered, stopped with exit 0 on SIGTERM and kept its data across the restart;" \
    "the tarball ran on a Debian 12 with no toolchain and no libuv"
