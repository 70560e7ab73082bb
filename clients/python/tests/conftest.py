"""Fixtures: a real kvod on 127.0.0.1 (the binary at $KVOD_BIN, default <repo>/.build/debug/kvod), restartable on the
same port and data directory, a TCP proxy that can cut connections and refuse new ones, to test reconnection
without restarting kvod, and `transport`, which runs a test once over TCP and once over WebSocket (kvod serves both
on one port). Every wait is bounded."""

import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "clients" / "python"))


def kvod_binary() -> str:
    return os.environ.get("KVOD_BIN", str(REPO / ".build" / "debug" / "kvod"))


class Kvod:
    """A kvod process; `restart()` starts it again on the same port (and data directory, if any). `env` adds to the
    environment (KVOD_TOKEN); `ws_port` is the `--ws-port` one's, when asked for."""

    def __init__(self, arguments, port=0, env=None):
        self.arguments = list(arguments)
        self.port = port
        self.ws_port = None
        self.env = dict(os.environ, **(env or {}))
        self.process = None
        self.start()

    def start(self):
        self.process = subprocess.Popen(
            [kvod_binary(), "--host", "127.0.0.1", "--port", str(self.port)] + self.arguments,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)
        deadline = time.monotonic() + 20
        line = ""
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            websocket = re.search(r"kvod websocket on [0-9.]+:(\d+)", line)
            if websocket:
                self.ws_port = int(websocket.group(1))
            match = re.search(r"kvod listening on [0-9.]+:(\d+)", line)
            if match:
                self.port = int(match.group(1))
                return
            if self.process.poll() is not None:
                break
        self.process.kill()
        raise RuntimeError(f"kvod did not start: {line!r} {self.process.stderr.read()[:2000]}")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def restart(self):
        if self.process.poll() is None:
            self.kill()
        for _ in range(50):  # the port can stay busy for a moment after a kill
            try:
                self.start()
                return
            except RuntimeError:
                time.sleep(0.1)
        self.start()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(params=["tcp", "websocket"])
def transport(request):
    """Runs the test over TCP and over WebSocket (kvod's own port: an upgrade is told from a JSON line)."""
    return request.param


@pytest.fixture
def kvod_server():
    server = Kvod(["--empty"])
    yield server
    server.stop()


@pytest.fixture
def kvod_model():
    """kvod on its embedded default model (typed classes, computed keys, rules)."""
    server = Kvod([])
    yield server
    server.stop()


@pytest.fixture
def make_kvod(tmp_path):
    servers = []

    def make(*arguments, data_dir=False, env=None):
        extra = list(arguments)
        if data_dir:
            extra += ["--data-dir", str(tmp_path / f"data{len(servers)}")]
        server = Kvod(["--empty"] + extra, env=env)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


class Proxy:
    """Forwards 127.0.0.1:port to a kvod; `cut()` closes every forwarded connection, `refuse()` closes new ones at
    once until `accept()`."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.refusing = False
        self.pairs = []
        self.lock = threading.Lock()
        self.running = True
        threading.Thread(target=self._accept_loop, daemon=True).start()

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def _accept_loop(self):
        while self.running:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.pairs.append((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            for end in pair:
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                end.close()

    def refuse(self):
        self.refusing = True

    def accept(self):
        self.refusing = False

    def close(self):
        self.running = False
        self.cut()
        self.listener.close()


@pytest.fixture
def make_proxy():
    proxies = []

    def make(port):
        proxy = Proxy(port)
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.close()
