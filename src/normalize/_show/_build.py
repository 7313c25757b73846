"""From normalized events to what a viewer shows: sessions, turns, items.

Rules of this module:

* It reads CoreEvents only (the public model), never a native message, so every
  agent is shown by the same code.
* :class:`Builder` is fed event by event and can be looked at any time
  (``--follow`` renders after every batch); nothing in it is final until the
  stream ends.
* A tool call is one item, however many events speak of it: its phases, its
  command output, its file diffs, the permission asked for it and the answer,
  and the sub-agent it spawned (whose own items are nested inside it).
* Values the model leaves untyped (tool input and output) may arrive as
  ``msgspec.Raw``; :func:`plain` decodes them once, when they are kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import msgspec

from normalize import (
    AssistantDelta,
    AssistantMessage,
    CommandOutput,
    Compaction,
    ConversationReset,
    Error,
    EventEnvelope,
    FileDiff,
    McpTool,
    MessageCompleted,
    ModeUpdate,
    PermissionAuto,
    PermissionRequest,
    Plan,
    Reasoning,
    ReasoningDelta,
    RequestResolved,
    SessionCreated,
    SessionEvent,
    SessionFailed,
    SessionInfo,
    SessionRecord,
    SessionResumed,
    Subagent,
    ToolCall,
    TurnComplete,
    TurnStart,
    Usage,
    UserMessage,
    UserQuestion,
    WebSearch,
)
from normalize import Warning as WarningBody

__all__ = [
    "Builder",
    "Call",
    "Item",
    "Notice",
    "PlanItem",
    "Question",
    "SessionView",
    "SubagentView",
    "Text",
    "TurnView",
    "UserItem",
    "plain",
    "unknown_clock",
]

#: Characters of one tool output, command output or diff kept for the page;
#: the rest is counted, not shown, so that a page stays quick to open.
MAX_TEXT = 20_000

Phase = Literal["model", "tool", "approval"]


def plain(value: Any) -> Any:
    """A tool input or output as plain Python values (``msgspec.Raw`` decoded)."""
    if isinstance(value, msgspec.Raw):
        try:
            return msgspec.json.decode(value)
        except msgspec.DecodeError:
            return bytes(value).decode("utf-8", "replace")
    return value


def parse_ts(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        value = datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return None
    return value if value > 0 else None  # the epoch: a time the reader made up (see UNKNOWN_CLOCK)


def unknown_clock() -> float:
    """The clock native files are read with: a made-up time is the epoch, and shown as unknown."""
    return 0.0


@dataclass
class UserItem:
    text: str
    queued: bool = False
    images: int = 0
    replay: bool = False
    kind: str = "user"


@dataclass
class Text:
    """Assistant text (Markdown) or reasoning, grown from deltas until the whole message comes."""

    kind: Literal["assistant", "reasoning"]
    text: str = ""
    summary: str | None = None
    redacted: bool = False
    replay: bool = False


@dataclass
class Notice:
    kind: Literal["error", "warning", "note"]
    message: str
    detail: str | None = None
    replay: bool = False


@dataclass
class PlanItem:
    entries: list[tuple[str, str]]
    explanation: str | None = None
    replay: bool = False
    kind: str = "plan"


@dataclass
class Question:
    request_id: str
    questions: list[str]
    outcome: str | None = None
    answer: Any = None
    replay: bool = False
    kind: str = "question"


@dataclass
class Permission:
    request_id: str | None
    options: list[str]
    detail: str | None = None
    outcome: str | None = None  # "allowed", "denied", "cancelled", "auto: <option>", "answered"
    answer: Any = None
    start: float | None = None
    end: float | None = None


@dataclass
class SubagentView:
    subagent_id: str
    name: str | None = None
    description: str | None = None
    prompt: str | None = None
    phase: str = "started"
    result: Any = None
    stats: Any = None
    model: str | None = None
    items: list[Item] = field(default_factory=list)


@dataclass
class Call:
    call_id: str
    tool: str
    kind: str = "tool"
    title: str | None = None
    category: str | None = None
    phase: str = "started"
    input: Any = None
    output: Any = None
    exit_code: int | None = None
    description: str | None = None
    paths: list[str] = field(default_factory=list)
    stdout: list[str] = field(default_factory=list)
    diffs: list[tuple[str, str, str | None]] = field(default_factory=list)
    permission: Permission | None = None
    subagent: SubagentView | None = None
    start: float | None = None
    end: float | None = None
    replay: bool = False


Item = UserItem | Text | Notice | PlanItem | Question | Call | SubagentView


@dataclass
class TurnView:
    turn_id: str | None
    items: list[Item] = field(default_factory=list)
    start: float | None = None
    end: float | None = None
    reason: str | None = None
    stop_reason: str | None = None
    tokens: dict[str, int] = field(default_factory=dict)
    cost: float | None = None
    currency: str | None = None
    replay: bool = False
    #: seconds spent per phase (model, tool, approval), from the gaps between events
    phases: dict[str, float] = field(default_factory=dict)
    _call_tokens: dict[str, int] = field(default_factory=dict)
    _call_cost: float = 0.0
    _has_turn_usage: bool = False


@dataclass
class SessionView:
    session_id: str
    agent: str = ""
    protocol: str | None = None
    agent_version: str | None = None
    model: str | None = None
    cwd: str | None = None
    title: str | None = None
    mode: str | None = None
    parent_id: str | None = None
    start: float | None = None
    end: float | None = None
    turns: list[TurnView] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    resumed: bool = False
    events: int = 0
    replayed: int = 0
    session_tokens: dict[str, int] | None = None
    session_cost: float | None = None
    currency: str | None = None

    @property
    def real_turns(self) -> list[TurnView]:
        return [t for t in self.turns if t.turn_id is not None]

    @property
    def tokens(self) -> dict[str, int]:
        if self.session_tokens is not None:
            return self.session_tokens
        total: dict[str, int] = {}
        for t in self.turns:
            for k, v in t.tokens.items():
                total[k] = total.get(k, 0) + v
        return total

    @property
    def cost(self) -> float | None:
        if self.session_cost is not None:
            return self.session_cost
        costs = [t.cost for t in self.turns if t.cost is not None]
        return sum(costs) if costs else None

    @property
    def duration(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return max(0.0, self.end - self.start)

    @property
    def phases(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for t in self.turns:
            for k, v in t.phases.items():
                out[k] = out.get(k, 0.0) + v
        return out

    def prompt(self) -> str | None:
        """The first thing the user said, for an index."""
        for t in self.turns:
            for it in t.items:
                if isinstance(it, UserItem) and it.text.strip():
                    return it.text
        return None


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n… {len(text) - MAX_TEXT} more characters not shown"


_TOKEN_KEYS = ("input", "output", "cache_read", "cache_write", "reasoning", "total")


def _tokens(usage: Usage) -> dict[str, int]:
    if usage.tokens is None:
        return {}
    return {k: v for k in _TOKEN_KEYS if (v := getattr(usage.tokens, k)) is not None}


def _decision(answer: Any) -> str:
    """One word for a permission answer, whatever the agent's vocabulary."""
    answer = plain(answer)
    words: list[str] = []
    if isinstance(answer, str):
        words.append(answer)
    elif isinstance(answer, dict):
        for key in ("behavior", "decision", "optionId", "option_id", "outcome", "kind"):
            v = answer.get(key)
            if isinstance(v, str):
                words.append(v)
            elif isinstance(v, dict):
                words.extend(str(x) for x in v.values() if isinstance(x, str))
    low = " ".join(words).lower()
    if any(w in low for w in ("deny", "reject", "decline", "abort", "cancel", "disallow")):
        return "denied"
    if any(w in low for w in ("allow", "accept", "approve", "proceed", "yes")):
        return "allowed"
    return "answered"


class _Session:
    """Per-session building state."""

    def __init__(self, view: SessionView) -> None:
        self.view = view
        self.turn: TurnView | None = None
        self.calls: dict[str, Call] = {}
        self.texts: dict[str, Text] = {}
        self.requests: dict[str, Permission | Question] = {}
        self.subagents: dict[str, SubagentView] = {}
        self.last_turn: TurnView | None = None
        self.open_calls: set[str] = set()
        self.pending: set[str] = set()

    def current(self, turn_id: str | None, ts: float | None, replay: bool) -> TurnView:
        t = self.turn
        if t is None or t.turn_id != turn_id:
            t = None
            for old in reversed(self.view.turns):
                if old.turn_id == turn_id:
                    t = old
                    break
            if t is None:
                t = TurnView(turn_id, start=ts, replay=replay)
                self.view.turns.append(t)
            self.turn = t
        return t


@dataclass
class _Ctx:
    """Where one event goes: its session, its turn, the item list (a sub-agent's, inside a call), its time."""

    st: _Session
    turn: TurnView
    items: list[Item]
    ts: float | None
    replay: bool


class Builder:
    """Feed CoreEvents; read :attr:`sessions` at any time."""

    def __init__(self) -> None:
        self.sessions: dict[str, SessionView] = {}
        self._state: dict[str, _Session] = {}

    def feed_all(self, events: Iterable[object]) -> Builder:
        for ev in events:
            self.feed(ev)
        return self

    def _session(self, session_id: str, agent: str = "") -> _Session:
        st = self._state.get(session_id)
        if st is None:
            st = _Session(SessionView(session_id, agent=agent))
            self._state[session_id] = st
            self.sessions[session_id] = st.view
        elif agent and not st.view.agent:
            st.view.agent = agent
        return st

    def feed(self, ev: object) -> None:
        if isinstance(ev, SessionEvent):
            self._event(self._session(ev.session_id, ev.event.agent), ev.event)
        elif isinstance(ev, (SessionCreated, SessionResumed)):
            st = self._session(ev.session_id, ev.record.agent)
            self._record(st.view, ev.record)
            st.view.resumed = st.view.resumed or isinstance(ev, SessionResumed)
        elif isinstance(ev, SessionFailed):
            st = self._session(ev.session_id)
            st.view.failures.append(ev.error.message)
        elif isinstance(ev, MessageCompleted):
            st = self._session(ev.session_id)
            err = ev.result.error
            turn = st.turn
            if err is not None and turn is not None:
                said = any(isinstance(i, Notice) and i.kind == "error" and i.message == err.message for i in turn.items)
                if not said:  # the same error as an error event is shown once
                    turn.items.append(Notice("error", err.message, err.error_type))

    @staticmethod
    def _record(view: SessionView, rec: SessionRecord) -> None:
        view.agent = rec.agent or view.agent
        view.protocol = rec.protocol
        for name in ("agent_version", "model", "cwd", "title", "mode", "parent_id"):
            value = getattr(rec, name)
            if value is not None:
                setattr(view, name, value)
        if rec.created_at and view.start is None:
            view.start = parse_ts(rec.created_at)

    def _event(self, st: _Session, env: EventEnvelope) -> None:
        view = st.view
        view.events += 1
        replay = env.origin == "replay"
        if replay:
            view.replayed += 1
        ts = parse_ts(env.ts)
        if ts is not None:
            if view.start is None or ts < view.start:
                view.start = ts
            if view.end is None or ts > view.end:
                view.end = ts
        turn = st.current(env.turn_id, ts, replay)
        if not replay:
            turn.replay = False
        self._clock(st, turn, ts)
        body = env.body
        items = turn.items
        owner = env.subagent_id  # a sub-agent's events go into it; its own lifecycle events beside it
        if isinstance(body, Subagent) and owner == body.subagent_id:
            owner = None
        if owner is not None:
            items = self._subagent(st, turn.items, owner).items
        handler = _HANDLERS.get(type(body))
        if handler is not None:
            handler(self, _Ctx(st, turn, items, ts, replay), body)

    @staticmethod
    def _clock(st: _Session, turn: TurnView, ts: float | None) -> None:
        """Credit the time since the previous event to what the turn was doing."""
        if ts is None:
            return
        # only time inside this turn is the turn's, and only time past the latest event seen:
        # events that arrive out of time order are not counted twice
        prev = turn.end if st.last_turn is turn else None
        st.last_turn = turn
        if turn.start is None or ts < turn.start:
            turn.start = ts
        if turn.end is None or ts > turn.end:
            turn.end = ts
        if prev is None or turn.turn_id is None or ts <= prev:
            return
        gap = ts - prev
        phase: Phase = "model"
        if st.pending:
            phase = "approval"
        elif st.open_calls:
            phase = "tool"
        turn.phases[phase] = turn.phases.get(phase, 0.0) + gap

    @staticmethod
    def _subagent(st: _Session, items: list[Item], subagent_id: str, call_id: str | None = None) -> SubagentView:
        """The sub-agent's view; made on first sight, nested in the call that spawned it (else put in ``items``)."""
        sub = st.subagents.get(subagent_id)
        if sub is None:
            sub = SubagentView(subagent_id)
            st.subagents[subagent_id] = sub
            parent = st.calls.get(call_id or subagent_id)
            if parent is not None and parent.subagent is None:
                parent.subagent = sub
            else:
                items.append(sub)
        return sub

    @staticmethod
    def _call(c: _Ctx, call_id: str, tool: str) -> Call:
        call = c.st.calls.get(call_id)
        if call is None:
            call = Call(call_id, tool, start=c.ts, replay=c.replay)
            c.st.calls[call_id] = call
            c.items.append(call)
        return call

    @staticmethod
    def _phase(c: _Ctx, call: Call, phase: str) -> None:
        if call.phase in ("completed", "failed") and phase not in ("completed", "failed"):
            return  # an update that arrives after the result (out of order) does not reopen the call
        call.phase = phase
        if phase in ("completed", "failed"):
            call.end = c.ts
            c.st.open_calls.discard(call.call_id)
        else:
            c.st.open_calls.add(call.call_id)

    # ---- handlers, one per body type

    def _turn_start(self, c: _Ctx, body: TurnStart) -> None:
        c.turn.replay = c.replay

    def _turn_complete(self, c: _Ctx, body: TurnComplete) -> None:
        c.turn.reason = body.reason
        c.turn.stop_reason = body.stop_reason
        if not c.turn._has_turn_usage and c.turn._call_tokens:
            c.turn.tokens = dict(c.turn._call_tokens)
            c.turn.cost = c.turn._call_cost or c.turn.cost

    def _user(self, c: _Ctx, body: UserMessage) -> None:
        c.items.append(UserItem(body.text, bool(body.queued), len(body.images or ()), c.replay))

    def _text(self, c: _Ctx, key: str, kind: Literal["assistant", "reasoning"]) -> Text:
        t = c.st.texts.get(key)
        if t is None:
            t = Text(kind, replay=c.replay)
            c.st.texts[key] = t
            c.items.append(t)
        return t

    def _assistant_delta(self, c: _Ctx, body: AssistantDelta) -> None:
        self._text(c, "m:" + body.message_id, "assistant").text += body.text

    def _assistant(self, c: _Ctx, body: AssistantMessage) -> None:
        self._text(c, "m:" + body.message_id, "assistant").text = body.text

    def _reasoning_delta(self, c: _Ctx, body: ReasoningDelta) -> None:
        self._text(c, "r:" + body.reasoning_id, "reasoning").text += body.text

    def _reasoning(self, c: _Ctx, body: Reasoning) -> None:
        t = self._text(c, "r:" + body.reasoning_id, "reasoning")
        if body.text is not None:
            t.text = body.text
        t.summary = body.summary
        t.redacted = body.redacted

    def _tool(self, c: _Ctx, body: ToolCall) -> None:
        call = self._call(c, body.call_id, body.tool)
        call.tool = body.tool or call.tool
        self._phase(c, call, body.phase)
        for name in ("title", "category", "exit_code", "description"):
            value = getattr(body, name)
            if value is not None:
                setattr(call, name, value)
        if body.input is not None:
            call.input = plain(body.input)
        if body.output is not None:
            call.output = plain(body.output)
        for loc in body.locations or ():
            if loc.path not in call.paths:
                call.paths.append(loc.path)

    def _mcp(self, c: _Ctx, body: McpTool) -> None:
        call = self._call(c, body.call_id, f"{body.server}/{body.tool}")
        call.kind = "mcp"
        call.category = call.category or "mcp"
        self._phase(c, call, "updated" if body.phase == "progress" else body.phase)
        if body.arguments is not None:
            call.input = plain(body.arguments)
        if body.result is not None:
            call.output = plain(body.result)

    def _web(self, c: _Ctx, body: WebSearch) -> None:
        call = self._call(c, body.call_id, "web search")
        call.kind = "web-search"
        call.category = call.category or "web-search"
        self._phase(c, call, body.phase)
        if body.query is not None:
            call.input = {"query": body.query}
            call.title = call.title or body.query
        if body.results is not None:
            call.output = plain(body.results)

    def _output(self, c: _Ctx, body: CommandOutput) -> None:
        call = self._call(c, body.call_id, "command")
        if sum(len(s) for s in call.stdout) < MAX_TEXT:
            call.stdout.append(body.delta)

    def _diff(self, c: _Ctx, body: FileDiff) -> None:
        entry = (body.path, _clip(body.diff), body.change_kind)
        if body.call_id is not None:
            call = self._call(c, body.call_id, "edit")
            if entry not in call.diffs:
                call.diffs.append(entry)
        else:
            call = Call(f"diff:{len(c.st.calls)}", "file change", category="edit", phase="completed", replay=c.replay)
            call.diffs.append(entry)
            c.st.calls[call.call_id] = call
            c.items.append(call)

    def _permission(self, c: _Ctx, body: PermissionRequest) -> None:
        ref = body.tool_call
        call = self._call(c, ref.call_id, ref.tool)
        call.title = call.title or ref.title
        call.category = call.category or ref.category
        if call.input is None and ref.input is not None:
            call.input = plain(ref.input)
        detail = None
        if body.detail is not None:
            parts = [body.detail.reason, body.detail.command, body.detail.blocked_path]
            detail = " · ".join(p for p in parts if p) or None
        perm = Permission(body.request_id, [o.label for o in body.options], detail, start=c.ts)
        call.permission = perm
        c.st.requests[body.request_id] = perm
        c.st.pending.add(body.request_id)

    def _question(self, c: _Ctx, body: UserQuestion) -> None:
        q = Question(body.request_id, [q.prompt for q in body.questions], replay=c.replay)
        c.st.requests[body.request_id] = q
        c.st.pending.add(body.request_id)
        c.items.append(q)

    def _resolved(self, c: _Ctx, body: RequestResolved) -> None:
        req = c.st.requests.get(body.request_id)
        c.st.pending.discard(body.request_id)
        if req is None:
            c.items.append(Notice("note", f"request {body.request_id} {body.outcome}", replay=c.replay))
            return
        req.answer = plain(body.answer)
        if body.outcome == "cancelled":
            req.outcome = "cancelled"
        elif isinstance(req, Permission):
            req.outcome = _decision(body.answer)
            req.end = c.ts
        else:
            req.outcome = "answered"

    def _auto(self, c: _Ctx, body: PermissionAuto) -> None:
        ref = body.tool_call
        call = self._call(c, ref.call_id, ref.tool)
        if call.permission is None:
            call.permission = Permission(None, [], outcome=f"auto: {body.option_id}")

    def _plan(self, c: _Ctx, body: Plan) -> None:
        c.items.append(PlanItem([(e.status, e.content) for e in body.entries], body.explanation, c.replay))

    def _subagent_body(self, c: _Ctx, body: Subagent) -> None:
        sub = self._subagent(c.st, c.items, body.subagent_id, body.call_id)
        if body.phase != "progress":
            sub.phase = body.phase
        for name in ("name", "description", "prompt", "model"):
            value = getattr(body, name)
            if value is not None:
                setattr(sub, name, value)
        if body.result is not None:
            sub.result = plain(body.result)
        if body.stats is not None:
            sub.stats = plain(body.stats)

    def _usage(self, c: _Ctx, body: Usage) -> None:
        tokens = _tokens(body)
        cost = body.cost.amount if body.cost is not None else None
        if body.cost is not None:
            c.turn.currency = c.st.view.currency = body.cost.currency
        if body.scope == "session":
            if tokens:
                c.st.view.session_tokens = tokens
            if cost is not None:
                c.st.view.session_cost = cost
        elif body.scope == "turn":
            c.turn._has_turn_usage = True
            if tokens:
                c.turn.tokens = tokens
            if cost is not None:
                c.turn.cost = cost
        elif tokens or cost is not None:
            for k, v in tokens.items():
                c.turn._call_tokens[k] = c.turn._call_tokens.get(k, 0) + v
            c.turn._call_cost += cost or 0.0
            if not c.turn._has_turn_usage:
                c.turn.tokens = dict(c.turn._call_tokens)
                if c.turn._call_cost:
                    c.turn.cost = c.turn._call_cost

    def _info(self, c: _Ctx, body: SessionInfo) -> None:
        for name in ("title", "cwd", "model"):
            value = getattr(body, name)
            if value is not None:
                setattr(c.st.view, name, value)

    def _mode(self, c: _Ctx, body: ModeUpdate) -> None:
        if body.model is not None:
            c.st.view.model = body.model
        if body.mode_id is not None:
            c.st.view.mode = body.mode_id

    def _warning(self, c: _Ctx, body: WarningBody) -> None:
        c.items.append(Notice("warning", body.message, body.source, c.replay))

    def _error(self, c: _Ctx, body: Error) -> None:
        detail = body.error_type
        if body.recoverable is not None:
            detail = f"{detail or 'error'}, {'recoverable' if body.recoverable else 'not recoverable'}"
        c.items.append(Notice("error", body.message, detail, c.replay))

    def _compaction(self, c: _Ctx, body: Compaction) -> None:
        if body.status != "in_progress":
            c.items.append(Notice("note", f"context compaction {body.status}", body.summary or body.error, c.replay))

    def _reset(self, c: _Ctx, body: ConversationReset) -> None:
        c.items.append(Notice("note", "conversation reset", body.trigger, c.replay))


_HANDLERS: dict[type, Any] = {
    TurnStart: Builder._turn_start,
    TurnComplete: Builder._turn_complete,
    UserMessage: Builder._user,
    AssistantDelta: Builder._assistant_delta,
    AssistantMessage: Builder._assistant,
    ReasoningDelta: Builder._reasoning_delta,
    Reasoning: Builder._reasoning,
    ToolCall: Builder._tool,
    McpTool: Builder._mcp,
    WebSearch: Builder._web,
    CommandOutput: Builder._output,
    FileDiff: Builder._diff,
    PermissionRequest: Builder._permission,
    UserQuestion: Builder._question,
    RequestResolved: Builder._resolved,
    PermissionAuto: Builder._auto,
    Plan: Builder._plan,
    Subagent: Builder._subagent_body,
    Usage: Builder._usage,
    SessionInfo: Builder._info,
    ModeUpdate: Builder._mode,
    WarningBody: Builder._warning,
    Error: Builder._error,
    Compaction: Builder._compaction,
    ConversationReset: Builder._reset,
}
