"""The blocking client: one connection to kvod (TCP, or WebSocket with the `websocket` extra), a reader thread that
routes responses to callers and notifications to subscriptions, and automatic reconnection (with backoff, trying
each address in turn) that resubscribes every live subscription with `since`, so iterating a subscription shows no
gap and no duplicate. Given the members of a cluster, it follows the leader: a request refused with 1012 "not the
leader" moves the connection to the leader named in the error (or waits out an election) and is sent again. Presence:
the onDisconnect ops kvod last accepted are registered again on every new connection, before anything else is sent
on it, and connected hooks run (on their own thread) once each connection is ready."""

import queue
import threading
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from ._core import (CLOSED, UNSET, Address, Change, ClientBase, Connected, ConnectedHook, Disconnected, Resync, SubscriptionBase,
                    SubscriptionState, check_options, connection_order, mutation_params, ops_params, page_params,
                    run_hook, set_params)
from ._query import (LiveQueryBase, OrderBy, QueryChange, QueryResult, query_params, run_callback)
from ._transport import BlockingTransport, blocking_transport
from .errors import ConnectionLost, KvodError, NotLeader, Timeout


class Subscription(SubscriptionBase):
    """A live subscription: iterate it for Change (and Resync) items; `next(timeout)` waits at most that long. When
    kvod refuses to resume it after a reconnect for a reason reconnecting cannot cure, iterating it raises that error
    (a KvodError subclass, also in `error`) after the items delivered before."""

    def __init__(self, client: "Client", state: SubscriptionState):
        super().__init__(client, state, queue.Queue())

    def next(self, timeout: Optional[float] = None) -> Union[Change, Resync]:
        """The next change (or Resync); raises Timeout after `timeout` seconds, StopIteration once unsubscribed, the
        error that ended the subscription once it ended (each call after that ends the same way)."""
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise Timeout(f"no notification for {self.path} within {timeout} s") from None
        if item is CLOSED or isinstance(item, KvodError):
            self._queue.put(item)
            if item is CLOSED:
                raise StopIteration
            raise item
        return item

    def __iter__(self) -> Iterator[Union[Change, Resync]]:
        return self

    def __next__(self) -> Union[Change, Resync]:
        return self.next()

    def unsubscribe(self) -> None:
        """Ends this subscription (`Client.unsubscribe`)."""
        self._client.unsubscribe(self)


class LiveQuery(LiveQueryBase):
    """A live query (`Client.live_query`): the window of a query, kept up to date by kvod's notifications. Iterate
    it (`for row in live`), index it, `len()` it; `count` is the number of matches in all. The reader thread applies
    each notification before the response that follows it, so once a call of this client returns, the window holds
    every change up to that call's seq. `on_change(callback)` calls back with a QueryChange per change, on the
    client's hook thread (callbacks may call the client). After a reconnection kvod sends the window again (a
    `setting` with `initial`). `with client.live_query(...) as live:` closes it at the end."""

    def __init__(self, client: "Client", state: SubscriptionState, query: Dict[str, Any]):
        super().__init__(client, state, query)
        self._condition = threading.Condition()

    def _apply(self, change: Change) -> Optional[QueryChange]:
        with self._condition:
            return super()._apply(change)

    def _changed(self, event: QueryChange) -> None:
        with self._condition:
            self._condition.notify_all()
        for callback in list(self._callbacks):
            self._call_later(callback, event)

    def _wake(self) -> None:
        with self._condition:
            self._condition.notify_all()

    def _call_later(self, callback: Callable[[QueryChange], Any], event: QueryChange) -> None:
        self._client._later(lambda _: run_callback(callback, event), None)

    def snapshot(self) -> QueryResult:
        """The window, the count and the seq, read together."""
        with self._condition:
            return QueryResult(list(self._mirror.rows), self._mirror.count, self._mirror.seq or 0)

    def wait_for(self, condition: Callable[["LiveQuery"], bool], timeout: Optional[float] = None) -> None:
        """Waits until `condition(self)` holds (checked now and after each change); raises Timeout after `timeout`
        seconds (default: the client's), the subscription's error if it ended."""
        timeout = self._client.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        with self._condition:
            while not condition(self):
                if self.error is not None:
                    raise self.error
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    raise Timeout(f"the live query on {self.path} did not get there within {timeout} s")
                self._condition.wait(left)

    def close(self) -> None:
        """Ends the live query: kvod stops sending its notifications; the window stays as it is."""
        if self._closed:
            return
        self._closed = True
        self._client._end_live_query(self._state)
        self._wake()

    def __enter__(self) -> "LiveQuery":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Client(ClientBase):
    """A blocking kvod client. `Client("127.0.0.1:7070")`, or several addresses to try in turn (the members of a
    cluster: after a disconnect the next one is tried first); `token` is sent with `hello` on every (re)connection.
    Every call waits at most `timeout` seconds, including while reconnecting. A call refused with 1012 "not the
    leader" moves the connection to the leader it names (or, during an election, waits) and is sent again, for up to
    `leader_wait` seconds; then NotLeader is raised.
    `transport="websocket"` speaks WebSocket (addresses may then be `ws://` or `wss://` URLs) and needs the
    `websocket` extra: without it, MissingExtra (an ImportError) at once. `tls` (an `ssl.SSLContext`, or True for
    the default context) speaks TLS to every address; a `kvods://host:port` or `wss://` address turns it on with the
    default context (Protocol/README.md#tls)."""

    def __init__(self, addresses: Union[Address, Sequence[Address]] = "127.0.0.1:7070", *, token: Optional[str] = None,
                 client_name: str = "kvod-python", timeout: float = 10.0, reconnect: bool = True,
                 max_backoff: float = 2.0, transport: str = "tcp", leader_wait: float = 10.0, tls: Any = None):
        super().__init__(addresses, token, client_name, timeout, reconnect, max_backoff, transport, leader_wait, tls)
        self._open_transport = blocking_transport(transport, self.ssl_context)
        self._lock = threading.RLock()
        self._connected = threading.Condition(self._lock)
        self._waiters: Dict[int, "queue.Queue[Any]"] = {}
        # The live connection; None while (re)connecting or once closed.
        self._transport: Optional[BlockingTransport] = None
        self._hook_queue: Optional["queue.Queue[Any]"] = None  # (hook, Connected) for the hook thread, once started
        self._connect(initial=True)
        self._reader = threading.Thread(target=self._read_loop, name="kvod-reader", daemon=True)
        self._reader.start()

    # MARK: - Connection

    def _open(self) -> BlockingTransport:
        errors = []
        for endpoint in connection_order(self._addresses, self._preferred, self.endpoint):
            try:
                connection = self._open_transport(endpoint, self.timeout)
                self.endpoint, self._preferred = endpoint, None
                return connection
            except OSError as error:
                errors.append(f"{endpoint}: {error}")
        self._preferred = None
        raise ConnectionLost("cannot connect: " + "; ".join(errors))

    def _connect(self, initial: bool) -> None:
        """Opens a connection, says hello, registers the onDisconnect ops again and resubscribes, then calls the
        connected hooks; on a reconnect, runs in the reader thread."""
        connection = self._open()
        connection_endpoint = self.endpoint
        # Callers wait until the connection is set up (hello, onDisconnect ops, resubscriptions), so the setup reads
        # its answers inline.
        self._setup = connection
        try:
            try:
                server = self._exchange("hello", self._hello_params())
            except KvodError as error:
                self._hello_refused(error)
                raise
            self._rearm()
            for state in list(self._session.subscriptions):
                self._resubscribe(state)
        except BaseException:
            connection.close()
            raise
        with self._lock:
            self._transport = connection
            self.connections += 1
            self.hello_error = None
            self._connected.notify_all()
            info = Connected(self.connections, connection_endpoint, server, self._session.presence.error)
            self._run_hooks(self._hooks.connected(info), info)

    def _rearm(self) -> None:
        """Registers the remembered onDisconnect ops on the connection being set up, right after hello: before the
        resubscriptions and before any caller's request, so presence is armed first (_core.Presence)."""
        presence = self._session.presence
        while presence.ops is not None:
            try:
                self._exchange("onDisconnect", presence.rearm_params())
                return
            except ConnectionLost:
                raise
            except KvodError as error:
                step = presence.refused(error, self.endpoint, self.transport, self.leader_wait, time.monotonic())
                if step.action == "move":
                    self._preferred = step.leader  # the reader reconnects, to the leader first
                    raise
                if step.action == "give_up":
                    return
                time.sleep(step.seconds)

    def _run_hooks(self, hooks: List[ConnectedHook], info: Connected) -> None:
        """Hands hooks to the hook thread: they may call the client, which a reader-thread hook could not."""
        for hook in hooks:
            self._later(hook, info)

    def _later(self, function: Callable[[Any], Any], argument: Any) -> None:
        """Calls `function(argument)` on the hook thread (connected hooks, live queries' change callbacks), in order;
        an exception is logged."""
        with self._lock:
            if self._hook_queue is None:
                self._hook_queue = queue.Queue()
                threading.Thread(target=self._hook_loop, args=(self._hook_queue,), name="kvod-hooks",
                                 daemon=True).start()
            self._hook_queue.put((function, argument))

    @staticmethod
    def _hook_loop(hooks: "queue.Queue[Any]") -> None:
        while True:
            item = hooks.get()
            if item is None:
                return
            run_hook(*item)

    def _exchange(self, method: str, params: Any, state: Optional[SubscriptionState] = None) -> Any:
        """A request answered inline (during connect, before the reader loop takes over this connection)."""
        connection = self._setup
        request_id, message = self._session.request(method, params, state)
        connection.send(message)
        while True:
            raw = connection.receive()
            if raw is None:
                raise ConnectionLost("the connection closed during setup")
            routed = self._session.route(raw)
            self._deliver(routed)
            if routed.response is not None and routed.response[0] == request_id:
                outcome = routed.response[1]
                if isinstance(outcome, KvodError):
                    raise outcome
                return outcome

    def _resubscribe(self, state: SubscriptionState) -> None:
        """Subscribes again with `since`; a refusal goes as `SubscriptionState.resume_refused` decides: resync (a
        Resync item), retry (the error ends this connection's setup: the reader reconnects) or end the subscription."""
        since, resync = state.last_seq, None
        while True:
            try:
                result = self._exchange("subscribe", state.subscribe_params(state.resume_since()), state)
            except ConnectionLost:
                raise
            except KvodError as error:
                step = state.resume_refused(error, self.endpoint, self.transport, self.leader_wait, time.monotonic())
                if step.action == "resync":
                    state.restart()
                    resync = error
                    continue
                if step.action == "end":
                    self._end_subscription(state, error)
                    return
                self._preferred = step.leader
                raise
            if resync is not None:
                state.sink.put(state.resynced(since, resync, result))
            return

    def _read_loop(self) -> None:
        backoff = 0.05
        while not self._closed:
            connection = self._transport  # close() may clear the attribute at any moment
            raw = connection.receive() if connection is not None else None
            if raw is not None:
                routed = self._session.route(raw)
                self._deliver(routed)
                if routed.response is not None:
                    with self._lock:
                        waiter = self._waiters.pop(routed.response[0], None)
                    if waiter is not None:
                        waiter.put(routed.response[1])
                continue
            # The connection is gone: fail what is in flight, then reconnect (or end every subscription).
            with self._lock:
                if self._transport is connection:
                    self._transport = None
            if connection is not None:
                connection.close()
            self._fail_pending()
            if connection is not None and not self._closed:
                info = self._disconnected()
                for listener in list(self._disconnected_listeners):
                    self._later(listener, info)
            if self._closed or not self._reconnect:
                with self._lock:
                    self._ended = True
                    self._connected.notify_all()
                break
            while not self._closed:
                try:
                    self._connect(initial=False)
                    backoff = 0.05
                    break
                except (OSError, KvodError):
                    self._fail_pending()
                    time.sleep(backoff)
                    backoff = min(backoff * 2, self._max_backoff)
        for state in list(self._session.subscriptions):
            state.sink.put(CLOSED)

    def _fail_pending(self) -> None:
        """Fails every request in flight: the connection they went out on is gone."""
        with self._lock:
            lost = self._session.connection_lost()
            waiters = [self._waiters.pop(request_id, None) for request_id in lost]
        for waiter in waiters:
            if waiter is not None:
                waiter.put(ConnectionLost("the connection closed before kvod answered"))

    # MARK: - Calls

    def call(self, method: str, params: Any = None) -> Any:
        """Sends one request and waits for its result; raises the KvodError subclass of an error response. A 1012
        "not the leader" refusal (nothing changed) is retried on the leader for up to `leader_wait` seconds."""
        return self._call(method, params, None)

    def _follow_leader(self, refusal: NotLeader, deadline: float, pause: float, tried: set) -> float:
        """After a 1012: moves the connection to the leader it names (the reader reconnects there, resubscribing
        every subscription), or, when it names none, this member or one already tried by this call (a dead leader
        is named until its lease expires), waits `pause`. Raises `refusal` once `deadline` has passed; returns the
        next pause."""
        if time.monotonic() >= deadline:
            raise refusal
        with self._lock:
            connection = self._transport
            leader = self._leader_to_follow(refusal, tried) if connection is not None else None
            if leader is not None:
                self._preferred = leader
                self._transport = None
            else:
                connection = None
        if connection is not None:
            connection.close()  # the reader sees the end and connects to the leader first
            return pause
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        return min(pause * 2, 1.0)

    def _call(self, method: str, params: Any, state: Optional[SubscriptionState]) -> Any:
        leader_deadline = time.monotonic() + self.leader_wait
        pause, tried = 0.1, set()
        while True:
            try:
                return self._call_once(method, params, state)
            except NotLeader as refusal:
                pause = self._follow_leader(refusal, leader_deadline, pause, tried)

    def _call_once(self, method: str, params: Any, state: Optional[SubscriptionState]) -> Any:
        deadline = time.monotonic() + self.timeout
        with self._lock:
            while self._transport is None:
                if self._closed:
                    raise ConnectionLost("the client is closed")
                if self._ended:
                    raise ConnectionLost("the connection closed, and the client does not reconnect")
                if not self._connected.wait(timeout=max(0.0, deadline - time.monotonic())):
                    raise Timeout(self._not_connected())
            request_id, message = self._session.request(method, params, state)
            waiter: "queue.Queue[Any]" = queue.Queue()
            self._waiters[request_id] = waiter
            try:
                self._transport.send(message)
            except OSError:
                pass  # the reader sees the close and fails the waiter
        try:
            outcome = waiter.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            with self._lock:
                self._waiters.pop(request_id, None)
            raise Timeout(f"{method}: no answer within {self.timeout} s") from None
        if isinstance(outcome, KvodError):
            raise outcome
        return outcome

    def hello(self, token: Optional[str] = None) -> Dict[str, Any]:
        """Says hello, presenting `token` (kept for reconnections; default: the client's); returns kvod's answer:
        `{"server", "version", "protocol"}`, with `access` under access control and `role`, `term`, ... in a
        cluster. Unauthorized for a wrong token."""
        return self.call("hello", self._hello_params(token))

    def ping(self) -> str:
        """Checks that kvod answers; returns `"pong"`."""
        return self.call("ping")

    def get(self, path: str) -> Any:
        """The value at `path` (objects as dicts with `"$id"` first); None when never set or when an intermediate is
        missing. UndefinedKey for a key the model does not declare, TypeMismatch for a path through a non-object."""
        return self.call("get", {"path": path})["value"]

    def get_with_seq(self, path: str) -> Tuple[Any, int]:
        """`(value, seq)`: the value at `path` and the seq of the state it was read from."""
        result = self.call("get", {"path": path})
        return result["value"], result["seq"]

    def get_meta(self, path: str) -> Dict[str, Any]:
        """`{"value", "seq", "modSeq", "expires"}`: the value, the seq that last stored the key (None if never set) and
        when its ttl passes (epoch ms, None without one)."""
        return self.call("get", {"path": path, "meta": True})

    def get_page(self, path: str, offset: int = 0, limit: Optional[int] = None) -> Dict[str, Any]:
        """`{"value", "count", "seq"}`: at most `limit` elements (default: to the end) of the collection at `path` from
        `offset`, and its element count; costs the page, not the collection (Protocol/methods.md#get). TypeMismatch
        when the value is not a collection."""
        return self.call("get", page_params(path, offset, limit))

    def set(self, path: str, value: Any, *, if_mod_seq: Optional[int] = None, if_value: Any = UNSET,
            if_absent: bool = False, ttl: Optional[float] = None) -> int:
        """Sets `path` to `value`; returns the mutation's seq. With one of `if_mod_seq` (unchanged since that seq),
        `if_value` (currently equal) or `if_absent`, a conditional write: PreconditionFailed when it does not hold.
        With `ttl` (seconds), kvod sets the key to null when it passes, unless a later set moves (with a ttl) or clears
        (without) the deadline. ValidationFailed, NullNotAllowed, ReadOnlyKey when the model refuses the value."""
        return self.call("set", set_params(path, value, if_mod_seq, if_value, if_absent, ttl))["seq"]

    def insert(self, path: str, value: Any = UNSET, *, values: Any = UNSET, index: Any = UNSET,
               indexes: Any = UNSET) -> int:
        """Inserts `value` (or `values`) into the collection at `path`, at `index` (or `indexes`, one per value) or, without,
        at the end of an ordered collection (a set adds the members it lacks); returns the seq. IndexOutOfRange."""
        return self.call("insert", mutation_params(path, value=value, values=values, index=index, indexes=indexes))["seq"]

    def remove(self, path: str, *, index: Any = UNSET, indexes: Any = UNSET, values: Any = UNSET) -> int:
        """Removes the elements at `index` (or `indexes`) of an ordered collection, or the members `values` of a set;
        returns the seq. IndexOutOfRange."""
        return self.call("remove", mutation_params(path, index=index, indexes=indexes, values=values))["seq"]

    def replace(self, path: str, value: Any = UNSET, *, values: Any = UNSET, index: Any = UNSET,
                indexes: Any = UNSET) -> int:
        """Replaces the element at `index` with `value` (or those at `indexes` with `values`) in an ordered collection;
        returns the seq. IndexOutOfRange."""
        return self.call("replace", mutation_params(path, value=value, values=values, index=index, indexes=indexes))["seq"]

    def union(self, path: str, values: Iterable[Any]) -> int:
        """Adds `values` to the set at `path` (those it lacks); returns the seq."""
        return self.call("union", {"path": path, "values": list(values)})["seq"]

    def minus(self, path: str, values: Iterable[Any]) -> int:
        """Removes `values` from the set at `path`; returns the seq."""
        return self.call("minus", {"path": path, "values": list(values)})["seq"]

    def intersect(self, path: str, values: Iterable[Any]) -> int:
        """Keeps only the members of the set at `path` that are in `values`; returns the seq."""
        return self.call("intersect", {"path": path, "values": list(values)})["seq"]

    def set_members(self, path: str, values: Iterable[Any]) -> int:
        """Makes the set at `path` exactly `values` (one change with what was added and removed); returns the seq."""
        return self.call("setMembers", {"path": path, "values": list(values)})["seq"]

    def transaction(self, ops: Iterable[Any]) -> int:
        """Applies ops atomically, each a `{"method", "params"}` dict or a `(method, params)` pair (set, insert, remove,
        replace, union, minus, intersect, setMembers): all with one seq, which it returns, or none (the error's
        `data["op"]` names the failing op)."""
        return self.call("transaction", ops_params(ops))["seq"]

    def validate(self, path: str, value: Any) -> Any:
        """What `set(path, value)` would store (after trimming and the like), without storing it; ValidationFailed
        (and the others `set` raises) when it would be refused."""
        return self.call("validate", {"path": path, "value": value})["value"]

    def describe(self, path: Optional[str] = None) -> Dict[str, Any]:
        """The model (`{"root", "classes"}`), or with `path` the class of the object there and its current keys
        (`{"path", "id", "class", "keys"}`; TypeMismatch when it is not an object)."""
        return self.call("describe", {} if path is None else {"path": path})

    def observers(self, path: Optional[str] = None) -> Dict[str, Any]:
        """`{"connections": [...]}`: every connection and its subscriptions (with `path`, only those to it)."""
        return self.call("observers", {} if path is None else {"path": path})

    def stats(self) -> Dict[str, Any]:
        """kvod's figures: seq, connections, subscriptions, requests, notifications, bytes, closes by reason, ...
        (Protocol/methods.md#stats)."""
        return self.call("stats")

    def subscribe(self, path: str, options: Iterable[str] = ("new",), context: Any = None, *,
                  since: Optional[int] = None, progress: Optional[float] = None) -> Subscription:
        """Observes `path` with KVO's options (`new`, `old`, `initial`, `prior`), `context` echoed in each change;
        returns a Subscription to iterate. With `since`, resumes after that seq (Protocol/README.md#resuming); with
        `progress` (seconds), kvod sends progress notices while quiet, which keep the resume point fresh. The
        subscription resumes by itself after a reconnect."""
        state = SubscriptionState(path, check_options(options), context, progress)
        subscription = Subscription(self, state)
        if since is not None:
            state.last_seq = since
        result = self._call("subscribe", state.subscribe_params(since), state)
        subscription.seq = result["seq"]
        return subscription

    # MARK: - Queries

    def query(self, path: str, where: Optional[str] = None, vars: Optional[Dict[str, Any]] = None,
              order_by: Optional[OrderBy] = None, offset: Optional[int] = None, limit: Optional[int] = None,
              select: Optional[List[str]] = None) -> QueryResult:
        """The elements of the collection at `path` that the predicate `where` keeps (NSPredicate's syntax, with
        `$NAME` variables from `vars`), sorted by `order_by` (`"key"`, `"-key"` or `{"key", "ascending",
        "caseInsensitive"}`, or a list of them), the window of `limit` from `offset`, each with the keys of `select`:
        a QueryResult with the `rows`, the `count` of matches in all and the `seq` (Protocol/methods.md#queries).
        InvalidQuery for a `where` that does not parse (`data["column"]`), UndefinedKey, TypeMismatch when `path` is
        not a collection, InvalidParams."""
        result = self.call("get", {"path": path, "query": query_params(where, vars, order_by, offset, limit, select)})
        return QueryResult(result["value"], result["count"], result["seq"])

    def live_query(self, path: str, where: Optional[str] = None, vars: Optional[Dict[str, Any]] = None,
                   order_by: Optional[OrderBy] = None, offset: Optional[int] = None, limit: Optional[int] = None,
                   select: Optional[List[str]] = None, context: Any = None) -> LiveQuery:
        """The query of `query(...)`, live: a LiveQuery that holds its window, kept up to date by kvod's
        notifications (a `subscribe` with the query), returned once the initial window is there. It follows the
        client across reconnections (kvod sends the window again). Raises as `query` does."""
        query = query_params(where, vars, order_by, offset, limit, select)
        state = SubscriptionState(path, ("initial", "new"), context, None, query=query)
        live = LiveQuery(self, state, query)
        self._call("subscribe", state.subscribe_params(None), state)
        try:
            live.wait_for(lambda q: q._mirror.ready)
        except BaseException:
            live.close()
            raise
        return live

    def _end_live_query(self, state: SubscriptionState) -> None:
        server_id = state.server_id
        self._session.forget(state)
        if server_id is not None and not self._closed:
            try:
                self.call("unsubscribe", {"subscription": server_id})
            except (ConnectionLost, KvodError):
                pass  # gone with its connection, or already ended

    # MARK: - Presence

    def on_disconnect(self, ops: Iterable[Any]) -> int:
        """Registers ops (`transaction`'s, as dicts or `(method, params)` pairs) that kvod runs as one transaction when
        the connection ends (Protocol/methods.md#ondisconnect); returns their count. The client registers them again
        on every new connection, first thing after hello, until `cancel_on_disconnect()`. A connection lost before
        kvod answered is retried (a registration replaces the last)."""
        params = ops_params(ops)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return self.call("onDisconnect", params)["ops"]
            except ConnectionLost:
                if self._closed or self._ended or time.monotonic() >= deadline:
                    raise

    def cancel_on_disconnect(self) -> None:
        """Cancels the onDisconnect ops, on this connection and the next ones."""
        self.on_disconnect([])

    @property
    def on_disconnect_error(self) -> Optional[KvodError]:
        """Why the onDisconnect ops could not be registered again on the current connection (None when they were)."""
        return self._session.presence.error

    def on_connected(self, hook: ConnectedHook) -> Callable[[], None]:
        """Calls `hook(Connected)` on each connection once it is ready (hello answered, onDisconnect ops registered,
        subscriptions resumed), and at once when connected now (Firebase's `.info/connected`). Hooks run in order on
        one thread of their own and may call the client (`client.set("presence.ada", "online")`); an exception is
        logged. Returns a function that removes the hook."""
        remove = self._hooks.add(hook)
        with self._lock:
            if self._transport is not None and self._hooks.last is not None:
                self._run_hooks([hook], self._hooks.last)
        return remove

    def on_disconnected(self, hook: Callable[[Disconnected], Any]) -> Callable[[], None]:
        """Calls `hook(Disconnected)` when a connection ends (kvod stopped or died, the network failed), with the
        address, kvod's `closing` reason when it sent one, and whether the client reconnects; not after `close()`.
        Listeners run in order on the hook thread, like connected hooks. Returns a function that removes it."""
        return self._add_disconnected_listener(hook)

    def unsubscribe(self, subscription: Subscription) -> None:
        """Ends `subscription`: kvod stops sending its notifications, and its iteration stops once the items already
        delivered are read."""
        state = subscription._state
        server_id = state.server_id
        self._session.forget(state)
        if state.error is None:  # an ended subscription keeps raising its error
            state.sink.put(CLOSED)
        if server_id is not None:
            try:
                self.call("unsubscribe", {"subscription": server_id})
            except (ConnectionLost, KvodError):
                pass  # gone with its connection, or already ended

    def close(self) -> None:
        """Closes the connection for good: no reconnecting; subscriptions end. Also what leaving a `with` block does."""
        self._closed = True
        with self._lock:
            connection, self._transport = self._transport, None
            self._connected.notify_all()
        if connection is not None:
            connection.close()  # wakes the reader
        self._reader.join(timeout=self.timeout)
        if self._hook_queue is not None:
            self._hook_queue.put(None)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
