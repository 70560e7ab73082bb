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
"""

from . import aio
from ._core import Change, Connected, Resync
from .client import Client, Subscription
from .errors import (ERRORS, ConnectionLost, IndexOutOfRange, InternalError, InvalidParams, InvalidRequest, KvodError,
                     LimitExceeded, MethodNotFound, MissingExtra, NotLeader, NullNotAllowed, ParseError, PreconditionFailed,
                     ReadOnlyKey, ResyncRequired, Timeout, TypeMismatch, Unauthorized, UndefinedKey,
                     UnknownSubscription, ValidationFailed)

__all__ = [
    "Client", "Subscription", "Change", "Connected", "Resync", "aio", "ERRORS", "KvodError", "ConnectionLost",
    "Timeout",
    "ParseError", "InvalidRequest", "MethodNotFound", "InvalidParams", "InternalError", "UndefinedKey",
    "ValidationFailed", "NullNotAllowed", "IndexOutOfRange", "TypeMismatch", "ReadOnlyKey", "UnknownSubscription",
    "Unauthorized", "LimitExceeded", "ResyncRequired", "PreconditionFailed", "NotLeader", "MissingExtra",
]
__version__ = "0.1.0"
