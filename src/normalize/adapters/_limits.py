"""Bounds on what an adapter keeps open, so memory stays finite whatever the input.

An adapter remembers what is open (tool calls, requests waiting for their answer,
sub-agents, prompts, text being streamed) until the native stream closes it.  A stream
that opens and never closes (a runaway agent, a cut capture, a hostile peer) would make
that memory grow with the length of the session.  Each table an adapter keeps is a
:class:`Bounded` (or :class:`Recent`) with a limit far above what a real session holds
open at once; past it the oldest entry is evicted and the Session reports the eviction,
after the items of the message that caused it, as a synthesized warning
(``Emit(Warning(message=..., source="normalize"), synthetic=True)``) naming what was
forgotten (:func:`outbox`).  A later message about an evicted entry
is then handled as one about an unknown id (documented per adapter).

Defaults (docs/reliability.md):

* :data:`OPEN_CALLS`: tool calls started and not finished;
* :data:`PENDING_REQUESTS`: JSON-RPC / control requests waiting for their response;
* :data:`OPEN_ITEMS`: other open things (sub-agents, prompts, streamed blocks, threads);
* :data:`SEEN_IDS`: memory of finished ids, used to recognise duplicates (evicted
  silently: forgetting a finished id loses nothing open);
* :data:`BUFFER_TEXT`: text buffered for one message while it streams;
* :data:`PARTIAL_INPUT`: a streamed tool input re-read as it grows.
"""

from __future__ import annotations

import gc
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Any, Final, TypeVar, cast

# from the core's modules, not the package: the Session (``_session.py``) imports this module
from normalize._contract import Adapter, Emit, Item
from normalize._model import Warning as WarningBody

__all__ = [
    "BUFFER_TEXT",
    "OPEN_CALLS",
    "OPEN_ITEMS",
    "PARTIAL_INPUT",
    "PENDING_REQUESTS",
    "SEEN_IDS",
    "NO_RECENT",
    "NO_TABLE",
    "Bounded",
    "Recent",
    "buffer_warning",
    "evictions",
    "forgotten",
    "link",
    "outbox",
    "put",
    "recent",
    "table",
]

#: A real session has a handful of calls open at once (parallel tool use reaches tens);
#: ten thousand is far beyond any agent and still small in memory (a few MiB).
OPEN_CALLS = 10_000
#: Requests awaiting a response: a client answers within seconds, so thousands pending
#: means the other side stopped answering.
PENDING_REQUESTS = 10_000
#: Sub-agents, prompts, streamed content blocks and threads open at once.
OPEN_ITEMS = 10_000
#: Finished ids remembered to recognise a duplicate or a late message.
SEEN_IDS = 100_000
#: Text buffered for one message while it streams, in characters: 16 Mi, as the default line
#: bound, so a message may hold as much as one line can carry.
BUFFER_TEXT: Final = 16 * 1024 * 1024
#: A tool call's input streamed in pieces is re-read whole after each piece, to report it
#: as it grows; past this many characters that would be quadratic (a large file written by
#: a tool), so the partial input is no longer reported and the complete call carries it.
PARTIAL_INPUT = 64 * 1024

K = TypeVar("K")
V = TypeVar("V")
C = TypeVar("C", bound=type)


def _python_class(cls: C) -> C:
    """Keeps :class:`Bounded` (and its subclass) a Python class in the compiled build.

    mypyc makes every class of a compiled module a native one unless a decorator it does not
    know sits on it, and it cannot make a subclass of ``OrderedDict`` native: the module then
    crashes at import.  As a Python class, its methods are still compiled."""
    return cls


#: OrderedDict's own item setter, called as a function: ``super()`` makes an object and looks
#: the method up at each call, made for every entry a table takes
_od_setitem: Final = OrderedDict.__setitem__


@_python_class
class Bounded(OrderedDict[K, V]):
    """A dict that keeps at most ``limit`` entries, evicting the oldest inserted.

    An :class:`~collections.OrderedDict`, so that evicting the oldest is constant time
    (a plain dict's first key is found by walking past every key deleted before it:
    once full, each insertion cost O(limit)).

    Each eviction is queued as ``(table, key)`` in :attr:`outbox` until :func:`evictions`
    turns it into a warning; :func:`outbox` points the outboxes of an adapter's tables at
    one list, which its Session empties after each message, so that checking for
    evictions costs one test per message.  Nobody may empty it (an adapter fed without a
    Session): it then keeps at most ``limit`` entries, the later evictions unqueued.
    ``what`` names one entry in those warnings ("tool call").
    """

    __slots__ = ("limit", "outbox", "what")

    def __init__(self, what: str, limit: int) -> None:
        # (not OrderedDict.__init__: it only adds what it is given, and a table starts
        # empty; the call cost more than the rest of making a table, made per request)
        self.what = what
        self.limit = limit
        self.outbox: list[tuple[Bounded[Any, Any], Any]] = []

    def __setitem__(self, key: K, value: V) -> None:
        put(self, key, value)

    def setdefault(self, key: K, default: V) -> V:
        if key not in self:
            self[key] = default
        return self[key]


@_python_class
class _Unmade(Bounded[Any, Any]):
    """:data:`NO_TABLE`: read as an empty table; writing to it is a bug, and raises."""

    __slots__ = ()

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError(f"NO_TABLE is shared and never written: make the {self.what} table first (table())")

    def setdefault(self, key: Any, default: Any = None) -> Any:
        raise TypeError(f"NO_TABLE is shared and never written: make the {self.what} table first (table())")


def put(table: Bounded[K, V], key: K, value: V) -> None:
    """``table[key] = value``: the oldest entry evicted (and queued) when the table is full.

    The same as the assignment, called straight from compiled code: an assignment to a
    Python class's item goes through its ``__setitem__`` slot, a lookup and a call of a
    method, the most of what setting an entry costs (about 1,400 instructions of 2,300)."""
    if type(table) is _Unmade:
        table[key] = value  # (raises)
    if len(table) >= table.limit and key not in table:
        oldest, _ = table.popitem(last=False)
        if len(table.outbox) < table.limit:
            table.outbox.append((table, oldest))
    _od_setitem(table, key, value)


#: The one empty table an adapter holds in place of a :class:`Bounded` it has not needed yet,
#: or no longer needs: a connection keeps every session it opened, idle or not, and an empty
#: table still costs its object (about 150 bytes).  Read it like any table; write to the one
#: :func:`table` makes, and put this back once that one is empty again.
NO_TABLE: Bounded[Any, Any] = _Unmade("table", 0)


#: a table made without its __init__ (:func:`table`)
_make: Final = OrderedDict.__new__


def table(adapter: Adapter, what: str, limit: int) -> Bounded[Any, Any]:
    """A new :class:`Bounded` for ``adapter``, its evictions queued where its other tables'
    are (its Session's, once it has one: :func:`outbox`)."""
    # (made without calling Bounded's __init__, its members set here: compiled, a Python
    # class's __init__ is looked up and called through its slot, most of what a table costs,
    # and tables are made per request)
    made: Bounded[Any, Any] = _make(Bounded)
    made.what = what
    made.limit = limit
    box: list[tuple[Bounded[Any, Any], Any]] | None = getattr(adapter, "_evicted", None)
    made.outbox = box if box is not None else []
    return made


_NO_KEYS: Final[OrderedDict[Any, None]] = OrderedDict()  # shared, never written


class Recent:
    """An insertion-ordered set of at most ``limit`` keys; the oldest are forgotten silently.

    Not generic: compiled, a class deriving from ``Generic`` carries a ``__dict__`` and a weak
    reference slot (24 bytes more), and an adapter holds several of these for each session
    a connection keeps."""

    __slots__ = ("_keys", "limit")

    def __init__(self, limit: int | None = None) -> None:
        self.limit = SEEN_IDS if limit is None else limit
        # the oldest forgotten in constant time; a shared empty table until the first key (a
        # connection of many sessions keeps every session's adapter)
        self._keys: OrderedDict[Hashable, None] = _NO_KEYS

    def add(self, key: Hashable) -> None:
        keys = self._keys
        if key not in keys:
            if keys is _NO_KEYS:
                keys = self._keys = OrderedDict()
            if len(keys) >= self.limit:
                keys.popitem(last=False)
            keys[key] = None

    def discard(self, key: Hashable) -> None:
        keys = self._keys
        if keys.pop(key, keys) is not keys and not keys:
            self._keys = _NO_KEYS  # an emptied OrderedDict keeps its size: give it back

    def remove(self, key: Hashable) -> None:
        del self._keys[key]
        if not self._keys:
            self._keys = _NO_KEYS

    def clear(self) -> None:
        self._keys = _NO_KEYS

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __bool__(self) -> bool:
        return bool(self._keys)


class _UnmadeRecent(Recent):
    """:data:`NO_RECENT`: read as an empty set; adding to it is a bug, and raises."""

    __slots__ = ()

    def add(self, key: Hashable) -> None:
        raise TypeError("NO_RECENT is shared and never written: make a Recent first (recent())")


#: The one empty :class:`Recent` an adapter holds in place of a set most sessions never fill
#: (a connection keeps every session, idle or not, and each set costs its object): read it
#: like any; add to the one :func:`recent` makes.
NO_RECENT: Final[Recent] = _UnmadeRecent(0)


def recent(held: Recent, limit: int | None = None) -> Recent:
    """``held``, or a new :class:`Recent` of ``limit`` keys in place of :data:`NO_RECENT`."""
    return Recent(limit) if held is NO_RECENT else held


def forgotten(what: str, key: object, limit: int) -> str:
    """The warning's text for an entry a bounded table forgot (the core's table of calls too)."""
    return f"{what} {key} forgotten: more than {limit} open at once; a later message about it is treated as unknown"


def evictions(outbox: list[tuple[Bounded[Any, Any], Any]]) -> list[Item]:
    """One warning per entry evicted since the last call, and the outbox emptied."""
    out: list[Item] = []
    for table, key in outbox:
        message = forgotten(table.what, key, table.limit)
        out.append(Emit(body=WarningBody(message=message, source="normalize"), synthetic=True))
    outbox.clear()
    return out


def buffer_warning(what: str, key: object, limit: int = BUFFER_TEXT) -> Item:
    """The warning for a message whose buffered text reached ``limit`` bytes."""
    message = f"{what} {key} holds more than {limit} characters of text; its complete text keeps the first {limit}"
    return Emit(body=WarningBody(message=message, source="normalize"), synthetic=True)


def link(adapter: Adapter, box: list[tuple[Bounded[Any, Any], Any]]) -> None:
    """Point the outboxes of ``adapter``'s tables, and of the adapters it holds, at ``box``.

    An adapter that makes an inner adapter after its Session was made (codex-exec-json's
    older shape) links the inner one to its own :func:`outbox`."""
    # (the classes bound here: compiled, a module's global is a dictionary lookup at each use)
    bounded: type = Bounded
    adapter_type: type = Adapter
    for value in _attributes(adapter):
        kind = type(value)
        if kind is bounded:
            table = cast(Bounded[Any, Any], value)
            if table.outbox is not box:
                box += table.outbox
                table.outbox = box
        elif issubclass(kind, adapter_type) and value is not adapter:
            # (not isinstance: one that fails also looks up the value's __class__, for each
            # attribute of every new Session's adapter)
            link(cast(Adapter, value), box)


#: (bound once: compiled, ``gc.get_referents`` is looked up in the module at each call)
_referents: Final = gc.get_referents


def _attributes(obj: object) -> list[object]:
    """The values of an object's attributes but None, and those of the plain dicts among them
    (its ``__dict__``, once made).

    The garbage collector's view of the object (``gc.get_referents``): it sees the attributes
    of an instance whether they are kept in its ``__dict__``, in the instance itself (CPython
    3.11 on makes the ``__dict__`` only when it is asked for: asking would add a dict to every
    adapter, and a connection keeps every session's) or in a compiled class's own slots."""
    values: list[object] = []
    for value in _referents(obj):
        if type(value) is dict:
            values += value.values()
        elif value is not None:  # most of a fresh adapter's attributes: nothing to look at
            values.append(value)
    return values


def outbox(adapter: Adapter) -> list[tuple[Bounded[Any, Any], Any]]:
    """The one list the evictions of ``adapter``'s tables are queued in (made, and the tables
    linked, on the first call): the Session turns them into warnings after each message."""
    box: list[tuple[Bounded[Any, Any], Any]] | None = getattr(adapter, "_evicted", None)
    if box is None:
        box = []
        link(adapter, box)
        adapter._evicted = box
    return box
