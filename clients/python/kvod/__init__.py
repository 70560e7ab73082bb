"""kvod: a client for the key-value-observing server (Protocol/README.md).

    import kvod
    with kvod.Client("127.0.0.1:7070") as client:
        subscription = client.subscribe("greeting", ["new", "old"])
        client.set("greeting", "hello", ttl=60)
        change = subscription.next(timeout=5)
        print(change.old, "->", change.new)          # None -> hello

`kvod.aio` has the same vocabulary for asyncio. Both speak TCP, or WebSocket with `transport="websocket"` (the
`websocket` extra: `pip install 'kvod[websocket]'`). Subscriptions resume by themselves after a reconnect (no gap, no
duplicate), and tell you with a `Resync` item when kvod's history could not reach back far enough. Given the members
of a cluster, a client follows the leader: a mutation refused with 1012 "not the leader" is sent again on the leader
(docs/SCALING.md). Presence: `client.on_disconnect(ops)` registers ops kvod runs when the connection ends, and the
client registers them again on every new connection; `client.on_connected(hook)` is called on each connection.
Queries (Protocol/methods.md#queries): `client.query(path, where=..., order_by=..., limit=...)` reads a filtered,
sorted window of a collection with its match count; `client.live_query(...)` keeps one up to date (a LiveQuery to
iterate, with `count` and `on_change` callbacks).
"""

from . import aio
from ._core import Change, Connected, Disconnected, Resync
from ._query import MirrorError, QueryChange, QueryResult
from .client import Client, LiveQuery, Subscription
from .errors import (ERRORS, ConnectionLost, IndexOutOfRange, InternalError, InvalidParams, InvalidQuery,
                     InvalidRequest, KvodError,
                     LimitExceeded, MethodNotFound, MissingExtra, NotLeader, NullNotAllowed, ParseError, PreconditionFailed,
                     ReadOnlyKey, ResyncRequired, Timeout, TypeMismatch, Unauthorized, UndefinedKey,
                     UnknownSubscription, ValidationFailed)

__all__ = [
    "Client", "Subscription", "Change", "Connected", "Disconnected", "Resync", "LiveQuery", "QueryResult", "QueryChange",
    "MirrorError", "aio", "ERRORS", "KvodError", "ConnectionLost",
    "Timeout",
    "ParseError", "InvalidRequest", "MethodNotFound", "InvalidParams", "InternalError", "UndefinedKey",
    "ValidationFailed", "NullNotAllowed", "IndexOutOfRange", "TypeMismatch", "ReadOnlyKey", "UnknownSubscription",
    "Unauthorized", "LimitExceeded", "ResyncRequired", "PreconditionFailed", "NotLeader", "InvalidQuery",
    "MissingExtra",
]
__version__ = "0.1.0"
