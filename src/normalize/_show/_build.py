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
    Warning,
    WebSearch,
)

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
        self.last_ts: float | None = None
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
            if err is not None and st.turn is not None:
                st.turn.items.append(Notice("error", err.message, err.error_type))

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
        if env.subagent_id is not None:
            sub = self._subagent(st, turn, env.subagent_id)
            items = sub.items
        handler = _HANDLERS.get(type(body))
        if handler is not None:
            handler(self, st, turn, items, body, ts, replay)

    @staticmethod
    def _clock(st: _Session, turn: TurnView, ts: float | None) -> None:
        """Credit the time since the previous event to what the turn was doing."""
        if ts is None:
            return
        prev = st.last_ts
        st.last_ts = ts
        if turn.start is None:
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

    def _subagent(self, st: _Session, turn: TurnView, subagent_id: str) -> SubagentView:
        sub = st.subagents.get(subagent_id)
        if sub is None:
            sub = SubagentView(subagent_id)
            st.subagents[subagent_id] = sub
            parent = st.calls.get(subagent_id)
            if parent is not None and parent.subagent is None:
                parent.subagent = sub
            else:
                turn.items.append(sub)
        return sub

    def _call(self, st: _Session, items: list[Item], call_id: str, tool: str, ts: float | None, replay: bool) -> Call:
        call = st.calls.get(call_id)
        if call is None:
            call = Call(call_id, tool, start=ts, replay=replay)
            st.calls[call_id] = call
            items.append(call)
        return call

    @staticmethod
    def _phase(st: _Session, call: Call, phase: str, ts: float | None) -> None:
        call.phase = phase
        if phase in ("completed", "failed"):
            call.end = ts
            st.open_calls.discard(call.call_id)
        else:
            st.open_calls.add(call.call_id)

    # ---- handlers, one per body type

    def _turn_start(self, st: _Session, turn: TurnView, items: list[Item], body: TurnStart, ts: float | None, replay: bool) -> None:  # noqa: E501
        turn.replay = replay

    def _turn_complete(self, st: _Session, turn: TurnView, items: list[Item], body: TurnComplete, ts: float | None, replay: bool) -> None:  # noqa: E501
        turn.reason = body.reason
        turn.stop_reason = body.stop_reason
        if not turn._has_turn_usage and turn._call_tokens:
            turn.tokens = dict(turn._call_tokens)
            turn.cost = turn._call_cost or turn.cost

    def _user(self, st: _Session, turn: TurnView, items: list[Item], body: UserMessage, ts: float | None, replay: bool) -> None:  # noqa: E501
        items.append(UserItem(body.text, bool(body.queued), len(body.images or ()), replay))

    def _text(self, st: _Session, items: list[Item], key: str, kind: Literal["assistant", "reasoning"], replay: bool) -> Text:  # noqa: E501
        t = st.texts.get(key)
        if t is None:
            t = Text(kind, replay=replay)
            st.texts[key] = t
            items.append(t)
        return t

    def _assistant_delta(self, st: _Session, turn: TurnView, items: list[Item], body: AssistantDelta, ts: float | None, replay: bool) -> None:  # noqa: E501
        self._text(st, items, "m:" + body.message_id, "assistant", replay).text += body.text

    def _assistant(self, st: _Session, turn: TurnView, items: list[Item], body: AssistantMessage, ts: float | None, replay: bool) -> None:  # noqa: E501
        self._text(st, items, "m:" + body.message_id, "assistant", replay).text = body.text

    def _reasoning_delta(self, st: _Session, turn: TurnView, items: list[Item], body: ReasoningDelta, ts: float | None, replay: bool) -> None:  # noqa: E501
        self._text(st, items, "r:" + body.reasoning_id, "reasoning", replay).text += body.text

    def _reasoning(self, st: _Session, turn: TurnView, items: list[Item], body: Reasoning, ts: float | None, replay: bool) -> None:  # noqa: E501
        t = self._text(st, items, "r:" + body.reasoning_id, "reasoning", replay)
        if body.text is not None:
            t.text = body.text
        t.summary = body.summary
        t.redacted = body.redacted

    def _tool(self, st: _Session, turn: TurnView, items: list[Item], body: ToolCall, ts: float | None, replay: bool) -> None:  # noqa: E501
        call = self._call(st, items, body.call_id, body.tool, ts, replay)
        call.tool = body.tool or call.tool
        self._phase(st, call, body.phase, ts)
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

    def _mcp(self, st: _Session, turn: TurnView, items: list[Item], body: McpTool, ts: float | None, replay: bool) -> None:  # noqa: E501
        call = self._call(st, items, body.call_id, f"{body.server}/{body.tool}", ts, replay)
        call.kind = "mcp"
        call.category = call.category or "mcp"
        self._phase(st, call, "updated" if body.phase == "progress" else body.phase, ts)
        if body.arguments is not None:
            call.input = plain(body.arguments)
        if body.result is not None:
            call.output = plain(body.result)

    def _web(self, st: _Session, turn: TurnView, items: list[Item], body: WebSearch, ts: float | None, replay: bool) -> None:  # noqa: E501
        call = self._call(st, items, body.call_id, "web search", ts, replay)
        call.kind = "web-search"
        call.category = call.category or "web-search"
        self._phase(st, call, body.phase, ts)
        if body.query is not None:
            call.input = {"query": body.query}
            call.title = call.title or body.query
        if body.results is not None:
            call.output = plain(body.results)

    def _output(self, st: _Session, turn: TurnView, items: list[Item], body: CommandOutput, ts: float | None, replay: bool) -> None:  # noqa: E501
        call = self._call(st, items, body.call_id, "command", ts, replay)
        if sum(len(s) for s in call.stdout) < MAX_TEXT:
            call.stdout.append(body.delta)

    def _diff(self, st: _Session, turn: TurnView, items: list[Item], body: FileDiff, ts: float | None, replay: bool) -> None:  # noqa: E501
        entry = (body.path, _clip(body.diff), body.change_kind)
        if body.call_id is not None:
            call = self._call(st, items, body.call_id, "edit", ts, replay)
            if entry not in call.diffs:
                call.diffs.append(entry)
        else:
            call = Call(f"diff:{len(st.calls)}", "file change", category="edit", phase="completed", replay=replay)
            call.diffs.append(entry)
            st.calls[call.call_id] = call
            items.append(call)

    def _permission(self, st: _Session, turn: TurnView, items: list[Item], body: PermissionRequest, ts: float | None, replay: bool) -> None:  # noqa: E501
        ref = body.tool_call
        call = self._call(st, items, ref.call_id, ref.tool, ts, replay)
        call.title = call.title or ref.title
        call.category = call.category or ref.category
        if call.input is None and ref.input is not None:
            call.input = plain(ref.input)
        detail = None
        if body.detail is not None:
            parts = [body.detail.reason, body.detail.command, body.detail.blocked_path]
            detail = " · ".join(p for p in parts if p) or None
        perm = Permission(body.request_id, [o.label for o in body.options], detail, start=ts)
        call.permission = perm
        st.requests[body.request_id] = perm
        st.pending.add(body.request_id)

    def _question(self, st: _Session, turn: TurnView, items: list[Item], body: UserQuestion, ts: float | None, replay: bool) -> None:  # noqa: E501
        q = Question(body.request_id, [q.prompt for q in body.questions], replay=replay)
        st.requests[body.request_id] = q
        st.pending.add(body.request_id)
        items.append(q)

    def _resolved(self, st: _Session, turn: TurnView, items: list[Item], body: RequestResolved, ts: float | None, replay: bool) -> None:  # noqa: E501
        req = st.requests.get(body.request_id)
        st.pending.discard(body.request_id)
        if req is None:
            items.append(Notice("note", f"request {body.request_id} {body.outcome}", replay=replay))
            return
        req.answer = plain(body.answer)
        if body.outcome == "cancelled":
            req.outcome = "cancelled"
        elif isinstance(req, Permission):
            req.outcome = _decision(body.answer)
            req.end = ts
        else:
            req.outcome = "answered"

    def _auto(self, st: _Session, turn: TurnView, items: list[Item], body: PermissionAuto, ts: float | None, replay: bool) -> None:  # noqa: E501
        ref = body.tool_call
        call = self._call(st, items, ref.call_id, ref.tool, ts, replay)
        if call.permission is None:
            call.permission = Permission(None, [], outcome=f"auto: {body.option_id}")

    def _plan(self, st: _Session, turn: TurnView, items: list[Item], body: Plan, ts: float | None, replay: bool) -> None:  # noqa: E501
        items.append(PlanItem([(e.status, e.content) for e in body.entries], body.explanation, replay))

    def _subagent_body(self, st: _Session, turn: TurnView, items: list[Item], body: Subagent, ts: float | None, replay: bool) -> None:  # noqa: E501
        sub = st.subagents.get(body.subagent_id)
        if sub is None:
            sub = SubagentView(body.subagent_id)
            st.subagents[body.subagent_id] = sub
            parent = st.calls.get(body.call_id or body.subagent_id)
            if parent is not None and parent.subagent is None:
                parent.subagent = sub
            else:
                items.append(sub)
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

    def _usage(self, st: _Session, turn: TurnView, items: list[Item], body: Usage, ts: float | None, replay: bool) -> None:  # noqa: E501
        tokens = _tokens(body)
        cost = body.cost.amount if body.cost is not None else None
        if body.cost is not None:
            turn.currency = st.view.currency = body.cost.currency
        if body.scope == "session":
            if tokens:
                st.view.session_tokens = tokens
            if cost is not None:
                st.view.session_cost = cost
        elif body.scope == "turn":
            turn._has_turn_usage = True
            if tokens:
                turn.tokens = tokens
            if cost is not None:
                turn.cost = cost
        elif tokens or cost is not None:
            for k, v in tokens.items():
                turn._call_tokens[k] = turn._call_tokens.get(k, 0) + v
            turn._call_cost += cost or 0.0
            if not turn._has_turn_usage:
                turn.tokens = dict(turn._call_tokens)
                if turn._call_cost:
                    turn.cost = turn._call_cost

    def _info(self, st: _Session, turn: TurnView, items: list[Item], body: SessionInfo, ts: float | None, replay: bool) -> None:  # noqa: E501
        for name in ("title", "cwd", "model"):
            value = getattr(body, name)
            if value is not None:
                setattr(st.view, name, value)

    def _mode(self, st: _Session, turn: TurnView, items: list[Item], body: ModeUpdate, ts: float | None, replay: bool) -> None:  # noqa: E501
        if body.model is not None:
            st.view.model = body.model
        if body.mode_id is not None:
            st.view.mode = body.mode_id

    def _warning(self, st: _Session, turn: TurnView, items: list[Item], body: Warning, ts: float | None, replay: bool) -> None:  # noqa: E501
        items.append(Notice("warning", body.message, body.source, replay))

    def _error(self, st: _Session, turn: TurnView, items: list[Item], body: Error, ts: float | None, replay: bool) -> None:  # noqa: E501
        detail = body.error_type
        if body.recoverable is not None:
            detail = f"{detail or 'error'}, {'recoverable' if body.recoverable else 'not recoverable'}"
        items.append(Notice("error", body.message, detail, replay))

    def _compaction(self, st: _Session, turn: TurnView, items: list[Item], body: Compaction, ts: float | None, replay: bool) -> None:  # noqa: E501
        if body.status != "in_progress":
            items.append(Notice("note", f"context compaction {body.status}", body.summary or body.error, replay))

    def _reset(self, st: _Session, turn: TurnView, items: list[Item], body: ConversationReset, ts: float | None, replay: bool) -> None:  # noqa: E501
        items.append(Notice("note", "conversation reset", body.trigger, replay))


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
    Warning: Builder._warning,
    Error: Builder._error,
    Compaction: Builder._compaction,
    ConversationReset: Builder._reset,
}
