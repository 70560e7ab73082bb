"""The asyncio client: the blocking client's vocabulary with coroutines and async iterators. One reader task routes
responses to futures and notifications to subscriptions, and reconnects (with backoff, trying each address in turn),
resubscribing every live subscription with `since`, so iterating a subscription shows no gap and no duplicate; and
follows a cluster's leader on 1012 "not the leader", and registers the onDisconnect ops again on every new
connection, as the blocking client does.

    async with await kvod.aio.connect("127.0.0.1:7070") as client:   # or transport="websocket"
        async for change in await client.subscribe("counter", ["new"]):
            print(change.new)
"""

import asyncio
import time
from typing import Any, AsyncIterator, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

from ._core import (CLOSED, UNSET, Address, Change, ClientBase, Connected, ConnectedHook, Disconnected, Resync, SubscriptionBase,
                    SubscriptionState, check_options, connection_order, logger, mutation_params, ops_params, run_hook,
                    page_params, set_params)
from ._query import LiveQueryBase, OrderBy, QueryChange, QueryResult, query_params, run_callback
from ._transport import AsyncTransport, async_transport
from .errors import ConnectionLost, KvodError, NotLeader, Timeout


class AsyncSubscription(SubscriptionBase):
    """A live subscription: `async for` it for Change (and Resync) items; `await next(timeout)` waits at most that.
    Ended by kvod's refusal to resume it (as the blocking Subscription), it raises that error (also in `error`)."""

    def __init__(self, client: "AsyncClient", state: SubscriptionState):
        super().__init__(client, state, asyncio.Queue())

    async def next(self, timeout: Optional[float] = None) -> Union[Change, Resync]:
        """The next change (or Resync); raises Timeout after `timeout` seconds, StopAsyncIteration once unsubscribed,
        the error that ended the subscription once it ended."""
        try:
            item = await asyncio.wait_for(self._queue.get(), timeout)
        except asyncio.TimeoutError:
            raise Timeout(f"no notification for {self.path} within {timeout} s") from None
        if item is CLOSED or isinstance(item, KvodError):
            self._queue.put_nowait(item)
            if item is CLOSED:
                raise StopAsyncIteration
            raise item
        return item

    def __aiter__(self) -> AsyncIterator[Union[Change, Resync]]:
        return self

    async def __anext__(self) -> Union[Change, Resync]:
        return await self.next()

    async def unsubscribe(self) -> None:
        """Ends this subscription (`AsyncClient.unsubscribe`)."""
        await self._client.unsubscribe(self)


class AsyncLiveQuery(LiveQueryBase):
    """A live query (`AsyncClient.live_query`), as the blocking LiveQuery: iterate it (`for row in live`), index it,
    `len()` it, read `count`. The reader task applies each notification before the response that follows it, so once
    an awaited call of this client returns, the window holds every change up to that call's seq. `on_change`
    callbacks run in the reader task, in order, and must not block: a callback may be a coroutine function (each
    call then runs in a task of its own and may await the client). `async with` closes it at the end."""

    def __init__(self, client: "AsyncClient", state: SubscriptionState, query: Dict[str, Any]):
        super().__init__(client, state, query)
        self._event = asyncio.Event()
        self._tasks: Set["asyncio.Task[Any]"] = set()

    def _changed(self, event: QueryChange) -> None:
        self._wake()
        for callback in list(self._callbacks):
            self._run(callback, event)

    def _wake(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    def _call_later(self, callback: Callable[[QueryChange], Any], event: QueryChange) -> None:
        asyncio.get_running_loop().call_soon(self._run, callback, event)

    def _run(self, callback: Callable[[QueryChange], Any], event: QueryChange) -> None:
        result = run_callback(callback, event)
        if asyncio.iscoroutine(result):
            task = asyncio.get_running_loop().create_task(self._await(result))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _await(result: Any) -> None:
        try:
            await result
        except Exception:  # noqa: BLE001 - a user's callback
            logger.exception("kvod: a live query's change callback raised")

    def snapshot(self) -> QueryResult:
        """The window, the count and the seq, read together."""
        return QueryResult(list(self._mirror.rows), self._mirror.count, self._mirror.seq or 0)

    async def wait_for(self, condition: Callable[["AsyncLiveQuery"], bool], timeout: Optional[float] = None) -> None:
        """Waits until `condition(self)` holds (checked now and after each change); raises Timeout after `timeout`
        seconds (default: the client's), the subscription's error if it ended."""
        timeout = self._client.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while not condition(self):
            if self.error is not None:
                raise self.error
            left = deadline - time.monotonic()
            if left <= 0 or self._closed:
                raise Timeout(f"the live query on {self.path} did not get there within {timeout} s")
            try:
                await asyncio.wait_for(self._event.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def close(self) -> None:
        """Ends the live query: kvod stops sending its notifications; the window stays as it is."""
        if self._closed:
            return
        self._closed = True
        self._wake()
        await self._client._end_live_query(self._state)

    async def __aenter__(self) -> "AsyncLiveQuery":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


async def connect(addresses: Union[Address, Sequence[Address]] = "127.0.0.1:7070", **options: Any) -> "AsyncClient":
    """An AsyncClient, connected (options as AsyncClient's)."""
    client = AsyncClient(addresses, **options)
    await client.connect()
    return client


class AsyncClient(ClientBase):
    """An asyncio kvod client; create it with `await kvod.aio.connect(...)`. Options as the blocking Client's,
    `transport="websocket"`, `leader_wait` and `tls` included."""

    def __init__(self, addresses: Union[Address, Sequence[Address]] = "127.0.0.1:7070", *, token: Optional[str] = None,
                 client_name: str = "kvod-python", timeout: float = 10.0, reconnect: bool = True,
                 max_backoff: float = 2.0, transport: str = "tcp", leader_wait: float = 10.0, tls: Any = None):
        super().__init__(addresses, token, client_name, timeout, reconnect, max_backoff, transport, leader_wait, tls)
        self._open_transport = async_transport(transport, self.ssl_context)
        self._futures: Dict[int, "asyncio.Future[Any]"] = {}
        # The current connection (a closed one until the reader has reconnected); None until connected.
        self._transport: Optional[AsyncTransport] = None
        self._connected = asyncio.Event()
        self._task: Optional["asyncio.Task[None]"] = None
        self._hook_tasks: Set["asyncio.Task[Any]"] = set()

    async def connect(self) -> None:
        """Opens the first connection (hello, the onDisconnect ops) and starts reading; `kvod.aio.connect` calls it."""
        await self._connect()
        self._task = asyncio.get_running_loop().create_task(self._read_loop())

    async def _open(self) -> AsyncTransport:
        errors = []
        for endpoint in connection_order(self._addresses, self._preferred, self.endpoint):
            try:
                connection = await self._open_transport(endpoint, self.timeout)
                self.endpoint, self._preferred = endpoint, None
                return connection
            except (OSError, asyncio.TimeoutError) as error:
                errors.append(f"{endpoint}: {error!r}")
        self._preferred = None
        raise ConnectionLost("cannot connect: " + "; ".join(errors))

    async def _connect(self) -> None:
        connection = await self._open()
        connection_endpoint = self.endpoint
        self._setup = connection
        try:
            try:
                server = await self._exchange("hello", self._hello_params())
            except KvodError as error:
                self._hello_refused(error)
                raise
            await self._rearm()
            for state in list(self._session.subscriptions):
                await self._resubscribe(state)
        except BaseException:
            await connection.close()
            raise
        self._transport = connection
        self.connections += 1
        self.hello_error = None
        self._connected.set()
        info = Connected(self.connections, connection_endpoint, server, self._session.presence.error)
        self._run_hooks(self._hooks.connected(info), info)

    async def _rearm(self) -> None:
        """Registers the remembered onDisconnect ops on the connection being set up, right after hello: before the
        resubscriptions and before any caller's request (_core.Presence; as the blocking client's `_rearm`)."""
        presence = self._session.presence
        while presence.ops is not None:
            try:
                await self._exchange("onDisconnect", presence.rearm_params())
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
                await asyncio.sleep(step.seconds)

    def _run_hooks(self, hooks: List[ConnectedHook], info: Connected) -> None:
        """Runs each hook in a task of its own (it may call the client: the reader task must go on reading)."""
        for hook in hooks:
            task = asyncio.get_running_loop().create_task(self._run_hook(hook, info))
            self._hook_tasks.add(task)
            task.add_done_callback(self._hook_tasks.discard)

    @staticmethod
    async def _run_hook(hook: ConnectedHook, info: Connected) -> None:
        result = run_hook(hook, info)
        if asyncio.iscoroutine(result):
            try:
                await result
            except Exception:  # noqa: BLE001 - a user's hook
                logger.exception("kvod: a connected hook raised")

    async def _exchange(self, method: str, params: Any, state: Optional[SubscriptionState] = None) -> Any:
        connection = self._setup
        request_id, message = self._session.request(method, params, state)
        await connection.send(message)
        while True:
            raw = await connection.receive()
            if raw is None:
                raise ConnectionLost("the connection closed during setup")
            routed = self._session.route(raw)
            self._deliver(routed)
            if routed.response is not None and routed.response[0] == request_id:
                outcome = routed.response[1]
                if isinstance(outcome, KvodError):
                    raise outcome
                return outcome

    async def _resubscribe(self, state: SubscriptionState) -> None:
        """As the blocking client's `_resubscribe` (SubscriptionState.resume_refused decides)."""
        since, resync = state.last_seq, None
        while True:
            try:
                result = await self._exchange("subscribe", state.subscribe_params(state.resume_since()), state)
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
                state.sink.put_nowait(state.resynced(since, resync, result))
            return

    async def _read_loop(self) -> None:
        backoff = 0.05
        try:
            while not self._closed:
                raw = await self._transport.receive()
                if raw is not None:
                    routed = self._session.route(raw)
                    self._deliver(routed)
                    if routed.response is not None:
                        future = self._futures.pop(routed.response[0], None)
                        if future is not None and not future.done():
                            future.set_result(routed.response[1])
                    continue
                self._connected.clear()
                await self._transport.close()
                self._fail_pending()
                if not self._closed:
                    self._run_hooks(list(self._disconnected_listeners), self._disconnected())
                if self._closed or not self._reconnect:
                    self._ended = True
                    self._connected.set()  # wakes callers waiting for a connection, to fail
                    break
                while not self._closed:
                    try:
                        await self._connect()
                        backoff = 0.05
                        break
                    except (OSError, KvodError, asyncio.TimeoutError):
                        self._fail_pending()
                        await asyncio.sleep(backoff)
                        backoff = min(backoff * 2, self._max_backoff)
        finally:
            for state in list(self._session.subscriptions):
                state.sink.put_nowait(CLOSED)

    def _fail_pending(self) -> None:
        """Fails every request in flight: the connection they went out on is gone."""
        for request_id in self._session.connection_lost():
            future = self._futures.pop(request_id, None)
            if future is not None and not future.done():
                future.set_result(ConnectionLost("the connection closed before kvod answered"))

    # MARK: - Calls

    async def call(self, method: str, params: Any = None) -> Any:
        """Sends one request and waits for its result; a 1012 "not the leader" refusal is retried on the leader for up
        to `leader_wait` seconds (as the blocking client's `call`)."""
        return await self._call(method, params, None)

    async def _call(self, method: str, params: Any, state: Optional[SubscriptionState]) -> Any:
        leader_deadline = time.monotonic() + self.leader_wait
        pause, tried = 0.1, set()
        while True:
            try:
                return await self._call_once(method, params, state)
            except NotLeader as refusal:
                if time.monotonic() >= leader_deadline:
                    raise
                connection = self._transport
                leader = self._leader_to_follow(refusal, tried) if connection is not None else None
                if connection is not None and leader is not None:
                    # The reader sees the end and connects to the leader first, resubscribing everything.
                    self._preferred = leader
                    self._connected.clear()
                    await connection.close()
                    continue
                await asyncio.sleep(min(pause, max(0.0, leader_deadline - time.monotonic())))
                pause = min(pause * 2, 1.0)

    async def _call_once(self, method: str, params: Any, state: Optional[SubscriptionState]) -> Any:
        if self._closed:
            raise ConnectionLost("the client is closed")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        # A connection whose end the reader has not seen yet is still "connected": wait for a live one.
        while not self._connected.is_set() or self._transport is None or self._transport.is_closing():
            if self._ended:
                raise ConnectionLost("the connection closed, and the client does not reconnect")
            if self._transport is not None and self._transport.is_closing():
                self._connected.clear()
            try:
                await asyncio.wait_for(self._connected.wait(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                raise Timeout(self._not_connected()) from None
        request_id, message = self._session.request(method, params, state)
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._futures[request_id] = future
        try:
            await self._transport.send(message)
        except OSError:
            pass  # the reader sees the close and fails the future
        try:
            outcome = await asyncio.wait_for(future, max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            self._futures.pop(request_id, None)
            raise Timeout(f"{method}: no answer within {self.timeout} s") from None
        if isinstance(outcome, KvodError):
            raise outcome
        return outcome

    async def hello(self, token: Optional[str] = None) -> Dict[str, Any]:
        """Says hello, presenting `token` (kept for reconnections); returns kvod's answer (as `kvod.Client.hello`)."""
        return await self.call("hello", self._hello_params(token))

    async def ping(self) -> str:
        """Checks that kvod answers; returns `"pong"`."""
        return await self.call("ping")

    async def get(self, path: str) -> Any:
        """The value at `path`; None when never set (as `kvod.Client.get`)."""
        return (await self.call("get", {"path": path}))["value"]

    async def get_with_seq(self, path: str) -> Tuple[Any, int]:
        """`(value, seq)`: the value at `path` and the seq of the state it was read from."""
        result = await self.call("get", {"path": path})
        return result["value"], result["seq"]

    async def get_meta(self, path: str) -> Dict[str, Any]:
        """`{"value", "seq", "modSeq", "expires"}` (as `kvod.Client.get_meta`)."""
        return await self.call("get", {"path": path, "meta": True})

    async def get_page(self, path: str, offset: int = 0, limit: Optional[int] = None) -> Dict[str, Any]:
        """`{"value", "count", "seq"}`: a page of the collection at `path` (as `kvod.Client.get_page`)."""
        return await self.call("get", page_params(path, offset, limit))

    async def set(self, path: str, value: Any, *, if_mod_seq: Optional[int] = None, if_value: Any = UNSET,
                  if_absent: bool = False, ttl: Optional[float] = None) -> int:
        """Sets `path` to `value`, conditionally with one of `if_mod_seq`, `if_value`, `if_absent`, expiring after `ttl`
        seconds; returns the seq (as `kvod.Client.set`)."""
        return (await self.call("set", set_params(path, value, if_mod_seq, if_value, if_absent, ttl)))["seq"]

    async def insert(self, path: str, value: Any = UNSET, *, values: Any = UNSET, index: Any = UNSET,
                     indexes: Any = UNSET) -> int:
        """Inserts `value` (or `values`) at `index` (or `indexes`), or at the end; returns the seq (as
        `kvod.Client.insert`)."""
        params = mutation_params(path, value=value, values=values, index=index, indexes=indexes)
        return (await self.call("insert", params))["seq"]

    async def remove(self, path: str, *, index: Any = UNSET, indexes: Any = UNSET, values: Any = UNSET) -> int:
        """Removes elements by `index`/`indexes`, or set members by `values`; returns the seq."""
        return (await self.call("remove", mutation_params(path, index=index, indexes=indexes, values=values)))["seq"]

    async def replace(self, path: str, value: Any = UNSET, *, values: Any = UNSET, index: Any = UNSET,
                      indexes: Any = UNSET) -> int:
        """Replaces the elements at `index`/`indexes` with `value`/`values`; returns the seq."""
        params = mutation_params(path, value=value, values=values, index=index, indexes=indexes)
        return (await self.call("replace", params))["seq"]

    async def union(self, path: str, values: Iterable[Any]) -> int:
        """Adds `values` to the set at `path`; returns the seq."""
        return (await self.call("union", {"path": path, "values": list(values)}))["seq"]

    async def minus(self, path: str, values: Iterable[Any]) -> int:
        """Removes `values` from the set at `path`; returns the seq."""
        return (await self.call("minus", {"path": path, "values": list(values)}))["seq"]

    async def intersect(self, path: str, values: Iterable[Any]) -> int:
        """Keeps only the members of the set at `path` that are in `values`; returns the seq."""
        return (await self.call("intersect", {"path": path, "values": list(values)}))["seq"]

    async def set_members(self, path: str, values: Iterable[Any]) -> int:
        """Makes the set at `path` exactly `values`; returns the seq."""
        return (await self.call("setMembers", {"path": path, "values": list(values)}))["seq"]

    async def transaction(self, ops: Iterable[Any]) -> int:
        """Applies ops (dicts or `(method, params)` pairs) atomically; returns the seq (as `kvod.Client.transaction`)."""
        return (await self.call("transaction", ops_params(ops)))["seq"]

    async def validate(self, path: str, value: Any) -> Any:
        """What `set(path, value)` would store, without storing it."""
        return (await self.call("validate", {"path": path, "value": value}))["value"]

    async def describe(self, path: Optional[str] = None) -> Dict[str, Any]:
        """The model, or the class of the object at `path` and its current keys."""
        return await self.call("describe", {} if path is None else {"path": path})

    async def observers(self, path: Optional[str] = None) -> Dict[str, Any]:
        """Every connection and its subscriptions (with `path`, only those to it)."""
        return await self.call("observers", {} if path is None else {"path": path})

    async def stats(self) -> Dict[str, Any]:
        """kvod's figures (Protocol/methods.md#stats)."""
        return await self.call("stats")

    async def subscribe(self, path: str, options: Iterable[str] = ("new",), context: Any = None, *,
                        since: Optional[int] = None, progress: Optional[float] = None) -> AsyncSubscription:
        """Observes `path` with KVO's options; returns an AsyncSubscription to `async for` over. With `since`, resumes
        after that seq; with `progress` (seconds), kvod sends progress notices while quiet (as `kvod.Client.subscribe`)."""
        state = SubscriptionState(path, check_options(options), context, progress)
        subscription = AsyncSubscription(self, state)
        if since is not None:
            state.last_seq = since
        result = await self._call("subscribe", state.subscribe_params(since), state)
        subscription.seq = result["seq"]
        return subscription

    # MARK: - Queries

    async def query(self, path: str, where: Optional[str] = None, vars: Optional[Dict[str, Any]] = None,
                    order_by: Optional[OrderBy] = None, offset: Optional[int] = None, limit: Optional[int] = None,
                    select: Optional[List[str]] = None) -> QueryResult:
        """The window of a query on the collection at `path` and its match count (as `kvod.Client.query`)."""
        params = {"path": path, "query": query_params(where, vars, order_by, offset, limit, select)}
        result = await self.call("get", params)
        return QueryResult(result["value"], result["count"], result["seq"])

    async def live_query(self, path: str, where: Optional[str] = None, vars: Optional[Dict[str, Any]] = None,
                         order_by: Optional[OrderBy] = None, offset: Optional[int] = None,
                         limit: Optional[int] = None, select: Optional[List[str]] = None,
                         context: Any = None) -> AsyncLiveQuery:
        """The query, live: an AsyncLiveQuery holding its window, returned once the initial window is there (as
        `kvod.Client.live_query`)."""
        query = query_params(where, vars, order_by, offset, limit, select)
        state = SubscriptionState(path, ("initial", "new"), context, None, query=query)
        live = AsyncLiveQuery(self, state, query)
        await self._call("subscribe", state.subscribe_params(None), state)
        try:
            await live.wait_for(lambda q: q._mirror.ready)
        except BaseException:
            await live.close()
            raise
        return live

    async def _end_live_query(self, state: SubscriptionState) -> None:
        server_id = state.server_id
        self._session.forget(state)
        if server_id is not None and not self._closed:
            try:
                await self.call("unsubscribe", {"subscription": server_id})
            except (ConnectionLost, KvodError):
                pass

    # MARK: - Presence

    async def on_disconnect(self, ops: Iterable[Any]) -> int:
        """As the blocking client's `on_disconnect`: registered again on every new connection until cancelled."""
        params = ops_params(ops)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return (await self.call("onDisconnect", params))["ops"]
            except ConnectionLost:
                if self._closed or self._ended or time.monotonic() >= deadline:
                    raise

    async def cancel_on_disconnect(self) -> None:
        """Cancels the onDisconnect ops, on this connection and the next ones."""
        await self.on_disconnect([])

    @property
    def on_disconnect_error(self) -> Optional[KvodError]:
        """Why the onDisconnect ops could not be registered again on the current connection (None when they were)."""
        return self._session.presence.error

    def on_disconnected(self, hook: Callable[[Disconnected], Any]) -> Callable[[], None]:
        """Calls `hook(Disconnected)` when a connection ends (kvod stopped or died, the network failed), with the
        address, kvod's `closing` reason when it sent one, and whether the client reconnects; not after `close()`.
        Each call runs in a task of its own (a coroutine function is awaited there). Returns a function that removes
        it."""
        return self._add_disconnected_listener(hook)

    def on_connected(self, hook: ConnectedHook) -> Callable[[], None]:
        """As the blocking client's `on_connected`; `hook` may be a coroutine function. Each call runs in a task of
        its own, so a hook may await the client. Call it from the event loop's thread."""
        remove = self._hooks.add(hook)
        if self._connected.is_set() and not self._ended and self._hooks.last is not None:
            self._run_hooks([hook], self._hooks.last)
        return remove

    async def unsubscribe(self, subscription: AsyncSubscription) -> None:
        """Ends `subscription`: kvod stops sending its notifications."""
        state = subscription._state
        server_id = state.server_id
        self._session.forget(state)
        if state.error is None:  # an ended subscription keeps raising its error
            state.sink.put_nowait(CLOSED)
        if server_id is not None:
            try:
                await self.call("unsubscribe", {"subscription": server_id})
            except (ConnectionLost, KvodError):
                pass

    async def close(self) -> None:
        """Closes the connection for good: no reconnecting; subscriptions end."""
        self._closed = True
        if self._transport is not None:
            await self._transport.close()
        for task in list(self._hook_tasks):
            task.cancel()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
