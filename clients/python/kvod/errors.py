"""One exception class per kvod error code (Protocol/errors.md), all under KvodError; and MissingExtra, for a
transport whose optional package is not installed."""

from typing import Any, Dict, Optional, Type


class KvodError(Exception):
    """An error kvod answered with: `code`, `message` and `data` as on the wire."""

    code: int = 0

    def __init__(self, message: str, code: Optional[int] = None, data: Any = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.data = data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r}, data={self.data!r})"


class ParseError(KvodError):
    code = -32700


class InvalidRequest(KvodError):
    code = -32600


class MethodNotFound(KvodError):
    code = -32601


class InvalidParams(KvodError):
    code = -32602


class InternalError(KvodError):
    code = -32603


class UndefinedKey(KvodError):
    code = 1001


class ValidationFailed(KvodError):
    code = 1002


class NullNotAllowed(KvodError):
    code = 1003


class IndexOutOfRange(KvodError):
    code = 1004


class TypeMismatch(KvodError):
    code = 1005


class ReadOnlyKey(KvodError):
    code = 1006


class UnknownSubscription(KvodError):
    code = 1007


class Unauthorized(KvodError):
    code = 1008


class LimitExceeded(KvodError):
    code = 1009


class ResyncRequired(KvodError):
    code = 1010


class PreconditionFailed(KvodError):
    """A conditional write's condition did not hold; `data` has the current `value` and `modSeq`."""

    code = 1011


class NotLeader(KvodError):
    """A cluster member that cannot accept the mutation (a follower, a member during an election, a leader that cannot
    prove its lease); nothing changed. `data` has `reason` and, when one is known, the `leader`'s address. The clients
    retry on the leader by themselves for up to `leader_wait` seconds before raising it."""

    code = 1012


class InvalidQuery(KvodError):
    """A query's `where` is not a predicate kvod can read (Protocol/methods.md#predicates): `data` has `column`
    (1-based, where it stopped) and `reason`."""

    code = 1013


class ConnectionLost(KvodError):
    """The connection closed while a request was in flight: whether a mutation took effect is unknown."""

    code = -1


class Timeout(KvodError):
    """No answer (or no connection) within the client's timeout."""

    code = -2


class MissingExtra(ImportError):
    """The chosen transport needs an optional package that is not installed; `extra` is the pip extra that brings
    it (`pip install 'kvod[websocket]'`). Raised when the client is created, before any connection."""

    def __init__(self, message: str, extra: str, name: Optional[str] = None):
        super().__init__(message, name=name)
        self.extra = extra


ERRORS: Dict[int, Type[KvodError]] = {
    cls.code: cls
    for cls in (
        ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError, UndefinedKey, ValidationFailed,
        NullNotAllowed, IndexOutOfRange, TypeMismatch, ReadOnlyKey, UnknownSubscription, Unauthorized,
        LimitExceeded, ResyncRequired, PreconditionFailed, NotLeader, InvalidQuery,
    )
}


def error_from_wire(error: Dict[str, Any]) -> KvodError:
    """The exception for a JSON-RPC error object (an unknown code gives a plain KvodError)."""
    code = error.get("code", 0)
    cls = ERRORS.get(code, KvodError)
    return cls(error.get("message", ""), code, error.get("data"))
