"""The wire views of the ``acp`` adapter, :mod:`normalize.adapters.acp`:
the msgspec Structs its messages decode into, and their decoders; a module apart,
interpreted in the compiled build (docs/adapters.md).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType, field

#: an absent field kept as Raw (msgspec cannot put Raw in a union); distinct from ``null``
_NONE = Raw(b"")


class _RpcError(Struct, frozen=True, gc=False):
    code: int = 0
    message: str = ""
    data: Any = None


class _Rpc(Struct, frozen=True, gc=False):
    id: int | str | UnsetType | None = UNSET
    method: str | UnsetType = UNSET
    params: Raw = _NONE
    result: Raw = _NONE
    error: _RpcError | None = None


class _View(Struct, frozen=True, gc=False, rename="camel"):
    """Base of the camelCase views.

    The views hold decoded plain data only (no cycles can form), so the cycle collector
    need not track them (``gc=False``, inherited); the ones that are not ``_View`` say it too."""


class _ClaudeMeta(_View, frozen=True):
    tool_name: str | None = None
    kind: str | None = None
    parent_tool_use_id: str | None = None  # the Agent/Task call of the sub-agent that made it


class _TermData(Struct, frozen=True, gc=False):
    terminal_id: str | None = None
    data: str | None = None


class _TermExit(Struct, frozen=True, gc=False):
    terminal_id: str | None = None
    exit_code: int | None = None
    signal: str | None = None


class _Meta(Struct, frozen=True, gc=False):
    """``_meta`` conventions of real agents (not spec): Claude's and the terminal ones."""

    claude_code: _ClaudeMeta | None = field(default=None, name="claudeCode")
    terminal_output_delta: _TermData | None = None
    terminal_output: _TermData | None = None
    terminal_exit: _TermExit | None = None
    kind: str | None = None  # codex diff content: add | delete | update


class _Resource(_View, frozen=True):
    uri: str | None = None
    text: str | None = None


class _Block(_View, frozen=True):
    type: str = ""
    text: str | None = None
    data: str | None = None
    mime_type: str | None = None
    uri: str | None = None
    name: str | None = None
    resource: _Resource | None = None


class _AgentInfo(_View, frozen=True):
    name: str | None = None
    version: str | None = None


class _InitializeParams(_View, frozen=True):
    protocol_version: Any = None
    client_capabilities: Any = None


class _InitializeResult(_View, frozen=True):
    agent_capabilities: Raw = _NONE
    agent_info: _AgentInfo | None = None
    auth_methods: Any = None  # read only without agentInfo: any shape is kept as sent


class _SessionParams(_View, frozen=True):
    session_id: str | None = None
    cwd: str | None = None
    mode_id: str | None = None
    model_id: str | None = None
    config_id: str | None = None


class _Modes(_View, frozen=True):
    current_mode_id: str | None = None


class _Models(_View, frozen=True):
    current_model_id: str | None = None


class _ConfigOption(_View, frozen=True):
    id: str = ""
    category: str | None = None
    current_value: Any = None


class _SessionResult(_View, frozen=True):
    session_id: str | None = None
    modes: _Modes | None = None
    models: _Models | None = None
    config_options: list[_ConfigOption] | None = None


class _PromptParams(_View, frozen=True):
    session_id: str | None = None
    prompt: list[_Block] = []


class _TurnUsage(_View, frozen=True):
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    thought_tokens: int | None = None
    cached_read_tokens: int | None = None
    cached_write_tokens: int | None = None


class _QuotaCount(Struct, frozen=True, gc=False):
    input_tokens: int | None = None
    output_tokens: int | None = None


class _Quota(Struct, frozen=True, gc=False):
    token_count: _QuotaCount | None = None


class _PromptMeta(Struct, frozen=True, gc=False):
    """Gemini CLI's ``_meta`` of a prompt response: the turn's token counts."""

    quota: _Quota | None = None


class _PromptResult(_View, frozen=True):
    stop_reason: str = ""
    usage: _TurnUsage | None = None
    meta: _PromptMeta | None = field(default=None, name="_meta")


class _UpdateParams(_View, frozen=True):
    update: Raw = _NONE
    session_id: str | None = None


class _UpdateHead(_View, frozen=True):
    session_update: str = ""


class _Chunk(_View, frozen=True):
    content: _Block | None = None
    message_id: str | None = None
    meta: _Meta | None = field(default=None, name="_meta")


class _Location(_View, frozen=True):
    path: str = ""
    line: int | None = None


class _ToolContent(_View, frozen=True):
    type: str = ""
    content: _Block | None = None
    path: str | None = None
    old_text: str | None = None
    new_text: str | None = None
    terminal_id: str | None = None
    meta: _Meta | None = field(default=None, name="_meta")


class _ToolCallView(_View, frozen=True):
    tool_call_id: str = ""
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[_ToolContent] | None = None
    locations: list[_Location] | None = None
    raw_input: Raw = _NONE
    raw_output: Raw = _NONE
    name: str | None = None  # unstable (schema 1.20+)
    meta: _Meta | None = field(default=None, name="_meta")


class _PlanEntry(_View, frozen=True):
    content: str = ""
    status: str = "pending"
    priority: str | None = None


class _PlanUpdate(_View, frozen=True):
    entries: list[_PlanEntry] = []


class _PlanContent(_View, frozen=True):
    type: str = ""
    entries: list[_PlanEntry] | None = None
    content: str | None = None


class _PlanContentUpdate(_View, frozen=True):
    plan: _PlanContent | None = None


class _CommandInput(_View, frozen=True):
    hint: str | None = None


class _Command(_View, frozen=True):
    name: str = ""
    description: str | None = None
    input: _CommandInput | None = None


class _CommandsUpdate(_View, frozen=True):
    available_commands: list[_Command] = []


class _ModeUpdate(_View, frozen=True):
    current_mode_id: str | None = None


class _ConfigUpdate(_View, frozen=True):
    config_options: list[_ConfigOption] = []


class _ThreadStatus(Struct, frozen=True, gc=False):
    type: str | None = None


class _CodexError(Struct, frozen=True, gc=False, rename="camel"):
    message: str | None = None


class _CodexMeta(Struct, frozen=True, gc=False, rename="camel"):
    thread_status: _ThreadStatus | None = None
    error: _CodexError | None = None


class _InfoMeta(Struct, frozen=True, gc=False):
    codex: _CodexMeta | None = None


class _InfoUpdate(_View, frozen=True):
    title: str | UnsetType | None = UNSET
    meta: _InfoMeta | None = field(default=None, name="_meta")


class _CostView(_View, frozen=True):
    amount: float = 0.0
    currency: str = ""


class _UsageUpdate(_View, frozen=True):
    used: int | None = None
    size: int | None = None
    cost: _CostView | None = None


class _CompactionUpdate(_View, frozen=True):
    compaction_id: str = ""
    status: str = ""
    summary: list[_Block] | None = None
    error: Any = None


class _Notice(_View, frozen=True):
    severity: str = ""
    title: str = ""
    description: str | None = None


# One decode of a ``session/update``'s params: the variant's view chosen by its tag
# (``update.sessionUpdate``), in the same pass as the params.  The views are the ones the
# variants had when decoded one by one (head, then variant): same fields, same values.


class _UserChunkU(_Chunk, frozen=True, tag="user_message_chunk", tag_field="sessionUpdate"):
    pass


class _AgentChunkU(_Chunk, frozen=True, tag="agent_message_chunk", tag_field="sessionUpdate"):
    pass


class _ThoughtChunkU(_Chunk, frozen=True, tag="agent_thought_chunk", tag_field="sessionUpdate"):
    pass


class _ToolCallU(_ToolCallView, frozen=True, tag="tool_call", tag_field="sessionUpdate"):
    pass


class _ToolCallUpdateU(_ToolCallView, frozen=True, tag="tool_call_update", tag_field="sessionUpdate"):
    pass


class _PlanU(_PlanUpdate, frozen=True, tag="plan", tag_field="sessionUpdate"):
    pass


class _CommandsU(_CommandsUpdate, frozen=True, tag="available_commands_update", tag_field="sessionUpdate"):
    pass


class _ModeU(_ModeUpdate, frozen=True, tag="current_mode_update", tag_field="sessionUpdate"):
    pass


class _ConfigU(_ConfigUpdate, frozen=True, tag="config_option_update", tag_field="sessionUpdate"):
    pass


class _InfoU(_InfoUpdate, frozen=True, tag="session_info_update", tag_field="sessionUpdate"):
    pass


class _UsageU(_UsageUpdate, frozen=True, tag="usage_update", tag_field="sessionUpdate"):
    pass


class _PlanContentU(_PlanContentUpdate, frozen=True, tag="plan_update", tag_field="sessionUpdate"):
    pass


class _CompactionU(_CompactionUpdate, frozen=True, tag="compaction_update", tag_field="sessionUpdate"):
    pass


class _NoticeU(_Notice, frozen=True, tag="notice", tag_field="sessionUpdate"):
    pass


#: every variant's tagged view
_AnyUpdate = (
    _UserChunkU
    | _AgentChunkU
    | _ThoughtChunkU
    | _ToolCallU
    | _ToolCallUpdateU
    | _PlanU
    | _CommandsU
    | _ModeU
    | _ConfigU
    | _InfoU
    | _UsageU
    | _PlanContentU
    | _CompactionU
    | _NoticeU
)


class _Update(_View, frozen=True):
    """A ``session/update``'s params with a known variant (an unknown one fails to decode)."""

    update: _AnyUpdate
    session_id: str | None = None  # checked as _UpdateParams checks it (bad input reported alike)


class _UpdateRpc(Struct, frozen=True, gc=False):
    """A whole ``session/update`` notification in one pass: the fields of ``_Rpc``, checked
    alike, with the params read as ``_Update``."""

    params: _Update
    method: str | UnsetType = UNSET
    id: int | str | UnsetType | None = UNSET
    result: Raw = _NONE
    error: _RpcError | None = None


class _PermOption(_View, frozen=True):
    option_id: str = ""
    name: str = ""
    kind: str = ""


class _PermParams(_View, frozen=True):
    tool_call: _ToolCallView = _ToolCallView()
    options: list[_PermOption] = []
    session_id: str | None = None


class _Outcome(_View, frozen=True):
    outcome: str = ""
    option_id: str | None = None


class _PermResult(_View, frozen=True):
    outcome: _Outcome | None = None


class _CommandView(Struct, frozen=True, gc=False):
    command: str | list[str] | None = None
    cwd: str | None = None


class _FsParams(_View, frozen=True):
    path: str = ""
    content: str | None = None
    session_id: str | None = None
    line: int | None = None  # fs/read_text_file: the first line read (1-based) and how many
    limit: int | None = None


class _FsReadResult(_View, frozen=True):
    content: str | None = None


class _TermCreateResult(_View, frozen=True):
    terminal_id: str = ""


class _TermParams(_View, frozen=True):
    terminal_id: str = ""


class _ExitStatus(_View, frozen=True):
    exit_code: int | None = None
    signal: str | None = None


class _TermOutputResult(_View, frozen=True):
    output: str = ""
    truncated: bool = False
    exit_status: _ExitStatus | None = None


class _CancelRequest(_View, frozen=True):
    request_id: int | str | None = None


def _decoder(t: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(t)


_RPC = _decoder(_Rpc)
_INIT_PARAMS = _decoder(_InitializeParams)
_INIT_RESULT = _decoder(_InitializeResult | None)
_SESSION_PARAMS = _decoder(_SessionParams)
_SESSION_RESULT = _decoder(_SessionResult | None)
_PROMPT_PARAMS = _decoder(_PromptParams)
_PROMPT_RESULT = _decoder(_PromptResult)
_UPDATE_PARAMS = _decoder(_UpdateParams)
_UPDATE_HEAD = _decoder(_UpdateHead)
_UPDATE = _decoder(_Update)
_UPDATE_RPC = _decoder(_UpdateRpc)
_UPDATE_HEAD_BYTES = b'{"jsonrpc":"2.0","method":"session/update"'
_CHUNK = _decoder(_Chunk)
_TOOL_CALL = _decoder(_ToolCallView)
_PLAN = _decoder(_PlanUpdate)
_PLAN_CONTENT = _decoder(_PlanContentUpdate)
_COMMANDS = _decoder(_CommandsUpdate)
_MODE = _decoder(_ModeUpdate)
_CONFIG = _decoder(_ConfigUpdate)
_INFO = _decoder(_InfoUpdate)
_USAGE = _decoder(_UsageUpdate)
_COMPACTION = _decoder(_CompactionUpdate)
_NOTICE = _decoder(_Notice)
_PERM_PARAMS = _decoder(_PermParams)
_PERM_RESULT = _decoder(_PermResult)
_COMMAND_INPUT = _decoder(_CommandView)
_FS_PARAMS = _decoder(_FsParams)
_FS_READ_RESULT = _decoder(_FsReadResult)
_TERM_CREATE_RESULT = _decoder(_TermCreateResult)
_TERM_PARAMS = _decoder(_TermParams)
_TERM_OUTPUT_RESULT = _decoder(_TermOutputResult)
_EXIT_STATUS = _decoder(_ExitStatus)
_CANCEL_REQUEST = _decoder(_CancelRequest)


class _SchemaChoice(Struct, frozen=True):
    const: Any = None
    title: str | None = None


class _SchemaField(Struct, frozen=True, rename="camel"):
    type: str | None = None
    title: str | None = None
    description: str | None = None
    one_of: list[_SchemaChoice] | None = None
    enum: list[Any] | None = None
    items: _SchemaChoices | None = None


class _SchemaChoices(Struct, frozen=True, rename="camel"):
    """``items`` of an array field: the choices of a multi-select."""

    any_of: list[_SchemaChoice] | None = None
    one_of: list[_SchemaChoice] | None = None
    enum: list[Any] | None = None


class _Schema(Struct, frozen=True):
    properties: dict[str, _SchemaField] = {}


class _Elicitation(Struct, frozen=True, rename="camel"):
    message: str = ""
    mode: str | None = None
    requested_schema: _Schema | None = None


class _ElicitationResult(Struct, frozen=True):
    action: str | None = None


_ELICITATION = msgspec.json.Decoder(_Elicitation)
_ELICITATION_RESULT = msgspec.json.Decoder(_ElicitationResult)


class _AgentInput(Struct, frozen=True):
    """The input of Claude Code's Agent/Task tool."""

    description: str | None = None
    prompt: str | None = None
    subagent_type: str | None = None
    run_in_background: bool | None = None
    model: str | None = None


_AGENT_INPUT = msgspec.json.Decoder(_AgentInput)
