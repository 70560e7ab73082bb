"""kvod from another language: a Python JSON-RPC client against the real daemon.

tinyrpc (PyPI) builds every request and parses every reply; plain sockets carry the lines (one JSON-RPC message per
line, `\\n`-terminated). Every message kvod sends is validated against Protocol/schemas/ (response.schema.json plus
results/<method>.schema.json for a result, notification.schema.json for a notification), and every well-formed request
this client sends is validated against request.schema.json, so the schemas and the server are checked against each
other.

The daemon is the binary at $KVOD_BIN (default <repo>/.build/debug/kvod), started on 127.0.0.1 with an ephemeral
port and stopped with SIGTERM (exit status 0, a `closing` notice to connected clients). Every socket operation has a
timeout, so no test can hang. The tests here share one daemon serving an empty open root (`--empty`, fixture `kvod`),
so each works under its own fresh key; test_model_and_collections.py starts a fresh daemon on the default model for
each test (fixture `kvod_model`).
"""

import json
import os
import pathlib
import re
import select
import signal
import socket
import subprocess
import time
import uuid

import jsonschema
import pytest
import referencing
from referencing.jsonschema import DRAFT202012
from tinyrpc.protocols.jsonrpc import (
    JSONRPCBatchResponse,
    JSONRPCErrorResponse,
    JSONRPCProtocol,
    JSONRPCRequest,
    JSONRPCSuccessResponse,
)

REPO = pathlib.Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "Protocol" / "schemas"
TIMEOUT = 5.0  # seconds, for every socket operation
START_TIMEOUT = 20.0  # seconds for kvod to print its listening line
DEFAULT_MAX_LINE_BYTES = 1 << 20

# JSON-RPC and kvod error codes (Protocol/errors.md).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
UNDEFINED_KEY = 1001
TYPE_MISMATCH = 1005
UNKNOWN_SUBSCRIPTION = 1007
LIMIT_EXCEEDED = 1009


# ----------------------------------------------------------------------------------------------------------------------
# Schemas


class Schemas:
    """Protocol/schemas/, loaded into one referencing registry (the files refer to each other by relative $ref)."""

    def __init__(self, root):
        self.documents = {}
        resources = []
        for path in sorted(root.rglob("*.schema.json")):
            document = json.loads(path.read_text(encoding="utf-8"))
            jsonschema.Draft202012Validator.check_schema(document)
            name = path.relative_to(root).as_posix()
            schema_id = document.get("$id", "")
            assert schema_id.endswith("/" + name), f"{name}: $id {schema_id!r} does not end with its path"
            self.documents[name] = document
            resources.append((document["$id"], DRAFT202012.create_resource(document)))
        self.registry = referencing.Registry().with_resources(resources)
        self.validators = {
            name: jsonschema.Draft202012Validator(document, registry=self.registry)
            for name, document in self.documents.items()
        }

    def errors(self, name, instance):
        return list(self.validators[name].iter_errors(instance))

    def is_valid(self, name, instance):
        return not self.errors(name, instance)

    def validate(self, name, instance):
        errors = self.errors(name, instance)
        if errors:
            best = jsonschema.exceptions.best_match(errors)
            raise AssertionError(
                f"{name} rejects {json.dumps(instance)[:2000]}\n  at {best.json_path}: {best.message}"
            )


# ----------------------------------------------------------------------------------------------------------------------
# The client


class Message:
    """One line kvod sent: `kind` is "response", "batch" or "notification"; `doc` the decoded JSON; `parsed` what
    tinyrpc made of it (a response, a batch response, or, for a notification, a one-way JSONRPCRequest)."""

    def __init__(self, kind, doc, parsed, line):
        self.kind, self.doc, self.parsed, self.line = kind, doc, parsed, line

    def __repr__(self):
        return f"Message({self.kind}: {self.line[:300]!r})"


def _object_pairs_checking_id_first(pairs):
    keys = [key for key, _ in pairs]
    assert len(keys) == len(set(keys)), f"duplicate member in a JSON object: {keys}"
    if "$id" in keys:
        assert keys[0] == "$id", f'"$id" must be an object\'s first member (README.md#values), got {keys}'
    return dict(pairs)


class Client:
    """One connection: tinyrpc for the JSON-RPC layer, a socket with line framing for transport."""

    def __init__(self, port, schemas, name="client"):
        self.name = name
        self.schemas = schemas
        self.rpc = JSONRPCProtocol()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.sock.settimeout(TIMEOUT)
        self.buffer = b""
        self.methods = {}  # request id -> method, to validate each result against its method's schema
        self.closed = False

    # -- transport

    def send_line(self, data):
        if isinstance(data, str):
            data = data.encode("utf-8")
        self.sock.sendall(data + b"\n")

    def recv_line(self, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"{self.name}: no complete line within {timeout}s (buffered: {self.buffer[:300]!r})")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                continue
            if not chunk:
                raise EOFError(f"{self.name}: connection closed by kvod (buffered: {self.buffer[:300]!r})")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def expect_eof(self, timeout=TIMEOUT):
        """The next thing on the connection is its end (no more lines)."""
        deadline = time.monotonic() + timeout
        while True:
            assert not self.buffer, f"{self.name}: expected the connection to end, got {self.buffer[:300]!r}"
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{self.name}: connection still open after {timeout}s"
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                continue
            if not chunk:
                return
            self.buffer += chunk

    def close(self):
        if not self.closed:
            self.closed = True
            self.sock.close()

    # -- requests (tinyrpc builds them)

    def make(self, method, params=None, one_way=False):
        request = self.rpc.create_request(
            method,
            args=params if isinstance(params, list) else None,
            kwargs=params if isinstance(params, dict) else None,
            one_way=one_way,
        )
        if not one_way:
            self.methods[request.unique_id] = method
        return request

    def _check_outgoing(self, request, schema_valid):
        doc = json.loads(request.serialize())
        if schema_valid:
            self.schemas.validate("request.schema.json", doc)
        else:
            assert not self.schemas.is_valid("request.schema.json", doc), (
                f"request.schema.json accepts {doc}, which kvod must reject"
            )

    def request(self, method, params=None, one_way=False, schema_valid=True):
        request = self.make(method, params, one_way)
        self._check_outgoing(request, schema_valid)
        self.send_line(request.serialize())
        return request

    def send_batch(self, requests, schema_valid=True):
        batch = self.rpc.create_batch_request(requests)
        doc = json.loads(batch.serialize())
        if schema_valid:
            self.schemas.validate("request.schema.json", doc)
        else:
            assert not self.schemas.is_valid("request.schema.json", doc), f"request.schema.json accepts {doc}"
        self.send_line(batch.serialize())
        return batch

    def expect_null_id(self):
        """Registers that a reply with "id": null is due (a parse error, an empty batch, a bad batch entry): tinyrpc
        only accepts replies whose id it is waiting for."""
        self.rpc._pending_replies.append(None)

    # -- receiving: every line is validated against the schemas, then parsed by tinyrpc

    def recv(self, timeout=TIMEOUT):
        line = self.recv_line(timeout)
        assert not line.endswith(b"\r"), f"kvod ends lines with a bare \\n: {line[-50:]!r}"
        text = line.decode("utf-8")  # strict: kvod writes UTF-8
        doc = json.loads(text, object_pairs_hook=_object_pairs_checking_id_first)
        if isinstance(doc, list):
            self.schemas.validate("response.schema.json", doc)
            parsed = self.rpc.parse_reply(line)
            assert isinstance(parsed, JSONRPCBatchResponse), parsed
            for entry, response in zip(doc, parsed):
                assert not isinstance(response, Exception), f"tinyrpc rejects batch entry {entry}: {response!r}"
                self._check_result(entry)
            return Message("batch", doc, parsed, text)
        assert isinstance(doc, dict), f"kvod sent neither an object nor an array: {text[:300]}"
        if "id" in doc:
            self.schemas.validate("response.schema.json", doc)
            parsed = self.rpc.parse_reply(line)
            assert isinstance(parsed, (JSONRPCSuccessResponse, JSONRPCErrorResponse)), parsed
            self._check_result(doc)
            return Message("response", doc, parsed, text)
        self.schemas.validate("notification.schema.json", doc)
        parsed = self.rpc.parse_request(line)
        assert isinstance(parsed, JSONRPCRequest) and parsed.one_way, parsed
        return Message("notification", doc, parsed, text)

    def _check_result(self, doc):
        method = self.methods.pop(doc["id"], None) if doc["id"] is not None else None
        if "result" in doc:
            assert method is not None, f"a result for no request of ours: {doc}"
            self.schemas.validate(f"results/{method}.schema.json", doc["result"])

    def recv_response(self, request):
        message = self.recv()
        assert message.kind == "response", f"{self.name}: expected the response to {request.method}, got {message}"
        assert message.parsed.unique_id == request.unique_id, message
        return message.parsed

    def recv_change(self):
        """The next message, which must be a change notification; returns its params."""
        message = self.recv()
        assert message.kind == "notification" and message.parsed.method == "change", (
            f"{self.name}: expected a change notification, got {message}"
        )
        return message.parsed.kwargs

    # -- conveniences

    def call(self, method, params=None, schema_valid=True):
        return self.recv_response(self.request(method, params, schema_valid=schema_valid))

    def ok(self, method, params=None):
        response = self.call(method, params)
        assert isinstance(response, JSONRPCSuccessResponse), (
            f"{method} {params} failed: {response._jsonrpc_error_code} {response.error} "
            f"{getattr(response, 'data', None)}"
        )
        return response.result

    def fail(self, method, params, code, schema_valid=False):
        """Calls a method that must fail with `code`; returns the error's data (None when absent)."""
        response = self.call(method, params, schema_valid=schema_valid)
        assert isinstance(response, JSONRPCErrorResponse), f"{method} {params} succeeded: {response.result}"
        assert response._jsonrpc_error_code == code, (
            f"{method} {params}: expected error {code}, got {response._jsonrpc_error_code} {response.error}"
        )
        return getattr(response, "data", None)

    def get(self, path):
        return self.ok("get", {"path": path})

    def set(self, path, value):
        return self.ok("set", {"path": path, "value": value})["seq"]

    def subscribe(self, path, options=None, context=None, **extra):
        params = {"path": path}
        if options is not None:
            params["options"] = options
        if context is not None:
            params["context"] = context
        params.update(extra)
        return self.ok("subscribe", params)

    def assert_quiet(self):
        """A ping round trip with nothing in between: nothing was queued for this connection before the ping."""
        request = self.request("ping")
        message = self.recv()
        assert message.kind == "response" and message.parsed.unique_id == request.unique_id, (
            f"{self.name}: expected nothing before the pong, got {message}"
        )
        assert message.parsed.result == "pong"


# ----------------------------------------------------------------------------------------------------------------------
# The daemon


class Kvod:
    def __init__(self, process, port, log_path):
        self.process, self.port, self.log_path = process, port, log_path

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


def _kvod_binary():
    configured = os.environ.get("KVOD_BIN")
    if not configured:
        return REPO / ".build" / "debug" / "kvod"
    path = pathlib.Path(configured)
    if not path.is_absolute() and not path.exists():
        path = REPO / path  # relative to the repository, as the Makefile passes it
    return path


def _read_first_line(process, timeout):
    deadline = time.monotonic() + timeout
    data = b""
    fd = process.stdout.fileno()
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None, data
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                return None, data
            data += chunk
    line, _, rest = data.partition(b"\n")
    return line.decode("utf-8", "replace"), rest


@pytest.fixture(scope="session")
def schemas():
    return Schemas(SCHEMAS)


def serve(log_dir, schemas, arguments):
    """Runs kvod with `arguments` (after --host/--port) and yields a Kvod; then checks the shutdown: a connected client
    gets `closing` (server_shutdown), then the end of the connection, and kvod exits 0 having printed one line."""
    binary = _kvod_binary()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.fail(f"no kvod binary at {binary}: run `swift build --product kvod` or set KVOD_BIN", pytrace=False)
    log_path = log_dir / "kvod.stderr.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(binary), "--host", "127.0.0.1", "--port", "0", *arguments],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
        )
    try:
        line, rest = _read_first_line(process, START_TIMEOUT)
        match = re.fullmatch(r"kvod listening on 127\.0\.0\.1:(\d+)", line or "")
        assert match, f"kvod's first stdout line: {line!r}; stderr:\n{log_path.read_text(errors='replace')[-4000:]}"
        server = Kvod(process, int(match.group(1)), log_path)
        yield server

        assert process.poll() is None, f"kvod exited early with {process.returncode}:\n{server.log()}"
        witness = Client(server.port, schemas, "shutdown-witness")
        witness.assert_quiet()
        process.send_signal(signal.SIGTERM)
        message = witness.recv()
        assert message.kind == "notification" and message.parsed.method == "closing", message
        assert message.parsed.kwargs == {"reason": "server_shutdown"}, message
        witness.expect_eof()
        witness.close()
        status = process.wait(timeout=10)
        assert status == 0, f"kvod exited with {status} on SIGTERM:\n{server.log()}"
        extra = rest + process.stdout.read()
        assert extra == b"", f"kvod printed more than one line on stdout: {extra[:500]!r}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        process.stdout.close()


def connections(server, schemas):
    """Yields connect(name), which opens a client; afterwards every client still open must have nothing pending."""
    clients = []

    def open_client(name="client"):
        client = Client(server.port, schemas, name)
        clients.append(client)
        return client

    yield open_client
    try:
        for client in clients:
            if not client.closed:
                client.assert_quiet()
        assert server.process.poll() is None, f"kvod died during the test:\n{server.log()}"
    finally:
        for client in clients:
            client.close()


@pytest.fixture(scope="session")
def kvod(tmp_path_factory, schemas):
    """One kvod for the session, serving an empty open root (--empty)."""
    yield from serve(tmp_path_factory.mktemp("kvod"), schemas, ["--empty"])


@pytest.fixture
def connect(kvod, schemas):
    """connect(name) opens a client; at the end of the test every client still open must have nothing pending."""
    yield from connections(kvod, schemas)


@pytest.fixture
def kvod_model(tmp_path_factory, schemas):
    """A fresh kvod for one test, serving the default model (Sources/kvod/default-model.json, docs/MODEL.md), so
    the test can rely on exact object ids and seqs."""
    yield from serve(tmp_path_factory.mktemp("kvod-model"), schemas, [])


@pytest.fixture
def connect_model(kvod_model, schemas):
    """connect(name) against kvod_model."""
    yield from connections(kvod_model, schemas)


def fresh_key():
    return "py" + uuid.uuid4().hex[:10]


# ----------------------------------------------------------------------------------------------------------------------
# The schemas themselves


def test_schemas_accept_the_spec_examples_and_reject_violations(schemas):
    # Protocol/README.md's examples.
    change = {"jsonrpc": "2.0", "method": "change", "params": {"subscription": 7, "path": "person.address.city",
              "kind": "setting", "new": "Porto", "old": "Lisbon", "context": {"any": "json"}, "seq": 42}}
    schemas.validate("notification.schema.json", change)
    schemas.validate("notification.schema.json",
                     {"jsonrpc": "2.0", "method": "closing", "params": {"reason": "server_shutdown"}})
    schemas.validate("request.schema.json", {"jsonrpc": "2.0", "id": 1, "method": "subscribe",
                                             "params": {"path": "greeting", "options": ["new", "old"]}})
    schemas.validate("response.schema.json", {"jsonrpc": "2.0", "id": 1, "result": {"subscription": 1, "seq": 0}})
    schemas.validate("request.schema.json", [
        {"jsonrpc": "2.0", "id": "a", "method": "set", "params": ["$12.city", {"x": [1, {"$ref": 3}], "$id": 9}]},
        {"jsonrpc": "2.0", "method": "ping"},
        {"jsonrpc": "2.0", "id": None, "method": "get", "params": [""]},
        {"jsonrpc": "2.0", "id": 2.5, "method": "subscribe", "params": ["a.b", [], None]},
        {"jsonrpc": "2.0", "id": 3, "method": "unsubscribe", "params": {"subscription": 4}},
        {"jsonrpc": "2.0", "id": 4, "method": "hello", "params": {"client": "py"}},
    ])
    schemas.validate("response.schema.json", [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error", "data": "anything"}},
        {"jsonrpc": "2.0", "id": 5, "error": {"code": 1005, "message": "m", "data": {"path": "a", "reason": "r"}}},
        {"jsonrpc": "2.0", "id": 6, "result": {"value": {"$id": 0, "a": {"$ref": 0}, "l": [1.5, None]}, "seq": 3}},
    ])

    def bad_change(**params):
        base = dict(change["params"])
        for key, value in params.items():
            if value is None:
                base.pop(key, None)
            else:
                base[key] = value
        return {"jsonrpc": "2.0", "method": "change", "params": base}

    rejected = {
        "notification.schema.json": [
            bad_change(prior=False),
            bad_change(initial=False),
            bad_change(prior=True),  # a prior notification never carries new
            bad_change(initial=True),  # an initial notification never carries old
            bad_change(new=None, prior=True, initial=True),
            bad_change(kind="changed"),
            bad_change(seq=-1),
            bad_change(seq=1.5),
            bad_change(extra=1),
            bad_change(path="a..b"),
            bad_change(new={"no": "id"}),
            bad_change(subscription=None),
            dict(change, id=1),
            {"jsonrpc": "2.0", "method": "closing", "params": {"reason": "bored"}},
        ],
        "response.schema.json": [
            {"jsonrpc": "2.0", "id": 1, "result": "pong", "error": {"code": -32601, "message": "m"}},
            {"jsonrpc": "2.0", "result": "pong"},
            {"jsonrpc": "2.0", "id": 1, "error": {"code": 42, "message": "m"}},
            {"jsonrpc": "2.0", "id": 1, "error": {"code": 1007, "message": "m"}},
            {"jsonrpc": "2.0", "id": 1, "error": {"code": 1009, "message": "m", "data": {}}},
            {"jsonrpc": "2.0", "id": 3, "error": {"code": -32700, "message": "m"}},
            {"jsonrpc": "2.0", "id": 1, "result": {"seq": 1, "extra": 2}},
            [],
        ],
        "request.schema.json": [
            {"jsonrpc": "2.0", "id": 1, "method": "nope"},
            {"jsonrpc": "1.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": {}, "method": "ping"},
            {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]},
            {"jsonrpc": "2.0", "id": 1, "method": "get"},
            {"jsonrpc": "2.0", "id": 1, "method": "get", "params": {"path": "a", "x": 1}},
            {"jsonrpc": "2.0", "id": 1, "method": "get", "params": {"path": "a.$1"}},
            {"jsonrpc": "2.0", "id": 1, "method": "set", "params": {"path": "", "value": 1}},
            {"jsonrpc": "2.0", "id": 1, "method": "set", "params": {"path": "$3", "value": 1}},
            {"jsonrpc": "2.0", "id": 1, "method": "set", "params": {"path": "a"}},
            {"jsonrpc": "2.0", "id": 1, "method": "set", "params": {"path": "a", "value": {"b.c": 1}}},
            {"jsonrpc": "2.0", "id": 1, "method": "set", "params": {"path": "a", "value": {"$ref": 1, "x": 2}}},
            {"jsonrpc": "2.0", "id": 1, "method": "subscribe", "params": {"path": "a", "options": ["newer"]}},
            {"jsonrpc": "2.0", "id": 1, "method": "unsubscribe", "params": {"subscription": "1"}},
            [],
        ],
    }
    for name, instances in rejected.items():
        for instance in instances:
            assert not schemas.is_valid(name, instance), f"{name} accepts {instance}"


EXAMPLES = REPO / "Protocol" / "examples"
REQUEST_ERRORS = {INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS}


@pytest.mark.parametrize("transcript", sorted(p.name for p in EXAMPLES.glob("*.jsonl")) or ["(none)"])
def test_schemas_agree_with_the_example_transcripts(schemas, transcript):
    """Protocol/examples/*.jsonl (replayed against kvod by the Swift tests) against the schemas: every message a
    transcript receives in full validates, each result against its method's schema; a request the schema accepts is
    not answered with -32600/-32601/-32602, and one it rejects is."""
    if transcript == "(none)":
        pytest.skip("no Protocol/examples/*.jsonl")
    pending = {}  # (conn, id) -> (method, whether request.schema.json accepts the request)
    for number, text in enumerate((EXAMPLES / transcript).read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        step = json.loads(text)
        where = f"{transcript}:{number}"
        conn = step.get("conn")
        if "send" in step:
            sent = step["send"]
            for entry in sent if isinstance(sent, list) else [sent]:
                if isinstance(entry, dict) and "id" in entry:
                    pending[(conn, json.dumps(entry["id"]))] = (
                        entry.get("method"), schemas.is_valid("request.schema.json", entry))
        received = step.get("recv", step.get("recvMatch"))
        if received is None:
            continue
        full = "recv" in step
        entries = received if isinstance(received, list) else [received]
        if full:
            kind = "notification.schema.json" if isinstance(received, dict) and "id" not in received else (
                "response.schema.json")
            assert schemas.is_valid(kind, received), f"{where}: {kind} rejects {received}"
        for entry in entries:
            if "id" not in entry or entry["id"] is None:
                continue
            method, accepted = pending.pop((conn, json.dumps(entry["id"])), (None, None))
            if method is None:
                continue
            if "result" in entry and full:
                name = f"results/{method}.schema.json"
                assert name in schemas.documents, f"{where}: no {name}"
                assert schemas.is_valid(name, entry["result"]), f"{where}: {name} rejects {entry['result']}"
            if "result" in entry:
                assert accepted, f"{where}: kvod accepts a {method} request that request.schema.json rejects"
            elif entry.get("error", {}).get("code") in REQUEST_ERRORS:
                assert not accepted, f"{where}: request.schema.json accepts a request kvod rejects: {entry}"


# ----------------------------------------------------------------------------------------------------------------------
# Against the daemon


def test_hello_and_ping(connect):
    client = connect()
    hello = client.ok("hello", {"client": "pytest"})
    assert hello["server"] == "kvod" and hello["protocol"] == 1 and isinstance(hello["version"], str)
    assert client.ok("hello", ["pytest"]) == hello  # by position
    assert client.ok("hello") == hello  # client is optional, and hello is optional before anything else
    assert client.ok("ping") == "pong"
    client.request("ping", one_way=True)  # a JSON-RPC notification: processed, never answered
    client.assert_quiet()


def test_subscribe_new_old_and_set_from_another_connection(connect):
    watcher, writer = connect("watcher"), connect("writer")
    path = fresh_key() + ".greeting"
    context = {"any": "json", "list": [1, 2.5, None, True], "nested": {"$weird": "kept verbatim"}}
    subscribed = watcher.subscribe(path, ["new", "old"], context)
    assert isinstance(subscribed["subscription"], int)

    seq1 = writer.set(path, "hello")
    assert seq1 > subscribed["seq"]
    assert watcher.recv_change() == {"subscription": subscribed["subscription"], "path": path, "kind": "setting",
                                     "new": "hello", "old": None, "context": context, "seq": seq1}

    seq2 = writer.set(path, {"text": "hi"})
    assert seq2 == seq1 + 1  # one global counter, +1 per successful mutation
    change = watcher.recv_change()
    assert change["old"] == "hello" and change["seq"] == seq2
    assert set(change["new"]) == {"$id", "text"} and change["new"]["text"] == "hi"

    seq3 = writer.set(path, "hi")
    change = watcher.recv_change()
    assert change["old"] == {"$id": change["old"]["$id"], "text": "hi"} and change["new"] == "hi"

    # Setting the current value again still notifies, with old equal to new.
    seq4 = writer.set(path, "hi")
    assert seq4 == seq3 + 1
    change = watcher.recv_change()
    assert (change["old"], change["new"], change["seq"]) == ("hi", "hi", seq4)
    assert writer.get(path) == {"value": "hi", "seq": seq4}


def test_notifications_carry_only_what_the_options_ask_for(connect):
    """Every combination of options, all on one key, with one change: each notification has exactly the members its
    options ask for (README.md#notifications), with the right values."""
    watcher, writer = connect("watcher"), connect("writer")
    path = fresh_key()
    writer.set(path, "before")
    combinations = [[name for bit, name in enumerate(["new", "old", "initial", "prior"]) if mask >> bit & 1]
                    for mask in range(16)]
    subscriptions = []
    for index, options in enumerate(combinations):
        request = watcher.request("subscribe", {"path": path, "options": options, "context": index}
                                  if index % 2 else [path, options])  # half with a context, half by position
        result = watcher.recv_response(request).result
        subscriptions.append(result["subscription"])
        base = {"subscription": result["subscription"], "path": path, "kind": "setting"}
        if index % 2:
            base["context"] = index
        if "initial" in options:
            expected = dict(base, initial=True, seq=result["seq"])
            if "new" in options:
                expected["new"] = "before"
            assert watcher.recv_change() == expected, f"initial notification for options {options}"

    seq = writer.set(path, "after")
    expected_prior, expected_after = [], []
    for index, (subscription, options) in enumerate(zip(subscriptions, combinations)):
        base = {"subscription": subscription, "path": path, "kind": "setting", "seq": seq}
        if index % 2:
            base["context"] = index
        after = dict(base)
        if "new" in options:
            after["new"] = "after"
        if "old" in options:
            after["old"] = "before"
        expected_after.append(after)
        if "prior" in options:
            prior = dict(base, prior=True)
            if "old" in options:
                prior["old"] = "before"
            expected_prior.append(prior)
    expected = expected_prior + expected_after[::-1]  # will A, will B, ..., did B, did A
    assert [watcher.recv_change() for _ in expected] == expected


def test_initial_then_prior_and_after(connect):
    watcher, writer = connect("watcher"), connect("writer")
    path = fresh_key() + ".status"
    writer.set(path, "v0")

    request = watcher.request("subscribe", {"path": path, "options": ["new", "old", "initial", "prior"],
                                            "context": 7})
    subscribed = watcher.recv_response(request).result  # the response comes first...
    subscription = subscribed["subscription"]
    assert watcher.recv_change() == {  # ...then at once the initial notification, as of the response's seq
        "subscription": subscription, "path": path, "kind": "setting", "new": "v0", "initial": True, "context": 7,
        "seq": subscribed["seq"]}

    seq = writer.set(path, "v1")
    prior = watcher.recv_change()
    after = watcher.recv_change()
    assert prior == {"subscription": subscription, "path": path, "kind": "setting", "old": "v0", "prior": True,
                     "context": 7, "seq": seq}
    assert after == {"subscription": subscription, "path": path, "kind": "setting", "new": "v1", "old": "v0",
                     "context": 7, "seq": seq}

    # By position, in methods.md's order: path, options, context.
    request = watcher.request("subscribe", [path, ["new", "initial"], [1, "two"]])
    second = watcher.recv_response(request).result
    assert second["subscription"] != subscription
    change = watcher.recv_change()
    assert (change["subscription"], change["new"], change["context"], change["seq"]) == (
        second["subscription"], "v1", [1, "two"], second["seq"])


def test_notifications_precede_the_set_response_on_the_same_connection(connect):
    client = connect()
    path = fresh_key() + ".n"
    subscription = client.subscribe(path, ["new", "old", "prior"])["subscription"]
    request = client.request("set", {"path": path, "value": 1})
    prior = client.recv_change()
    after = client.recv_change()
    response = client.recv_response(request)  # KVO: observers are notified before the setter returns
    seq = response.result["seq"]
    assert prior == {"subscription": subscription, "path": path, "kind": "setting", "old": None, "prior": True,
                     "seq": seq}
    assert after == {"subscription": subscription, "path": path, "kind": "setting", "new": 1, "old": None, "seq": seq}


def test_several_subscriptions_nest_like_brackets(connect):
    client = connect()
    path = fresh_key()
    ids = [client.subscribe(path, ["prior", "new"], context=i)["subscription"] for i in range(3)]
    request = client.request("set", [path, "x"])
    changes = [client.recv_change() for _ in range(6)]
    seq = client.recv_response(request).result["seq"]
    order = [(change["subscription"], "prior" in change) for change in changes]
    # will A, will B, will C, did C, did B, did A
    assert order == [(ids[0], True), (ids[1], True), (ids[2], True), (ids[2], False), (ids[1], False), (ids[0], False)]
    assert {change["seq"] for change in changes} == {seq}


def test_key_path_follows_replaced_intermediates(connect):
    watcher, writer = connect("watcher"), connect("writer")
    root = fresh_key()
    path = root + ".person.address.city"
    subscription = watcher.subscribe(path, ["new", "old"])["subscription"]

    # A path that does not exist yet; setting it creates the intermediates (mkdir -p).
    seq = writer.set(path, "Lisbon")
    assert watcher.recv_change() == {"subscription": subscription, "path": path, "kind": "setting",
                                     "new": "Lisbon", "old": None, "seq": seq}
    old_address = writer.get(root + ".person.address")["value"]
    assert old_address == {"$id": old_address["$id"], "city": "Lisbon"}
    writer.set(root + ".keep", {"$ref": old_address["$id"]})  # keeps the old address reachable elsewhere
    watcher.assert_quiet()

    # Replacing person.address notifies with the old and the new city.
    seq = writer.set(root + ".person.address", {"city": "Porto", "zip": "4000"})
    assert watcher.recv_change() == {"subscription": subscription, "path": path, "kind": "setting",
                                     "new": "Porto", "old": "Lisbon", "seq": seq}

    # The old address is no longer on the path: changing it notifies nobody.
    writer.set(root + ".keep.city", "Faro")
    writer.set("$%d.city" % old_address["$id"], "Evora")
    watcher.assert_quiet()
    assert writer.get(root + ".keep")["value"] == {"$id": old_address["$id"], "city": "Evora"}

    # The new one is.
    seq = writer.set(root + ".person.address.city", "Braga")
    assert watcher.recv_change()["old"] == "Porto"

    # A null intermediate reads as null; bringing the path back notifies again.
    seq = writer.set(root + ".person", None)
    assert watcher.recv_change() == {"subscription": subscription, "path": path, "kind": "setting",
                                     "new": None, "old": "Braga", "seq": seq}
    seq = writer.set(root + ".person", {"address": {"city": "Coimbra"}})
    assert watcher.recv_change() == {"subscription": subscription, "path": path, "kind": "setting",
                                     "new": "Coimbra", "old": None, "seq": seq}

    # A subscription to a path that starts at an object id comes back with the path as written.
    by_id = "$%d.city" % old_address["$id"]
    id_subscription = watcher.subscribe(by_id, ["new", "old"])["subscription"]
    seq = writer.set(root + ".keep.city", "Tavira")
    assert watcher.recv_change() == {"subscription": id_subscription, "path": by_id, "kind": "setting",
                                     "new": "Tavira", "old": "Evora", "seq": seq}


def test_unsubscribe_stops_notifications(connect):
    watcher, writer = connect("watcher"), connect("writer")
    path = fresh_key()
    subscription = watcher.subscribe(path, ["new"])["subscription"]
    writer.set(path, 1)
    assert watcher.recv_change()["new"] == 1

    assert watcher.ok("unsubscribe", {"subscription": subscription}) is True
    writer.set(path, 2)  # its response means every notification it caused has been queued everywhere...
    watcher.assert_quiet()  # ...so the watcher's pong comes with nothing before it

    assert watcher.fail("unsubscribe", [subscription], UNKNOWN_SUBSCRIPTION, schema_valid=True) == {
        "subscription": subscription}

    # Another connection's subscription cannot be removed (1007), and stays.
    again = watcher.subscribe(path, ["new"])["subscription"]
    assert writer.fail("unsubscribe", {"subscription": again}, UNKNOWN_SUBSCRIPTION, schema_valid=True) == {
        "subscription": again}
    seq = writer.set(path, 3)
    change = watcher.recv_change()
    assert (change["subscription"], change["new"], change["seq"]) == (again, 3, seq)


def test_observers_lists_subscriptions_per_connection(connect):
    watcher, asker = connect("watcher"), connect("asker")
    watcher.ok("hello", {"client": "py-watcher"})
    path, other = fresh_key(), fresh_key()
    first = watcher.subscribe(path, ["prior", "new"], context={"k": [1]})["subscription"]
    watcher.subscribe(other)
    second = watcher.subscribe(path)["subscription"]

    listed = asker.ok("observers", {"path": path})["connections"]
    assert len(listed) == 1, listed
    entry = listed[0]
    assert entry["client"] == "py-watcher" and "self" not in entry and isinstance(entry["remote"], str)
    subscriptions = entry["subscriptions"]
    for subscription in subscriptions:
        subscription["options"] = sorted(subscription["options"])  # methods.md gives no order
    assert subscriptions == [
        {"subscription": first, "path": path, "options": ["new", "prior"], "context": {"k": [1]}},
        {"subscription": second, "path": path, "options": []},
    ]
    # Without a path: every open connection, the asker marked as self.
    everyone = asker.ok("observers")["connections"]
    assert [c["connection"] for c in everyone] == sorted(c["connection"] for c in everyone)
    assert [c for c in everyone if c.get("self")] == [
        {"connection": c["connection"], "remote": c["remote"], "self": True, "subscriptions": []}
        for c in everyone if c.get("self")]
    assert len([c for c in everyone if c.get("self")]) == 1

    watcher.ok("unsubscribe", [first])
    assert [s["subscription"] for s in asker.ok("observers", [path])["connections"][0]["subscriptions"]] == [second]


def test_parse_errors_answer_with_null_id_and_keep_the_connection(connect):
    client = connect()
    for line in [b'{"jsonrpc":"2.0","id":1,"method":', b"\xff\xfe", b'{"jsonrpc":"2.0","id":2,"method":"ping"}}',
                 b'{"jsonrpc":"2.0","id":3,"method":"set","params":{"path":"x","value":1e400}}']:
        client.expect_null_id()
        client.send_line(line)
        message = client.recv()
        assert message.kind == "response", message
        assert message.doc["id"] is None
        assert message.parsed._jsonrpc_error_code == PARSE_ERROR, message
    client.send_line(b"")  # blank lines are ignored
    client.send_line(b"   \r")
    assert client.ok("ping") == "pong"


def test_unknown_method(connect):
    client = connect()
    client.fail("frobnicate", {"x": 1}, METHOD_NOT_FOUND)
    response = client.call("Ping", schema_valid=False)  # method names are case-sensitive
    assert isinstance(response, JSONRPCErrorResponse) and response._jsonrpc_error_code == METHOD_NOT_FOUND


def test_invalid_params(connect):
    client = connect()
    key = fresh_key()
    before = client.get("")["seq"]
    cases = [
        ("get", None),
        ("get", {"path": 5}),
        ("get", {"pth": key}),
        ("get", {"path": key, "extra": True}),
        ("get", [key, 1]),
        ("ping", [1]),
        ("hello", {"client": 5}),
        ("set", {"path": key}),
        ("set", {"path": "", "value": 1}),
        ("subscribe", {"path": key, "options": ["new", "newest"]}),
        ("subscribe", {"path": key, "options": "new"}),
        ("unsubscribe", {"subscription": "1"}),
        ("unsubscribe", None),
    ]
    for method, params in cases:
        client.fail(method, params, INVALID_PARAMS)
    # A malformed key path names itself in data, with a reason.
    for bad in ["a..b", key + ".", ".a", "a.$1", "$"]:
        data = client.fail("get", {"path": bad}, INVALID_PARAMS)
        assert data["path"] == bad and isinstance(data["reason"], str), data
    # Failed requests use no seq and notify nobody.
    assert client.set(key, 1) == before + 1


def test_path_through_a_scalar_is_a_type_mismatch(connect):
    client, watcher = connect("client"), connect("watcher")
    root = fresh_key()
    client.set(root + ".count", 5)
    client.set(root + ".list", [1, {"x": 2}])
    watcher.subscribe(root + ".count", ["new"])
    seq = client.get("")["seq"]
    for method, params, offending in [
        ("get", {"path": root + ".count.x"}, root + ".count"),
        ("set", {"path": root + ".count.x", "value": 1}, root + ".count"),
        ("set", {"path": root + ".count.x.y", "value": {"a": 1}}, root + ".count"),
        ("get", {"path": root + ".list.0"}, root + ".list"),
        ("set", {"path": root + ".list.x", "value": None}, root + ".list"),
    ]:
        data = client.fail(method, params, TYPE_MISMATCH, schema_valid=True)
        assert data["path"] == offending and isinstance(data["reason"], str), data
    # Nothing changed, nobody was told, no seq was used.
    watcher.assert_quiet()
    assert client.get(root + ".count") == {"value": 5, "seq": seq}
    # An object id that does not exist is 1001.
    assert client.fail("get", {"path": "$999999999.x"}, UNDEFINED_KEY, schema_valid=True) == {"path": "$999999999"}


def test_unknown_subscription(connect):
    client = connect()
    assert client.fail("unsubscribe", {"subscription": 987654321}, UNKNOWN_SUBSCRIPTION, schema_valid=True) == {
        "subscription": 987654321}
    assert client.fail("unsubscribe", [-1], UNKNOWN_SUBSCRIPTION, schema_valid=True) == {"subscription": -1}


def test_batch(connect):
    client = connect()
    path = fresh_key() + ".b"
    subscribe = client.make("subscribe", {"path": path, "options": ["new", "old", "initial"]})
    set_ = client.make("set", [path, 1])
    quiet = client.make("ping", one_way=True)
    unknown = client.make("nope")
    get = client.make("get", [path])
    client.send_batch([subscribe, set_, quiet, unknown, get], schema_valid=False)  # "nope" is no kvod method

    # The set's notification is queued before the batch's responses, the initial notification after them.
    change = client.recv_change()
    batch = client.recv()
    initial = client.recv_change()
    assert batch.kind == "batch", batch
    responses = list(batch.parsed)
    assert [r.unique_id for r in responses] == [subscribe.unique_id, set_.unique_id, unknown.unique_id, get.unique_id]
    subscribed, set_result, failed, got = responses
    seq = set_result.result["seq"]
    subscription = subscribed.result["subscription"]
    assert subscribed.result["seq"] == seq - 1
    assert failed._jsonrpc_error_code == METHOD_NOT_FOUND
    assert got.result == {"value": 1, "seq": seq}
    assert change == {"subscription": subscription, "path": path, "kind": "setting", "new": 1, "old": None,
                      "seq": seq}
    assert initial == {"subscription": subscription, "path": path, "kind": "setting", "new": None, "initial": True,
                       "seq": seq - 1}

    # A batch of notifications only gets no answer at all; it is still processed.
    client.send_batch([client.make("set", [path, 2], one_way=True), client.make("ping", one_way=True)])
    assert client.recv_change()["new"] == 2
    client.assert_quiet()

    # [] is one -32600 error, not an array; an entry that is not an object is a -32600 entry.
    client.expect_null_id()
    client.send_line(b"[]")
    message = client.recv()
    assert message.kind == "response" and message.parsed._jsonrpc_error_code == INVALID_REQUEST, message
    assert message.doc["id"] is None
    ping = client.make("ping")
    client.expect_null_id()
    client.send_line(b"[1," + ping.serialize() + b"]")
    message = client.recv()
    assert message.kind == "batch", message
    bad, pong = list(message.parsed)
    assert bad.unique_id is None and bad._jsonrpc_error_code == INVALID_REQUEST
    assert pong.unique_id == ping.unique_id and pong.result == "pong"


def test_values_round_trip(connect):
    client = connect()
    root = fresh_key()
    value = {"int": 9223372036854775807, "neg": -9223372036854775808, "float": 2.5, "big": 18446744073709551616,
             "s": "\u00e9\u4e2d\U0001F600 \"quoted\" \\ \n", "t": True, "n": None, "list": [1, [2, {"k": "v"}], []]}
    client.set(root + ".a", value)
    got = client.get(root + ".a")["value"]
    object_id = got.pop("$id")
    assert got.pop("big") == 1.8446744073709552e19  # beyond 64 bits: a double
    expected = dict(value)
    expected.pop("big")
    nested = got["list"][1][1]
    assert nested.pop("$id") != object_id
    assert got == expected

    # A cycle comes back as {"$ref": id}; a value read with get can be sent back with set ("$id" is ignored).
    client.set(root + ".a.self", {"$ref": object_id})
    read = client.get(root + ".a")["value"]
    assert read["self"] == {"$ref": object_id}
    client.set(root + ".copy", read)
    copy = client.get(root + ".copy")["value"]
    assert copy["$id"] != object_id and copy["int"] == value["int"]
    assert copy["self"]["$id"] == object_id and copy["self"]["self"] == {"$ref": object_id}  # linked, not copied


def test_closing_a_connection_does_not_disturb_others(connect, kvod, schemas):
    watcher, writer = connect("watcher"), connect("writer")
    path = fresh_key()
    subscription = watcher.subscribe(path, ["new"])["subscription"]

    # A client that subscribes, leaves half a line, and goes away.
    leaver = connect("leaver")
    leaver.subscribe(path, ["new", "old", "prior"])
    leaver.sock.sendall(b'{"jsonrpc":"2.0","id":99,"method":"se')
    leaver.close()

    # A client that subscribes, never reads what it is sent, and goes away abruptly.
    sleeper = connect("sleeper")
    sleeper.subscribe(path, ["new", "old"], context="x" * 1000)
    for i in range(50):
        writer.set(path, i)
    assert [watcher.recv_change()["new"] for _ in range(50)] == list(range(50))
    sleeper.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
    sleeper.close()

    seq = writer.set(path, "after")
    change = watcher.recv_change()
    assert (change["subscription"], change["new"], change["seq"]) == (subscription, "after", seq)
    newcomer = connect("newcomer")
    assert newcomer.ok("hello", {"client": "newcomer"})["server"] == "kvod"
    assert newcomer.get(path) == {"value": "after", "seq": seq}


def test_a_line_over_the_limit_closes_only_that_connection(connect):
    other = connect("other")
    greedy = connect("greedy")
    greedy.expect_null_id()
    line = b'{"jsonrpc":"2.0","id":1,"method":"get","params":{"path":"' + b"a" * DEFAULT_MAX_LINE_BYTES + b'"}}'
    try:
        greedy.send_line(line)
    except (BrokenPipeError, ConnectionResetError):
        pass  # kvod may close before it has read the whole line; what it sent before must still arrive
    message = greedy.recv()
    assert message.kind == "response" and message.parsed._jsonrpc_error_code == LIMIT_EXCEEDED, message
    assert message.doc["error"]["data"]["limit"] == DEFAULT_MAX_LINE_BYTES
    closing = greedy.recv()
    assert closing.kind == "notification" and closing.parsed.method == "closing", closing
    assert closing.parsed.kwargs == {"reason": "line_too_long"}
    greedy.expect_eof()
    greedy.close()
    assert other.ok("ping") == "pong"


def test_a_batch_over_the_limit_is_one_1009_error(connect):
    client = connect()
    client.expect_null_id()
    client.send_line(b"[" + b",".join([b'{"jsonrpc":"2.0","method":"ping"}'] * 10001) + b"]")
    message = client.recv()
    assert message.kind == "response" and message.parsed._jsonrpc_error_code == LIMIT_EXCEEDED, message
    assert message.doc["error"]["data"] == {"limit": 10000}


def test_conditional_writes_and_meta_follow_the_schemas(connect):
    # Every request here is checked against request.schema.json (with `if` and `meta`) and every reply against the
    # response and result schemas (modSeq, error 1011).
    client = connect()
    key = fresh_key()
    first = client.ok("set", {"path": key, "value": {"n": 1}, "if": {"absent": True}})
    meta = client.ok("get", {"path": key + ".n", "meta": True})
    assert meta["modSeq"] == first["seq"] and meta["value"] == 1
    assert client.ok("get", [key + ".n", True])["modSeq"] == first["seq"]
    data = client.fail("set", {"path": key + ".n", "value": 2, "if": {"modSeq": first["seq"] - 1}}, 1011,
                       schema_valid=True)
    assert data == {"path": key + ".n", "value": 1, "modSeq": first["seq"]}
    client.ok("set", {"path": key + ".n", "value": 2, "if": {"value": 1}})
    client.ok("set", [key + ".list", [], {"absent": True}])
    client.ok("insert", {"path": key + ".list", "value": "a", "if": {"value": []}})
    data = client.fail("transaction", {"ops": [
        {"method": "set", "params": {"path": key + ".n", "value": 3}},
        {"method": "remove", "params": {"path": key + ".list", "index": 0, "if": {"modSeq": 0}}}]}, 1011,
        schema_valid=True)
    assert data["op"] == 1 and data["value"] == ["a"]
    client.fail("set", {"path": key, "value": 1, "if": {"absent": False}}, -32602)
    assert client.ok("get", {"path": key + ".n"})["value"] == 2
