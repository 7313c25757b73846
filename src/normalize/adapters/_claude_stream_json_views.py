"""The wire views of the ``claude-stream-json`` adapter, :mod:`normalize.adapters.claude_stream_json`:
the msgspec Structs its lines decode into, and their decoders; a module apart,
interpreted in the compiled build (docs/adapters.md).
"""

from __future__ import annotations

from typing import Any, get_args

import msgspec
from msgspec import Raw, Struct, field

from ._claude_common import (
    NULL,
    ContentBlock,
    PermissionDecision,
    Usage,
)


class _Typed(Struct, frozen=True, kw_only=True, gc=False):
    type: str | None = None
    subtype: str | None = None


class _Head(Struct, frozen=True, kw_only=True, gc=False):
    """What every line is: its type, subtype (also of a stream event or a control request) and time."""

    type: str | None = None
    subtype: str | None = None
    timestamp: str | None = None
    event: _Typed | None = None
    request: _Typed | None = None

    @property
    def method(self) -> str:
        sub = self.subtype
        if sub is None and self.event is not None:
            sub = self.event.type
        if sub is None and self.request is not None:
            sub = self.request.subtype
        return f"{self.type}/{sub}" if sub else self.type or ""


class _McpServer(Struct, frozen=True, kw_only=True, gc=False):
    name: str
    status: str | None = None


class _Init(Struct, frozen=True, kw_only=True, gc=False, rename={"permission_mode": "permissionMode"}):
    session_id: str | None = None
    uuid: str | None = None
    cwd: str | None = None
    model: str | None = None
    permission_mode: str | None = None
    tools: list[str] = []
    mcp_servers: list[_McpServer] = []
    slash_commands: list[str] = []
    claude_code_version: str | None = None
    capabilities: Raw = NULL


class _Message(Struct, frozen=True, kw_only=True, gc=False):
    id: str = ""
    model: str | None = None
    content: Raw = NULL
    usage: Usage | None = None


class _ConversationFields(Struct, frozen=True, kw_only=True, gc=False, rename={"is_replay": "isReplay"}):
    """What ``assistant`` and ``user`` lines carry beside their ``message``."""

    parent_tool_use_id: str | None = None
    session_id: str | None = None
    uuid: str | None = None
    timestamp: str | None = None
    error: str | None = None
    is_api_error_message: bool | None = None
    is_replay: bool | None = None
    tool_use_result: Raw = NULL
    tool_result_meta: list[_ResultMeta] = []


class _Conversation(_ConversationFields, frozen=True, kw_only=True, gc=False):
    """``assistant`` and ``user`` lines, read apart from the line union (``content`` kept raw)."""

    message: _Message = _Message()


class _ResultMeta(Struct, frozen=True, kw_only=True, gc=False):
    id: str = ""
    permission_decision: PermissionDecision | None = None
    non_execution_kind: str | None = None


class _Delta(Struct, frozen=True, kw_only=True, gc=False):
    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None


class _Event(Struct, frozen=True, kw_only=True, gc=False):
    type: str = ""
    subtype: str | None = None  # unused: checked as the head checks it (``_Typed``)
    index: int = 0
    message: _Message | None = None
    content_block: ContentBlock | None = None
    delta: _Delta | None = None
    usage: Usage | None = None


class _StreamEvent(Struct, frozen=True, kw_only=True, gc=False):
    event: _Event = _Event()
    parent_tool_use_id: str | None = None
    session_id: str | None = None


class _ModelUsage(Struct, frozen=True, kw_only=True, gc=False, rename="camel"):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cost_usd: float = field(name="costUSD", default=0.0)
    context_window: int | None = None


class _Origin(Struct, frozen=True, kw_only=True, gc=False):
    kind: str | None = None


class _Result(Struct, frozen=True, kw_only=True, gc=False, rename={"model_usage": "modelUsage"}):
    subtype: str = ""
    is_error: bool = False
    session_id: str | None = None
    result: str | None = None
    errors: list[str] = []
    stop_reason: str | None = None
    terminal_reason: str | None = None
    api_error_status: Raw = NULL  # the HTTP status of a failed API call (read only as present or not)
    total_cost_usd: float | None = None
    usage: Usage | None = None
    model_usage: dict[str, _ModelUsage] | None = None
    model_usage_since_last_result: dict[str, _ModelUsage] | None = None
    origin: _Origin | None = None


class _System(Struct, frozen=True, kw_only=True, gc=False, rename={"permission_mode": "permissionMode"}):
    """Every ``system`` subtype but ``init`` (all fields optional)."""

    session_id: str | None = None
    uuid: str | None = None
    status: str | None = None
    permission_mode: str | None = None
    compact_result: str | None = None
    compact_error: str | None = None
    compact_metadata: Raw = NULL
    attempt: int | None = None
    max_retries: int | None = None
    retry_delay_ms: float | None = None  # a float in 2.1.142 (596.03...), an int in 2.1.332
    error_status: int | None = None
    error: str | None = None
    hook_id: str | None = None
    hook_name: str | None = None
    hook_event: str | None = None
    outcome: str | None = None
    task_id: str | None = None
    tool_use_id: str | None = None
    description: str | None = None
    task_type: str | None = None
    subagent_type: str | None = None
    prompt: str | None = None
    is_backgrounded: bool | None = None
    usage: Raw = NULL
    last_tool_name: str | None = None
    summary: str | None = None
    patch: _Patch | None = None
    tool_name: str | None = None
    message: str | None = None
    decision_reason: str | None = None
    content: str | None = None


class _Patch(Struct, frozen=True, kw_only=True, gc=False):
    status: str | None = None


class _Reset(Struct, frozen=True, kw_only=True, gc=False):
    session_id: str | None = None
    new_conversation_id: str | None = None


class _RateLimit(Struct, frozen=True, kw_only=True, gc=False):
    rate_limit_info: Raw = NULL


class _RateLimitInfo(Struct, frozen=True, kw_only=True, gc=False, rename="camel"):
    status: str | None = None  # allowed | allowed_warning | rejected
    rate_limit_type: str | None = None


class _ToolProgress(Struct, frozen=True, kw_only=True, gc=False):
    tool_use_id: str = ""
    tool_name: str = ""
    parent_tool_use_id: str | None = None


class _AuthStatus(Struct, frozen=True, kw_only=True, gc=False):
    error: str | None = None


class _AskOption(Struct, frozen=True, kw_only=True, gc=False):
    label: str = ""
    description: str | None = None


class _Ask(Struct, frozen=True, kw_only=True, gc=False, rename="camel"):
    """One question of ``AskUserQuestion``'s input."""

    question: str = ""
    header: str | None = None
    options: list[_AskOption] = []
    multi_select: bool = False


class _AskInput(Struct, frozen=True, kw_only=True, gc=False):
    questions: list[_Ask] = []


_ASK_INPUT = msgspec.json.Decoder(_AskInput)

#: The tool through which Claude Code asks the user questions: a ``user-question``, not a permission.
ASK_TOOL = "AskUserQuestion"


class _Request(Struct, frozen=True, kw_only=True, gc=False):
    subtype: str = ""
    tool_name: str | None = None
    display_name: str | None = None
    title: str | None = None
    description: str | None = None
    input: Raw = NULL
    tool_use_id: str | None = None
    blocked_path: str | None = None
    decision_reason: str | None = None
    agent_id: str | None = None
    permission_suggestions: list[Raw] | None = None
    mode: str | None = None
    model: str | None = None


class _ControlRequest(Struct, frozen=True, kw_only=True, gc=False):
    request_id: str = ""
    request: _Request = _Request()


class _InitResponse(Struct, frozen=True, kw_only=True, gc=False):
    commands: list[_Command] | None = None
    current_permission_mode: str | None = None
    capabilities: Raw = NULL


class _Command(Struct, frozen=True, kw_only=True, gc=False, rename="camel"):
    name: str
    description: str | None = None
    argument_hint: str | None = None
    aliases: list[str] | None = None
    builtin: bool | None = None


class _Response(Struct, frozen=True, kw_only=True, gc=False):
    subtype: str = ""
    request_id: str = ""
    response: Raw = NULL
    error: str | None = None


class _ControlResponse(Struct, frozen=True, kw_only=True, gc=False):
    response: _Response = _Response()


class _PermissionAnswer(Struct, frozen=True, kw_only=True, gc=False, rename="camel"):
    """A ``can_use_tool`` answer: ``behavior`` allow | deny, and the rules to keep."""

    behavior: str | None = None
    updated_permissions: list[Raw] | None = None


_PERMISSION_ANSWER = msgspec.json.Decoder(_PermissionAnswer)


def _chosen_option(response: Raw) -> str | None:
    """The option a ``can_use_tool`` answer chose: ``allow``, ``allow_always`` or ``deny``."""
    try:
        answer = _PERMISSION_ANSWER.decode(response)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if answer.behavior == "allow" and answer.updated_permissions:
        return "allow_always"
    return answer.behavior


class _CancelRequest(Struct, frozen=True, kw_only=True, gc=False):
    request_id: str = ""


class _ClientUser(Struct, frozen=True, kw_only=True, gc=False):
    message: _Message = _Message()
    uuid: str | None = None
    parent_tool_use_id: str | None = None


# One view per line type, each with the head's fields, as a tagged union on ``type``: a line of
# these types is decoded once.  Each view checks at least what the head and the type's own view
# check, so a line it reads would have been read the same way by the two; a line it cannot read
# (malformed, or of another type) is read again as before, head first, so the error a malformed
# line gives is unchanged.


class _LineMessage(Struct, frozen=True, kw_only=True, gc=False):
    """``_Message`` with its content blocks decoded with the line, not in a second decode.

    A content the blocks cannot read fails the whole line, which is then read again as
    before (``content`` kept raw, then its blocks decoded), for the same error."""

    id: str = ""
    model: str | None = None
    content: list[ContentBlock] | str | None = None  # _Content
    usage: Usage | None = None


class _ConversationLine(_ConversationFields, frozen=True, kw_only=True, gc=False, tag_field="type"):
    message: _LineMessage = _LineMessage()
    subtype: str | None = None
    event: _Typed | None = None
    request: _Typed | None = None


class _AssistantLine(_ConversationLine, frozen=True, kw_only=True, gc=False, tag="assistant"):
    pass


class _UserLine(_ConversationLine, frozen=True, kw_only=True, gc=False, tag="user"):
    pass


class _StreamLine(_StreamEvent, frozen=True, kw_only=True, gc=False, tag_field="type", tag="stream_event"):
    subtype: str | None = None
    timestamp: str | None = None
    request: _Typed | None = None


class _ResultLine(_Result, frozen=True, kw_only=True, gc=False, tag_field="type", tag="result"):
    timestamp: str | None = None
    event: _Typed | None = None
    request: _Typed | None = None


#: the default of an absent list kept raw: read as ``[]``, as the typed field's default (a
#: ``null`` is not a list, as before)
_NO_LIST = Raw(b"[]")


class _SystemLine(_System, frozen=True, kw_only=True, gc=False, tag_field="type", tag="system"):
    """A ``system`` line: every subtype's fields, ``init``'s too.

    The lists every ``init`` repeats in full are kept raw, and decoded only when they
    differ from the last init's (:class:`_Repeated`)."""

    subtype: str | None = None
    timestamp: str | None = None
    event: _Typed | None = None
    request: _Typed | None = None
    cwd: str | None = None
    model: str | None = None
    tools: Raw = _NO_LIST  # list[str]
    mcp_servers: Raw = _NO_LIST  # list[_McpServer]
    slash_commands: Raw = _NO_LIST  # list[str]
    claude_code_version: str | None = None
    capabilities: Raw = NULL


_Line = _AssistantLine | _UserLine | _StreamLine | _ResultLine | _SystemLine
_Content = list[ContentBlock] | str | None  # an assistant or user message's content, decoded


def _decoder(t: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(t)


_HEAD = _decoder(_Head)
_INIT = _decoder(_Init)
_CONV = _decoder(_Conversation)
_BLOCKS = _decoder(list[ContentBlock] | str)
_STREAM = _decoder(_StreamEvent)
_RESULT = _decoder(_Result)
_SYSTEM = _decoder(_System)
_RESET = _decoder(_Reset)
_RATE = _decoder(_RateLimit)
_RATE_INFO = _decoder(_RateLimitInfo)
_PROGRESS = _decoder(_ToolProgress)
_AUTH = _decoder(_AuthStatus)
_CREQ = _decoder(_ControlRequest)
_CRESP = _decoder(_ControlResponse)
_CANCEL = _decoder(_CancelRequest)
_INIT_RESP = _decoder(_InitResponse)
_CLIENT_USER = _decoder(_ClientUser)
_LINE = _decoder(_Line)
#: each line view's type (its tag)
_TAG: dict[type, str] = {cls: cls.__struct_config__.tag for cls in get_args(_Line)}
_PARTIAL_JSON = msgspec.json.Decoder()
_STRINGS = _decoder(list[str])
_SERVERS = _decoder(list[_McpServer])
