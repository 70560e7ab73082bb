"""The part of a kvod client that does no I/O, shared by the blocking and the asyncio client: addresses, request
messages (a transport frames them: kvod/_transport.py), routing of what kvod sends (responses by id,
`change`/`progress` notifications by subscription, `closing`), and each subscription's resume point (the last seq
it delivered), so a reconnect can resubscribe with `since` and the caller sees no gap and no duplicate
(Protocol/README.md#resuming); presence: the `onDisconnect` ops kvod last accepted, which every new connection
registers again, and the hooks to call on each connection (`Presence`, `ConnectedHooks`); and the two clients' common
bases, ClientBase and SubscriptionBase: what remains in kvod/client.py and kvod/aio.py is the same steps written once
blocking and once with await."""

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union
from urllib.parse import urlsplit

from .errors import ConnectionLost, InvalidParams, KvodError, NotLeader, ResyncRequired, error_from_wire

OPTIONS = ("new", "old", "initial", "prior")
TRANSPORTS = ("tcp", "websocket")
Address = Union[str, Tuple[str, int]]
logger = logging.getLogger("kvod")


@dataclass(frozen=True)
class Endpoint:
    """One address to connect to: `url` is set (ws:// or wss://) for the websocket transport only; `tls` when the
    address asked for TLS (`kvods://`, `wss://`)."""

    host: str
    port: int
    url: Optional[str] = None
    tls: bool = False

    def __str__(self) -> str:
        return self.url or f"{self.host}:{self.port}"


def parse_addresses(addresses: Union[Address, Sequence[Address]], transport: str = "tcp",
                    tls: bool = False) -> List[Endpoint]:
    """`"host:port"`, `(host, port)`, `kvods://host:port` (TLS) or `kvod://host:port`, or a list of them (tried in
    turn when connecting); with the websocket transport also `ws://host:port/path` or `wss://...` URLs (a plain
    address becomes `ws://host:port/`, or `wss://` with `tls`)."""
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown transport {transport!r}; kvod's transports are {', '.join(TRANSPORTS)}")
    if isinstance(addresses, (str, tuple)):
        addresses = [addresses]
    parsed = []
    for address in addresses:
        address_tls = tls
        if isinstance(address, str) and address.startswith(("kvods://", "kvod://")):
            if transport == "websocket":
                raise ValueError(f"{address!r} is a JSON-lines address: give ws:// or wss:// URLs for WebSocket")
            address_tls = tls or address.startswith("kvods://")
            address = address.split("://", 1)[1].rstrip("/")
        elif isinstance(address, str) and "://" in address:
            parsed.append(_websocket_url(address, transport))
            continue
        if isinstance(address, tuple):
            host, port = address[0], int(address[1])
        else:
            host, _, digits = address.rpartition(":")
            if not host or not digits.isdigit():
                raise ValueError(f"not a host:port address: {address!r}")
            host, port = host.strip("[]"), int(digits)
        url = None
        if transport == "websocket":
            scheme = "wss" if address_tls else "ws"
            url = f"{scheme}://[{host}]:{port}/" if ":" in host else f"{scheme}://{host}:{port}/"
        parsed.append(Endpoint(host, port, url, address_tls))
    if not parsed:
        raise ValueError("no address given")
    return parsed


def leader_endpoint(error: KvodError, transport: str, tls: bool = False) -> Optional[Endpoint]:
    """The leader a 1012 "not the leader" error names in `data.leader` (its advertised `host:port`, docs/SCALING.md),
    as an Endpoint for `transport` (kvod serves WebSocket on the same port), or None when it names none."""
    leader = (error.data or {}).get("leader") if isinstance(error.data, dict) else None
    if not isinstance(leader, str):
        return None
    try:
        return parse_addresses(leader, transport, tls)[0]
    except ValueError:
        return None


def connection_order(addresses: Sequence[Endpoint], preferred: Optional[Endpoint],
                     last: Optional[Endpoint]) -> List[Endpoint]:
    """The endpoints to try when (re)connecting: `preferred` (the leader a 1012 named) first, then the addresses
    after `last` (the one just lost) in turn, `last` itself at the end."""
    start = addresses.index(last) + 1 if last in addresses else 0
    order = list(addresses[start:]) + list(addresses[:start])
    if preferred is not None:
        order = [preferred] + [endpoint for endpoint in order if endpoint != preferred]
    return order


def _websocket_url(address: str, transport: str) -> Endpoint:
    url = urlsplit(address)
    if url.scheme not in ("ws", "wss"):
        raise ValueError(f"not a ws:// or wss:// URL: {address!r}")
    if transport != "websocket":
        raise ValueError(f"{address!r} is a WebSocket URL: connect with transport=\"websocket\"")
    try:
        port = url.port or (443 if url.scheme == "wss" else 80)
    except ValueError:
        raise ValueError(f"not a valid port in {address!r}") from None
    if not url.hostname:
        raise ValueError(f"no host in {address!r}")
    return Endpoint(url.hostname, port, address, url.scheme == "wss")


@dataclass(frozen=True)
class Change:
    """One change notification (Protocol/README.md#notifications). `new`/`old` are None when absent; `has_new` and
    `has_old` tell absent from null. `count` is a live query's number of matches (Protocol/methods.md#queries), None
    for other subscriptions."""

    path: str
    kind: str
    seq: int
    new: Any = None
    old: Any = None
    has_new: bool = False
    has_old: bool = False
    indexes: Optional[List[int]] = None
    prior: bool = False
    initial: bool = False
    context: Any = None
    count: Optional[int] = None

    @staticmethod
    def from_params(params: Dict[str, Any]) -> "Change":
        """The Change a `change` notification's params describe."""
        return Change(
            path=params.get("path", ""), kind=params.get("kind", "setting"), seq=params.get("seq", 0),
            new=params.get("new"), old=params.get("old"), has_new="new" in params, has_old="old" in params,
            indexes=params.get("indexes"), prior=bool(params.get("prior", False)),
            initial=bool(params.get("initial", False)), context=params.get("context"), count=params.get("count"))


@dataclass(frozen=True)
class Resync:
    """The subscription could not resume after a reconnect: kvod's history no longer reached back to `since`
    (error 1010). Changes between `since` and `seq` were missed; the subscription continues live from `seq` (with an
    initial notification first when it was created with the `initial` option)."""

    path: str
    since: int
    oldest: Optional[int]
    seq: int


@dataclass
class SubscriptionState:
    """What a subscription needs to survive reconnects; the clients wrap it in their own Subscription type."""

    path: str
    options: Tuple[str, ...]
    context: Any
    progress: Optional[float]
    server_id: Optional[int] = None
    # The seq up to which every notification was delivered (initial, after, progress): the resume point.
    last_seq: Optional[int] = None
    # A prior notification delivered whose after has not come yet: a replay must not deliver it again.
    prior_seq: Optional[int] = None
    active: bool = True
    sink: Any = None  # the client's queue
    # The error that ended the subscription (kvod refused to resume it for good: `resume_refused`), else None.
    error: Optional[KvodError] = None
    # Retrying a refused resume (-32602 behind, 1012), across reconnections: until when, and the leaders moved to.
    retry_deadline: Optional[float] = None
    retry_tried: Set[Endpoint] = field(default_factory=set)
    # A live query's `query` object (Protocol/methods.md#queries), sent with every subscribe; None for a plain one.
    query: Optional[Dict[str, Any]] = None
    # A live query gets several after notifications at one seq (a move is a removal and an insertion): how many were
    # delivered at `last_seq`, and how many replays of them a resume from the seq before still has to drop.
    at_last_seq: int = 0
    skip_at_last_seq: int = 0

    def resume_since(self) -> Optional[int]:
        """The `since` of a resume. A live query that has notifications of `last_seq` resumes from the seq before
        and drops as many replays at `last_seq`: a connection lost between two notifications of one seq neither
        loses the second nor repeats the first."""
        if self.last_seq is None:
            return None
        if self.query is not None and self.at_last_seq > 0:
            self.skip_at_last_seq = self.at_last_seq
            return self.last_seq - 1
        return self.last_seq

    def resume_refused(self, error: KvodError, endpoint: Optional[Endpoint], transport: str, leader_wait: float,
                       now: float) -> "ResumeStep":
        """The next step after kvod refused this subscription's `subscribe` on a new connection: the one place that
        decides, per error code, what the clients do (the table in README.md#when-a-subscription-cannot-resume).
        1010 (with a resume point): resync. -32602 with data.reason "behind" (a follower behind `since`) and 1012
        (not the leader): retry on
        another connection, for up to `leader_wait` seconds across reconnections; then, and at once for any other
        code (1008 the token no longer allows the path, 1001 the model no longer declares the key, 1005, 1009 too
        many subscriptions, ...), which reconnecting cannot cure: end the subscription with the error."""
        if isinstance(error, ResyncRequired) and self.last_seq is not None:
            return ResumeStep("resync")
        behind = isinstance(error, InvalidParams) and isinstance(error.data, dict) and error.data.get("reason") == "behind"
        if behind or isinstance(error, NotLeader):
            if self.retry_deadline is None:
                self.retry_deadline = now + leader_wait
            if now < self.retry_deadline:
                leader = leader_endpoint(error, transport) if isinstance(error, NotLeader) else None
                if leader is not None and (leader == endpoint or leader in self.retry_tried):
                    leader = None  # a dead leader is named until its lease expires: each is tried once
                if leader is not None:
                    self.retry_tried.add(leader)
                logger.info("kvod: %s cannot resume on %s yet (%r); retrying on another connection",
                            self.path, endpoint, error)
                return ResumeStep("retry", leader)
        self.retry_deadline, self.retry_tried = None, set()
        logger.warning("kvod: the subscription to %s cannot resume on %s: %r; it ends with that error",
                       self.path, endpoint, error)
        return ResumeStep("end")

    def restart(self) -> None:
        """Forgets the resume point: kvod refused `since` (1010), so the subscription starts over."""
        self.last_seq = None
        self.prior_seq = None
        self.at_last_seq = self.skip_at_last_seq = 0

    def resynced(self, since: Optional[int], refusal: KvodError, result: Dict[str, Any]) -> "Resync":
        """After `restart()` and a fresh subscribe that answered `result`: the new resume point, and the Resync item
        that tells the caller what was missed."""
        if "initial" not in self.options:
            self.last_seq = result["seq"]
        data = refusal.data if isinstance(refusal.data, dict) else {}
        return Resync(self.path, since or 0, data.get("oldest"), result["seq"])

    def subscribe_params(self, since: Optional[int]) -> Dict[str, Any]:
        options = [o for o in self.options if since is None or o != "initial"]
        params: Dict[str, Any] = {"path": self.path, "options": options}
        if self.context is not None:
            params["context"] = self.context
        if self.progress is not None:
            params["progress"] = self.progress
        if since is not None:
            params["since"] = since
        if self.query is not None:
            params["query"] = self.query
        return params


@dataclass(frozen=True)
class ResumeStep:
    """What a connection's setup does after kvod refused to resume a subscription (SubscriptionState.resume_refused):
    `resync` (subscribe afresh, then deliver a Resync item), `retry` (drop this connection: the reconnection, with its
    backoff, tries `leader` first when one is set, else the next address) or `end` (end the subscription: its
    iterator raises the error; the connection and the other subscriptions go on)."""

    action: str
    leader: Optional[Endpoint] = None


@dataclass
class Pending:
    method: str
    params: Any
    subscription: Optional[SubscriptionState] = None


@dataclass
class Routed:
    """What to do with one message from kvod."""

    # (request id, result or KvodError) for a response
    response: Optional[Tuple[int, Any]] = None
    # (subscription, Change) for a notification to deliver
    deliveries: List[Tuple[SubscriptionState, Any]] = field(default_factory=list)
    closing: Optional[str] = None


class Session:
    """Request ids, pending requests and live subscriptions of one client, across its connections."""

    def __init__(self) -> None:
        self.next_id = 1
        self.pending: Dict[int, Pending] = {}
        self.subscriptions: List[SubscriptionState] = []
        self.by_server_id: Dict[int, SubscriptionState] = {}
        self.presence = Presence()

    def request(self, method: str, params: Any = None, subscription: Optional[SubscriptionState] = None) -> Tuple[int, bytes]:
        """A new request id and its message, encoded, without framing (the transport adds a newline or a frame)."""
        request_id = self.next_id
        self.next_id += 1
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.pending[request_id] = Pending(method, params, subscription)
        return request_id, json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()

    def route(self, line: Union[bytes, str]) -> Routed:
        """Routes one message (a line's or a text frame's content). A subscribe's response registers its
        subscription before anything after it is routed, so an initial or replayed notification right behind the
        response finds it."""
        message = json.loads(line)
        routed = Routed()
        if isinstance(message, list):  # a batch response: this client sends no batches
            return routed
        if "id" in message and message.get("id") is not None and ("result" in message or "error" in message):
            request_id = message["id"]
            pending = self.pending.pop(request_id, None)
            if "error" in message:
                outcome: Any = error_from_wire(message["error"])
            else:
                outcome = message["result"]
                if pending is not None and pending.subscription is not None and pending.method == "subscribe":
                    self.registered(pending.subscription, outcome)
                if pending is not None and pending.method == "onDisconnect":
                    self.presence.accepted(pending.params)
            routed.response = (request_id, outcome)
            return routed
        method = message.get("method")
        params = message.get("params") or {}
        if method == "change":
            state = self.by_server_id.get(params.get("subscription"))
            if state is not None and state.active:
                change = Change.from_params(params)
                if self.accept(state, change):
                    routed.deliveries.append((state, change))
        elif method == "progress":
            state = self.by_server_id.get(params.get("subscription"))
            if state is not None and isinstance(params.get("seq"), int):
                if params["seq"] > (state.last_seq or 0):
                    state.at_last_seq = state.skip_at_last_seq = 0
                state.last_seq = max(state.last_seq or 0, params["seq"])
        elif method == "closing":
            routed.closing = params.get("reason", "")
        return routed

    @staticmethod
    def accept(state: SubscriptionState, change: Change) -> bool:
        """Advances the resume point; False for a replayed notification the caller already has."""
        if change.prior:
            if state.prior_seq == change.seq or (state.last_seq is not None and change.seq <= state.last_seq):
                return False
            state.prior_seq = change.seq
            return True
        if state.query is not None:
            return Session.accept_query(state, change)
        if state.last_seq is not None and change.seq <= state.last_seq and not change.initial:
            return False
        state.prior_seq = None
        state.last_seq = change.seq if state.last_seq is None else max(state.last_seq, change.seq)
        return True

    @staticmethod
    def accept_query(state: SubscriptionState, change: Change) -> bool:
        """`accept` for a live query: an older seq is a replay, and so are the first `skip_at_last_seq` at
        `last_seq` after a resume (`resume_since`); the initial window starts the count afresh."""
        if change.initial:
            state.at_last_seq = state.skip_at_last_seq = 0
        elif state.last_seq is not None and change.seq < state.last_seq:
            return False
        elif state.last_seq is not None and change.seq == state.last_seq:
            if state.skip_at_last_seq > 0:
                state.skip_at_last_seq -= 1
                return False
            state.at_last_seq += 1
        else:
            state.at_last_seq, state.skip_at_last_seq = 1, 0
        state.last_seq = change.seq if state.last_seq is None else max(state.last_seq, change.seq)
        return True

    def registered(self, state: SubscriptionState, result: Dict[str, Any]) -> None:
        state.retry_deadline, state.retry_tried = None, set()
        if state.server_id is not None:
            self.by_server_id.pop(state.server_id, None)
        state.server_id = result["subscription"]
        self.by_server_id[state.server_id] = state
        if state.last_seq is None:
            # A fresh subscription: what it delivers starts after the subscribe's seq (or with its initial value).
            state.last_seq = result["seq"] if "initial" not in state.options else None
        if state not in self.subscriptions:
            self.subscriptions.append(state)

    def forget(self, state: SubscriptionState) -> None:
        state.active = False
        if state in self.subscriptions:
            self.subscriptions.remove(state)
        if state.server_id is not None:
            self.by_server_id.pop(state.server_id, None)

    def connection_lost(self) -> List[int]:
        """The ids of the requests that will never be answered; subscriptions are kept for resubscribing."""
        lost = list(self.pending)
        self.pending.clear()
        self.by_server_id.clear()
        for state in self.subscriptions:
            state.server_id = None
        return lost


# MARK: - Presence


@dataclass(frozen=True)
class Disconnected:
    """What an `on_disconnected` listener gets when a connection ends (kvod stopped or died, the network failed): the
    address it was to, the `closing` reason kvod gave when it sent one (`server_shutdown`, `slow_consumer`, ...; None
    after a kill -9 or a network failure), and whether the client reconnects by itself."""

    endpoint: Optional["Endpoint"]
    reason: Optional[str]
    reconnecting: bool


@dataclass(frozen=True)
class Connected:
    """What a connected hook gets, once per connection (the first and each reconnection), when the connection is ready:
    `hello` answered, the onDisconnect ops registered again, every subscription resumed. `server` is hello's result;
    `on_disconnect_error` is set when the remembered onDisconnect ops could not be registered on this connection (the
    error kvod gave, or NotLeader once `leader_wait` passed): this connection's end runs nothing."""

    connections: int
    endpoint: Endpoint
    server: Dict[str, Any]
    on_disconnect_error: Optional[KvodError] = None


@dataclass(frozen=True)
class RearmStep:
    """What a connection's setup does after kvod refused to register the onDisconnect ops again: `pause` (send them
    again on this connection after `seconds`), `move` (close it and connect to `leader` first) or `give_up` (go on
    without them; the error is in `Presence.error` and logged)."""

    action: str
    seconds: float = 0.0
    leader: Optional[Endpoint] = None


class Presence:
    """The `onDisconnect` ops kvod last accepted from this client (through `on_disconnect` or a plain `call`; None when
    none or cancelled), which every new connection registers again right after `hello`
    (Protocol/methods.md#ondisconnect: a registration belongs to its connection). A refusal with 1012 "not the leader"
    is retried as calls retry it (on the leader it names, else after pauses of 0.1 s doubling to 1 s) for up to
    `leader_wait` seconds, across reconnections; then, or at once for any other error, the connection goes on
    without them and `error` says why, until a registration succeeds."""

    def __init__(self) -> None:
        self.ops: Optional[List[Any]] = None
        self.error: Optional[KvodError] = None
        self._deadline: Optional[float] = None
        self._pause = 0.1
        self._tried: Set[Endpoint] = set()

    def accepted(self, params: Any) -> None:
        """kvod answered an `onDisconnect` with these params: they are what it holds now (`[]` cancelled)."""
        ops = params.get("ops") if isinstance(params, dict) else None
        self.ops = list(ops) if ops else None
        self.error = None
        self._reset()

    def rearm_params(self) -> Optional[Dict[str, Any]]:
        """The params that register the remembered ops again, or None when there are none."""
        return None if self.ops is None else {"ops": self.ops}

    def refused(self, error: KvodError, endpoint: Optional[Endpoint], transport: str, leader_wait: float,
                now: float) -> RearmStep:
        """The next step after kvod refused to register the ops again on the connection to `endpoint`."""
        if isinstance(error, NotLeader):
            if self._deadline is None:
                self._deadline = now + leader_wait
            if now < self._deadline:
                leader = leader_endpoint(error, transport)
                # A dead leader is named until its lease expires: each named leader is tried once.
                if leader is not None and leader != endpoint and leader not in self._tried:
                    self._tried.add(leader)
                    return RearmStep("move", leader=leader)
                seconds = min(self._pause, self._deadline - now)
                self._pause = min(self._pause * 2, 1.0)
                return RearmStep("pause", seconds)
        self.error = error
        self._reset()
        logger.warning("kvod: the onDisconnect ops could not be registered again on %s: %r; this connection's end "
                       "runs nothing", endpoint, error)
        return RearmStep("give_up")

    def _reset(self) -> None:
        self._deadline, self._pause, self._tried = None, 0.1, set()


ConnectedHook = Callable[[Connected], Any]


class ConnectedHooks:
    """The hooks to call on each connection, and the last connection's `Connected` (a hook added while connected is
    called with it at once, as Firebase's `.info/connected` fires with the current state)."""

    def __init__(self) -> None:
        self.hooks: List[ConnectedHook] = []
        self.last: Optional[Connected] = None

    def add(self, hook: ConnectedHook) -> Callable[[], None]:
        self.hooks.append(hook)

        def remove() -> None:
            if hook in self.hooks:
                self.hooks.remove(hook)
        return remove

    def connected(self, info: Connected) -> List[ConnectedHook]:
        """Records a new connection; the hooks to call with `info`."""
        self.last = info
        return list(self.hooks)


def run_hook(hook: ConnectedHook, info: Connected) -> Any:
    """Calls a connected hook; an exception is logged (it must not stop the client), its result returned."""
    try:
        return hook(info)
    except Exception:  # noqa: BLE001 - a user's hook
        logger.exception("kvod: a connected hook raised")
        return None


def ops_params(ops: Iterable[Any]) -> Dict[str, Any]:
    """The `{"ops": [...]}` params of `transaction` and `onDisconnect`, from ops given as `{"method", "params"}` dicts
    (as they are) or `(method, params)` pairs."""
    if isinstance(ops, (str, bytes, dict)):
        raise TypeError("ops: a list of {\"method\", \"params\"} dicts or (method, params) pairs")
    return {"ops": [op if isinstance(op, dict) else {"method": op[0], "params": op[1]} for op in ops]}


def check_options(options: Iterable[str]) -> Tuple[str, ...]:
    options = tuple(options)
    for option in options:
        if option not in OPTIONS:
            raise ValueError(f"unknown option {option!r}; kvod's options are {', '.join(OPTIONS)}")
    return options


def condition(if_mod_seq: Optional[int], if_value: Any, if_absent: bool) -> Optional[Dict[str, Any]]:
    """The `if` of a conditional write (Protocol/methods.md#set), or None; at most one may be given."""
    given = [c for c in ({"modSeq": if_mod_seq} if if_mod_seq is not None else None,
                         {"value": if_value} if if_value is not _UNSET else None,
                         {"absent": True} if if_absent else None) if c is not None]
    if len(given) > 1:
        raise ValueError("give at most one of if_mod_seq, if_value, if_absent")
    return given[0] if given else None


def set_params(path: str, value: Any, if_mod_seq: Optional[int], if_value: Any, if_absent: bool,
               ttl: Optional[float] = None) -> Dict[str, Any]:
    """`set`'s params, with the `if` of `condition` when one is given and the `ttl` (seconds) when there is one."""
    params: Dict[str, Any] = {"path": path, "value": value}
    when = condition(if_mod_seq, if_value, if_absent)
    if when is not None:
        params["if"] = when
    if ttl is not None:
        params["ttl"] = ttl
    return params


def page_params(path: str, offset: int, limit: Optional[int]) -> Dict[str, Any]:
    """`get`'s params for a page of a collection (Protocol/methods.md#get)."""
    params: Dict[str, Any] = {"path": path, "offset": offset}
    if limit is not None:
        params["limit"] = limit
    return params


def mutation_params(path: str, **named: Any) -> Dict[str, Any]:
    """A collection mutation's params: `path` and the named ones that were given."""
    params: Dict[str, Any] = {"path": path}
    params.update({key: value for key, value in named.items() if value is not _UNSET})
    return params


# What a subscription's queue gets once the subscription has ended (unsubscribed, or the client is done).
CLOSED: Any = object()


class SubscriptionBase:
    """What the blocking and the asyncio Subscription share: the state they wrap, and the read-only view of it."""

    def __init__(self, client: Any, state: SubscriptionState, queue: Any):
        self._client = client
        self._state = state
        self._queue = queue
        state.sink = queue
        self.seq: Optional[int] = None  # the seq the subscribe reported

    @property
    def id(self) -> Optional[int]:
        """kvod's id for this subscription on the current connection (it changes after a reconnect)."""
        return self._state.server_id

    @property
    def path(self) -> str:
        """The key path this subscription observes."""
        return self._state.path

    @property
    def last_seq(self) -> Optional[int]:
        """The seq up to which every notification was delivered: where a resume starts."""
        return self._state.last_seq

    @property
    def error(self) -> Optional[KvodError]:
        """The error that ended the subscription, when kvod refused to resume it after a reconnect for a reason
        reconnecting cannot cure (README.md#when-a-subscription-cannot-resume); None while it lives."""
        return self._state.error


class ClientBase:
    """What the blocking and the asyncio client share: their options and Session, and the steps that do no I/O
    (hello's params, handing routed notifications to their subscriptions, choosing the leader to follow). Each
    client adds its own connection, reader and calls."""

    def __init__(self, addresses: Union[Address, Sequence[Address]], token: Optional[str], client_name: str,
                 timeout: float, reconnect: bool, max_backoff: float, transport: str, leader_wait: float,
                 tls: Any = None):
        self._addresses = parse_addresses(addresses, transport, tls is not None and tls is not False)
        # TLS (an ssl.SSLContext) for every connection, leaders a 1012 names included: the one given, or the
        # default context (the system's CAs, host names checked) when an address asked for TLS; None: plaintext.
        self.ssl_context = tls_context(tls, any(endpoint.tls for endpoint in self._addresses))
        self.leader_wait = leader_wait
        self.endpoint: Optional[Endpoint] = None  # the address of the current (or last) connection
        self._preferred: Optional[Endpoint] = None  # the leader a 1012 named: tried first on the next connect
        self.transport = transport
        self._token = token
        self._client_name = client_name
        self.timeout = timeout
        self._reconnect = reconnect
        self._max_backoff = max_backoff
        self._session = Session()
        self._closed = False
        self._ended = False  # the connection dropped and reconnect=False: calls fail at once
        self.closing_reason: Optional[str] = None
        self.connections = 0  # how many connections were made (1 + reconnections)
        self._hooks = ConnectedHooks()
        self._disconnected_listeners: List[Callable[[Disconnected], Any]] = []
        self._closing_connection = -1  # the connection (`connections` then) that `closing_reason` came on
        # Why kvod refused `hello` on the last connection attempts (a token it no longer accepts); None once connected.
        self.hello_error: Optional[KvodError] = None

    def _hello_params(self, token: Optional[str] = None) -> Dict[str, Any]:
        """`hello`'s params; a `token` given replaces the one kept for reconnections."""
        if token is not None:
            self._token = token
        params: Dict[str, Any] = {"client": self._client_name}
        if self._token is not None:
            params["token"] = self._token
        return params

    def _hello_refused(self, error: KvodError) -> None:
        """kvod refused `hello` on a new connection (a token it no longer accepts): the client keeps reconnecting with
        backoff, which helps only once kvod accepts the token again; a warning says so, once per error code until a
        connection succeeds (the first connection raises it instead), and calls waiting for the connection time out
        naming it."""
        if isinstance(error, ConnectionLost):
            return  # the connection dropped: not a refusal
        if self.connections > 0 and (self.hello_error is None or self.hello_error.code != error.code):
            logger.warning("kvod: %s refused hello: %r; reconnecting with backoff until it accepts it",
                           self.endpoint, error)
        self.hello_error = error

    def _not_connected(self) -> str:
        """The Timeout message of a call that waited for a connection in vain."""
        refused = f": kvod refused hello ({self.hello_error!r})" if self.hello_error is not None else ""
        return f"not connected to kvod within {self.timeout} s{refused}"

    def _deliver(self, routed: Routed) -> None:
        for state, change in routed.deliveries:
            state.sink.put_nowait(change)
        if routed.closing is not None:
            self.closing_reason = routed.closing
            self._closing_connection = self.connections

    def _add_disconnected_listener(self, listener: Callable[[Disconnected], Any]) -> Callable[[], None]:
        self._disconnected_listeners.append(listener)

        def remove() -> None:
            if listener in self._disconnected_listeners:
                self._disconnected_listeners.remove(listener)
        return remove

    def _disconnected(self) -> Disconnected:
        """What the listeners get for the connection that just ended."""
        reason = self.closing_reason if self._closing_connection == self.connections else None
        return Disconnected(self.endpoint, reason, not self._closed and self._reconnect)

    def _end_subscription(self, state: SubscriptionState, error: KvodError) -> None:
        """Ends a subscription kvod refused to resume for good: its iterator raises `error` (each time it is asked
        for the next item, once the items before it are read), the other subscriptions go on."""
        self._session.forget(state)
        state.error = error
        state.sink.put_nowait(error)

    def _leader_to_follow(self, refusal: KvodError, tried: set) -> Optional[Endpoint]:
        """After a 1012: the leader it names, when the connection should move there (not this member, nor one this
        call already moved to: a dead leader is named until its lease expires); None when the caller should wait."""
        leader = leader_endpoint(refusal, self.transport, self.ssl_context is not None)
        if leader is None or leader == self.endpoint or leader in tried:
            return None
        tried.add(leader)
        return leader


def tls_context(tls: Any, asked: bool) -> Any:
    """The client's TLS: `tls` as given (an `ssl.SSLContext`), a default context for `tls=True` or when an address
    asked for TLS (`kvods://`, `wss://`), else None."""
    import ssl

    if isinstance(tls, ssl.SSLContext):
        return tls
    if tls is True or asked:
        return ssl.create_default_context()
    if tls not in (None, False):
        raise ValueError(f"tls must be an ssl.SSLContext, True or None, not {tls!r}")
    return None


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


_UNSET: Any = _Unset()
UNSET = _UNSET
KvodError = KvodError
