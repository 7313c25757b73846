"""From one stream of CoreEvents to the rows of the analytics tables.

Rules of this module (docs/analytics.md):

* It consumes normalized events only and knows no native protocol.
* Keys are derived from content, never from the order of loading: a session's
  key from its agent and native session id, everything else from the session
  key and what identifies the thing inside it (turn ordinal, call id, request
  id, seq).  The same session read twice, or read live and from its stored
  file, gets the same keys.
* One :class:`TableBuilder` reads one stream and keeps state for that stream
  only; :meth:`TableBuilder.finish` gives one :class:`SessionRows` per top-level
  session found in it (a fork starts a new one), sub-agents included in their
  parent's.
* Usage is counted by the rules of ``_figures.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from normalize import (
    AssistantMessage,
    CoreEvent,
    Error,
    EventEnvelope,
    McpTool,
    MessageCompleted,
    ModeUpdate,
    PermissionAuto,
    PermissionOption,
    PermissionRequest,
    RequestResolved,
    SessionCreated,
    SessionEvent,
    SessionFailed,
    SessionInfo,
    SessionRecord,
    SessionResumed,
    SessionStateChanged,
    Subagent,
    ToolCall,
    TurnComplete,
    TurnStart,
    Usage,
    UserMessage,
    WebSearch,
)

from ._figures import EMPTY, Figure, combine, figure_of, total
from ._prices import ESTIMATED, estimate
from ._schema import ANALYTICS_SCHEMA_VERSION, TABLES, column_names

__all__ = [
    "UNKNOWN_TS",
    "SessionRows",
    "TableBuilder",
    "key_of",
    "new_redactor",
    "redact_rows",
    "session_key",
    "tables_of",
    "unknown_clock",
]

Row = tuple[Any, ...]


def key_of(*parts: object) -> str:
    """A stable 64-bit key (hex) from the parts, joined unambiguously."""
    text = "\x1f".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def session_key(agent: str, native_session_id: str) -> str:
    return key_of("session", agent, native_session_id)


#: The ts the Session gives an event when neither the native message nor the capture
#: has a time, when the loader converts native files with :func:`unknown_clock`: such
#: events have no known time, and the tables say so (NULL) instead of a conversion time.
UNKNOWN_TS = "1970-01-01T00:00:00.000Z"


def unknown_clock() -> float:
    """The clock the loader gives Sessions: times it makes up are recognizable (``UNKNOWN_TS``)."""
    return 0.0


def _parse_ts(ts: str | None) -> datetime | None:
    if ts is None:
        return None
    try:
        return datetime.fromisoformat(ts)
    except ValueError:
        return None


def _ms(start: str | None, end: str | None) -> float | None:
    a, b = _parse_ts(start), _parse_ts(end)
    if a is None or b is None or a.tzinfo is None or b.tzinfo is None:
        return None
    ms = (b - a).total_seconds() * 1000.0
    return round(ms, 3) if ms >= 0 else None  # an end before its start: one of the times is not a real one


def _turn_ordinal(turn_id: str | None) -> int | None:
    if turn_id is None or not turn_id.startswith("turn:"):
        return None
    try:
        return int(turn_id[5:])
    except ValueError:
        return None


def _plain(value: Any) -> Any:
    """A value the adapter may have passed as ``msgspec.Raw``, as plain Python."""
    if isinstance(value, msgspec.Raw):
        try:
            return msgspec.json.decode(value)
        except msgspec.DecodeError:
            return None
    return value


class _MessageView(msgspec.Struct):
    model: str | None = None


class _ModelView(msgspec.Struct):
    model: str | None = None
    message: _MessageView | None = None


_model_view = msgspec.json.Decoder(_ModelView)


def _native_model(payload: Any) -> str | None:
    """The model a native message names (``model``, or ``message.model``), if any: the model of its usage."""
    if not isinstance(payload, msgspec.Raw):
        return None
    try:
        view = _model_view.decode(payload)
    except msgspec.DecodeError:  # not an object, or fields of other shapes: the message names no model
        return None
    model = view.model or (view.message.model if view.message is not None else None)
    if model is None or model.startswith("<"):  # "<synthetic>": no model was called
        return None
    return model


def _title_of(text: str, limit: int = 80) -> str:
    """A title from the user's first words: the first non-empty line, shortened."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


#: A turn's normalized stop reason from its end and the agent's own words, when no ``Completion`` said it.
_STOP_WORDS: dict[str, str] = {
    "end_turn": "end_turn",
    "stop": "end_turn",
    "stop_sequence": "end_turn",
    "completed": "end_turn",
    "complete": "end_turn",
    "success": "end_turn",
    "max_tokens": "max_tokens",
    "length": "max_tokens",
    "max_turns": "max_turns",
    "error_max_turns": "max_turns",
    "refusal": "refusal",
    "content_filter": "refusal",
    "cancelled": "cancelled",
    "canceled": "cancelled",
    "interrupted": "cancelled",
    "aborted": "cancelled",
    "error": "error",
    "failed": "error",
}


def _stop_reason(t: _Turn) -> str | None:
    if t.stop_reason is not None:
        return t.stop_reason
    if t.end_reason == "interrupt":
        return "cancelled"
    word = (t.native_stop_reason or "").lower()
    if word in _STOP_WORDS:
        return _STOP_WORDS[word]
    if word.startswith("error"):
        return "error"
    if t.end_reason == "ok":
        return "end_turn"
    return None


# --------------------------------------------------------------------------
# Permission decisions: what the answer says, whatever its native shape

_ALLOW_WORDS = ("allow", "accept", "approve", "yes", "proceed")
_DENY_WORDS = ("deny", "decline", "reject", "refuse", "no", "cancel", "abort")


def _word_decision(word: str) -> str | None:
    w = word.lower()
    if any(w.startswith(a) for a in _ALLOW_WORDS):
        return "allow"
    if any(w.startswith(d) for d in _DENY_WORDS):
        return "deny"
    return None


def _word_scope(word: str) -> str | None:
    w = word.lower().replace("-", "_")
    for scope in ("always", "session", "once"):
        if scope in w:
            return scope
    return None


def decision_of(answer: Any, options: list[PermissionOption]) -> tuple[str | None, str | None, str | None]:
    """(decision, scope, option id) of a permission answer: ``allow``/``deny``, ``once``/``always``/``session``."""
    answer = _plain(answer)
    if not isinstance(answer, dict):
        return None, None, None
    option_id = answer.get("optionId")
    kind = answer.get("kind")
    if not isinstance(kind, str) and isinstance(option_id, str):
        kind = next((o.kind for o in options if o.id == option_id), None)
    if isinstance(kind, str):
        decision = _word_decision(kind)
        if decision is not None:
            scope = _word_scope(kind) or ("session" if answer.get("forSession") else None)
            return decision, scope, option_id if isinstance(option_id, str) else None
    allow = answer.get("allow")
    if isinstance(allow, bool):
        scope = "session" if answer.get("forSession") else "once"
        return ("allow" if allow else "deny"), scope, option_id if isinstance(option_id, str) else None
    for name in ("decision", "behavior"):
        value = answer.get(name)
        if isinstance(value, str) and (decision := _word_decision(value)) is not None:
            return decision, _word_scope(value) or "once", option_id if isinstance(option_id, str) else value
    if isinstance(option_id, str):
        return _word_decision(option_id), _word_scope(option_id), option_id
    return None, None, None


# --------------------------------------------------------------------------
# State of one session while its stream is read


@dataclass
class _Turn:
    ordinal: int
    origin: str
    started_at: str | None = None
    ended_at: str | None = None
    end_reason: str | None = None
    native_stop_reason: str | None = None
    stop_reason: str | None = None
    native_turn_id: str | None = None


@dataclass
class _Call:
    call_id: str
    kind: str
    tool: str
    subagent_id: str | None
    turn: int | None
    server: str | None = None
    category: str | None = None
    title: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    status: str = "open"
    exit_code: int | None = None


@dataclass
class _Perm:
    request_id: str
    call_id: str | None
    tool: str | None
    category: str | None
    mode: str  # "asked" or "auto"
    subagent_id: str | None
    turn: int | None
    requested_at: str | None
    options: list[PermissionOption] = field(default_factory=list)
    resolved_at: str | None = None
    outcome: str | None = None
    decision: str | None = None
    scope: str | None = None
    option_id: str | None = None


@dataclass
class _Use:
    scope: str  # call | turn | session
    subagent_id: str | None
    turn: int | None
    ts: str | None
    figure: Figure
    model: str | None = None
    index: int = 0  # its place among the session's usage bodies (part of its rows' keys)

    def priced(self) -> _Use | None:
        """This figure with its cost estimated from the price table; None when it cannot be priced."""
        f = self.figure
        if not f.has_tokens:
            return self
        cost = estimate(
            self.model, input=f.input, output=f.output, cache_read=f.cache_read, cache_write=f.cache_write, ts=self.ts
        )
        if cost is None:
            return None
        priced = f.tokens_only().plus(Figure(cost=cost, currency="USD", cost_source=ESTIMATED))
        return _Use(self.scope, self.subagent_id, self.turn, self.ts, priced, self.model, self.index)


@dataclass
class _Part:
    """One row of the ``usage`` table: a figure counted once, in a turn or in the session's remainder."""

    key: tuple[object, ...]
    figure: Figure
    turn: int | None
    subagent_id: str | None
    model: str | None
    scope: str | None
    basis: str  # reported | derived
    rule: str  # turn | calls | session-delta | subagents | session
    ts: str | None

    @staticmethod
    def of(use: _Use, rule: str) -> _Part:
        return _Part(
            ("use", use.index), use.figure, use.turn, use.subagent_id, use.model, use.scope, "reported", rule, use.ts
        )


@dataclass
class _Err:
    source: str
    subagent_id: str | None
    turn: int | None
    ts: str | None
    error_type: str | None
    message: str
    recoverable: bool | None


@dataclass
class _Sub:
    subagent_id: str
    turn: int | None
    name: str | None = None
    model: str | None = None
    call_id: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    status: str = "running"
    first_ts: str | None = None
    last_ts: str | None = None


_RECORD_FIELDS = tuple(f for f in SessionRecord.__struct_fields__ if f not in ("id",))


class _Open:
    """One top-level session being read."""

    def __init__(self) -> None:
        self.record: dict[str, Any] = {}
        self.agent: str | None = None
        self.normalized_id: str | None = None
        self.origin: str | None = None
        self.model: str | None = None
        self.cwd: str | None = None
        self.title: str | None = None
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.state: str | None = None
        self.failed = False
        self.turns: dict[int, _Turn] = {}
        self.last_turn: int | None = None
        self.calls: dict[str, _Call] = {}
        self.perms: list[_Perm] = []
        self.pending: dict[str, _Perm] = {}
        self.uses: list[_Use] = []
        self.errors: list[_Err] = []
        self.subs: dict[str, _Sub] = {}
        self.first_prompt: str | None = None
        self.messages: list[tuple[int | None, str, str]] = []
        self.events: list[tuple[int, str | None, int | None, str | None, str | None, str, str, str, str | None]] = []

    def take_record(self, record: SessionRecord) -> None:
        for name in _RECORD_FIELDS:
            value = getattr(record, name)
            if value is not None and not (name == "agent" and value == "unknown"):
                self.record[name] = value
        if self.normalized_id is None:
            self.normalized_id = record.id

    @property
    def native_id(self) -> str | None:
        value = self.record.get("native_session_id")
        return value if isinstance(value, str) else None


@dataclass
class SessionRows:
    """The rows one input gives for one top-level session (its sub-agents included)."""

    key: str
    source: str
    tables: dict[str, list[Row]]
    #: the main agent's messages, ``(turn ordinal, "user" | "assistant", text)``, when asked for (OpenTelemetry)
    messages: list[tuple[int | None, str, str]] = field(default_factory=list)

    @property
    def session(self) -> dict[str, Any]:
        return dict(zip(column_names("sessions"), self.tables["sessions"][0], strict=True))

    @property
    def richness(self) -> tuple[int, int]:
        """How much of the session this input holds: (turns, events).  The richest input of a session wins."""
        s = self.session
        return int(s["turns"] or 0), int(s["events"] or 0)


def new_redactor() -> Any:
    """A :class:`normalize._redact.Redactor` (imported only when asked for: it compiles its rules)."""
    from normalize._redact import Redactor

    return Redactor()


def redact_rows(rows: SessionRows, redactor: Any) -> SessionRows:
    """``rows`` with the secrets of every text cell of every table replaced (JSON columns
    included), by ``redactor`` (a :class:`normalize._redact.Redactor`, which counts them);
    unchanged when it is None."""
    if redactor is None:
        return rows
    text = redactor.redact_text
    rows.tables = {
        name: [tuple(text(v) if isinstance(v, str) else v for v in row) for row in table]
        for name, table in rows.tables.items()
    }
    return rows


def _row(table: str, values: dict[str, Any]) -> Row:
    return tuple(values.get(name) for name in column_names(table))


# --------------------------------------------------------------------------
# The builder


class TableBuilder:
    """Feed the CoreEvents of one stream, then :meth:`finish` for its rows."""

    def __init__(self, source: str = "", *, content: bool = False) -> None:
        self.source = source
        self.content = content
        self._ts: str | None = None  # the current event's time, None when unknown
        self._done: list[_Open] = []
        self._cur = _Open()
        #: a connection carrying several sessions interleaves them: each session's own rows
        self._sid: str | None = None
        self._by_sid: dict[str, _Open] = {}
        self._core: dict[type, Callable[[Any], None]] = {
            SessionCreated: self._on_record,
            SessionResumed: self._on_record,
            SessionStateChanged: self._on_state,
            SessionFailed: self._on_failed,
            MessageCompleted: self._on_completed,
            SessionEvent: self._on_event,
        }
        self._bodies: dict[type, Callable[[EventEnvelope, Any, int | None], None]] = {
            TurnStart: self._on_turn_start,
            TurnComplete: self._on_turn_complete,
            ToolCall: self._on_tool_call,
            McpTool: self._on_mcp_tool,
            WebSearch: self._on_web_search,
            PermissionRequest: self._on_permission_request,
            RequestResolved: self._on_request_resolved,
            PermissionAuto: self._on_permission_auto,
            Usage: self._on_usage,
            Error: self._on_error,
            Subagent: self._on_subagent,
            SessionInfo: self._on_session_info,
            ModeUpdate: self._on_mode_update,
            UserMessage: self._on_user_message,
            AssistantMessage: self._on_assistant_message,
        }

    def feed(self, event: CoreEvent | object) -> None:
        """One CoreEvent of the stream (anything else, such as a stream header, is ignored)."""
        handler = self._core.get(type(event))
        if handler is not None:
            sid = getattr(event, "session_id", None)
            if sid != self._sid and sid is not None:
                self._switch(sid)
            handler(event)

    def _switch(self, sid: str) -> None:
        """Events of another session of the stream (a fork, a sub-agent's thread): its own rows."""
        if self._sid is None:
            self._by_sid[sid] = self._cur
        else:
            cur = self._by_sid.get(sid)
            if cur is None:
                cur = self._by_sid[sid] = _Open()
            self._cur = cur
        self._sid = sid

    def feed_all(self, events: Iterable[CoreEvent | object]) -> TableBuilder:
        for ev in events:
            self.feed(ev)
        return self

    # ---- CoreEvents

    def _on_record(self, ev: SessionCreated | SessionResumed) -> None:
        cur = self._cur
        rec = ev.record
        forked = (
            rec.fork_of is not None
            and rec.native_session_id is not None
            and cur.native_id is not None
            and rec.native_session_id != cur.native_id
        )
        if forked:
            self._done.append(cur)
            self._cur = cur = _Open()
            cur.agent = self._done[-1].agent
        cur.take_record(rec)

    def _on_state(self, ev: SessionStateChanged) -> None:
        self._cur.state = ev.state

    def _on_failed(self, ev: SessionFailed) -> None:
        cur = self._cur
        cur.failed = True
        err = ev.error
        cur.errors.append(_Err("session", None, cur.last_turn, cur.last_ts, err.error_type, err.message, False))

    def _on_completed(self, ev: MessageCompleted) -> None:
        cur = self._cur
        if cur.last_turn is not None:
            cur.turns[cur.last_turn].stop_reason = ev.result.stop_reason

    def _on_event(self, ev: SessionEvent) -> None:
        env = ev.event
        cur = self._cur
        if cur.agent is None or cur.agent == "unknown":
            cur.agent = env.agent
        if cur.normalized_id is None:
            cur.normalized_id = env.session_id
        if cur.origin is None:
            cur.origin = env.origin
        ts = self._ts = None if env.ts == UNKNOWN_TS else env.ts
        if ts is not None and (cur.first_ts is None or ts < cur.first_ts):
            cur.first_ts = ts
        if ts is not None and (cur.last_ts is None or ts > cur.last_ts):
            cur.last_ts = ts
        turn = _turn_ordinal(env.turn_id)
        sub_id = env.subagent_id
        if sub_id is not None:
            sub = cur.subs.get(sub_id)
            if sub is None:
                sub = cur.subs[sub_id] = _Sub(sub_id, turn if turn is not None else cur.last_turn)
            sub.first_ts = sub.first_ts or ts
            sub.last_ts = ts or sub.last_ts
            if turn is None:
                turn = sub.turn
        cur.events.append(
            (env.seq, ts, turn, env.turn_id, sub_id, env.kind, env.origin, env.native.protocol, env.native.method)
        )
        handler = self._bodies.get(type(env.body))
        if handler is not None:
            handler(env, env.body, turn)

    # ---- bodies

    def _on_turn_start(self, env: EventEnvelope, body: TurnStart, turn: int | None) -> None:
        if turn is None or env.subagent_id is not None:
            return
        self._cur.turns[turn] = _Turn(turn, env.origin, started_at=self._ts)
        self._cur.last_turn = turn

    def _on_turn_complete(self, env: EventEnvelope, body: TurnComplete, turn: int | None) -> None:
        if turn is None or env.subagent_id is not None:
            return
        t = self._cur.turns.setdefault(turn, _Turn(turn, env.origin, started_at=self._ts))
        t.ended_at = self._ts
        t.end_reason = body.reason
        t.native_stop_reason = body.stop_reason
        t.native_turn_id = body.native_turn_id

    def _call(self, env: EventEnvelope, call_id: str, kind: str, tool: str, turn: int | None) -> _Call:
        call = self._cur.calls.get(call_id)
        if call is None:
            call = self._cur.calls[call_id] = _Call(call_id, kind, tool, env.subagent_id, turn)
        return call

    def _settle(self, call: _Call, env: EventEnvelope, phase: str) -> None:
        if phase == "started":
            call.started_at = call.started_at or self._ts
        elif phase in ("completed", "failed"):
            call.ended_at = self._ts
            call.status = phase

    def _on_tool_call(self, env: EventEnvelope, body: ToolCall, turn: int | None) -> None:
        call = self._call(env, body.call_id, "tool-call", body.tool, turn)
        call.tool = body.tool or call.tool
        call.category = body.category or call.category
        call.title = call.title or body.title
        if body.exit_code is not None:
            call.exit_code = body.exit_code
        self._settle(call, env, body.phase)

    def _on_mcp_tool(self, env: EventEnvelope, body: McpTool, turn: int | None) -> None:
        call = self._call(env, body.call_id, "mcp-tool", body.tool, turn)
        call.server = body.server
        call.category = "mcp"
        self._settle(call, env, body.phase)

    def _on_web_search(self, env: EventEnvelope, body: WebSearch, turn: int | None) -> None:
        call = self._call(env, body.call_id, "web-search", "web_search", turn)
        call.category = "web-search"
        call.title = call.title or body.query
        self._settle(call, env, body.phase)

    def _on_permission_request(self, env: EventEnvelope, body: PermissionRequest, turn: int | None) -> None:
        tc = body.tool_call
        perm = _Perm(
            body.request_id,
            tc.call_id,
            tc.tool,
            tc.category,
            "asked",
            env.subagent_id,
            turn,
            self._ts,
            list(body.options),
        )
        self._cur.perms.append(perm)
        self._cur.pending[body.request_id] = perm

    def _on_request_resolved(self, env: EventEnvelope, body: RequestResolved, turn: int | None) -> None:
        perm = self._cur.pending.pop(body.request_id, None)
        if perm is None:
            return  # the answer to a question, not to a permission request
        perm.resolved_at = self._ts
        perm.outcome = body.outcome
        if body.outcome == "cancelled":
            perm.decision = "cancelled"
        else:
            perm.decision, perm.scope, perm.option_id = decision_of(body.answer, perm.options)

    def _on_permission_auto(self, env: EventEnvelope, body: PermissionAuto, turn: int | None) -> None:
        tc = body.tool_call
        perm = _Perm(f"auto:{tc.call_id}", tc.call_id, tc.tool, tc.category, "auto", env.subagent_id, turn, self._ts)
        perm.resolved_at = self._ts
        perm.outcome = "auto"
        perm.option_id = body.option_id
        perm.decision = _word_decision(body.option_id)
        perm.scope = _word_scope(body.option_id)
        self._cur.perms.append(perm)

    def _on_usage(self, env: EventEnvelope, body: Usage, turn: int | None) -> None:
        fig = figure_of(body)
        if fig is None or body.scope is None:
            return  # context window or rate limits only: nothing to count
        cur = self._cur
        if turn is None:
            turn = cur.last_turn
        model = _native_model(env.native.payload)
        if model is None and env.subagent_id is not None:
            model = cur.subs[env.subagent_id].model
        model = model or cur.record.get("model") or cur.model
        cur.uses.append(_Use(body.scope, env.subagent_id, turn, self._ts, fig, model, len(cur.uses)))

    def _on_user_message(self, env: EventEnvelope, body: UserMessage, turn: int | None) -> None:
        cur = self._cur
        if env.subagent_id is not None:
            return
        if cur.first_prompt is None and body.text.strip():
            cur.first_prompt = _title_of(body.text)
        if self.content:
            cur.messages.append((turn, "user", body.text))

    def _on_assistant_message(self, env: EventEnvelope, body: AssistantMessage, turn: int | None) -> None:
        if self.content and env.subagent_id is None:
            self._cur.messages.append((turn, "assistant", body.text))

    def _on_error(self, env: EventEnvelope, body: Error, turn: int | None) -> None:
        self._cur.errors.append(
            _Err("event", env.subagent_id, turn, self._ts, body.error_type, body.message, body.recoverable)
        )

    def _on_subagent(self, env: EventEnvelope, body: Subagent, turn: int | None) -> None:
        cur = self._cur
        sub = cur.subs.get(body.subagent_id)
        if sub is None:
            sub = cur.subs[body.subagent_id] = _Sub(body.subagent_id, turn if turn is not None else cur.last_turn)
        elif sub.turn is None:
            sub.turn = turn
        sub.name = sub.name or body.name
        sub.call_id = sub.call_id or body.call_id
        sub.model = body.model or sub.model
        if body.phase in ("started", "resumed"):
            sub.started_at = sub.started_at or self._ts
        elif body.phase in ("completed", "failed", "cancelled"):
            sub.ended_at = self._ts
            sub.status = body.phase

    def _on_mode_update(self, env: EventEnvelope, body: ModeUpdate, turn: int | None) -> None:
        if env.subagent_id is None and body.model is not None:
            self._cur.model = body.model

    def _on_session_info(self, env: EventEnvelope, body: SessionInfo, turn: int | None) -> None:
        if env.subagent_id is not None:
            return
        cur = self._cur
        cur.model = body.model or cur.model
        cur.cwd = body.cwd or cur.cwd
        cur.title = body.title or cur.title

    # ---- rows

    def finish(self) -> list[SessionRows]:
        out: list[SessionRows] = []
        before = EMPTY
        # each session in order of first appearance (a fork named like its parent: after it)
        opens = list({id(o): o for o in [*self._by_sid.values(), *self._done, self._cur]}.values())
        for o in opens:
            if not (o.events or o.record):
                continue
            # a fork read in its parent's stream: the agent's cumulative counters go on across the fork
            rows, before = _rows(o, self.source, before if o.record.get("fork_of") else EMPTY)
            out.append(rows)
        return out


def tables_of(events: Iterable[CoreEvent | object], source: str = "") -> list[SessionRows]:
    """The rows of every top-level session in one stream of CoreEvents."""
    return TableBuilder(source).feed_all(events).finish()


# --------------------------------------------------------------------------
# Counting usage (rules in _figures.py)


@dataclass
class _TurnUsage:
    figure: Figure
    basis: str | None
    parts: list[_Part]


def _pick(
    want: str, own_turn: list[_Use], own_calls: list[_Use], growth: _Part | None, subs: list[_Use]
) -> tuple[list[_Part], str | None]:
    """The parts that give a turn's tokens (or cost), and the rule that chose them."""

    def has(f: Figure) -> bool:
        return f.has_tokens if want == "tokens" else f.has_cost

    sub_parts = [_Part.of(u, "subagents") for u in subs if has(u.figure)]
    for rule, uses in (("turn", own_turn), ("calls", own_calls)):
        found = [_Part.of(u, rule) for u in uses if has(u.figure)]
        if found:
            return found + sub_parts, rule
    if growth is not None and has(growth.figure):
        return [growth], "session-delta"
    if sub_parts:
        return sub_parts, "subagents"
    return [], None


def _merge(tokens: list[_Part], cost: list[_Part]) -> list[_Part]:
    """Tokens from one set of parts, cost from another: one part per key, holding what was taken from it."""
    out: dict[tuple[object, ...], _Part] = {}
    for part, f in [*((p, p.figure.tokens_only()) for p in tokens), *((p, p.figure.cost_only()) for p in cost)]:
        have = out.get(part.key)
        if have is None:
            out[part.key] = _Part(**{**part.__dict__, "figure": f})
        else:
            have.figure = have.figure.plus(f)
    return list(out.values())


def _sub_uses(uses: list[_Use]) -> list[_Use]:
    """A sub-agent's countable uses: its turn figures, else its call figures."""
    for scope in ("turn", "call"):
        rows = [u for u in uses if u.scope == scope]
        if rows:
            return rows
    return []


def _own_figure(uses: list[_Use]) -> tuple[Figure, str | None]:
    """A sub-agent's (or anyone's) usage from its own rows: turns, else calls, else its last cumulative figure."""
    for scope, basis in (("turn", "turn"), ("call", "calls")):
        figs = [u.figure for u in uses if u.scope == scope]
        if figs:
            return total(figs), basis
    cums = [u.figure for u in uses if u.scope == "session"]
    if cums:
        return cums[-1], "session"
    return EMPTY, None


@dataclass
class _Usage:
    per_turn: dict[int | None, _TurnUsage]
    total: Figure
    basis: str | None
    remainder: _Part | None
    uses: list[_Use]


def _priced(uses: list[_Use]) -> list[_Use] | None:
    """Every use with its cost estimated, or None when one of them cannot be priced (its model is unknown)."""
    out: list[_Use] = []
    for u in uses:
        p = u.priced()
        if p is None:
            return None
        out.append(p)
    return out


def _usage(o: _Open, baseline: Figure) -> _Usage:
    """The session's usage by the counting rules, with the agent's costs; estimated when the agent gave none."""
    got = _count(o, o.uses, baseline)
    if got.total.has_tokens and not got.total.has_cost:
        priced = _priced(o.uses)
        if priced is not None:
            got = _count(o, priced, baseline)
    return got


def _count(o: _Open, uses: list[_Use], baseline: Figure) -> _Usage:
    main = [u for u in uses if u.subagent_id is None]
    subs_by_turn: dict[int | None, list[_Use]] = {}
    for sid in {u.subagent_id for u in uses if u.subagent_id is not None}:
        # attribute a sub-agent's rows to the turn each one falls in (its spawning turn when outside)
        for u in _sub_uses([u for u in uses if u.subagent_id == sid]):
            subs_by_turn.setdefault(u.turn, []).append(u)
    cum_at: dict[int | None, _Use] = {}  # the last cumulative figure seen in each turn
    last_cum: _Use | None = None
    for u in main:
        if u.scope == "session":
            cum_at[u.turn] = u
            last_cum = u
    keys = set(o.turns) | {u.turn for u in uses} | set(subs_by_turn)
    per_turn: dict[int | None, _TurnUsage] = {}
    counted = baseline  # everything attributed so far: a cumulative figure's growth is what it adds to this
    for t in sorted(keys, key=lambda k: -1 if k is None else k):
        own_turn = [u for u in main if u.turn == t and u.scope == "turn"]
        own_calls = [u for u in main if u.turn == t and u.scope == "call"]
        subs = subs_by_turn.get(t, [])
        cum = cum_at.get(t)
        growth = None
        if cum is not None:
            growth = _Part(
                ("derived", t, "session-delta"),
                cum.figure.beyond(counted),
                t,
                None,
                cum.model,
                "turn",
                "derived",
                "session-delta",
                cum.ts,
            )
        tparts, tb = _pick("tokens", own_turn, own_calls, growth, subs)
        cparts, cb = _pick("cost", own_turn, own_calls, growth, subs)
        basis = tb or cb
        if tb and cb and tb != cb:
            basis = f"{tb}+{cb}"
        parts = _merge(tparts, cparts)
        for p in parts:
            p.turn = t  # a sub-agent's rows count in the turn they were attributed to
        figure = total(p.figure for p in parts)
        counted = counted.plus(figure)
        per_turn[t] = _TurnUsage(figure, basis, parts)
    turns_sum = total(tu.figure for tu in per_turn.values())
    if last_cum is None:
        return _Usage(per_turn, turns_sum, "turns", None, uses)
    after = total(
        tu.figure for t, tu in per_turn.items() if t is not None and last_cum.turn is not None and t > last_cum.turn
    )
    cumulative = last_cum.figure.beyond(baseline).plus(after)
    bigger = cumulative.tokens_size() > turns_sum.tokens_size()
    tokens = cumulative if bigger or (cumulative.has_tokens and not turns_sum.has_tokens) else turns_sum
    cost = turns_sum
    if cumulative.has_cost and (not turns_sum.has_cost or (cumulative.cost or 0.0) > (turns_sum.cost or 0.0)):
        cost = cumulative
    chosen = combine(tokens, cost)
    basis = "session" if tokens is cumulative and cumulative.has_tokens else "turns"
    # what the session's own counters hold beyond its turns: one derived row, so that the rows add up
    extra = chosen.beyond(turns_sum)
    remainder = None
    nonzero = any(getattr(extra, n) for n in ("input", "output", "cache_read", "cache_write", "reasoning", "total"))
    if nonzero or (extra.cost or 0.0) > 0.0:
        remainder = _Part(
            ("derived", "session"), extra, None, None, last_cum.model, "session", "derived", "session", last_cum.ts
        )
    return _Usage(per_turn, turns_sum.plus(extra), basis, remainder, uses)


# --------------------------------------------------------------------------


def _rows(o: _Open, source: str, baseline: Figure) -> tuple[SessionRows, Figure]:
    """The rows of one session, and its usage total (the baseline of a fork that follows it)."""
    agent = o.record.get("agent") or o.agent or "unknown"
    native = o.native_id
    root = session_key(agent, native) if native is not None else key_of("session", agent, "normalized", o.normalized_id)
    tables: dict[str, list[Row]] = {name: [] for name in TABLES}

    def turn_key(t: int | None) -> str | None:
        return None if t is None else key_of(root, "turn", t)

    def owner(sub: str | None) -> str:
        return root if sub is None else key_of(root, "subagent", sub)

    usage = _usage(o, baseline)
    per_turn, session_total, session_basis = usage.per_turn, usage.total, usage.basis
    model = o.record.get("model") or o.model or _main_model(usage.uses)

    # turns
    calls_per_turn: dict[int | None, int] = {}
    for c in o.calls.values():
        calls_per_turn[c.turn] = calls_per_turn.get(c.turn, 0) + 1
    errors_per_turn: dict[int | None, int] = {}
    for e in o.errors:
        if e.source == "event":
            errors_per_turn[e.turn] = errors_per_turn.get(e.turn, 0) + 1
    for n in sorted(o.turns):
        t = o.turns[n]
        tu = per_turn.get(n)
        fig = tu.figure if tu else EMPTY
        tables["turns"].append(
            _row(
                "turns",
                {
                    "turn_key": turn_key(n),
                    "session_key": root,
                    "root_key": root,
                    "ordinal": n,
                    "native_turn_id": t.native_turn_id,
                    "origin": t.origin,
                    "started_at": t.started_at,
                    "ended_at": t.ended_at,
                    "duration_ms": _ms(t.started_at, t.ended_at),
                    "end_reason": t.end_reason,
                    "stop_reason": _stop_reason(t),
                    "native_stop_reason": t.native_stop_reason,
                    "tool_calls": calls_per_turn.get(n, 0),
                    "errors": errors_per_turn.get(n, 0),
                    **_fig_cols(fig),
                    "usage_basis": tu.basis if tu else None,
                },
            )
        )

    # tool calls and permissions
    perms_by_call: dict[str, list[_Perm]] = {}
    for p in o.perms:
        if p.call_id is not None:
            perms_by_call.setdefault(p.call_id, []).append(p)
    for c in o.calls.values():
        linked = perms_by_call.get(c.call_id, [])
        # the last decision taken wins; a request cancelled because a rule decided (hm) is no decision
        decided = [p for p in linked if p.decision not in (None, "cancelled")]
        chosen_perm = decided[-1] if decided else (linked[-1] if linked else None)
        asked = any(p.mode == "asked" for p in linked)
        tables["tool_calls"].append(
            _row(
                "tool_calls",
                {
                    "call_key": key_of(root, "call", c.call_id),
                    "session_key": owner(c.subagent_id),
                    "root_key": root,
                    "turn_key": turn_key(c.turn),
                    "subagent_id": c.subagent_id,
                    "call_id": c.call_id,
                    "kind": c.kind,
                    "tool": c.tool,
                    "server": c.server,
                    "category": c.category or "other",
                    "title": c.title,
                    "started_at": c.started_at,
                    "ended_at": c.ended_at,
                    "duration_ms": _ms(c.started_at, c.ended_at),
                    "status": c.status,
                    "exit_code": c.exit_code,
                    "permission": ("asked" if asked else "auto") if chosen_perm else None,
                    "decision": (chosen_perm.decision or "unanswered") if chosen_perm else None,
                },
            )
        )
    seen_perm: dict[str, int] = {}
    for p in o.perms:
        n = seen_perm[p.request_id] = seen_perm.get(p.request_id, 0) + 1
        tables["permissions"].append(
            _row(
                "permissions",
                {
                    "permission_key": key_of(root, "permission", p.request_id, n),
                    "session_key": owner(p.subagent_id),
                    "root_key": root,
                    "turn_key": turn_key(p.turn),
                    "subagent_id": p.subagent_id,
                    "request_id": p.request_id,
                    "call_id": p.call_id,
                    "tool": p.tool,
                    "category": p.category or (o.calls[p.call_id].category if p.call_id in o.calls else None),
                    "mode": p.mode,
                    "requested_at": p.requested_at,
                    "resolved_at": p.resolved_at,
                    "latency_ms": _ms(p.requested_at, p.resolved_at) if p.mode == "asked" else None,
                    "outcome": p.outcome or "unanswered",
                    "decision": p.decision,
                    "scope": p.scope,
                    "option_id": p.option_id,
                },
            )
        )

    # usage: the parts each turn's figure was made of, then what the session's counters hold beyond them
    parts = [p for tu in per_turn.values() for p in tu.parts]
    if usage.remainder is not None:
        parts.append(usage.remainder)
    for part in parts:
        tables["usage"].append(
            _row(
                "usage",
                {
                    "usage_key": key_of(root, "usage", *part.key),
                    "session_key": owner(part.subagent_id),
                    "root_key": root,
                    "turn_key": turn_key(part.turn),
                    "subagent_id": part.subagent_id,
                    "agent": agent,
                    "model": part.model or model,
                    "scope": part.scope,
                    "basis": part.basis,
                    "rule": part.rule,
                    "ts": part.ts if part.ts is not None else _turn_time(o, part.turn),
                    **_fig_cols(part.figure),
                },
            )
        )

    # errors
    err_counts: dict[tuple[str | None, int | None], int] = {}
    for e in o.errors:
        n = err_counts[(e.subagent_id, e.turn)] = err_counts.get((e.subagent_id, e.turn), 0) + 1
        tables["errors"].append(
            _row(
                "errors",
                {
                    "error_key": key_of(root, "error", e.source, e.subagent_id, e.turn, n),
                    "session_key": owner(e.subagent_id),
                    "root_key": root,
                    "turn_key": turn_key(e.turn),
                    "subagent_id": e.subagent_id,
                    "ts": e.ts,
                    "source": e.source,
                    "error_type": e.error_type,
                    "message": e.message,
                    "recoverable": e.recoverable,
                },
            )
        )

    # events (envelope columns)
    for seq, ts, turn, turn_id, ev_sub, kind, origin, protocol, method in o.events:
        tables["events"].append(
            _row(
                "events",
                {
                    "event_key": key_of(root, "event", seq),
                    "session_key": owner(ev_sub),
                    "root_key": root,
                    "turn_key": turn_key(turn),
                    "subagent_id": ev_sub,
                    "seq": seq,
                    "ts": ts,
                    "turn_id": turn_id,
                    "kind": kind,
                    "origin": origin,
                    "protocol": protocol,
                    "method": method,
                },
            )
        )

    # sessions: the top-level one, then one per sub-agent
    status = o.state or "unknown"
    if o.failed:
        status = "failed"
    main_calls = sum(1 for c in o.calls.values())
    tables["sessions"].append(
        _row(
            "sessions",
            {
                "session_key": root,
                "root_key": root,
                "parent_key": None,
                "subagent_id": None,
                "agent": agent,
                "agent_version": o.record.get("agent_version"),
                "protocol": o.record.get("protocol"),
                "native_session_id": native,
                "fork_of": o.record.get("fork_of"),
                "model": model,
                "cwd": o.record.get("cwd") or o.cwd,
                "title": o.record.get("title") or o.title or o.first_prompt,
                "origin": o.origin,
                "started_at": o.record.get("created_at") or o.first_ts,
                "ended_at": o.last_ts,
                "duration_ms": _ms(o.record.get("created_at") or o.first_ts, o.last_ts),
                "status": status,
                "turns": len(o.turns),
                "tool_calls": main_calls,
                "errors": sum(1 for e in o.errors if e.source == "event"),
                "events": len(o.events),
                **_fig_cols(session_total),
                "usage_basis": session_basis,
                "source": source,
                "schema_version": ANALYTICS_SCHEMA_VERSION,
            },
        )
    )
    for sid, sub in o.subs.items():
        own_uses = [
            _Use(u.scope, None, u.turn, u.ts, u.figure, u.model, u.index) for u in usage.uses if u.subagent_id == sid
        ]
        own, basis = _own_figure(own_uses)
        sub_calls = sum(1 for c in o.calls.values() if c.subagent_id == sid)
        tables["subagents"].append(
            _row(
                "subagents",
                {
                    "session_key": owner(sid),
                    "root_key": root,
                    "parent_key": root,
                    "subagent_id": sid,
                    "spawn_call_id": sub.call_id,
                    "turn_key": turn_key(sub.turn),
                    "agent": agent,
                    "model": sub.model or _main_model(own_uses) or model,
                    "name": sub.name,
                    "started_at": sub.started_at or sub.first_ts,
                    "ended_at": sub.ended_at or sub.last_ts,
                    "duration_ms": _ms(sub.started_at or sub.first_ts, sub.ended_at or sub.last_ts),
                    "status": sub.status,
                    "tool_calls": sub_calls,
                    "errors": sum(1 for e in o.errors if e.subagent_id == sid),
                    "events": sum(1 for ev in o.events if ev[4] == sid),
                    **_fig_cols(own),
                    "usage_basis": basis,
                    "source": source,
                    "schema_version": ANALYTICS_SCHEMA_VERSION,
                },
            )
        )
    return SessionRows(root, source, tables, list(o.messages)), session_total


def _main_model(uses: list[_Use]) -> str | None:
    """The model of most of the main agent's usage rows (the first seen on a tie)."""
    counts: dict[str, int] = {}
    for u in uses:
        if u.subagent_id is None and u.model is not None:
            counts[u.model] = counts.get(u.model, 0) + 1
    return max(counts, key=lambda m: counts[m]) if counts else None


def _turn_time(o: _Open, turn: int | None) -> str | None:
    """The time of a usage row the agent gave none: its turn's end or start, else the session's last or first."""
    t = o.turns.get(turn) if turn is not None else None
    known = (t.ended_at or t.started_at) if t is not None else None
    return known or o.last_ts or o.record.get("created_at") or o.first_ts


def _fig_cols(f: Figure) -> dict[str, Any]:
    uncached = None
    if f.input is not None:
        uncached = max(f.input - (f.cache_read or 0) - (f.cache_write or 0), 0)
    names = (
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "total_tokens",
        "cost",
        "currency",
        "cost_source",
    )
    return {**dict(zip(names, f.columns(), strict=True)), "uncached_input_tokens": uncached}
