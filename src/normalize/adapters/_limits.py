"""Bounds on what an adapter keeps open, so memory stays finite whatever the input.

An adapter remembers what is open (tool calls, requests waiting for their answer,
sub-agents, prompts, text being streamed) until the native stream closes it.  A stream
that opens and never closes (a runaway agent, a cut capture, a hostile peer) would make
that memory grow with the length of the session.  Each table an adapter keeps is a
:class:`Bounded` (or :class:`Recent`) with a limit far above what a real session holds
open at once; past it the oldest entry is evicted and the adapter reports the eviction
as a synthesized warning (``Emit(Warning(message=..., source="normalize"),
synthetic=True)``) naming what was forgotten.  A later message about an evicted entry
is then handled as one about an unknown id (documented per adapter).

Defaults (docs/reliability.md):

* :data:`OPEN_CALLS`: tool calls started and not finished;
* :data:`PENDING_REQUESTS`: JSON-RPC / control requests waiting for their response;
* :data:`OPEN_ITEMS`: other open things (sub-agents, prompts, streamed blocks, threads);
* :data:`SEEN_IDS`: memory of finished ids, used to recognise duplicates (evicted
  silently: forgetting a finished id loses nothing open);
* :data:`BUFFER_TEXT`: text buffered for one message while it streams.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import wraps
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

from normalize import Emit, Item, MalformedMessage, Problem, ProtocolViolation, ToolCall
from normalize import Warning as WarningBody

__all__ = [
    "BUFFER_TEXT",
    "OPEN_CALLS",
    "OPEN_ITEMS",
    "PENDING_REQUESTS",
    "SEEN_IDS",
    "Bounded",
    "Recent",
    "buffer_warning",
    "CallLedger",
    "bounded_feed",
    "evictions",
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
BUFFER_TEXT = 16 * 1024 * 1024

K = TypeVar("K")
V = TypeVar("V")


class Bounded(dict[K, V]):
    """A dict that keeps at most ``limit`` entries, evicting the oldest inserted.

    Evicted keys are queued in :attr:`evicted` until :func:`evictions` turns them into
    warnings.  ``what`` names one entry in those warnings ("tool call").
    """

    __slots__ = ("evicted", "limit", "what")

    def __init__(self, what: str, limit: int) -> None:
        super().__init__()
        self.what = what
        self.limit = limit
        self.evicted: list[K] = []

    def __setitem__(self, key: K, value: V) -> None:
        if len(self) >= self.limit and key not in self:
            oldest = next(iter(self))
            super().__delitem__(oldest)
            self.evicted.append(oldest)
        super().__setitem__(key, value)

    def setdefault(self, key: K, default: V) -> V:
        if key not in self:
            self[key] = default
        return self[key]


class Recent(Generic[K]):
    """An insertion-ordered set of at most ``limit`` keys; the oldest are forgotten silently."""

    __slots__ = ("_keys", "limit")

    def __init__(self, limit: int | None = None) -> None:
        self.limit = SEEN_IDS if limit is None else limit
        self._keys: dict[K, None] = {}

    def add(self, key: K) -> None:
        keys = self._keys
        if key not in keys:
            if len(keys) >= self.limit:
                del keys[next(iter(keys))]
            keys[key] = None

    def discard(self, key: K) -> None:
        self._keys.pop(key, None)

    def remove(self, key: K) -> None:
        del self._keys[key]

    def clear(self) -> None:
        self._keys.clear()

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[K]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __bool__(self) -> bool:
        return bool(self._keys)


def evictions(tables: Iterable[Bounded[Any, Any]]) -> list[Item]:
    """One warning per entry evicted since the last call, and the queues emptied."""
    out: list[Item] = []
    for table in tables:
        if table.evicted:
            for key in table.evicted:
                message = (
                    f"{table.what} {key} forgotten: more than {table.limit} open at once; "
                    "a later message about it is treated as unknown"
                )
                out.append(Emit(body=WarningBody(message=message, source="normalize"), synthetic=True))
            table.evicted.clear()
    return out


def buffer_warning(what: str, key: object, limit: int = BUFFER_TEXT) -> Item:
    """The warning for a message whose buffered text reached ``limit`` bytes."""
    message = f"{what} {key} holds more than {limit} characters of text; its complete text keeps the first {limit}"
    return Emit(body=WarningBody(message=message, source="normalize"), synthetic=True)


class CallLedger:
    """Each tool call has one ``started`` and one terminal phase, whatever the input repeats.

    A duplicated line (a reconnect that re-sends, a capture written twice) or a result
    read before its call would otherwise give a call two starts or two ends, which
    consumers count twice.  The ledger remembers the calls it saw start and end (the
    last :data:`SEEN_IDS` of each) and turns a second start, or a start or end after
    the end, into a :class:`~normalize.ProtocolViolation` problem: an ``error`` event
    keeping the native message in default mode, raised in strict mode.  ``updated``
    is never refused (ACP agents patch finished calls), and a call seen ending without
    a start (its start was never written) is let through: nothing contradicts it yet.
    """

    __slots__ = ("_ended", "_started")

    def __init__(self) -> None:
        self._started: Recent[str] = Recent()
        self._ended: Recent[str] = Recent()

    def check(self, items: list[Item]) -> list[Item]:
        out: list[Item] = []
        for item in items:
            body = item.body if isinstance(item, Emit) else item
            why = self._why(body) if isinstance(body, ToolCall) else None
            if why is None:
                out.append(item)
            else:
                subagent = item.subagent_id if isinstance(item, Emit) else None
                out.append(Problem(error=ProtocolViolation(why), subagent_id=subagent))
        return out

    def _why(self, call: ToolCall) -> str | None:
        cid = call.call_id
        if call.phase == "updated":  # ACP agents patch a call after its end (load replays): kept
            return None
        if cid in self._ended:
            return f"tool call {cid} already finished; a later {call.phase} phase is not reported"
        if call.phase == "started":
            if cid in self._started:
                return f"tool call {cid} already started; a second start is not reported"
            self._started.add(cid)
        else:
            self._ended.add(cid)
            self._started.discard(cid)
        return None


P = ParamSpec("P")
A = TypeVar("A")


def bounded_feed(feed: Callable[Concatenate[A, P], list[Item]]) -> Callable[Concatenate[A, P], list[Item]]:
    """Decorate ``feed`` with the guards every adapter shares.

    * A tool call's phases are checked by a :class:`CallLedger`: a second start or a
      phase after the end is a ``ProtocolViolation`` problem instead.
    * Warnings for the entries it evicted from any :class:`Bounded` attribute of the
      adapter follow the items it returns.
    * A message nested deeper than the decoder's recursion allows (about a thousand
      levels; real messages stay under twenty) is :class:`~normalize.MalformedMessage`,
      not the ``RecursionError`` msgspec raises for it.
    """

    @wraps(feed)
    def wrapper(self: A, /, *args: P.args, **kwargs: P.kwargs) -> list[Item]:
        try:
            items = feed(self, *args, **kwargs)
        except RecursionError:
            raise MalformedMessage("JSON nested too deeply to decode") from None
        if any(isinstance(i, ToolCall) or (isinstance(i, Emit) and isinstance(i.body, ToolCall)) for i in items):
            ledger = vars(self).get("_call_ledger")
            if ledger is None:
                ledger = vars(self)["_call_ledger"] = CallLedger()
            items = ledger.check(items)
        full = [t for t in vars(self).values() if type(t) is Bounded and t.evicted]
        return items + evictions(full) if full else items

    return wrapper
