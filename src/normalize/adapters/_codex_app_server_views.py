"""The wire views of the ``codex-app-server`` adapter, :mod:`normalize.adapters.codex_app_server`:
the msgspec Structs its lines decode into, and their decoders; a module apart,
interpreted in the compiled build (docs/adapters.md).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Raw, Struct, field

from normalize.adapters import _codex_items as ci


class _V(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    """Base of the narrow views: camelCase wire names, unknown keys ignored.  Not tracked by
    the cycle collector (``gc=False``, inherited): they hold decoded plain data only."""


class _Envelope(_V, frozen=True, kw_only=True):
    method: str | None = None
    id: int | str | None = None
    params: Raw = ci.NULL
    result: Raw = ci.NULL
    error: Raw = ci.NULL
    emitted_at_ms: int | None = None


class _RpcError(_V, frozen=True, kw_only=True):
    message: str = ""
    code: int | None = None


class _ItemHead(_V, frozen=True, kw_only=True):
    type: str
    id: str
    status: str | None = None


class _UserInput(_V, frozen=True, kw_only=True):
    type: str
    text: str | None = None
    url: str | None = None
    path: str | None = None


class _UserMessageItem(_V, frozen=True, kw_only=True):
    id: str
    content: list[_UserInput] = []


class _TextItem(_V, frozen=True, kw_only=True):
    """agentMessage, plan."""

    id: str
    text: str = ""
    phase: str | None = None


class _ReasoningItem(_V, frozen=True, kw_only=True):
    id: str
    summary: list[str] = []
    content: list[str] = []


class _CommandItem(_V, frozen=True, kw_only=True):
    id: str
    command: str = ""
    cwd: str | None = None
    status: str | None = None
    aggregated_output: str | None = None
    exit_code: int | None = None


class _ChangeKind(_V, frozen=True, kw_only=True):
    type: str
    move_path: str | None = field(name="move_path", default=None)


class _ChangeView(_V, frozen=True, kw_only=True):
    path: str
    kind: _ChangeKind
    diff: str | None = None


class _FileChangeItem(_V, frozen=True, kw_only=True):
    id: str
    changes: list[_ChangeView] = []
    status: str | None = None


class _McpItem(_V, frozen=True, kw_only=True):
    id: str
    server: str = ""
    tool: str = ""
    status: str | None = None
    arguments: Raw = ci.NULL
    result: Raw = ci.NULL
    error: Raw = ci.NULL
    duration_ms: float | None = None


class _WebSearchItem(_V, frozen=True, kw_only=True):
    id: str
    query: str | None = None
    action: Raw = ci.NULL
    results: Raw = ci.NULL


class _ImageViewItem(_V, frozen=True, kw_only=True):
    id: str
    path: str = ""


class _GenericToolItem(_V, frozen=True, kw_only=True):
    """dynamicToolCall, collabAgentToolCall, imageGeneration."""

    id: str
    tool: str | None = None
    status: str | None = None
    arguments: Raw = ci.NULL
    content_items: Raw = ci.NULL
    success: bool | None = None


class _SubAgentItem(_V, frozen=True, kw_only=True):
    """subAgentActivity (multi_agent_v2): a sub-agent thread started, was messaged, ended."""

    id: str
    kind: str | None = None  # started | interacted | interrupted | completed
    agent_thread_id: str = ""
    agent_path: str | None = None
    model: str | None = None


class _AgentState(_V, frozen=True, kw_only=True):
    status: str | None = None
    message: str | None = None


class _CollabItem(_V, frozen=True, kw_only=True):
    """collabAgentToolCall: a collab tool the model called (spawnAgent, wait, ...)."""

    id: str
    tool: str | None = None
    status: str | None = None
    receiver_thread_ids: list[str] = []
    prompt: str | None = None
    model: str | None = None
    agents_states: dict[str, _AgentState] = {}


class _ReviewItem(_V, frozen=True, kw_only=True):
    id: str
    review: str | None = None


class _Thread(_V, frozen=True, kw_only=True):
    id: str
    cwd: str | None = None
    model: str | None = None
    name: str | None = None
    cli_version: str | None = None
    created_at: int | None = None
    turns: list[Raw] = []


class _ThreadParams(_V, frozen=True, kw_only=True):
    thread: _Thread


class _ThreadResult(_V, frozen=True, kw_only=True):
    thread: _Thread | None = None
    model: str | None = None
    cwd: str | None = None
    approval_policy: Raw = ci.NULL
    sandbox: Raw = ci.NULL


class _TurnError(_V, frozen=True, kw_only=True):
    message: str = ""
    codex_error_info: Any = None
    additional_details: str | None = None


class _Turn(_V, frozen=True, kw_only=True):
    id: str
    status: str = "inProgress"
    error: _TurnError | None = None
    items: list[Raw] = []


class _TurnParams(_V, frozen=True, kw_only=True):
    turn: _Turn
    thread_id: str | None = None


class _TurnResult(_V, frozen=True, kw_only=True):
    turn: _Turn


class _ItemParams(_V, frozen=True, kw_only=True):
    item: Raw
    turn_id: str | None = None


class _DeltaParams(_V, frozen=True, kw_only=True):
    item_id: str
    delta: str = ""
    summary_index: int | None = None


class _ProgressParams(_V, frozen=True, kw_only=True):
    item_id: str
    message: str | None = None
    stdin: str | None = None
    changes: list[_ChangeView] = []


class _Breakdown(_V, frozen=True, kw_only=True):
    total_tokens: int | None = None
    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_output_tokens: int | None = None


class _TokenUsage(_V, frozen=True, kw_only=True):
    total: _Breakdown
    last: _Breakdown | None = None
    model_context_window: int | None = None


class _TokenUsageParams(_V, frozen=True, kw_only=True):
    token_usage: _TokenUsage


class _RateLimitsParams(_V, frozen=True, kw_only=True):
    rate_limits: Raw = ci.NULL


class _LimitState(_V, frozen=True, kw_only=True):
    """What ``account/rateLimits/updated`` says of the account itself."""

    rate_limit_reached_type: str | None = None
    plan_type: str | None = None


class _PlanStep(_V, frozen=True, kw_only=True):
    step: str
    status: str


class _PlanParams(_V, frozen=True, kw_only=True):
    plan: list[_PlanStep] = []
    explanation: str | None = None


class _DiffParams(_V, frozen=True, kw_only=True):
    diff: str = ""
    turn_id: str | None = None


class _ErrorParams(_V, frozen=True, kw_only=True):
    error: _TurnError
    will_retry: bool = False
    turn_id: str | None = None


class _WarningParams(_V, frozen=True, kw_only=True):
    """configWarning, deprecationNotice (summary/details), warning (message)."""

    summary: str | None = None
    details: str | None = None
    message: str | None = None


class _McpStartupParams(_V, frozen=True, kw_only=True):
    name: str
    status: str
    error: str | None = None
    failure_reason: Raw = ci.NULL


class _ReroutedParams(_V, frozen=True, kw_only=True):
    to_model: str | None = None


class _ThreadNameParams(_V, frozen=True, kw_only=True):
    name: str | None = None
    thread_name: str | None = None


class _CompactedParams(_V, frozen=True, kw_only=True):
    turn_id: str = ""


class _ResolvedParams(_V, frozen=True, kw_only=True):
    request_id: int | str


class _InitializeResult(_V, frozen=True, kw_only=True):
    user_agent: str | None = None


class _CommandApproval(_V, frozen=True, kw_only=True):
    item_id: str
    command: str | None = None
    cwd: str | None = None
    reason: str | None = None
    available_decisions: list[Raw] | None = None


class _FileApproval(_V, frozen=True, kw_only=True):
    item_id: str
    reason: str | None = None
    grant_root: str | None = None


class _PermissionsApproval(_V, frozen=True, kw_only=True):
    item_id: str
    cwd: str | None = None
    reason: str | None = None
    permissions: Raw = ci.NULL


class _QuestionOptionView(_V, frozen=True, kw_only=True):
    label: str
    description: str | None = None


class _QuestionView(_V, frozen=True, kw_only=True):
    id: str
    question: str = ""
    header: str | None = None
    is_other: bool = False
    options: list[_QuestionOptionView] | None = None


class _UserInputRequest(_V, frozen=True, kw_only=True):
    item_id: str
    questions: list[_QuestionView] = []
    is_blocking: bool = True


class _ElicitationRequest(_V, frozen=True, kw_only=True):
    server_name: str = ""
    message: str = ""


class _ToolCallRequest(_V, frozen=True, kw_only=True):
    call_id: str
    tool: str
    arguments: Raw = ci.NULL


class _ToolCallResult(_V, frozen=True, kw_only=True):
    content_items: Raw = ci.NULL
    success: bool | None = None


class _Decision(_V, frozen=True, kw_only=True):
    decision: Raw = ci.NULL
    action: str | None = None
    scope: str | None = None  # item/permissions/requestApproval: "turn" | "session"
    permissions: Raw = ci.NULL  # item/permissions/requestApproval: what is granted


# Whole notifications read in one pass, their method known (read by the Connection that
# routed them): the params' view and the time, in place of the envelope then the params.


class _Notice(_V, frozen=True, kw_only=True):
    """A notification whose params are not read: its time."""

    emitted_at_ms: int | None = None


def _decoder(t: type[Any]) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(t)


_ENVELOPE = _decoder(_Envelope)


_NOTICE = _decoder(_Notice)


def _notice(params: msgspec.json.Decoder[Any]) -> msgspec.json.Decoder[Any]:
    """The decoder of a whole notification whose params ``params`` decodes."""
    view = msgspec.defstruct(
        f"_Notice{params.type.__name__}", [("params", params.type)], bases=(_Notice,), frozen=True, kw_only=True
    )
    return _decoder(view)


_RPC_ERROR = _decoder(_RpcError)


_ITEM_HEAD = _decoder(_ItemHead)


_USER_MESSAGE = _decoder(_UserMessageItem)


_TEXT_ITEM = _decoder(_TextItem)


_REASONING = _decoder(_ReasoningItem)


_COMMAND = _decoder(_CommandItem)


_FILE_CHANGE = _decoder(_FileChangeItem)


_MCP = _decoder(_McpItem)


_WEB_SEARCH = _decoder(_WebSearchItem)


_IMAGE_VIEW = _decoder(_ImageViewItem)


_GENERIC_TOOL = _decoder(_GenericToolItem)


_SUB_AGENT = _decoder(_SubAgentItem)


_COLLAB = _decoder(_CollabItem)


_REVIEW = _decoder(_ReviewItem)


_THREAD_PARAMS = _decoder(_ThreadParams)


_THREAD_RESULT = _decoder(_ThreadResult)


_TURN = _decoder(_Turn)


_TURN_PARAMS = _decoder(_TurnParams)


_TURN_RESULT = _decoder(_TurnResult)


_ITEM_PARAMS = _decoder(_ItemParams)


_DELTA = _decoder(_DeltaParams)


_PROGRESS = _decoder(_ProgressParams)


_TOKEN_USAGE = _decoder(_TokenUsageParams)


_RATE_LIMITS = _decoder(_RateLimitsParams)


_LIMIT_STATE = _decoder(_LimitState)


_PLAN = _decoder(_PlanParams)


_DIFF = _decoder(_DiffParams)


_ERROR = _decoder(_ErrorParams)


_WARNING = _decoder(_WarningParams)


_MCP_STARTUP = _decoder(_McpStartupParams)


_REROUTED = _decoder(_ReroutedParams)


_THREAD_NAME = _decoder(_ThreadNameParams)


_COMPACTED = _decoder(_CompactedParams)


_RESOLVED = _decoder(_ResolvedParams)


_INITIALIZE = _decoder(_InitializeResult)


_COMMAND_APPROVAL = _decoder(_CommandApproval)


_FILE_APPROVAL = _decoder(_FileApproval)


_PERMISSIONS_APPROVAL = _decoder(_PermissionsApproval)


_USER_INPUT_REQUEST = _decoder(_UserInputRequest)


_ELICITATION = _decoder(_ElicitationRequest)


_TOOL_CALL_REQUEST = _decoder(_ToolCallRequest)


_TOOL_CALL_RESULT = _decoder(_ToolCallResult)


_DECISION = _decoder(_Decision)


_ANY = msgspec.json.Decoder()
