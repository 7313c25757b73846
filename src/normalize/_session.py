"""The Session: envelope bookkeeping and the turn state machine.

Everything that gives an event its place in a stream lives here, and nothing
here knows any native protocol.  Rules (docs/events.md, "Envelope rules"):

* seq: 1, 2, 3, ... for every ``session.event`` of this Session object, in
  emission order; sub-agent events share it.
* turnId: ``turn:N`` in order of turn start.  Every event from ``turn-start`` to
  its ``turn-complete``, both included, carries it; events outside carry none.

  - a ``turn-start`` while a turn is open first closes that turn with a
    synthesized ``turn-complete`` (reason ``interrupt``);
  - a ``turn-complete`` with no turn open is preceded by a synthesized
    ``turn-start``, so every turn has both ends;
  - at close, an open turn gets an ``error`` (the stream was cut off) and a
    ``turn-complete`` with reason ``interrupt``, and the session fails.
* origin: the Session's default (``live``, or ``replay`` for stored formats),
  unless the adapter says otherwise for an event.
* ts: the native timestamp, else the capture's receive time, else the clock (read once
  per native message: the events of one message share its time); except that an event
  normalize made up (``protocol: "core"``) takes the nearest time before it (the last
  native or receive time of this Session), and the clock only when there has been none
  yet: a session stored in 2025 and converted today keeps its 2025 times, and a live
  stream says the same times as the conversion of its recording.
* native: the message an event came from, unchanged; ``protocol: "core"`` for
  events the library synthesizes.
* Nothing is lost: a native message that produced no event becomes a
  ``session.update``; bad input becomes an ``error`` event (or is raised in
  strict mode).
* State: ``starting`` until the first event; ``running`` inside a turn;
  ``waiting`` while a permission request or question is pending; ``idle``
  between turns; ``ended`` or ``failed`` at close.  Each change is a
  ``session.stateChanged``.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final, cast

import msgspec
from msgspec import Raw, structs

from ._contract import Adapter, Direction, Emit, InTurn, Item, Passthrough, Problem, Source
from ._errors import InputError, MalformedMessage, ProtocolViolation, UsageError
from ._lifecycle import Calls, Requests
from ._model import (
    Body,
    Category,
    ErrorInfo,
    EventEnvelope,
    McpTool,
    Native,
    Origin,
    PermissionAuto,
    PermissionRequest,
    RequestResolved,
    SessionCreated,
    SessionEvent,
    SessionFailed,
    SessionRecord,
    SessionResumed,
    SessionState,
    SessionStateChanged,
    SessionUpdate,
    Subagent,
    Task,
    ToolCall,
    ToolCalled,
    ToolFinished,
    TurnComplete,
    TurnStart,
    UserQuestion,
    _Core,
)
from ._model import Error as ErrorBody
from ._model import Warning as WarningBody
from .adapters._limits import evictions, forgotten, outbox

__all__ = ["HOLD_LIMIT", "MAX_PENDING", "MAX_RUNNING", "Clock", "Session", "format_ts", "session_id_for"]

#: How many messages a Session holds back waiting for its adapter to announce the
#: session (``Adapter.announces_session``).  Agents announce in their first few
#: messages (Claude's ``init`` after the client's prompt, ACP's ``session/new``
#: response after ``initialize``); past this bound the session is announced
#: with what is known, so memory and latency stay bounded.
HOLD_LIMIT: Final = 32

#: How many unanswered permission requests and questions the Session tracks for its
#: ``waiting`` state; past it the oldest is forgotten (the adapters report theirs).
MAX_PENDING = 10_000

#: How many sub-agents and background tasks the Session tracks as running, to settle at close
#: those the input leaves open; past it the oldest is forgotten, with a warning.
MAX_RUNNING: Final = 10_000

#: A clock returns seconds since the epoch (``time.time`` by default).
Clock = Callable[[], float]


#: The last whole second formatted by :func:`format_ts` and its text, replaced as one tuple.
_ts_cache: tuple[int, str] = (-1, "")
#: The last millisecond formatted, ``(low, high, text)``: every time strictly between low
#: and high is written as text.  The bounds lie :data:`_MS_MARGIN` inside the
#: millisecond's own, so a time near its edge, where a float's rounding could decide, is
#: formatted the long way.
_ms_cache: tuple[float, float, str] = (0.0, 0.0, "")
#: 10 microseconds: more than 4 units in the last place of any time before the year 2286
#: (1e10 seconds), the only times kept in :data:`_ms_cache`
_MS_MARGIN: Final = 1e-5


def format_ts(seconds: float) -> str:
    """RFC 3339 in UTC with milliseconds, the form normalize writes.

    Called for every message without a native time, so the text of the last
    millisecond is kept, and that of the last whole second; the microseconds are
    rounded as ``datetime.fromtimestamp`` rounds them (half to even), so the result is
    the same as formatting it.
    """
    global _ts_cache, _ms_cache
    low, high, text = _ms_cache
    if low < seconds < high:
        return text
    if seconds < 0:
        dt = datetime.fromtimestamp(seconds, tz=UTC)
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    frac, whole = math.modf(seconds)
    us = round(frac * 1e6)
    sec = int(whole)
    if us >= 1_000_000:
        sec += 1
        us -= 1_000_000
    cached = _ts_cache
    if cached[0] != sec:
        cached = _ts_cache = (sec, datetime.fromtimestamp(sec, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S."))
    ms = us // 1000
    text = cached[1] + _MILLIS[ms]
    if seconds < 1e10:
        # the millisecond's own bounds: microseconds from ms*1000 - 0.5 to ms*1000 + 999.5
        start = sec + ms / 1000
        _ms_cache = (start - 0.5e-6 + _MS_MARGIN, start + 0.9995e-3 - _MS_MARGIN, text)
    return text


#: ``"000Z"`` ... ``"999Z"``: the end of a time, looked up rather than formatted
_MILLIS: Final = [f"{ms:03d}Z" for ms in range(1000)]


_validator: Final = msgspec.json.Decoder(msgspec.Raw)


def session_id_for(agent: str, native_session_id: str) -> str:
    """The ``sessionId`` of an agent's native session (docs/events.md, "Identity"): an
    adapter names a related session by it (a sub-agent's ``parentId``, a fork's ``forkOf``)."""
    return "s-" + hashlib.sha256(f"{agent}\0{native_session_id}".encode()).hexdigest()[:16]


def _is_json(message: bytes) -> bool:
    """Whether a message is one JSON value (checked only where no adapter decoded it)."""
    try:
        _validator.decode(message)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def _utf8_scan() -> Callable[[bytes], int] | None:
    """The compiled build's scan (src/normalize/_scan.c): the same answer as decoding,
    sooner; None in the pure-Python build, where a line not all ASCII is decoded."""
    try:
        from ._scan import first_invalid
    except ImportError:
        return None
    return first_invalid


#: (Final: compiled, read per line from a C global, not the module's dictionary)
_first_invalid: Final = _utf8_scan()


def _utf8_error(message: bytes) -> MalformedMessage | None:
    """Why a line is not UTF-8 (worded by Python's decoder), or None."""
    try:
        message.decode("utf-8")
    except UnicodeDecodeError as exc:
        return MalformedMessage(f"not UTF-8: {exc.reason} at byte {exc.start}")
    return None


def _ms_between(start: str, end: str) -> float | None:
    """Milliseconds from one RFC 3339 time to another, or None if either is unreadable."""
    try:
        delta = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    except ValueError:
        return None
    return max(delta.total_seconds() * 1000, 0.0)


def _kept_text(message: bytes) -> str:
    """A bad line kept whole as text, each invalid UTF-8 sequence replaced by U+FFFD.

    The line is already bounded by the reader (``max_line``), so nothing is
    cut: a large tool result with one stray byte keeps its end.
    """
    return message.decode("utf-8", errors="replace")


_NO_NATIVE: Final[tuple[bytes | None, str | None, Native]] = (None, None, Native(protocol="core", payload=None))
#: "turn:1", "turn:2", ...: one copy of each for every session (a connection keeps every session's)
_TURN_NAMES: Final[list[str]] = []


def _turn_name(n: int) -> str:
    if n >= 1024:
        return f"turn:{n}"
    while len(_TURN_NAMES) <= n:
        _TURN_NAMES.append(f"turn:{len(_TURN_NAMES)}")
    return _TURN_NAMES[n]


_NO_PENDING: Final = Requests(MAX_PENDING)  # shared, never asked: a session with no request open yet
_NO_HELD: Final[list[_Core]] = []  # shared, never written (held only before the session is announced)
_NO_MCP: Final[OrderedDict[str, tuple[McpTool, str | None]]] = OrderedDict()  # shared, never written
#: the sub-agents and background tasks running, by kind and id: the body that started (or last
#: moved) each one and the sub-agent it runs inside
_Running = dict[tuple[str, str], tuple[Subagent | Task, str | None]]
_NO_RUNNING: Final[_Running] = {}  # shared, never written: a session with nothing running yet

# The roles a body plays in the turn state machine, by its exact type.
_OTHER: Final = 0
_START: Final = 1
_COMPLETE: Final = 2
_ASK: Final = 3
_RESOLVED: Final = 4
_SUBAGENT: Final = 5
_AUTO: Final = 6
_MCP: Final = 7
_CALL: Final = 8
_TASK: Final = 9
_ROLES: Final[dict[type[Body], int]] = {
    TurnStart: _START,
    TurnComplete: _COMPLETE,
    PermissionRequest: _ASK,
    UserQuestion: _ASK,
    RequestResolved: _RESOLVED,
    Subagent: _SUBAGENT,
    PermissionAuto: _AUTO,
    McpTool: _MCP,
    ToolCall: _CALL,
    Task: _TASK,
}


# What an adapter's item is, by its exact type (a dict look-up costs a third of an
# isinstance against a Struct base, a tenth of one that fails): a body or a Source, the
# items of nearly every line, and the other items adapters make (a CoreEvent: a session's
# record, its failure, any other).
_BODY: Final = 1
_SOURCE: Final = 2
_OTHER_ITEM: Final = 3
_EMIT: Final = 4
_IN_TURN: Final = 5
_PASSTHROUGH: Final = 6
_PROBLEM: Final = 7
_RECORD: Final = 8
_FAILED: Final = 9
_ITEM_KINDS: Final[dict[type, int]] = {}
_KINDS_BY_BASE: Final[tuple[tuple[type, int], ...]] = (
    (Body, _BODY),
    (Source, _SOURCE),
    (Emit, _EMIT),
    (InTurn, _IN_TURN),
    (Passthrough, _PASSTHROUGH),
    (Problem, _PROBLEM),
    (SessionCreated, _RECORD),
    (SessionResumed, _RECORD),
    (SessionFailed, _FAILED),
)


def _item_kind(t: type) -> int:
    """The kind of an item type, known once (``_run`` reads the table itself first: it
    saves the call on the path of every item)."""
    known = _ITEM_KINDS.get(t)
    if known is not None:
        return known
    kind = next((k for base, k in _KINDS_BY_BASE if issubclass(t, base)), _OTHER_ITEM)
    if len(_ITEM_KINDS) < 1024:  # the types adapters give: a few dozen
        _ITEM_KINDS[t] = kind
    return kind


# The classes made or told apart for every event, bound once.  In the compiled build a
# module-level name is read from the module's dict at each use unless it is Final (the
# constants above are Final for the same reason): docs/performance.md, "Names bound
# once, and one output buffer".
_EventEnvelope: Final = EventEnvelope
_SessionEvent: Final = SessionEvent
_SessionStateChanged: Final = SessionStateChanged
_Native: Final = Native
_Raw: Final = Raw
_TurnStart: Final = TurnStart
_Emit: Final = Emit
_InTurn: Final = InTurn
_Passthrough: Final = Passthrough
_Problem: Final = Problem
_SessionCreated: Final = SessionCreated
_SessionResumed: Final = SessionResumed
_SessionFailed: Final = SessionFailed


class Session:
    """Wraps one adapter and turns its output into CoreEvents.

    ``feed(message, from_)`` for each native message, ``close()`` at the end;
    both return the CoreEvents to emit, in order.  ``strict=True`` raises the
    library's :class:`~normalize.InputError` subclasses on bad input instead of
    emitting ``error`` events.
    """

    # a connection keeps every session it opened: no instance dict per session
    __slots__ = (
        "_calls",
        "_clock",
        "_closed",
        "_created",
        "_decodes_whole",
        "_failed",
        "_first",
        "_forgotten",
        "_held",
        "_holding",
        "_last_ts",
        "_mcp_open",
        "_native_of",
        "_native_ts",
        "_now",
        "_pending",
        "_protocol",
        "_running",
        "_salt",
        "_seq",
        "_spawned",
        "_state",
        "_turn_id",
        "_turns",
        "adapter",
        "origin",
        "session_id",
        "strict",
    )

    def __init__(
        self,
        adapter: Adapter,
        *,
        session_id: str | None = None,
        origin: Origin | None = None,
        clock: Clock | None = None,
        strict: bool = False,
    ) -> None:
        self.adapter = adapter
        self.session_id = session_id
        self.origin: Origin = origin if origin is not None else ("replay" if adapter.stored else "live")
        self.strict = strict
        self._clock = clock if clock is not None else time.time
        self._protocol = type(adapter).protocol
        #: the adapter returns only for messages it decoded whole: each one is JSON
        self._decodes_whole = type(adapter).decodes_whole
        self._seq = 0
        self._turns = 0
        self._turn_id: str | None = None
        self._state: SessionState = "starting"
        #: MCP calls started: their view and its time (a shared empty table until one starts:
        #: a connection of many sessions keeps every session)
        self._mcp_open: OrderedDict[str, tuple[McpTool, str | None]] = _NO_MCP
        self._native_ts: str | None = None  # the native time of the item being emitted (MCP durations)
        self._calls: Calls = adapter.calls  # one start and one end per call; what is left open
        #: the entries the adapter's bounded tables forgot, reported after the message's items
        self._forgotten = outbox(adapter)
        # open requests, for the waiting state and decisions (a shared empty table until one is asked)
        self._pending = _NO_PENDING
        #: sub-agents and background tasks started and not yet ended (a shared empty table
        #: until one starts)
        self._running: _Running = _NO_RUNNING
        self._created = False
        self._closed = False
        self._failed = False
        self._first: bytes | None = None
        #: what sets the session's derived id apart from other sessions of its connection, which
        #: begin with the same messages (its handshake; see Connection)
        self._salt = b""
        #: what the messages held before the session was announced gave (translated at once,
        #: so the turn and the table of calls follow them; emitted after ``session.created``)
        self._held: list[_Core] = _NO_HELD
        self._holding = 0  # how many messages were held
        #: the last native or receive time an event carried (made-up events take it)
        self._last_ts: str | None = None
        #: a session another one spawned (a sub-agent's thread): its record, announced at once
        self._spawned: SessionCreated | None = None
        self._now: str | None = None  # the clock's time for the message being translated
        # the Native of the message being translated (dropped after it: a session kept after its
        # last message, in a connection of many, keeps no message)
        self._native_of: tuple[bytes | None, str | None, Native] = _NO_NATIVE

    # ------------------------------------------------------------------ public

    @property
    def seq(self) -> int:
        """The seq of the last ``session.event`` emitted (0 before any)."""
        return self._seq

    @property
    def turn_id(self) -> str | None:
        """The open turn's id, or None between turns."""
        return self._turn_id

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def closed(self) -> bool:
        return self._closed

    def feed(self, message: bytes, from_: Direction = "agent", *, t: str | None = None) -> list[_Core]:
        """Translate one native message (the wire line, without its newline)."""
        if self._closed:
            raise UsageError("Session.feed() after close()")
        if self._first is None:
            self._first = message
        self._now = None
        items: list[Item]
        scan = _first_invalid
        suspect = not message.isascii() if scan is None else scan(message) >= 0
        if suspect and (bad := _utf8_error(message)) is not None:
            items = [_Problem(error=bad)]  # adapters only ever see UTF-8
        else:
            try:
                items = self.adapter.feed(message, from_)
            except InputError as exc:
                items = [_Problem(error=exc)]
            except RecursionError:  # msgspec's decoders stop at a fixed depth, with this error
                items = [_Problem(error=MalformedMessage("JSON nested too deeply to decode"))]
            if self._forgotten:
                items = items + evictions(self._forgotten)
        if self._created:
            return self._run(items, message, t)
        return self._dispatch(items, message, t)

    def feed_problem(self, error: InputError, *, t: str | None = None) -> list[_Core]:
        """Report input that never became a message (a line too long, a broken tap line)."""
        if self._closed:
            raise UsageError("Session.feed_problem() after close()")
        if self.strict:
            raise error
        self._now = None
        kept = (error.kept or "").encode()  # the event carries what could be kept of the line, as text
        if self._first is None:
            self._first = kept or error.message.encode()
        return self._dispatch([_Problem(error=error)], kept, t)

    def close(self) -> list[_Core]:
        """The input ended.  Settles open turns and calls; idempotent calls raise."""
        if self._closed:
            raise UsageError("Session.close() called twice")
        self._closed = True
        self._now = None
        if self._first is None:
            return []  # nothing was ever fed: there is no session to report
        out = self._dispatch(self.adapter.close(), None, None)
        sid = self.session_id
        assert sid is not None
        self._settle_open(out, "the input ended first")
        if self._turn_id is not None:
            reason = f"the stream ended during {self._turn_id}"
            self._synth(out, ErrorBody(message=reason, error_type="cut-off", recoverable=False), "close")
            self._synth(out, TurnComplete(reason="interrupt"), "close")
            out.append(_SessionFailed(session_id=sid, error=ErrorInfo(message=reason, error_type="cut-off")))
            self._failed = True
        self._set_state(out, "failed" if self._failed else "ended")
        return out

    def spawned_by(self, parent_id: str | None, native_id: str) -> list[_Core]:
        """This session is a sub-agent's (its native id ``native_id``, the id the parent's
        ``subagent`` events give it) that session ``parent_id`` spawned: its record says
        ``parentId``, and it is announced at once (its own messages may never name it):
        at its first message, or now, with the events it held, when it was fed already.
        A session already announced stays as it is: its record is out."""
        if self._created or self._closed:
            return []
        record = SessionRecord(id="", agent="", protocol="", native_session_id=native_id, parent_id=parent_id)
        self._spawned = _SessionCreated(session_id="", record=record)
        if self._first is None:
            return []
        return self._dispatch([], None, None)

    def spawned_turn_ended(self, native_id: str, turn: TurnComplete, *, t: str | None = None) -> list[_Core]:
        """A session this one spawned (``native_id``) ended a turn (``turn``, its body, at
        ``t``): the events this session's adapter says of it (a sub-agent's end the protocol
        does not report itself, :meth:`Adapter.spawned_turn_ended`), or none.  A closed
        session says nothing more."""
        if self._closed:
            return []
        return self._made(self.adapter.spawned_turn_ended(native_id, turn), t)

    def spawned_turn_started(self, native_id: str, *, t: str | None = None) -> list[_Core]:
        """A session this one spawned (``native_id``) started a turn at ``t``: the events this
        session's adapter says of it (a sub-agent running again, :meth:`Adapter.spawned_turn_started`),
        or none.  A closed session says nothing more."""
        if self._closed:
            return []
        return self._made(self.adapter.spawned_turn_started(native_id), t)

    # ----------------------------------------------------------------- private

    def _made(self, items: list[Item], t: str | None) -> list[_Core]:
        """Items an adapter made of no message of its own (at ``t``), as events."""
        if not items:
            return []
        self._now = None
        return self._dispatch(items, None, t)

    def _dispatch(self, items: list[Item], message: bytes | None, t: str | None) -> list[_Core]:
        """Announce the session first: hold input until the adapter names the session."""
        if self._created:
            return self._run(items, message, t)
        # (by the kind of each item's type: an isinstance of a Struct's class that fails asks
        # its metaclass, about 1,500 instructions an item)
        announced = cast(
            "SessionCreated | SessionResumed | None",
            next((i for i in items if _item_kind(type(i)) == _RECORD), None),
        )
        if announced is None and self._spawned is not None:
            announced = self._spawned
        holding = type(self.adapter).announces_session and not self._closed and self._holding < HOLD_LIMIT
        if announced is None and holding:
            # translated now, with the session's id to come ("" until then, see _named): the
            # events keep their order and seq, and the state (turn, calls, requests) follows
            # them as if not held
            self._holding += 1
            if self._held is _NO_HELD:
                self._held = []
            self._held += self._run(items, message, t)
            return []
        self._created = True
        if self.session_id is None:
            self.session_id = self._derive_id(announced, message)
        self._first = b""  # fed (not None); its bytes are no longer needed once the id is known
        first = announced or self._default_created()
        if first.record.fork_of is not None:  # the adapter names the parent by its native id
            agent = first.record.agent or self.adapter.agent
            first = structs.replace(
                first, record=structs.replace(first.record, fork_of=session_id_for(agent, first.record.fork_of))
            )
        out: list[_Core] = [self._fill_record(first)]
        held, self._held = self._held, _NO_HELD  # nothing is held once the session is announced
        if held:
            out += self._named(held)
        out += self._run([i for i in items if i is not announced], message, t)
        return out

    def _named(self, held: list[_Core]) -> list[_Core]:
        """Held output, given the session's id now that it is known."""
        sid = self.session_id
        assert sid is not None
        named: list[_Core] = []
        for core in held:
            if type(core) is _SessionEvent:  # (made here: the class itself)
                env = structs.replace(core.event, session_id=sid)
                named.append(_SessionEvent(session_id=sid, event=env))
            else:
                named.append(structs.replace(core, session_id=sid))
        return named

    def _derive_id(self, announced: SessionCreated | SessionResumed | None, message: bytes | None) -> str:
        """The session's id (docs/events.md, "Identity").

        From the agent and its native session id when the adapter names one, so that a
        live stream, the agent's stored file and a replay of either give the same id;
        otherwise from the first message and the one that announced the session, which
        differ for distinct runs even when every run starts with the same handshake (a
        session no message announced: from its first message, and from its place among the
        sessions of its connection, all of which begin with the same messages).
        """
        native = announced.record.native_session_id if announced is not None else None
        if native:
            agent = announced.record.agent if announced is not None and announced.record.agent else self.adapter.agent
            return session_id_for(agent, native)
        assert self._first is not None
        if announced is not None and message is not None:
            seed = self._first + b"\0" + message
        else:
            seed = self._first + self._salt
        return "s-" + hashlib.sha256(seed).hexdigest()[:16]

    def _run(self, items: list[Item], message: bytes | None, t: str | None) -> list[_Core]:
        out: list[_Core] = []
        sid = self.session_id or ""
        method: str | None = None
        native_ts: str | None = None
        accounted = message is None
        kinds = _ITEM_KINDS
        for item in items:
            kind = kinds.get(type(item)) or _item_kind(type(item))
            if kind == _BODY:
                self._native_ts = native_ts
                self._event(out, item, message, method, native_ts or t, None, None, False)  # type: ignore[arg-type]
                accounted = True
            elif kind == _SOURCE:
                method, native_ts = item.method, item.ts  # type: ignore[union-attr]
            elif kind == _EMIT:
                emit = cast(Emit, item)
                self._native_ts = emit.ts or native_ts
                self._event(
                    out,
                    emit.body,
                    message,
                    method,
                    emit.ts or native_ts or t,
                    emit.origin,
                    emit.subagent_id,
                    emit.synthetic,
                    note=emit.note,
                )
                accounted = accounted or not emit.synthetic
            elif kind == _IN_TURN:
                if self._turn_id is None:
                    self._event(out, _TurnStart(), message, method, native_ts or t, None, None, False)
                    accounted = True
            elif kind == _PASSTHROUGH:
                self._keep(out, message, cast(Passthrough, item).method or method, native_ts or t)
                accounted = True
            elif kind == _PROBLEM:
                problem = cast(Problem, item)
                if self.strict:
                    raise problem.error
                error = problem.error
                err = ErrorBody(message=error.message, error_type=error.error_type, recoverable=True)
                text = message is not None and (isinstance(error, MalformedMessage) or not _is_json(message))
                origin, sub = problem.origin, problem.subagent_id
                self._event(out, err, message, method, native_ts or t, origin, sub, False, text_payload=text)
                accounted = True
            elif kind == _RECORD:
                record = cast(SessionCreated | SessionResumed, item)
                if isinstance(record, _SessionCreated) and record.record.fork_of is not None:
                    self._fork(out, record)
                    sid = self.session_id or ""
                else:
                    out.append(self._fill_record(record))
            else:  # a CoreEvent the adapter made (bodies and Sources were told apart above)
                if kind == _FAILED:
                    self._failed = True
                out.append(structs.replace(cast(_Core, item), session_id=sid))
        if not accounted:
            self._keep(out, message, method, native_ts or t)
        self._native_of = _NO_NATIVE
        return out

    def _keep(self, out: list[_Core], message: bytes | None, method: str | None, ts: str | None) -> None:
        """A message kept untranslated: ``session.update``, or an error when it is not even JSON
        (known to be JSON when the adapter ``decodes_whole``)."""
        sid = self.session_id or ""
        if message is not None and not self._decodes_whole and not _is_json(message):
            error = MalformedMessage("not a JSON message")
            if self.strict:
                raise error
            err = ErrorBody(message=error.message, error_type=error.error_type, recoverable=True)
            self._event(out, err, message, method, ts, None, None, False, text_payload=True)
            return
        out.append(SessionUpdate(session_id=sid, update=self._native(message, method)))

    def _default_created(self) -> SessionCreated:
        return _SessionCreated(session_id="", record=SessionRecord(id="", agent="", protocol=""))

    def _fill_record(self, item: SessionCreated | SessionResumed) -> _Core:
        sid = self.session_id
        assert sid is not None
        rec = item.record
        rec = structs.replace(
            rec,
            id=rec.id or sid,
            agent=rec.agent or self.adapter.agent,
            protocol=rec.protocol or self._protocol,
            parent_id=rec.parent_id or (self._spawned.record.parent_id if self._spawned is not None else None),
        )
        return structs.replace(item, session_id=sid, record=rec)

    def _native(self, message: bytes | None, method: str | None, text: bool = False) -> Native:
        if message is None:
            return _Native(protocol="core", method=method, payload=None)
        payload: Any = _kept_text(message) if text else _Raw(message)
        return _Native(protocol=self._protocol, method=method, payload=payload)

    def _synth(self, out: list[_Core], body: Body, why: str, subagent_id: str | None = None) -> None:
        """An event normalize makes up (``why``, its native method), in ``subagent_id`` if given."""
        self._event(out, body, None, why, None, None, subagent_id, True)

    def _event(
        self,
        out: list[_Core],
        body: Body,
        message: bytes | None,
        method: str | None,
        ts: str | None,
        origin: Origin | None,
        subagent_id: str | None,
        synthetic: bool,
        *,
        text_payload: bool = False,
        note: Any = None,
    ) -> None:
        # The turn state machine: see the module docstring.  Bodies are never
        # subclassed (docs/events.md), so their exact type says their role.
        role = _ROLES.get(type(body), _OTHER)
        if role == _OTHER:
            pass
        elif role == _START:
            if self._turn_id is not None:
                self._synth(out, TurnComplete(reason="interrupt"), "turn-start-while-open")
            self._turns += 1
            self._turn_id = _turn_name(self._turns)
        elif role == _COMPLETE:
            if self._turn_id is None:
                self._synth(out, _TurnStart(), "turn-complete-without-start")
            else:
                for call_id, call in self._calls.open_in_turn(self._turn_id):
                    reason = f"tool call {call_id} ({call.tool}) was still open when {self._turn_id} ended"
                    self._settle_call(out, call_id, call.tool, call.category, None, reason)
        elif role == _CALL:
            if not body.tool and body.phase != "started":  # type: ignore[attr-defined]
                body, subagent_id = self._calls.named(body, subagent_id)  # type: ignore[arg-type]
            why = self._calls.refuse(body, subagent_id, self._turn_id, note)  # type: ignore[arg-type]
            if why is not None:  # a duplicate or late phase: reported, not counted twice
                if self.strict:
                    raise ProtocolViolation(why)
                body = ErrorBody(message=why, error_type=ProtocolViolation.error_type, recoverable=True)
        elif role == _SUBAGENT:
            # the body's own subagentId names it (docs/events.md); the envelope's, when an
            # adapter gives one, is the sub-agent it runs inside: a nested sub-agent's parent
            sub = cast(Subagent, body)
            if subagent_id is not None and subagent_id != sub.subagent_id and sub.parent_subagent_id is None:
                body = structs.replace(sub, parent_subagent_id=subagent_id)
            subagent_id = None
        elif role == _RESOLVED:
            body = self._pending.resolve(body)  # type: ignore[arg-type]
        elif role == _AUTO:
            body = Requests.auto(body)  # type: ignore[arg-type]
        made_up = synthetic or message is None
        if origin is None:
            origin = self.origin
        # the event's time: its own, else (made up) the nearest before it, else the clock
        # (see ts in the module docstring)
        if ts is not None:
            self._last_ts = ts
        elif made_up and self._last_ts is not None:
            ts = self._last_ts
        else:
            ts = self._now
            if ts is None:
                ts = self._now = format_ts(self._clock())
        self._seq += 1
        if made_up:
            native = _Native(protocol="core", method=method, payload=None)
        elif text_payload:
            native = _Native(protocol=self._protocol, method=method, payload=_kept_text(message))  # type: ignore[arg-type]
        else:
            # the events of one message share its Native (it is immutable)
            cached = self._native_of
            if cached[0] is message and cached[1] == method:
                native = cached[2]
            else:
                native = _Native(protocol=self._protocol, method=method, payload=_Raw(message))  # type: ignore[arg-type]
                self._native_of = (message, method, native)
        sid = self.session_id or ""
        env = _EventEnvelope(
            session_id=sid,
            agent=self.adapter.agent,
            seq=self._seq,
            ts=ts,
            origin=origin,
            native=native,
            body=body,  # type: ignore[arg-type]
            turn_id=self._turn_id,
            subagent_id=subagent_id,
        )
        out.append(_SessionEvent(session_id=sid, event=env))
        if role == _OTHER:
            if self._state == "starting":
                self._set_state(out, "idle")
        elif role == _MCP:
            self._mcp_call(out, cast(McpTool, body), None if synthetic else self._native_ts)
            if self._state == "starting":
                self._set_state(out, "idle")
        elif role in (_SUBAGENT, _AUTO, _CALL, _TASK):
            if self._state == "starting":
                self._set_state(out, "idle")
            if role in (_SUBAGENT, _TASK):
                self._track(out, cast(Subagent | Task, body), subagent_id)
            if self._calls.evicted:
                self._evicted(out)
        elif role == _COMPLETE:
            self._turn_id = None
            self._set_state(out, "waiting" if self._pending else "idle")
        elif role == _START:
            self._set_state(out, "running")
        elif role == _ASK:
            if self._pending is _NO_PENDING:
                self._pending = Requests(MAX_PENDING)
            self._pending.ask(cast(PermissionRequest | UserQuestion, body), subagent_id)  # past MAX_PENDING: forgotten
            self._set_state(out, "waiting")
        else:  # _RESOLVED
            if not self._pending:
                self._set_state(out, "running" if self._turn_id is not None else "idle")

    def _settle_open(self, out: list[_Core], why: str) -> None:
        """The session stops here (the input ended, or it was forked): requests, calls,
        sub-agents and background tasks left open."""
        for request_id, subagent_id in self._pending.open_requests():
            reason = f"request {request_id} was never answered: {why}"
            warning = WarningBody(message=reason, source="normalize")
            self._event(out, warning, None, "open-request", None, None, subagent_id, True)
            cancelled = RequestResolved(request_id=request_id, outcome="cancelled")
            self._event(out, cancelled, None, "open-request", None, None, subagent_id, True)
        failed: set[str] = set()
        for call_id, call in self._calls.open_calls():
            reason = f"tool call {call_id} ({call.tool}) never finished: {why}"
            self._settle_call(out, call_id, call.tool, call.category, call.subagent_id, reason)
            failed.add(call_id)
        self._settle_running(out, failed, why)

    def _track(self, out: list[_Core], body: Subagent | Task, subagent_id: str | None) -> None:
        """A sub-agent or background task changed phase: it runs until an end phase says it
        stopped (settled at close when none comes, :meth:`_settle_running`)."""
        key = ("subagent", body.subagent_id) if type(body) is Subagent else ("task", cast(Task, body).task_id)
        running = self._running
        if body.phase in ("completed", "failed", "cancelled"):
            if running.pop(key, None) is not None and not running:
                self._running = _NO_RUNNING
            return
        started = running.get(key)
        if started is not None and body.phase == "progress":
            return  # what started it names its call and label
        if running is _NO_RUNNING:
            running = self._running = {}
        elif key not in running and len(running) >= MAX_RUNNING:
            kind, oldest = next(iter(running))
            del running[(kind, oldest)]
            reason = forgotten("sub-agent" if kind == "subagent" else "task", oldest, MAX_RUNNING)
            self._synth(out, WarningBody(message=reason, source="normalize"), "open-subagent")
        running[key] = (body, subagent_id)

    def _settle_running(self, out: list[_Core], failed: set[str], why: str) -> None:
        """Sub-agents and background tasks the input left running.

        One whose spawning call was just settled ``failed`` (``failed``, its call ids) was
        cut off with it: a warning, then its own ``failed`` phase.  Of any other (its call
        returned, and it ran on), the input does not say how it ended: a warning says so,
        and no end phase is made up."""
        running, self._running = self._running, _NO_RUNNING
        for (_, entity_id), (body, subagent_id) in running.items():
            if isinstance(body, Subagent):  # (it names the sub-agent it runs in as its parent)
                name, call_id, within = f"sub-agent {entity_id}", body.call_id, body.parent_subagent_id
            else:
                name, call_id, within = f"task {entity_id} ({body.task_kind})", body.parent_call_id, subagent_id
            if call_id is None or call_id not in failed:
                reason = f"{name}: {why}, without saying how it ended"
                self._synth(out, WarningBody(message=reason, source="normalize"), "open-subagent", within)
                continue
            reason = f"{name} never finished: {why} while its call {call_id} was open"
            self._synth(out, WarningBody(message=reason, source="normalize"), "open-subagent", within)
            end: Body
            if isinstance(body, Subagent):
                end = Subagent(
                    subagent_id=entity_id,
                    phase="failed",
                    name=body.name,
                    call_id=call_id,
                    parent_subagent_id=body.parent_subagent_id,
                )
                within = None  # (its parent is in the body)
            else:
                end = Task(
                    task_id=entity_id,
                    task_kind=body.task_kind,
                    phase="failed",
                    label=body.label,
                    parent_call_id=call_id,
                )
            self._synth(out, end, "open-subagent", within)

    def _evicted(self, out: list[_Core]) -> None:
        """Open calls forgotten past the table's bound: a warning each (docs/reliability.md)."""
        evicted, self._calls.evicted = self._calls.evicted, []
        for call_id in evicted:
            reason = forgotten("tool call", call_id, self._calls.limit)
            self._synth(out, WarningBody(message=reason, source="normalize"), "open-call")

    def _fork(self, out: list[_Core], item: SessionCreated) -> None:
        """A later ``session.created`` with ``forkOf``: the input goes on in a new session,
        forked from this one (hm's ``fork``).  This one ends here; the fork has its own id,
        seq from 1 and turns, and ``forkOf`` names this session's id."""
        self._settle_open(out, "the session was forked first")
        if self._turn_id is not None:
            self._synth(out, TurnComplete(reason="interrupt"), "fork")
        self._set_state(out, "ended")
        parent = self.session_id
        assert parent is not None
        rec = item.record
        agent = rec.agent or self.adapter.agent
        native = rec.native_session_id
        self.session_id = session_id_for(agent, native) if native else session_id_for(agent, f"{parent}\0fork")
        self._seq = self._turns = 0
        self._turn_id = None
        self._state = "starting"
        self._mcp_open = _NO_MCP
        self._calls.clear()
        self._pending = _NO_PENDING
        out.append(self._fill_record(structs.replace(item, record=structs.replace(rec, fork_of=parent))))

    def _settle_call(
        self,
        out: list[_Core],
        call_id: str,
        tool: str,
        category: Category | None,
        subagent_id: str | None,
        reason: str,
    ) -> None:
        """One policy for a call left open: a warning saying why, then its ``failed`` phase."""
        warning = WarningBody(message=reason, source="normalize")
        self._event(out, warning, None, "open-call", None, None, subagent_id, True)
        failed = ToolCall(call_id=call_id, tool=tool, phase="failed", category=category)
        self._event(out, failed, None, "open-call", None, None, subagent_id, True)
        mcp = self._mcp_open.get(call_id)
        if mcp is not None:  # its MCP view ends with it
            view = McpTool(call_id=call_id, server=mcp[0].server, tool=mcp[0].tool, phase="failed")
            self._event(out, view, None, "open-call", None, None, subagent_id, True)

    def _mcp_call(self, out: list[_Core], body: McpTool, ts: str | None) -> None:
        """``tool.called`` when an MCP call starts, ``tool.finished`` when it ends.

        The duration is the agent's own when it says one (``mcp-tool.durationMs``), else the
        time between the two events when the agent wrote both times; with neither (only a
        capture's receive time, or the conversion's clock) there is no ``tool.finished``: a
        duration that depends on how the stream was read is not the call's.
        """
        sid = self.session_id or ""
        if body.phase == "started":
            if self._mcp_open is _NO_MCP:
                self._mcp_open = OrderedDict()
            self._mcp_open[body.call_id] = (body, ts)
            if len(self._mcp_open) > MAX_PENDING:
                self._mcp_open.popitem(last=False)
            out.append(ToolCalled(session_id=sid, server=body.server, tool=body.tool, call_id=body.call_id))
        elif body.phase in ("completed", "failed"):
            started = self._mcp_open.pop(body.call_id, (None, None))[1]
            duration = body.duration_ms
            if duration is None and started is not None and ts is not None:
                duration = _ms_between(started, ts)
            if duration is not None:
                ok = body.phase == "completed"
                finished = ToolFinished(
                    session_id=sid,
                    server=body.server,
                    tool=body.tool,
                    call_id=body.call_id,
                    ok=ok,
                    duration_ms=duration,
                )
                out.append(finished)

    def _set_state(self, out: list[_Core], state: SessionState) -> None:
        if state != self._state:
            self._state = state
            sid = self.session_id or ""
            out.append(_SessionStateChanged(session_id=sid, state=state))
