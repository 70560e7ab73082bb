#!/usr/bin/env bash
# `make dist`: a release tarball of kvod and kvoctl that runs on Debian 12 (glibc 2.36) or later with no Swift
# toolchain and no libuv: the Swift runtime and standard library are linked in (--static-swift-stdlib), and so is
# libuv (Debian libuv1-dev's libuv_a.a). What the binaries still load is the C and C++ runtime every Debian has:
# libc, libm, libstdc++ and libgcc_s (the tarball's README says so; .ci/container-test.sh runs the tarball on a
# Debian 12 minbase with libuv removed). The build has its own scratch folder, .build-dist, so the debug and release
# builds keep their flags.
#
# usage: .ci/dist.sh [OUTDIR]      (default dist/)
# Makes OUTDIR/kvod-VERSION-linux-ARCH.tar.gz, holding kvod-VERSION-linux-ARCH/ with bin/kvod, bin/kvoctl, the shell
# completions of kvoctl (share/), README.md and docs/ (the binaries' --help name them); prints the tarball's path.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
scratch=.build-dist

bash .ci/deps.sh
bash .ci/fresh-build-dir.sh release "$scratch"
version=$(sed -n 's/.*public static let current = "\(.*\)".*/\1/p' Sources/KVOServer/Methods/Dispatcher+Basics.swift)
[ -n "$version" ] || { echo "dist: cannot read kvod's version" >&2; exit 1; }
arch=$(uname -m)
name=kvod-$version-linux-$arch

# libuv statically: a libuv.pc of our own, first on PKG_CONFIG_PATH, sends the CLibUV module's `-luv` to a folder
# that holds only libuv.a (Debian's libuv_a.a), searched before the system's (SwiftPM passes pkg-config's -L first).
static=$(pwd)/$scratch/static-libs
mkdir -p "$static" "$scratch/pkgconfig"
libdir=$(pkg-config --variable=libdir libuv)
[ -f "$libdir/libuv_a.a" ] || { echo "dist: $libdir/libuv_a.a is missing (Debian's libuv1-dev has it)" >&2; exit 1; }
ln -sf "$libdir/libuv_a.a" "$static/libuv.a"
cat >"$scratch/pkgconfig/libuv.pc" <<PC
libdir=$static
includedir=$(pkg-config --variable=includedir libuv)
Name: libuv
Description: libuv from libuv_a.a, linked statically (make dist)
Version: $(pkg-config --modversion libuv)
Libs: -L\${libdir} -luv -lpthread -ldl -lrt
Cflags: -I\${includedir}
PC
export PKG_CONFIG_PATH=$(pwd)/$scratch/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}

# The flags of docker/Dockerfile: lld packs the relative relocations (DT_RELR, glibc 2.36+), no exported symbols.
flags=(-c release --scratch-path "$scratch" --static-swift-stdlib
    -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic)
for product in kvod kvoctl; do
    swift build "${flags[@]}" --product "$product"
done
bin=$(swift build "${flags[@]}" --show-bin-path)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
install -d "$root/bin" "$root/share/bash-completion/completions" "$root/share/zsh/site-functions" \
    "$root/share/fish/vendor_completions.d" "$root/docs"
install -s -m 0755 "$bin/kvod" "$bin/kvoctl" "$root/bin/"
if ldd "$root/bin/kvod" "$root/bin/kvoctl" | grep -E 'libuv|libswift|libFoundation|not found' >&2; then
    echo "dist: the binaries load a library the tarball promises they do not need" >&2
    exit 1
fi
"$root/bin/kvoctl" --generate-completion-script bash >"$root/share/bash-completion/completions/kvoctl"
"$root/bin/kvoctl" --generate-completion-script zsh >"$root/share/zsh/site-functions/_kvoctl"
"$root/bin/kvoctl" --generate-completion-script fish >"$root/share/fish/vendor_completions.d/kvoctl.fish"
cp README.md "$root/"
cp docs/*.md "$root/docs/"
cp -r Protocol "$root/"
mkdir -p "$out"
# Reproducible enough: sorted names, no owners, the commit's time.
mtime=$(git log -1 --format=%cI 2>/dev/null || date -u +%FT%TZ)
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="$mtime" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
