"""Queries (Protocol/methods.md#queries), the part that does no I/O and is shared by the blocking and the asyncio
client: the wire's `query` object, a one-shot result, and the mirror of a live query's window, which applies the
notifications (`setting`, `insertion`, `removal`, `replacement`, indexes relative to the window, `count`) and tells
each change to callbacks. The clients own the subscription, the threads and the tasks (kvod/client.py, kvod/aio.py)."""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from ._core import Change, logger

OrderBy = Union[str, Mapping[str, Any], Sequence[Union[str, Mapping[str, Any]]]]


def query_params(where: Optional[str] = None, vars: Optional[Mapping[str, Any]] = None,
                 order_by: Optional[OrderBy] = None, offset: Optional[int] = None, limit: Optional[int] = None,
                 select: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """The wire's `query` object from the clients' keywords, with only the members given. `order_by` is one sort
    descriptor or a list of them, each `"key"`, `"-key"` (descending) or `{"key", "ascending", "caseInsensitive"}`;
    `select` a list of key paths (a single string is one key path)."""
    query: Dict[str, Any] = {}
    if where is not None:
        if not isinstance(where, str):
            raise TypeError("where: a predicate in NSPredicate's format-string syntax (a str)")
        query["where"] = where
    if vars is not None:
        query["vars"] = dict(vars)
    if order_by is not None:
        query["orderBy"] = [order_by] if isinstance(order_by, (str, Mapping)) else list(order_by)
    if offset is not None:
        query["offset"] = offset
    if limit is not None:
        query["limit"] = limit
    if select is not None:
        query["select"] = [select] if isinstance(select, str) else list(select)
    return query


@dataclass(frozen=True)
class QueryResult:
    """A query's answer at one seq: `rows`, the window (elements as dicts with `"$id"` and their selected keys, or
    scalars), and `count`, the number of elements the predicate matches in all (for "41-60 of 1,234"). Iterating it,
    `len()` and indexing go to `rows`."""

    rows: List[Any]
    count: int
    seq: int

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> Any:
        return self.rows[index]


@dataclass(frozen=True)
class QueryChange:
    """One change of a live query's window, as its change callbacks get it: `kind` is `setting` (the whole window:
    the first one, `initial`, and again after each reconnection or when the collection itself was replaced),
    `insertion`, `removal` or `replacement`; `indexes` are positions in the window (a removal's before it, an
    insertion's after it, a replacement's in both; None for a setting; `[]` when only `count` changed); `new` and
    `old` are the rows inserted or replaced and the rows removed or replaced, in the order of `indexes` (for a
    setting, the whole new and old window); `count` is the number of matches after the change, `seq` its seq."""

    kind: str
    indexes: Optional[List[int]]
    new: List[Any]
    old: List[Any]
    count: int
    seq: int
    initial: bool = False


class MirrorError(Exception):
    """A notification that does not fit the mirrored window (an index out of range, a missing `new`): the mirror
    can no longer be trusted. It says which notification; the live query keeps it in `error`."""


@dataclass
class QueryMirror:
    """The window of a live query, built only from its notifications. `apply` takes one Change and returns the
    QueryChange it made (None for a prior, which changes nothing). Raises MirrorError for a notification that does
    not fit."""

    rows: List[Any] = field(default_factory=list)
    count: int = 0
    seq: Optional[int] = None
    ready: bool = False  # a setting (the initial window) was applied

    def apply(self, change: Change) -> Optional[QueryChange]:
        if change.prior:
            return None
        count = change.count if change.count is not None else self.count
        if change.kind == "setting":
            rows = self._rows(change, None)
            old, self.rows = self.rows, list(rows)
            event = QueryChange("setting", None, list(rows), old, count, change.seq, change.initial)
            self.ready = True
        else:
            indexes = change.indexes
            if not isinstance(indexes, list) or not all(isinstance(index, int) for index in indexes):
                raise MirrorError(f"a {change.kind} at seq {change.seq} without indexes")
            if change.kind == "insertion":
                event = self._insert(indexes, self._rows(change, len(indexes)), count, change.seq)
            elif change.kind == "removal":
                event = self._remove(indexes, count, change.seq)
            elif change.kind == "replacement":
                event = self._replace(indexes, self._rows(change, len(indexes)), count, change.seq)
            else:
                raise MirrorError(f"an unknown kind {change.kind!r} at seq {change.seq}")
        self.count = count
        self.seq = change.seq
        return event

    @staticmethod
    def _rows(change: Change, expected: Optional[int]) -> List[Any]:
        if not change.has_new or not isinstance(change.new, list):
            raise MirrorError(f"a {change.kind} at seq {change.seq} without its new rows (subscribe with 'new')")
        if expected is not None and len(change.new) != expected:
            raise MirrorError(f"a {change.kind} at seq {change.seq} with {len(change.new)} rows for "
                              f"{expected} indexes")
        return change.new

    def _insert(self, indexes: List[int], rows: List[Any], count: int, seq: int) -> QueryChange:
        # Positions in the window after the insertion: inserting in ascending order puts each at its place.
        order = sorted(range(len(indexes)), key=lambda k: indexes[k])
        for k in order:
            if not 0 <= indexes[k] <= len(self.rows):
                raise MirrorError(f"an insertion at {indexes[k]} into a window of {len(self.rows)} at seq {seq}")
            self.rows.insert(indexes[k], rows[k])
        return QueryChange("insertion", list(indexes), list(rows), [], count, seq)

    def _remove(self, indexes: List[int], count: int, seq: int) -> QueryChange:
        # Positions in the window before the removal: removing from the highest keeps the others in place.
        if len(set(indexes)) != len(indexes) or any(not 0 <= index < len(self.rows) for index in indexes):
            raise MirrorError(f"a removal at {indexes} from a window of {len(self.rows)} at seq {seq}")
        old = [self.rows[index] for index in indexes]
        for index in sorted(indexes, reverse=True):
            del self.rows[index]
        return QueryChange("removal", list(indexes), [], old, count, seq)

    def _replace(self, indexes: List[int], rows: List[Any], count: int, seq: int) -> QueryChange:
        if any(not 0 <= index < len(self.rows) for index in indexes):
            raise MirrorError(f"a replacement at {indexes} in a window of {len(self.rows)} at seq {seq}")
        old = [self.rows[index] for index in indexes]
        for index, row in zip(indexes, rows):
            self.rows[index] = row
        return QueryChange("replacement", list(indexes), list(rows), old, count, seq)


ChangeCallback = Callable[[QueryChange], Any]


class LiveQueryBase:
    """What the blocking LiveQuery and the asyncio AsyncLiveQuery share: the subscription state, the mirror, the
    callbacks and the read-only view. The client's reader hands it every item of its subscription through `put` /
    `put_nowait` (it is the subscription's sink), before the response that follows on the wire, so once a call
    returns, the window holds every change up to that call's seq."""

    def __init__(self, client: Any, state: Any, query: Dict[str, Any]):
        self._client = client
        self._state = state
        self._query = query
        self._mirror = QueryMirror()
        self._callbacks: List[ChangeCallback] = []
        self._error: Optional[BaseException] = None
        self._closed = False
        state.sink = _Sink(self._receive)

    def _receive(self, item: Any) -> None:
        """Called by the client's reader with each item of the subscription: a Change, or a Resync, the error that
        ended it, CLOSED."""
        if isinstance(item, Change):
            try:
                event = self._apply(item)
            except MirrorError as error:
                logger.error("kvod: the live query on %s cannot apply a notification: %s", self.path, error)
                self._error = error
                self._wake()
                return
            if event is not None:
                self._changed(event)
        elif isinstance(item, BaseException):
            self._error = item
            self._wake()
        elif not hasattr(item, "since"):  # CLOSED; a Resync changes nothing: the initial window follows it
            self._closed = True
            self._wake()

    def _apply(self, change: Change) -> Optional[QueryChange]:
        return self._mirror.apply(change)

    def _changed(self, event: QueryChange) -> None:
        """Hands `event` to the callbacks (each client its own way) and wakes whoever waits for the window."""
        raise NotImplementedError

    def _wake(self) -> None:
        raise NotImplementedError

    @property
    def path(self) -> str:
        """The key path of the collection this live query observes."""
        return self._state.path

    @property
    def query(self) -> Dict[str, Any]:
        """The query as sent on the wire (`where`, `vars`, `orderBy`, `offset`, `limit`, `select`)."""
        return dict(self._query)

    @property
    def rows(self) -> List[Any]:
        """A copy of the window now."""
        return list(self._mirror.rows)

    @property
    def count(self) -> int:
        """The number of elements the predicate matches in all, as of the last notification."""
        return self._mirror.count

    @property
    def seq(self) -> Optional[int]:
        """The seq of the last notification applied (the window is also that of every later seq until the next)."""
        return self._mirror.seq

    @property
    def error(self) -> Optional[BaseException]:
        """Why the window stopped following kvod: the error that ended the subscription (kvod refused it after a
        reconnect for a reason reconnecting cannot cure) or a MirrorError; None while it follows."""
        return self._error if self._error is not None else self._state.error

    @property
    def closed(self) -> bool:
        """True once closed (or the client closed): the window stays as it was."""
        return self._closed

    def on_change(self, callback: ChangeCallback) -> Callable[[], None]:
        """Calls `callback(QueryChange)` after each change of the window (the initial window included, when it is
        already there: at once); returns a function that removes it."""
        self._callbacks.append(callback)
        if self._mirror.ready:
            rows = list(self._mirror.rows)
            self._call_later(callback, QueryChange("setting", None, rows, [], self._mirror.count,
                                                   self._mirror.seq or 0, True))

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)
        return remove

    def _call_later(self, callback: ChangeCallback, event: QueryChange) -> None:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self._mirror.rows)

    def __getitem__(self, index: int) -> Any:
        return self._mirror.rows[index]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path} {self._query} count={self.count} rows={self._mirror.rows!r}>"


class _Sink:
    """What a subscription's reader hands items to (a Subscription's is a queue): here the live query itself."""

    def __init__(self, receive: Callable[[Any], None]):
        self.put = self.put_nowait = receive


def run_callback(callback: ChangeCallback, event: QueryChange) -> Any:
    """Calls a change callback; an exception is logged (it must not stop the client), its result returned."""
    try:
        return callback(event)
    except Exception:  # noqa: BLE001 - a user's callback
        logger.exception("kvod: a live query's change callback raised")
        return None
