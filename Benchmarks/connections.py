#!/usr/bin/env python3
"""Connections at scale (issue 28): kvod, NATS core and etcd holding N concurrent connections with one
subscription each, measured side by side from one generator.

For each server, transport (kvod: TCP and WebSocket; NATS: TCP; etcd: its JSON gateway, HTTP/1.1, one /v3/watch
per connection), count N and path mode (every connection on the same key, or each on its own), on a fresh server
pinned to CPU 0 (GOMAXPROCS=1 for the Go servers) with this generator on CPU 1:
  - connects/s: N connections opened and subscribed (up to --connects-in-flight at once), first connect to last
    acknowledgement; disconnects/s: all N closed at once, until the server holds no more of their descriptors;
  - resident bytes per connection + subscription: the server's VmRSS with the N held, minus before, over N;
  - same path only: one set fanned out to all N: time from the send to the first, median and last delivery;
    then one set a second for --sustain-seconds: p99 and max send -> delivery over every delivery.
Every delivery is counted and checked in order (each set's value is its index); anything lost or out of order is
reported and the exit status is 1.

A second table holds 100,000 subscriptions over few connections (--subscriptions, over --subscription-connections):
the per-subscription memory without the per-connection part (kvod, NATS; etcd's gateway carries one watch per HTTP
request, so it is measured per connection above).

Descriptors: the script raises its soft limit to the hard limit, and the hard limit itself to what the largest count
needs (up to /proc/sys/fs/nr_open) when it holds CAP_SYS_RESOURCE, as root usually does (a container may drop it);
the servers inherit the limit. A count that needs more descriptors than the limit allows (N + a margin, for the server and for this generator alike) is skipped with
the reason, and the largest round count that fits is measured instead; docs/PERFORMANCE.md#connections says how to raise the limit (systemd LimitNOFILE=, podman/docker
--ulimit nofile=). Loopback has one address per source port range (about 28,000 ports): past 25,000 connections
the generator binds its sockets to 127.0.0.2, 127.0.0.3, ... in turn.

  python3 Benchmarks/connections.py [--quick] [--counts 10000,50000,100000] [--servers kvod,nats,etcd]
                                    [--transports tcp,websocket] [--paths same,distinct] [--sustain-seconds 60]
                                    [--kvod PATH] [--json FILE]
Standard library only; everything on 127.0.0.1, stopped at exit.
"""

import argparse
import base64
import errno
import json
import os
import re
import resource
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PER_SOURCE_ADDRESS = 25_000
DESCRIPTOR_MARGIN = 200
STARTED = []


def log(message):
    print(time.strftime("%H:%M:%S"), message, file=sys.stderr, flush=True)


def now_ns():
    return time.monotonic_ns()


# ----------------------------------------------------------------------------------------------------------- servers


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pinned(cpu):
    if shutil.which("taskset") and os.cpu_count() and os.cpu_count() >= 2:
        return ["taskset", "-c", str(cpu)]
    return []


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


class Server:
    """A fresh server process on CPU 0."""

    def __init__(self, kind, args, workdir, connections):
        self.kind = kind
        self.port = free_port()
        self.workdir = workdir
        env = dict(os.environ)
        if kind == "kvod":
            command = [
                args.kvod, "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning",
                "--max-connections", str(max(10_000, connections + 100)),
            ]
        elif kind == "nats":
            env["GOMAXPROCS"] = "1"
            config = os.path.join(workdir, "nats.conf")
            with open(config, "w") as handle:
                # The default max_connections is 65,536; nothing else changes.
                handle.write(f"listen: 127.0.0.1:{self.port}\nmax_connections: 10000000\n")
            command = ["nats-server", "-c", config]
        elif kind == "etcd":
            env["GOMAXPROCS"] = "1"
            peer = free_port()
            data = tempfile.mkdtemp(prefix="kvod-connections-etcd.", dir="/dev/shm")
            command = [
                "etcd", "--name", "c", "--data-dir", data,
                "--listen-client-urls", f"http://127.0.0.1:{self.port}",
                "--advertise-client-urls", f"http://127.0.0.1:{self.port}",
                "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-cluster", f"c=http://127.0.0.1:{peer}",
                "--max-concurrent-streams", "4294967295",
            ]
            self.data = data
        else:
            raise ValueError(kind)
        self.log = open(os.path.join(workdir, f"{kind}-{self.port}.log"), "w")
        self.process = subprocess.Popen(
            pinned(0) + command, stdout=self.log, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL
        )
        STARTED.append(self)
        self.wait_ready()

    @property
    def pid(self):
        return self.process.pid

    def wait_ready(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.kind} exited at start (log {self.log.name})")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    if self.kind == "etcd":
                        body = b'{"key":"AA=="}'
                        s.sendall(
                            b"POST /v3/kv/range HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                        )
                        if not s.recv(100).startswith(b"HTTP/1.1 200"):
                            raise OSError("not ready")
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{self.kind} not ready within 30 s")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        if getattr(self, "data", None):
            shutil.rmtree(self.data, ignore_errors=True)
        if self in STARTED:
            STARTED.remove(self)


# ---------------------------------------------------------------------------------------------------------- protocols

KVOD_CHANGE = re.compile(rb'"method":"change".*?"new":(-?\d+)')
ETCD_VALUE = re.compile(rb'"value":"([A-Za-z0-9+/=]*)"')
WS_KEY = base64.b64encode(b"kvod-connections").decode()


def ws_frame(payload, opcode=1):
    """A masked client frame (the mask is zero: masking is required, its value is not)."""
    header = bytes([0x80 | opcode])
    length = len(payload)
    if length < 126:
        header += bytes([0x80 | length])
    elif length < 65536:
        header += bytes([0x80 | 126]) + length.to_bytes(2, "big")
    else:
        header += bytes([0x80 | 127]) + length.to_bytes(8, "big")
    return header + b"\0\0\0\0" + payload


def kvod_subscribe(path, request_id):
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"subscribe","params":{"path":"%s","options":["new"]}}\n'
        % (request_id, path.encode())
    )


class Protocol:
    """How one server and transport subscribes and delivers. Each connection's state is a small list."""

    def __init__(self, kind, transport, port):
        self.kind = kind
        self.transport = transport
        self.port = port

    # What a new connection sends first (before its subscriptions, for WebSocket the upgrade).
    def opening(self):
        if self.kind == "kvod" and self.transport == "websocket":
            return (
                "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (self.port, WS_KEY)
            ).encode()
        return b""

    def subscriptions(self, paths):
        if self.kind == "kvod":
            data = b"".join(kvod_subscribe(p, i + 1) for i, p in enumerate(paths))
            if self.transport == "websocket":
                return b"".join(ws_frame(line) for line in data.splitlines(keepends=True))
            return data
        if self.kind == "nats":
            subs = b"".join(b"SUB %s %d\r\n" % (p.encode(), i + 1) for i, p in enumerate(paths))
            return b'CONNECT {"verbose":false,"pedantic":false,"echo":false}\r\n' + subs + b"PING\r\n"
        if self.kind == "etcd":
            assert len(paths) == 1, "the gateway carries one watch per request"
            body = b'{"create_request":{"key":"%s"}}' % base64.b64encode(paths[0].encode())
            return b"POST /v3/watch HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        raise ValueError(self.kind)

    def publish(self, path, value):
        """The request that sets `path` to the integer `value` (on the publisher's own connection)."""
        if self.kind == "kvod":
            return b'{"jsonrpc":"2.0","id":%d,"method":"set","params":{"path":"%s","value":%d}}\n' % (
                value + 1, path.encode(), value)
        if self.kind == "nats":
            payload = b"%d" % value
            return b"PUB %s %d\r\n%s\r\n" % (path.encode(), len(payload), payload)
        body = b'{"key":"%s","value":"%s"}' % (base64.b64encode(path.encode()), base64.b64encode(b"%d" % value))
        return b"POST /v3/kv/put HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)

    def publisher_opening(self):
        if self.kind == "nats":
            return b'CONNECT {"verbose":true,"pedantic":false}\r\n'
        return b""


class Connection:
    __slots__ = ("sock", "fd", "buffer", "state", "acks", "values", "times", "upgraded", "wsbuffer")

    def __init__(self, sock):
        self.sock = sock
        self.fd = sock.fileno()
        self.buffer = bytearray()
        self.state = "connecting"
        self.acks = 0
        self.values = []
        self.times = []
        self.upgraded = False
        self.wsbuffer = bytearray()


def ws_payloads(buffer):
    """Unframes whole server frames from `buffer` (consumed); returns their payloads, each ended by a newline."""
    out = bytearray()
    position = 0
    while len(buffer) - position >= 2:
        length = buffer[position + 1] & 0x7F
        header = 2
        if length == 126:
            if len(buffer) - position < 4:
                break
            length = int.from_bytes(buffer[position + 2:position + 4], "big")
            header = 4
        elif length == 127:
            if len(buffer) - position < 10:
                break
            length = int.from_bytes(buffer[position + 2:position + 10], "big")
            header = 10
        if len(buffer) - position < header + length:
            break
        if buffer[position] & 0x0F == 8:
            # A close frame: its code and reason become a line the reader reports.
            payload = bytes(buffer[position + header:position + header + length])
            code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 0
            out += b"WS-CLOSE %d %s\n" % (code, payload[2:].replace(b"\n", b" "))
        elif buffer[position] & 0x0F == 9:
            # A ping (kvod pings a peer silent for 30 s and closes it 30 s later without a pong): answered below.
            out += b"WS-PING %s\n" % buffer[position + header:position + header + length].hex().encode()
        elif buffer[position] & 0x0F in (1, 2, 0):
            # One message a frame, without kvod's line end over TCP: put it back, so both read the same.
            out += buffer[position + header:position + header + length]
            if not out.endswith(b"\n"):
                out += b"\n"
        position += header + length
    del buffer[:position]
    return bytes(out)


class Fleet:
    """N subscriber connections on one epoll, and one publisher connection."""

    def __init__(self, protocol, server, paths_for, count, subscriptions_each, in_flight):
        self.protocol = protocol
        self.server = server
        self.paths_for = paths_for
        self.count = count
        self.subscriptions_each = subscriptions_each
        self.in_flight = in_flight
        self.epoll = select.epoll()
        self.connections = {}
        self.problems = []
        self.opened = 0
        self.ready = 0

    def problem(self, text):
        if len(self.problems) < 20:
            self.problems.append(text)
        elif len(self.problems) == 20:
            self.problems.append("... more problems")

    # -- opening

    def open_all(self, timeout):
        start = time.monotonic()
        connecting = 0
        index = 0
        while self.ready < self.count:
            while index < self.count and connecting < self.in_flight:
                self.connect(index)
                index += 1
                connecting += 1
            for fd, events in self.epoll.poll(0.05):
                before = self.ready
                self.service(fd, events)
                connecting -= self.ready - before
            if time.monotonic() - start > timeout:
                raise RuntimeError(f"{self.ready} of {self.count} subscribed after {timeout} s")
            if self.server.process.poll() is not None:
                raise RuntimeError("the server exited")
        return time.monotonic() - start

    def connect(self, index):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        source = 1 + index // PER_SOURCE_ADDRESS
        if source > 1:
            # One address has about 28,000 ephemeral ports; the next connections come from 127.0.0.2, ...
            sock.setsockopt(socket.SOL_IP, getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24), 1)
            sock.bind((f"127.0.0.{source}", 0))
        code = sock.connect_ex(("127.0.0.1", self.protocol.port))
        if code not in (0, errno.EINPROGRESS):
            raise RuntimeError(f"connect: {os.strerror(code)}")
        connection = Connection(sock)
        self.connections[connection.fd] = connection
        connection.state = ("connecting", index)
        self.epoll.register(connection.fd, select.EPOLLOUT | select.EPOLLIN)

    def service(self, fd, events):
        connection = self.connections.get(fd)
        if connection is None:
            return
        state = connection.state
        if isinstance(state, tuple):
            # Connected (or failed).
            error = connection.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error:
                raise RuntimeError(f"connect failed: {os.strerror(error)}")
            index = state[1]
            self.epoll.modify(fd, select.EPOLLIN)
            paths = self.paths_for(index)
            opening = self.protocol.opening()
            connection.state = "upgrading" if opening else "subscribing"
            connection.sock.send(opening or self.protocol.subscriptions(paths))
            connection.wsbuffer = paths  # kept until the upgrade is answered (WebSocket only)
            self.opened += 1
            return
        self.read(connection, now_ns())

    def read(self, connection, at):
        try:
            data = connection.sock.recv(262144)
        except BlockingIOError:
            return
        except OSError as error:
            self.problem(f"connection {connection.fd}: {error}")
            return
        if not data:
            self.problem(f"connection {connection.fd}: the server closed it")
            self.epoll.unregister(connection.fd)
            return
        protocol = self.protocol
        if connection.state == "upgrading":
            connection.buffer += data
            end = connection.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            if not connection.buffer.startswith(b"HTTP/1.1 101"):
                raise RuntimeError(f"upgrade refused: {bytes(connection.buffer[:80])}")
            rest = bytes(connection.buffer[end + 4:])
            connection.buffer = bytearray()
            paths = connection.wsbuffer
            connection.wsbuffer = bytearray(rest)
            connection.state = "subscribing"
            connection.sock.send(protocol.subscriptions(paths))
            data = b""
        if protocol.transport == "websocket":
            connection.wsbuffer += data
            data = ws_payloads(connection.wsbuffer)
        connection.buffer += data
        buffer = connection.buffer
        if protocol.kind == "kvod":
            end = buffer.rfind(b"\n")
            if end < 0:
                return
            lines = bytes(buffer[:end]).split(b"\n")
            del buffer[:end + 1]
            for line in lines:
                match = KVOD_CHANGE.search(line)
                if match:
                    connection.values.append(int(match.group(1)))
                    connection.times.append(at)
                elif line.startswith(b"WS-PING "):
                    connection.sock.send(ws_frame(bytes.fromhex(line[8:].decode()), opcode=0xA))
                elif line.startswith(b"WS-CLOSE "):
                    self.problem(f"kvod sent a WebSocket close: {line[9:200].decode(errors='replace')}")
                elif b'"result"' in line:
                    self.acknowledge(connection)
                elif b'"error"' in line:
                    self.problem(f"error response {line[:200]!r}")
        elif protocol.kind == "nats":
            while True:
                end = buffer.find(b"\r\n")
                if end < 0:
                    break
                line = bytes(buffer[:end])
                if line.startswith(b"MSG "):
                    size = int(line.rsplit(b" ", 1)[1])
                    if len(buffer) < end + 2 + size + 2:
                        break
                    connection.values.append(int(buffer[end + 2:end + 2 + size]))
                    connection.times.append(at)
                    del buffer[:end + 2 + size + 2]
                    continue
                del buffer[:end + 2]
                if line == b"PONG":
                    connection.acks = self.subscriptions_each - 1
                    self.acknowledge(connection)
                elif line == b"PING":
                    connection.sock.send(b"PONG\r\n")
                elif line.startswith(b"-ERR"):
                    self.problem(f"NATS {line!r}")
        else:
            end = buffer.rfind(b"\n")
            if end < 0:
                return
            lines = bytes(buffer[:end]).split(b"\n")
            del buffer[:end + 1]
            for line in lines:
                if line.startswith(b'{"result"'):
                    if b'"created":true' in line:
                        self.acknowledge(connection)
                    for value in ETCD_VALUE.findall(line):
                        connection.values.append(int(base64.b64decode(value)))
                        connection.times.append(at)
                elif line.startswith(b'{"error"'):
                    self.problem(f"etcd {line[:200]!r}")

    def acknowledge(self, connection):
        connection.acks += 1
        if connection.acks == self.subscriptions_each and connection.state == "subscribing":
            connection.state = "ready"
            self.ready += 1

    # -- delivering

    def pump(self, seconds, until=None):
        """Reads whatever arrives for `seconds` (or until `until()` holds)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for fd, _ in self.epoll.poll(0.01):
                connection = self.connections.get(fd)
                if connection is not None:
                    self.read(connection, now_ns())
            if until is not None and until():
                return True
        return until() if until is not None else True

    def delivered(self, expected_each):
        return all(len(c.values) >= expected_each for c in self.connections.values())

    def close_all(self):
        for connection in self.connections.values():
            try:
                self.epoll.unregister(connection.fd)
            except (OSError, ValueError):
                pass
            connection.sock.close()
        self.connections.clear()
        self.epoll.close()


class Publisher:
    def __init__(self, protocol):
        self.protocol = protocol
        self.sock = socket.create_connection(("127.0.0.1", protocol.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        opening = protocol.publisher_opening()
        if opening:
            self.sock.sendall(opening)

    def send(self, path, value):
        self.sock.setblocking(True)
        self.sock.sendall(self.protocol.publish(path, value))
        self.sock.setblocking(False)

    def drain(self):
        try:
            while self.sock.recv(65536):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def close(self):
        self.sock.close()


# --------------------------------------------------------------------------------------------------------- scenarios


def percentile(sorted_values, fraction):
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, max(0, int(round(fraction * (len(sorted_values) - 1)))))
    return sorted_values[index]


def measure_case(args, workdir, kind, transport, count, path_mode, subscriptions_each=1):
    """One fresh server, `count` connections with `subscriptions_each` subscriptions each."""
    server = Server(kind, args, workdir, count)
    protocol = Protocol(kind, transport, server.port)
    result = {
        "server": kind, "transport": transport, "connections": count, "paths": path_mode,
        "subscriptions": count * subscriptions_each,
    }
    try:
        if path_mode == "same":
            def paths_for(index):
                return ["k"] * subscriptions_each
        else:
            def paths_for(index):
                return [f"d.p{index * subscriptions_each + i}" for i in range(subscriptions_each)]
        publisher = Publisher(protocol)
        publisher.send("k", 0 if kind != "kvod" else 0)  # the key exists before anyone subscribes
        time.sleep(0.3)
        publisher.drain()
        baseline_fds = fd_count(server.pid)
        time.sleep(0.5)
        before = rss_kib(server.pid)
        fleet = Fleet(protocol, server, paths_for, count, subscriptions_each, args.connects_in_flight)
        elapsed = fleet.open_all(timeout=args.open_timeout)
        result["connects_per_s"] = round(count / elapsed)
        time.sleep(1.0)
        fleet.pump(0.2)
        after = rss_kib(server.pid)
        result["rss_before_kib"] = before
        result["rss_after_kib"] = after
        subscriptions = count * subscriptions_each
        result["bytes_per_subscription"] = round((after - before) * 1024 / subscriptions)
        log(f"{kind}/{transport} {count} connections x {subscriptions_each} ({path_mode}): "
            f"{result['connects_per_s']}/s, RSS {before} -> {after} KiB, {result['bytes_per_subscription']} B each")

        if path_mode == "same" and not args.no_delivery:
            # One set, fanned out to every subscription.
            start = now_ns()
            publisher.send("k", 1)
            complete = fleet.pump(args.delivery_timeout, until=lambda: fleet.delivered(subscriptions_each))
            times = sorted(t - start for c in fleet.connections.values() for t in c.times[:subscriptions_each])
            result["fanout_first_ms"] = round(times[0] / 1e6, 2) if times else None
            result["fanout_median_ms"] = round(percentile(times, 0.5) / 1e6, 2) if times else None
            result["fanout_last_ms"] = round(times[-1] / 1e6, 2) if times else None
            result["fanout_delivered"] = len(times)
            if not complete:
                fleet.problem(f"one set: {len(times)} of {subscriptions} deliveries within {args.delivery_timeout} s")
            log(f"  one set to all: first {result['fanout_first_ms']} ms, median {result['fanout_median_ms']} ms, "
                f"last {result['fanout_last_ms']} ms ({len(times)} of {subscriptions})")
            publisher.drain()
            # A set a second (one subscription per connection only).
            sent = {}
            latencies = []
            sets = int(args.sustain_seconds) if subscriptions_each == 1 else 0
            for index in range(sets):
                value = 2 + index
                tick = time.monotonic()
                sent[value] = now_ns()
                publisher.send("k", value)
                fleet.pump(max(0.0, 1.0 - (time.monotonic() - tick)))
                publisher.drain()
            expected = 1 + sets
            complete = fleet.pump(args.delivery_timeout, until=lambda: fleet.delivered(expected * subscriptions_each))
            lost = 0
            disordered = 0
            for connection in fleet.connections.values():
                values = connection.values
                for value, at in zip(values, connection.times):
                    if value in sent:
                        latencies.append(at - sent[value])
                wanted = [v for v in range(1, expected + 1) for _ in range(subscriptions_each)]
                if values != wanted:
                    if sorted(values) == wanted:
                        disordered += 1
                    else:
                        lost += 1
            latencies.sort()
            result["sustain_sets"] = sets
            result["sustain_p99_ms"] = round(percentile(latencies, 0.99) / 1e6, 2) if latencies else None
            result["sustain_max_ms"] = round(latencies[-1] / 1e6, 2) if latencies else None
            if lost or disordered or not complete:
                fleet.problem(f"{lost} connections lost deliveries, {disordered} got them out of order")
            log(f"  a set a second for {sets} s: p99 {result['sustain_p99_ms']} ms, max {result['sustain_max_ms']} ms,"
                f" {lost} lossy, {disordered} disordered")

        # Everyone leaves at once; the server is done when it holds no more of their descriptors.
        close_start = time.monotonic()
        fleet.close_all()
        deadline = close_start + 120
        while fd_count(server.pid) > baseline_fds + 5 and time.monotonic() < deadline:
            time.sleep(0.005)
        result["disconnects_per_s"] = round(count / max(time.monotonic() - close_start, 1e-6))
        publisher.close()
        result["problems"] = fleet.problems
        result["ok"] = not fleet.problems
        if fleet.problems:
            for problem in fleet.problems:
                log(f"  PROBLEM: {problem}")
            server.log.flush()
            with open(server.log.name, errors="replace") as handle:
                tail = handle.readlines()[-5:]
            for line in tail:
                log(f"  {kind} log: {line.rstrip()}")
        return result
    finally:
        server.stop()


# ------------------------------------------------------------------------------------------------------------ report


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("-" if c is None else str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def report(results, skipped, limit, limit_note=""):
    rows = []
    for r in results:
        if r.get("per_connection", 1) != 1:
            continue
        rows.append([
            r["server"], r["transport"], f"{r['connections']:,}", r["paths"], r.get("bytes_per_subscription"),
            r.get("connects_per_s"), r.get("disconnects_per_s"),
            r.get("fanout_first_ms"), r.get("fanout_median_ms"), r.get("fanout_last_ms"),
            r.get("sustain_p99_ms"), r.get("sustain_max_ms"), "ok" if r.get("ok") else "FAILED",
        ])
    print("### N connections, one subscription each (server on CPU 0, generator on CPU 1)")
    print()
    print(table(["server", "transport", "N", "paths", "resident B per connection+subscription", "connects/s",
                 "disconnects/s", "one set: first ms", "median ms", "last ms", "a set/s: p99 ms", "max ms", "check"],
                rows))
    many = [r for r in results if r.get("per_connection", 1) != 1]
    if many:
        print()
        print("### subscriptions over few connections")
        print()
        print(table(["server", "subscriptions", "connections", "paths", "resident B per subscription",
                     "one set: first ms", "median ms", "last ms", "check"],
                    [[r["server"], f"{r['subscriptions']:,}", r["connections"], r["paths"],
                      r.get("bytes_per_subscription"), r.get("fanout_first_ms"), r.get("fanout_median_ms"),
                      r.get("fanout_last_ms"), "ok" if r.get("ok") else "FAILED"] for r in many]))
    for text in skipped:
        print(f"skipped: {text}")
    print(f"descriptor limit of this run: {limit:,} ({limit_note}; docs/PERFORMANCE.md#connections)")


def raise_descriptor_limit(wanted):
    """Raises the soft limit to the hard one; when the hard limit is below `wanted` and this process may raise it
    (root, CAP_SYS_RESOURCE), raises it too, up to /proc/sys/fs/nr_open (the kernel's ceiling). Returns the limit and
    a note on what was done or what stopped it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 20
    note = f"hard limit {hard:,}"
    if hard < wanted:
        try:
            with open("/proc/sys/fs/nr_open") as handle:
                ceiling = int(handle.read())
        except (OSError, ValueError):
            ceiling = 1 << 20
        target = min(wanted, ceiling)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, target))
            note = f"hard limit raised from {hard:,} to {target:,} (fs.nr_open {ceiling:,})"
            return target, note
        except (ValueError, OSError) as error:
            note = (f"hard limit {hard:,}; raising it to {target:,} was refused ({error}): it takes CAP_SYS_RESOURCE"
                    f"{', which this process lacks even as root' if not has_sys_resource() else ''}; raise it before"
                    " (ulimit -Hn as root, systemd LimitNOFILE=, podman/docker --ulimit nofile=)")
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard, note


def has_sys_resource():
    """Whether this process holds CAP_SYS_RESOURCE (bit 24 of CapEff), which raising a hard limit takes."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> 24 & 1)
    except (OSError, ValueError):
        pass
    return False


def check_ports(count):
    """Warns when loopback's ephemeral ports cannot hold `count` connections from the source addresses used."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
            low, high = (int(x) for x in handle.read().split())
    except (OSError, ValueError):
        return
    if high - low + 1 < PER_SOURCE_ADDRESS:
        log(f"warning: net.ipv4.ip_local_port_range holds {high - low + 1:,} ports, fewer than the {PER_SOURCE_ADDRESS:,}"
            " this script opens from each source address")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 connections, 5 s of sets, fewer cases")
    parser.add_argument("--counts", default="10000,50000,100000")
    parser.add_argument("--servers", default="kvod,nats,etcd")
    parser.add_argument("--transports", default="tcp,websocket", help="kvod's transports (the others: tcp)")
    parser.add_argument("--paths", default="same,distinct")
    parser.add_argument("--sustain-seconds", type=float, default=60)
    parser.add_argument("--subscriptions", type=int, default=100_000)
    parser.add_argument("--subscription-connections", type=int, default=100)
    parser.add_argument("--connects-in-flight", type=int, default=500)
    parser.add_argument("--open-timeout", type=float, default=600)
    parser.add_argument("--delivery-timeout", type=float, default=30)
    parser.add_argument("--no-delivery", action="store_true")
    parser.add_argument("--kvod", default=os.path.join(ROOT, ".build-bench", "release", "kvod"))
    parser.add_argument("--json", help="also write the results here, one JSON object per line")
    args = parser.parse_args()
    if args.quick:
        args.counts = "10000"
        args.sustain_seconds = 5
    counts = [int(c) for c in args.counts.split(",") if c]
    servers = [s for s in args.servers.split(",") if s]
    if "kvod" in servers and not os.access(args.kvod, os.X_OK):
        sys.exit(f"no kvod at {args.kvod} (build it: swift build -c release --product kvod)")
    for server, command in (("nats", "nats-server"), ("etcd", "etcd")):
        if server in servers and not shutil.which(command):
            sys.exit(f"{command} is missing (apt-get install {'nats-server' if server == 'nats' else 'etcd-server'})")
    limit, limit_note = raise_descriptor_limit(max(counts) * 2 + 4 * DESCRIPTOR_MARGIN)
    log(f"descriptors: {limit_note}")
    check_ports(max(counts))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    if pinned(1):
        os.sched_setaffinity(0, {1})
    workdir = tempfile.mkdtemp(prefix="kvod-connections.")
    results = []
    skipped = []
    fits = (limit - DESCRIPTOR_MARGIN) // 1000 * 1000
    if any(count + DESCRIPTOR_MARGIN > limit for count in counts) and fits > 0 and fits not in counts:
        # The largest round count under the limit stands in for those that do not fit.
        counts = sorted(set([c for c in counts if c + DESCRIPTOR_MARGIN <= limit] + [fits])) + [
            c for c in counts if c + DESCRIPTOR_MARGIN > limit]
    try:
        for count in counts:
            if count + DESCRIPTOR_MARGIN > limit:
                skipped.append(f"{count:,} connections: the server and this generator each need {count + DESCRIPTOR_MARGIN:,}"
                               f" descriptors; the hard limit here is {limit:,}")
                continue
            for kind in servers:
                transports = [t for t in args.transports.split(",") if t] if kind == "kvod" else ["tcp"]
                for transport in transports:
                    for path_mode in [p for p in args.paths.split(",") if p]:
                        results.append(measure_case(args, workdir, kind, transport, count, path_mode))
        if args.subscriptions and args.subscription_connections:
            each = max(1, args.subscriptions // args.subscription_connections)
            for kind in servers:
                if kind == "etcd":
                    skipped.append("etcd, many watches on a connection: its JSON gateway carries one watch per HTTP "
                                   "request (and Go's HTTP/1.1 server no request body after the response starts)")
                    continue
                for path_mode in [p for p in args.paths.split(",") if p]:
                    r = measure_case(args, workdir, kind, "tcp", args.subscription_connections, path_mode, each)
                    r["per_connection"] = each
                    results.append(r)
    finally:
        for server in list(STARTED):
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as handle:
            for r in results:
                handle.write(json.dumps(r) + "\n")
    report(results, skipped, limit, limit_note)
    return 0 if all(r.get("ok") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
