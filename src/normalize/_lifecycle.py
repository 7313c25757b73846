"""The lifecycle rules every adapter shares: what a request's outcome means.

Everything here is protocol-agnostic.  An adapter says what a native line means
("request R answered with option O", "call C was allowed by a rule"); the rules
below derive the normalized decision the same way for every agent, so that a
consumer asks one question ("was it allowed?") whatever the agent.

Rules (docs/events.md, "Decisions"):

* A permission request's options carry a kind (ACP's vocabulary, which every
  adapter already maps its options to): ``allow_once`` -> ``allow``,
  ``allow_always`` -> ``allow-always``, ``reject_once`` -> ``deny``,
  ``reject_always`` -> ``deny-always``.  The decision of a ``request-resolved``
  is the kind of the option it names (``optionId``), looked up in the request.
* A request nobody answered (``outcome: "cancelled"``) is ``cancel``.
* A question answered is ``answered``.
* When the request was never seen (its line was cut from a capture) or its
  options do not say, the option id itself is read with :data:`DECISION_WORDS`:
  the words agents use for their answers (Codex ``accept`` / ``decline``, Claude
  ``allow`` / ``deny``, hm ``reject``...).  An unknown word leaves the decision
  absent rather than guessing.
* ``permission-auto`` (decided by a rule, a mode, a flag) is read the same way
  from its ``optionId``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from itertools import islice
from typing import Any, Final

from msgspec import structs

from ._model import Decision, PermissionAuto, PermissionRequest, RequestResolved, Tokens, ToolCall, UserQuestion

__all__ = [
    "DECISION_WORDS",
    "ENDED_CALLS",
    "OPEN_CALLS",
    "SEEN_CALLS",
    "Calls",
    "OpenCall",
    "Requests",
    "decision_of",
    "tokens_plus",
    "tokens_since",
]

#: Option kinds (ACP's vocabulary) and the answer words of each agent, to decisions.
DECISION_WORDS: Final[dict[str, Decision]] = {
    # ACP option kinds, which every adapter maps its options to
    "allow_once": "allow",
    "allow_always": "allow-always",
    "reject_once": "deny",
    "reject_always": "deny-always",
    # Claude Code (can_use_tool behaviors, transcript decisions) and generic words
    "allow": "allow",
    "accept": "allow",
    "deny": "deny",
    "reject": "deny",
    # Codex app-server (v2) and exec/rollout (v1) review decisions
    "acceptForSession": "allow-always",
    "acceptWithExecpolicyAmendment": "allow-always",
    "applyNetworkPolicyAmendment": "allow-always",
    "decline": "deny",
    "approved": "allow",
    "approved_for_session": "allow-always",
    "denied": "deny",
    "abort": "deny",
    # hm
    "allow-session": "allow-always",
}


def decision_of(word: str | None) -> Decision | None:
    """The decision an option kind or an agent's answer word stands for, or None."""
    if word is None:
        return None
    return DECISION_WORDS.get(word)


_QUESTION: Final[dict[str, str]] = {}  # the options of a question: none, its answers are free
_NO_REQUESTS: Final[OrderedDict[str, Any]] = OrderedDict()  # shared, never written: no request yet


class Requests:
    """Open permission requests and questions, to give each resolution its decision.

    Keeps at most ``limit`` open requests; past it the oldest is forgotten (its
    resolution is then read from the option id alone).  Eviction is O(1).
    """

    __slots__ = ("_open", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        # request id -> (its options' kinds, the sub-agent that asked if one did); a shared
        # empty table until one is asked (a connection keeps every session's table)
        self._open: OrderedDict[str, tuple[dict[str, str], str | None]] = _NO_REQUESTS

    def __len__(self) -> int:
        return len(self._open)

    def __bool__(self) -> bool:
        return bool(self._open)

    def ask(self, body: PermissionRequest | UserQuestion, subagent_id: str | None = None) -> None:
        """A request is now open."""
        if type(body) is PermissionRequest:
            kinds = {o.id: o.kind for o in body.options}
        else:
            kinds = _QUESTION
        if self._open is _NO_REQUESTS:
            self._open = OrderedDict()
        self._open[body.request_id] = (kinds, subagent_id)
        self._open.move_to_end(body.request_id)
        if len(self._open) > self.limit:
            self._open.popitem(last=False)

    def open_requests(self) -> list[tuple[str, str | None]]:
        """The requests still open, oldest first, with the sub-agent that asked."""
        return [(rid, owner) for rid, (_, owner) in self._open.items()]

    def resolve(self, body: RequestResolved) -> RequestResolved:
        """The request is closed; ``body`` with its decision, when the adapter did not give one."""
        kinds = self._open.pop(body.request_id, (None, None))[0]
        if not self._open:  # an emptied OrderedDict keeps its size: give it back
            self._open = _NO_REQUESTS
        if body.decision is not None:
            return body
        decision: Decision | None
        if body.outcome == "cancelled":
            decision = "cancel"
        elif kinds is _QUESTION:
            decision = "answered"
        elif body.option_id is None:
            return body
        else:
            decision = decision_of(kinds.get(body.option_id) if kinds else None) or decision_of(body.option_id)
        return body if decision is None else structs.replace(body, decision=decision)

    @staticmethod
    def auto(body: PermissionAuto) -> PermissionAuto:
        """A permission decided without asking; ``body`` with its decision."""
        if body.decision is not None:
            return body
        decision = decision_of(body.option_id)
        return body if decision is None else structs.replace(body, decision=decision)


#: Tool calls open at once (a real session has a handful; parallel tool use reaches tens),
#: and ended call ids remembered to refuse a duplicated start or end.
OPEN_CALLS: Final = 10_000
SEEN_CALLS: Final = 100_000
#: Ended calls whose entry (and note) stays readable (:meth:`Calls.ended`) for an adapter
#: that asks (``Adapter.ended_calls``): a protocol that patches a call after its end (ACP)
#: finds what it said of it.  Others keep none: a connection of many sessions keeps every
#: session's table.
ENDED_CALLS: Final = 64


# Shared empty tables, replaced by a table of its own at the first entry (never written)
_NO_OPEN: Final[OrderedDict[str, Any]] = OrderedDict()
_NO_ENDED: Final[dict[str, None]] = {}
_NO_RECENT: Final[dict[str, Any]] = {}
_NO_EVICTED: Final[list[str]] = []


class OpenCall:
    """What the core knows of one open tool call: read by adapters through ``Adapter.calls``.

    ``tool``, ``title`` and ``category`` are the call's as its start (and any later
    ``updated`` phase that names them) said; ``subagent_id`` the sub-agent that made it;
    ``turn_id`` the turn it started in; ``note`` what the adapter attached to it
    (``Emit(note=...)``): whatever its protocol needs to repeat at the call's end.
    """

    __slots__ = ("call_id", "category", "note", "subagent_id", "title", "tool", "turn_id")

    def __init__(self, call: ToolCall, subagent_id: str | None, turn_id: str | None, note: Any) -> None:
        self.call_id = call.call_id
        self.tool = call.tool
        self.title = call.title
        self.category = call.category
        self.subagent_id = subagent_id
        self.turn_id = turn_id
        self.note = note

    def __repr__(self) -> str:
        return f"OpenCall({self.call_id!r}, tool={self.tool!r}, subagent_id={self.subagent_id!r})"


class Calls:
    """The table of tool calls: one ``started`` and one terminal phase each, and what is left open.

    The Session keeps it (adapters read it as ``self.calls``, never write it):

    * A second start, or a start or end after the end, is refused (:meth:`refuse` says
      why): a duplicated line (a reconnect that re-sends, a capture written twice) or a
      result read before its call would otherwise be counted twice.  ``updated`` is never
      refused (ACP agents patch finished calls); an end without a start (its start was
      never written) is let through: nothing contradicts it yet.
    * An end (or update) that names only its call (``tool=""``) is given the tool, title,
      category and sub-agent of its start (:meth:`named`): adapters keep no table of
      their own to repeat them.
    * The calls still open when their turn ends (main thread only: a sub-agent may run
      past its parent's turn) and when the input ends are settled by the Session with
      one policy (docs/adapters.md, "The lifecycle the core owns").

    Open calls are bounded by ``limit``: past it the oldest is forgotten and its id queued
    in :attr:`evicted` (the Session reports it); ended ids are remembered (at least the
    last ``seen``, at most a sixteenth more) to recognise duplicates.  Eviction is O(1)
    (amortized, for the ended ids: they are trimmed a sixteenth at a time).  The tables
    of ended calls are plain dicts, half the size of an ``OrderedDict`` when small: a
    connection of many sessions keeps every session's.
    """

    __slots__ = ("_ended", "_open", "_recent", "evicted", "kept_ended", "limit", "seen")

    def __init__(self, limit: int = OPEN_CALLS, seen: int = SEEN_CALLS, ended: int = 0) -> None:
        self.limit = limit
        self.seen = seen
        # open and ended calls: shared empty tables until a call starts or ends (a
        # connection of many sessions keeps every table)
        self._open: OrderedDict[str, OpenCall] = _NO_OPEN
        self._ended: dict[str, None] = _NO_ENDED
        self.kept_ended = ended
        # the last ``kept_ended`` ended (a shared empty table until one is kept)
        self._recent: dict[str, OpenCall] = _NO_RECENT
        #: ids of open calls forgotten past ``limit``, until the Session reports them (a
        #: connection of many sessions keeps every table: nothing allocated until needed)
        self.evicted: list[str] = _NO_EVICTED

    def __len__(self) -> int:
        return len(self._open)

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._open

    def __iter__(self) -> Iterator[OpenCall]:
        """The open calls, oldest first."""
        return iter(list(self._open.values()))

    def get(self, call_id: str) -> OpenCall | None:
        """The open call ``call_id``, or None (never started, ended, or forgotten)."""
        return self._open.get(call_id)

    def ended(self, call_id: str) -> OpenCall | None:
        """The call ``call_id`` if it is one of the last ``kept_ended`` that ended, else None.

        Its entry as it was at its end, note included: for a protocol whose agents patch a
        call after its end (an ACP ``tool_call_update`` after ``completed``).
        """
        return self._recent.get(call_id)

    def clear(self) -> None:
        self._open = _NO_OPEN
        self._ended = _NO_ENDED
        self._recent = _NO_RECENT
        self.evicted = _NO_EVICTED

    def named(self, call: ToolCall, subagent_id: str | None) -> tuple[ToolCall, str | None]:
        """A phase that names only its call (``tool=""``), completed from the call's start.

        The tool, and the title and category when the phase gives none, are the call's;
        the sub-agent is the call's when the adapter names none.  A call never seen (its
        start was cut, or forgotten) is the tool ``unknown``.
        """
        known = self._open.get(call.call_id)
        if known is None:
            return structs.replace(call, tool="unknown"), subagent_id
        body = structs.replace(
            call,
            tool=known.tool,
            title=known.title if call.title is None else call.title,
            category=known.category if call.category is None else call.category,
        )
        return body, known.subagent_id if subagent_id is None else subagent_id

    def refuse(self, call: ToolCall, subagent_id: str | None, turn_id: str | None, note: Any = None) -> str | None:
        """Record one phase of a call; why it cannot follow what was seen, or None."""
        cid = call.call_id
        if call.phase == "updated":
            known = self._open.get(cid)
            if known is not None:  # an update may name the call better (ACP sends the title late)
                if call.tool:
                    known.tool = call.tool
                if call.title is not None:
                    known.title = call.title
                if call.category is not None:
                    known.category = call.category
                if note is not None:
                    known.note = note
            return None
        if cid in self._ended:
            return f"tool call {cid} already finished; a later {call.phase} phase is not reported"
        if call.phase == "started":
            if cid in self._open:
                return f"tool call {cid} already started; a second start is not reported"
            if self._open is _NO_OPEN:
                self._open = OrderedDict()
            self._open[cid] = OpenCall(call, subagent_id, turn_id, note)
            if len(self._open) > self.limit:
                # forgotten: a later end is let through
                self.evicted = [*self.evicted, self._open.popitem(last=False)[0]]
            return None
        known = self._open.pop(cid, None)
        if known is not None and not self._open:  # an emptied OrderedDict keeps its size
            self._open = _NO_OPEN
        if known is not None and self.kept_ended:
            recent = self._recent
            if recent is _NO_RECENT:
                recent = self._recent = {}
            recent[cid] = known
            if len(recent) > self.kept_ended:  # a few entries: the oldest is found at once
                del recent[next(iter(recent))]
        ended = self._ended
        if ended is _NO_ENDED:
            ended = self._ended = {}
        ended[cid] = None
        if len(ended) > self.seen + (self.seen >> 4):
            # the newest ``seen`` kept, in one pass (removing the oldest one by one from a
            # dict leaves holes that each later removal walks over)
            self._ended = dict.fromkeys(islice(ended, len(ended) - self.seen, None))
        return None

    def open_in_turn(self, turn_id: str) -> list[tuple[str, OpenCall]]:
        """The main-thread calls ``turn_id`` started and did not end, oldest first."""
        return [(cid, c) for cid, c in self._open.items() if c.turn_id == turn_id and c.subagent_id is None]

    def open_calls(self) -> list[tuple[str, OpenCall]]:
        return list(self._open.items())


# Usage arithmetic: agents report cumulative counters (Codex's thread totals, Antigravity's
# session totals) where the model speaks of turns; one rule for every adapter.

_TOKEN_FIELDS: Final = ("input", "output", "total", "cache_read", "cache_write", "reasoning")


def _since(now: int | None, before: int | None) -> int | None:
    return None if now is None else now - (before or 0)


def _plus(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def tokens_since(now: Tokens, before: Tokens | None) -> Tokens:
    """What a cumulative counter grew by since ``before`` (a turn's usage from two totals).

    A count ``now`` does not give stays absent; a count ``before`` did not give counts as 0.
    """
    if before is None:
        return now
    return Tokens(**{f: _since(getattr(now, f), getattr(before, f)) for f in _TOKEN_FIELDS})


def tokens_plus(a: Tokens, b: Tokens) -> Tokens:
    """Two counts added (per-call usage summed into a turn's); absent only when both are."""
    return Tokens(**{f: _plus(getattr(a, f), getattr(b, f)) for f in _TOKEN_FIELDS})
