"""The normalized event model: every CoreEvent and every body kind.

Everything here mirrors ``spec/core-events.txt``; JSON names are the spec's own
(``sessionId``, ``callId``, ``tool-call``).  Python attribute names are their
snake_case form; ``rename="camel"`` maps one to the other, and the few names that
camel-casing cannot produce (``from``) are spelled out with ``msgspec.field``.

Rules of this module:

* Every type is a frozen msgspec Struct.  Bodies are a tagged union on ``kind``,
  CoreEvents a tagged union on ``type``.  Nothing is subclassed past its tag, so
  code can dispatch on exact type.
* Instances are not tracked by the cycle collector (``gc=False``): they hold plain
  data and never refer back to themselves, and every event allocates several, so the
  collector's passes over them cost several percent of a conversion.
* Optional fields default to ``None`` and are omitted from JSON when absent
  (``omit_defaults``).  No field has a non-``None`` default, so "omitted" always
  means "absent".
* Values the library does not interpret (tool input and output, raw answers,
  rate-limit blobs) are typed ``Any``: adapters may pass ``msgspec.Raw`` there,
  which is written out untouched.
* Extensions beyond the spec are marked ``# extension`` and documented in
  ``docs/events.md``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Union

import msgspec
from msgspec import Raw, Struct, field

#: ``Warning`` and ``Error`` (the spec's kind names) stay importable by name, but a star
#: import brings only ``WarningBody`` and ``ErrorBody``: it never shadows the builtins.
__all__ = [
    "BODY_TYPES",
    "CORE_EVENT_TYPES",
    "AccountAvailable",
    "AccountExhausted",
    "AccountRefreshed",
    "AccountSwitched",
    "AccountUnavailable",
    "AgentUpdate",
    "AnyBody",
    "AssistantDelta",
    "AssistantMessage",
    "Body",
    "Category",
    "CommandEntry",
    "CommandOutput",
    "CommandsUpdate",
    "Compaction",
    "Completion",
    "CompletionUsage",
    "ContextApplied",
    "ContextDegraded",
    "ContextDrop",
    "ContextUpdated",
    "ContextWindow",
    "ConversationReset",
    "CoreEvent",
    "Cost",
    "Decision",
    "ErrorBody",
    "ErrorInfo",
    "EventEnvelope",
    "FileDiff",
    "Image",
    "Location",
    "McpTool",
    "MessageAccepted",
    "MessageCompleted",
    "MessageStarted",
    "ModeUpdate",
    "Native",
    "Origin",
    "PermissionAuto",
    "PermissionDetail",
    "PermissionOption",
    "PermissionRequest",
    "PermissionsUpdate",
    "Plan",
    "PlanEntry",
    "Protocol",
    "Question",
    "QuestionOption",
    "Reasoning",
    "ReasoningDelta",
    "RequestResolved",
    "SessionCreated",
    "SessionEvent",
    "SessionFailed",
    "SessionInfo",
    "SessionRecord",
    "SessionResumed",
    "SessionState",
    "SessionStateChanged",
    "SessionUpdate",
    "Subagent",
    "Task",
    "Tokens",
    "ToolCall",
    "ToolCallRef",
    "ToolCalled",
    "ToolChangeApplied",
    "ToolFinished",
    "TurnComplete",
    "TurnStart",
    "Usage",
    "UserMessage",
    "UserQuestion",
    "WarningBody",
    "WebSearch",
]

# --------------------------------------------------------------------------
# Shared literals

Origin = Literal["live", "replay"]
SessionState = Literal["starting", "idle", "running", "waiting", "ended", "failed"]
#: What became of a permission request or a question, in one vocabulary for every agent
#: (docs/events.md, "Decisions"): the agent may run the call once, or from now on; it may
#: not, this time or from now on; nobody answered (the request was withdrawn, the turn
#: cancelled); or a question got its answer.
Decision = Literal["allow", "allow-always", "deny", "deny-always", "cancel", "answered"]
Category = Literal[
    "read", "edit", "delete", "move", "search", "execute", "fetch", "mcp", "web-search", "think", "other"
]
#: ``native.protocol`` values: the spec's, plus the formats normalize reads that
#: the spec does not list.  Third-party adapters may use their own names.
Protocol = str


def _plain(value: Any) -> Any:
    """A value passed through from the wire (``msgspec.Raw``) decoded; any other value as it is."""
    return msgspec.json.decode(value) if isinstance(value, Raw) else value


class _PlainData:
    """``to_dict()`` for every model type (a mixin: msgspec Structs take methods)."""

    __slots__ = ()

    def to_dict(self) -> Any:
        """This object as plain data (dicts, lists, strings, numbers), as the JSON wire form has it.

        Keys are the wire names (``callId``, ``sessionId``); native payloads and
        tool inputs and outputs are decoded.  Same as :func:`normalize.to_builtins`.
        """
        from ._codec import to_builtins

        return to_builtins(self)


class _Value(_PlainData, Struct, frozen=True, gc=False, kw_only=True, rename="camel", omit_defaults=True):
    """Base of the plain (untagged) value types."""


# --------------------------------------------------------------------------
# Types the spec names but does not define (see docs/events.md)


class SessionRecord(_Value, frozen=True, kw_only=True):
    """What is known about a session when it is created, resumed or forked."""

    id: str
    agent: str
    protocol: Protocol
    native_session_id: str | None = None
    title: str | None = None
    cwd: str | None = None
    model: str | None = None
    mode: str | None = None
    created_at: str | None = None
    parent_id: str | None = None
    fork_of: str | None = None
    agent_version: str | None = None
    #: extension: the package the agent is reached through (an ACP bridge such as
    #: ``@agentclientprotocol/claude-agent-acp``) when it is not the agent itself
    via: str | None = None
    via_version: str | None = None  # extension: that package's version
    provider: str | None = None  # extension: the model provider, when the agent says it


class Native(_Value, frozen=True, kw_only=True):
    """The native message an event came from, kept unchanged in ``payload``."""

    protocol: Protocol
    payload: Any
    method: str | None = None

    @property
    def data(self) -> Any:
        """``payload`` decoded: the native message as dicts and lists (a string for a line that was not JSON)."""
        return _plain(self.payload)


#: ``session.update``'s payload: the untranslated native message, same shape as ``native``.
AgentUpdate = Native


class ErrorInfo(_Value, frozen=True, kw_only=True):
    """The ``Error`` of ``session.failed`` and of a Completion."""

    message: str
    error_type: str | None = None


class Tokens(_Value, frozen=True, kw_only=True):
    """Token counts of a model call, a turn or a session (``usage.scope`` says which).

    ``input`` includes the cached tokens when the agent counts them that way; ``cacheRead``,
    ``cacheWrite`` and ``reasoning`` are extensions: they are priced differently."""

    input: int | None = None
    output: int | None = None
    total: int | None = None
    cache_read: int | None = None  # extension
    cache_write: int | None = None  # extension
    reasoning: int | None = None  # extension


class Cost(_Value, frozen=True, kw_only=True):
    """An amount of money spent, with its currency; ``source`` (extension) says who computed it."""

    amount: float
    currency: str
    source: str | None = None  # extension: "agent" (reported by the agent) or a price table name


class ContextWindow(_Value, frozen=True, kw_only=True):
    """How much of the model's context window is used, and its size when the agent says."""

    used: int
    size: int | None = None


class CompletionUsage(_Value, frozen=True, kw_only=True):
    """The usage of a Completion: its tokens and cost."""

    tokens: Tokens | None = None
    cost: Cost | None = None


class Completion(_Value, frozen=True, kw_only=True):
    """How a message (a turn's reply) ended."""

    stop_reason: Literal["end_turn", "max_tokens", "max_turns", "refusal", "cancelled", "error"]
    text: str | None = None
    usage: CompletionUsage | None = None
    error: ErrorInfo | None = None


class ContextDrop(_Value, frozen=True, kw_only=True):
    """Something the agent left out of the model's context, and why.

    ``what``: ``image`` (model without vision), ``file``, ``tool``, ``message``
    (dropped by compaction or truncation), or ``other``.
    """

    what: Literal["image", "file", "tool", "message", "other"]
    reason: str
    count: int | None = None
    detail: str | None = None


class _Applied(
    _PlainData, Struct, frozen=True, gc=False, kw_only=True, rename="camel", omit_defaults=True, tag_field="kind"
):
    pass


class ContextApplied(_Applied, tag="context", frozen=True, kw_only=True):
    """A change to the model's context: an MCP server connected or removed, a compaction, ..."""

    what: Literal["mcp-server", "compaction", "instructions", "memory", "attachment", "other"]
    action: Literal["added", "removed", "updated", "failed"]
    name: str | None = None
    detail: Any = None


class ToolChangeApplied(_Applied, tag="tool-change", frozen=True, kw_only=True):
    """Tools made available to, or withdrawn from, the model."""

    added: list[str] | None = None
    removed: list[str] | None = None
    server: str | None = None


class Image(_Value, frozen=True, kw_only=True):
    """An image the user sent: inline (``mediaType`` and base64 ``data``) or by ``uri``."""

    media_type: str | None = None
    data: str | None = None
    width: int | None = None
    height: int | None = None
    uri: str | None = None


class Location(_Value, frozen=True, kw_only=True):
    """A file a tool call touches, and the line when the agent gives one."""

    path: str
    line: int | None = None  # extension (ACP locations carry a line)


class PlanEntry(_Value, frozen=True, kw_only=True):
    """One step of a plan, with its status."""

    content: str
    status: Literal["pending", "in_progress", "completed"]
    priority: str | None = None


class QuestionOption(_Value, frozen=True, kw_only=True):
    """One choice offered by a question the agent asks the user."""

    id: str
    label: str
    description: str | None = None


class Question(_Value, frozen=True, kw_only=True):
    """One question of a ``user-question``: its prompt, choices and whether free text is allowed."""

    id: str
    prompt: str
    multi_select: bool
    allow_free_text: bool
    options: list[QuestionOption]
    header: str | None = None


class ToolCallRef(_Value, frozen=True, kw_only=True):
    """The tool call a permission request or an automatic decision is about."""

    call_id: str
    tool: str
    title: str
    input: Any = None
    category: Category | None = None


class PermissionOption(_Value, frozen=True, kw_only=True):
    """One answer a permission request offers (allow once, allow always, reject, ...)."""

    id: str
    kind: str
    label: str


class PermissionDetail(_Value, frozen=True, kw_only=True):
    """What a permission request is for: the command, its folder, the path it would touch, why."""

    command: str | None = None
    cwd: str | None = None
    blocked_path: str | None = None
    reason: str | None = None  # extension
    paths: list[str] | None = None  # extension: the paths the call would touch


class CommandEntry(_Value, frozen=True, kw_only=True):
    """One slash command the agent offers."""

    name: str
    description: str | None = None
    argument_hint: str | None = None
    aliases: list[str] | None = None
    builtin: bool | None = None


# --------------------------------------------------------------------------
# Bodies: ``kind``-tagged


class Body(
    _PlainData, Struct, frozen=True, gc=False, kw_only=True, rename="camel", omit_defaults=True, tag_field="kind"
):
    """Base of every normalized body.  Never instantiated itself."""


class TurnStart(Body, tag="turn-start", frozen=True, kw_only=True):
    """A turn began: the events up to its ``turn-complete`` carry its ``turnId``."""


class TurnComplete(Body, tag="turn-complete", frozen=True, kw_only=True):
    """A turn ended: ``ok``, or ``interrupt`` when it was cut off or cancelled.

    ``stopReason`` (extension) is the agent's own stop reason, as it said it."""

    reason: Literal["ok", "interrupt"]
    stop_reason: str | None = None  # extension: the native stop reason, as the agent said it
    native_turn_id: str | None = None  # extension: the agent's own turn id (Codex)


class AssistantDelta(Body, tag="assistant-delta", frozen=True, kw_only=True):
    """A piece of the assistant's reply as it streams; the pieces of one ``messageId`` add up to it."""

    message_id: str
    text: str


class AssistantMessage(Body, tag="assistant-message", frozen=True, kw_only=True):
    """The assistant's complete reply text (after its deltas, when it streamed)."""

    message_id: str
    text: str


class ReasoningDelta(Body, tag="reasoning-delta", frozen=True, kw_only=True):
    """A piece of the model's reasoning as it streams."""

    reasoning_id: str
    text: str


class Reasoning(Body, tag="reasoning", frozen=True, kw_only=True):
    """The model's reasoning, whole: its text, its summary, or ``redacted`` when the agent withholds it."""

    reasoning_id: str
    redacted: bool
    text: str | None = None
    summary: str | None = None


class ToolCall(Body, tag="tool-call", frozen=True, kw_only=True):
    """A tool call, one event per phase: ``started``, ``updated``, then ``completed`` or ``failed``.

    ``input`` and ``output`` are the tool's own values, passed through as the agent wrote
    them (``msgspec.Raw`` when read from the wire; :attr:`input_data` and
    :attr:`output_data` decode them, and :meth:`to_dict` gives the whole body as plain data)."""

    call_id: str
    tool: str
    phase: Literal["started", "updated", "completed", "failed"]
    title: str | None = None
    category: Category | None = None
    locations: list[Location] | None = None
    input: Any = None
    output: Any = None
    exit_code: int | None = None
    description: str | None = None

    @property
    def input_data(self) -> Any:
        """``input`` decoded (a ``msgspec.Raw`` from the wire becomes dicts and lists)."""
        return _plain(self.input)

    @property
    def output_data(self) -> Any:
        """``output`` decoded (a ``msgspec.Raw`` from the wire becomes dicts, lists or a string)."""
        return _plain(self.output)


class CommandOutput(Body, tag="command-output", frozen=True, kw_only=True):
    """Output of a running command (a shell tool call), streamed: ``stdout``, ``stderr`` or merged."""

    call_id: str
    stream: Literal["stdout", "stderr", "merged"]
    delta: str


class FileDiff(Body, tag="file-diff", frozen=True, kw_only=True):
    """A change to a file, as a unified diff, and the tool call that made it."""

    path: str
    diff: str
    call_id: str | None = None
    change_kind: str | None = None


class WebSearch(Body, tag="web-search", frozen=True, kw_only=True):
    """A web search the agent ran, by phase, with its query and results."""

    call_id: str
    phase: Literal["started", "completed", "failed"]
    query: str | None = None
    results: Any = None


class McpTool(Body, tag="mcp-tool", frozen=True, kw_only=True):
    """A call to a tool of an MCP server, by phase, with its arguments and result."""

    call_id: str
    server: str
    tool: str
    phase: Literal["started", "progress", "completed", "failed"]
    arguments: Any = None
    result: Any = None
    duration_ms: float | None = None  # extension: how long the call took, as the agent measured it


class Plan(Body, tag="plan", frozen=True, kw_only=True):
    """The agent's plan (a to-do list), whole, each time it changes."""

    entries: list[PlanEntry]
    explanation: str | None = None


class Task(Body, tag="task", frozen=True, kw_only=True):
    """A background task (a shell, an agent, a workflow, a monitor) by phase."""

    task_id: str
    task_kind: Literal["shell", "agent", "workflow", "monitor", "subagent", "collab"]
    phase: Literal["started", "progress", "completed", "failed", "cancelled"]
    label: str | None = None
    parent_call_id: str | None = None


class UserQuestion(Body, tag="user-question", frozen=True, kw_only=True):
    """The agent asks the user one or more questions; ``blocking`` when it waits for the answer."""

    request_id: str
    blocking: bool
    questions: list[Question]


class PermissionRequest(Body, tag="permission-request", frozen=True, kw_only=True):
    """The agent asks permission for a tool call; answered by a ``request-resolved``."""

    request_id: str
    tool_call: ToolCallRef
    options: list[PermissionOption]
    detail: PermissionDetail | None = None


class RequestResolved(Body, tag="request-resolved", frozen=True, kw_only=True):
    """A permission request or a question got its answer, or was cancelled."""

    request_id: str
    outcome: Literal["answered", "cancelled"]
    answer: Any = None
    option_id: str | None = None  # extension: the option chosen, one of the request's options
    decision: Decision | None = None  # extension: the outcome in the vocabulary shared by every agent


class PermissionAuto(Body, tag="permission-auto", frozen=True, kw_only=True):
    """A tool call allowed or denied by a rule, without asking (``optionId`` says which)."""

    tool_call: ToolCallRef
    option_id: str
    decision: Decision | None = None  # extension: ``allow`` ... ``deny-always``, as for request-resolved
    reason: str | None = None  # extension: why it was decided (the rule that refused it)


class PermissionsUpdate(Body, tag="permissions-update", frozen=True, kw_only=True):
    """The permission rules changed: ``spec`` as the agent states them, applied now or next turn."""

    spec: Any
    applied: Literal["now", "next-turn"]


class CommandsUpdate(Body, tag="commands-update", frozen=True, kw_only=True):
    """The slash commands the agent offers, whole, each time they change."""

    commands: list[CommandEntry]


class ModeUpdate(Body, tag="mode-update", frozen=True, kw_only=True):
    """The session's mode (plan, auto-edit, ...) or model changed."""

    mode_id: str | None = None
    model: str | None = None


class SessionInfo(Body, tag="session-info", frozen=True, kw_only=True):
    """What the agent says about the session: title, working folder, model, capabilities."""

    title: str | None = None
    cwd: str | None = None
    model: str | None = None
    capabilities: Any = None  # extension: what the agent says it can do (ACP, Claude init)


class Usage(Body, tag="usage", frozen=True, kw_only=True):
    """Tokens, cost, context window and rate limits, for a model call, a turn or the session so far."""

    context: ContextWindow | None = None
    tokens: Tokens | None = None
    cost: Cost | None = None
    rate_limits: Any = None
    #: extension: what the numbers cover: one model ``call``, the ``turn``, or the
    #: whole ``session`` so far (cumulative).
    scope: Literal["call", "turn", "session"] | None = None


class Compaction(Body, tag="compaction", frozen=True, kw_only=True):
    """The agent compacted (summarised) the conversation to free context, by status."""

    compaction_id: str
    status: Literal["in_progress", "completed", "failed", "cancelled"]
    summary: str | None = None
    error: str | None = None


class Subagent(Body, tag="subagent", frozen=True, kw_only=True):
    """A sub-agent (Claude's Task, Codex's collab agents, ...) by phase; its own events carry ``subagentId``."""

    subagent_id: str
    phase: Literal["started", "progress", "completed", "failed", "cancelled", "resumed"]
    name: str | None = None
    description: str | None = None
    prompt: str | None = None
    background: bool | None = None
    activity: Any = None
    stats: Any = None
    result: Any = None
    model: str | None = None
    messaging: Any = None
    can_message: bool | None = None
    can_stop: bool | None = None
    call_id: str | None = None  # extension: the parent's tool call that spawned it
    parent_subagent_id: str | None = None  # extension: the sub-agent that spawned it, when nested


class Warning(Body, tag="warning", frozen=True, kw_only=True):  # noqa: A001 - the spec's kind name
    """A warning: from the agent, or from normalize itself (``source: "normalize"``).

    Also exported as :data:`normalize.WarningBody`, a name that does not shadow the builtin."""

    message: str
    source: str | None = None


class Error(Body, tag="error", frozen=True, kw_only=True):
    """An error in the stream: reported by the agent, or bad input (``errorType`` ``malformed``,
    ``line-too-long``, ``truncated``, ``protocol``); ``recoverable`` when the stream goes on.

    Also exported as :data:`normalize.ErrorBody`, a name that does not shadow the builtin."""

    message: str
    error_type: str | None = None
    recoverable: bool | None = None


class ConversationReset(Body, tag="conversation-reset", frozen=True, kw_only=True):
    """The agent started a new conversation in the same session (``/clear``), with the old and new ids."""

    agent_session_id: str
    previous_agent_session_id: str
    trigger: str | None = None


class UserMessage(Body, tag="user-message", frozen=True, kw_only=True):
    """Extension: the user's own words (a prompt, steer, follow-up, replayed message)."""

    message_id: str
    text: str
    images: list[Image] | None = None
    queued: bool | None = None


AnyBody = Union[
    TurnStart,
    TurnComplete,
    AssistantDelta,
    AssistantMessage,
    ReasoningDelta,
    Reasoning,
    ToolCall,
    CommandOutput,
    FileDiff,
    WebSearch,
    McpTool,
    Plan,
    Task,
    UserQuestion,
    PermissionRequest,
    RequestResolved,
    PermissionAuto,
    PermissionsUpdate,
    CommandsUpdate,
    ModeUpdate,
    SessionInfo,
    Usage,
    Compaction,
    Subagent,
    Warning,
    Error,
    ConversationReset,
    UserMessage,
]

#: ``Warning`` and ``Error`` under names that do not shadow the builtins (the same classes)
WarningBody = Warning
ErrorBody = Error

BODY_TYPES: tuple[type[Body], ...] = AnyBody.__args__  # type: ignore[attr-defined]


# --------------------------------------------------------------------------
# The envelope


class EventEnvelope(_PlainData, Struct, frozen=True, gc=False, kw_only=True):
    """``EventEnvelope & NormalizedBody``: one normalized event.

    In Python the body is a separate object (``envelope.body``) so code can
    dispatch on its exact type; on the wire the envelope and body fields are one
    flat JSON object, as the spec writes it.  Use :func:`normalize.encode` and
    :func:`normalize.decode` for the wire form.
    """

    session_id: str
    agent: str
    seq: int
    ts: str
    origin: Origin
    native: Native
    body: AnyBody
    turn_id: str | None = None
    subagent_id: str | None = None

    @property
    def kind(self) -> str:
        """The body's ``kind`` (``tool-call``, ``assistant-delta``, ...)."""
        return self.body.__struct_config__.tag  # type: ignore[return-value]

    @property
    def timestamp(self) -> datetime:
        """``ts`` as an aware :class:`~datetime.datetime` (``ts`` itself stays the RFC 3339 string of the wire)."""
        return datetime.fromisoformat(self.ts)


# --------------------------------------------------------------------------
# CoreEvents: ``type``-tagged


class _Core(
    _PlainData, Struct, frozen=True, gc=False, kw_only=True, rename="camel", omit_defaults=True, tag_field="type"
):
    session_id: str


class SessionCreated(_Core, tag="session.created", frozen=True, kw_only=True):
    """A session was created (or first seen): what is known about it."""

    record: SessionRecord


class SessionResumed(_Core, tag="session.resumed", frozen=True, kw_only=True):
    """A session was resumed (its earlier history may follow, marked ``origin: replay``)."""

    record: SessionRecord


class SessionStateChanged(_Core, tag="session.stateChanged", frozen=True, kw_only=True):
    """The session's state changed (starting, idle, running, waiting, ended, failed)."""

    state: SessionState


class SessionUpdate(_Core, tag="session.update", frozen=True, kw_only=True):
    """A native message normalize did not translate, kept whole (``update.payload``)."""

    update: AgentUpdate


class SessionEvent(_Core, tag="session.event", frozen=True, kw_only=True):
    """One normalized event of a session: its envelope, body and native message in ``event``."""

    event: EventEnvelope


class SessionFailed(_Core, tag="session.failed", frozen=True, kw_only=True):
    """The session failed for good (the agent exited, the connection dropped)."""

    error: ErrorInfo


class MessageAccepted(_Core, tag="message.accepted", frozen=True, kw_only=True):
    """The agent accepted a message (a prompt) it was sent."""

    message_id: str


class MessageStarted(_Core, tag="message.started", frozen=True, kw_only=True):
    """The agent started working on a message."""

    message_id: str


class MessageCompleted(_Core, tag="message.completed", frozen=True, kw_only=True):
    """The agent finished a message: how it ended, its text and usage."""

    message_id: str
    result: Completion


class AccountSwitched(_Core, tag="account.switched", frozen=True, kw_only=True):
    """The agent switched from one account to another (by hand, at a limit, when one was unavailable)."""

    from_: str = field(name="from")
    to: str
    reason: Literal["manual", "limit", "unavailable"]


class AccountRefreshed(_Core, tag="account.refreshed", frozen=True, kw_only=True):
    """An account's credentials or limits were refreshed."""

    account: str


class AccountExhausted(_Core, tag="account.exhausted", frozen=True, kw_only=True):
    """An account reached its limit, or became unavailable."""

    agent: str
    account: str
    reason: Literal["limit", "unavailable"]


class AccountUnavailable(_Core, tag="account.unavailable", frozen=True, kw_only=True):
    """An account cannot be used, and why."""

    agent: str
    account: str
    reason: str


class AccountAvailable(_Core, tag="account.available", frozen=True, kw_only=True):
    """An account can be used again."""

    agent: str
    account: str


class ContextDegraded(_Core, tag="context.degraded", frozen=True, kw_only=True):
    """Something was left out of the model's context (images for a model without vision, messages dropped)."""

    dropped: list[ContextDrop]


class ContextUpdated(_Core, tag="context.updated", frozen=True, kw_only=True):
    """The model's context or tools changed (an MCP server connected, a compaction, tools added)."""

    applied: list[Union[ContextApplied, ToolChangeApplied]]


class ToolCalled(_Core, tag="tool.called", frozen=True, kw_only=True):
    """A tool of a server was called (the spec's tool-level event, beside the ``tool-call`` body)."""

    server: str
    tool: str
    call_id: str


class ToolFinished(_Core, tag="tool.finished", frozen=True, kw_only=True):
    """A tool of a server finished: whether it succeeded, and how long it took."""

    server: str
    tool: str
    call_id: str
    ok: bool
    duration_ms: float


CoreEvent = Union[
    SessionCreated,
    SessionResumed,
    SessionStateChanged,
    SessionUpdate,
    SessionEvent,
    SessionFailed,
    MessageAccepted,
    MessageStarted,
    MessageCompleted,
    AccountSwitched,
    AccountRefreshed,
    AccountExhausted,
    AccountUnavailable,
    AccountAvailable,
    ContextDegraded,
    ContextUpdated,
    ToolCalled,
    ToolFinished,
]

CORE_EVENT_TYPES: tuple[type[_Core], ...] = CoreEvent.__args__  # type: ignore[attr-defined]


def kind_of(body: Body) -> str:
    """The ``kind`` string of a body."""
    return body.__struct_config__.tag  # type: ignore[return-value]


def type_of(event: _Core) -> str:
    """The ``type`` string of a CoreEvent."""
    return event.__struct_config__.tag  # type: ignore[return-value]
