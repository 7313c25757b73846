"""The wire views of the ``antigravity-stream-json`` adapter, :mod:`normalize.adapters.antigravity_stream_json`:
the msgspec Structs its lines decode into, and their decoders; a module apart,
interpreted in the compiled build (docs/adapters.md).
"""

from __future__ import annotations

import msgspec
from msgspec import Raw, Struct, field


class _Usage(Struct, frozen=True, gc=False):
    input_tokens: int | None = None
    output_tokens: int | None = None
    thinking_tokens: int | None = None
    cache_read_tokens: int | None = None
    total_tokens: int | None = None


class _ToolError(Struct, frozen=True, gc=False):
    type: str | None = None
    message: str | None = None


class _ToolInfo(Struct, frozen=True, gc=False):
    name: str | None = None
    #: empty when absent (msgspec's Raw takes no None)
    parameters: Raw = Raw(b"")
    output: str | None = None
    error: _ToolError | str | None = None


class _SubagentEntry(Struct, frozen=True, gc=False):
    type_name: str | None = None
    role: str | None = None
    initial_prompt: str | None = None
    conversation_id: str | None = None


class _SubagentInfo(Struct, frozen=True, gc=False):
    subagents: list[_SubagentEntry] = []


class _Step(Struct, frozen=True, gc=False):
    conversation_id: str = ""
    step_index: int | None = None
    state: str = ""
    step_type: str = ""
    text_delta: str | None = None
    tool_name: str | None = None
    tool_info: _ToolInfo | None = None
    subagent_info: _SubagentInfo | None = None
    usage: _Usage | None = None
    error: _ToolError | str | None = None


class _Init(Struct, frozen=True, gc=False):
    model: str | None = None
    cwd: str | None = None
    tools: list[str] | None = None
    permission_mode: str | None = None


class _Denied(Struct, frozen=True, gc=False):
    action: str = ""
    display_name: str | None = None


class _Result(Struct, frozen=True, gc=False):
    conversation_id: str = ""
    status: str = ""
    response: str | None = None
    error: str | None = None
    num_turns: int | None = None
    usage: _Usage | None = None
    denied_actions: list[_Denied] | None = None


class _Block(Struct, frozen=True, gc=False):
    type: str = ""
    text: str | None = None


class _UserMessage(Struct, frozen=True, gc=False):
    content: str | list[_Block] = ""


class _Line(Struct, frozen=True, gc=False):
    """Any line, either direction: the payload is under the key named by ``event``."""

    event: str | None = None
    conversation_id: str = ""
    init: _Init | None = None
    step_update: _Step | None = None
    result: _Result | None = None
    message: _UserMessage | None = None


class _Params(Struct, frozen=True, gc=False):
    """The tool parameters this adapter reads (PascalCase on the wire)."""

    command_line: str | None = field(name="CommandLine", default=None)
    absolute_path: str | None = field(name="AbsolutePath", default=None)
    target_file: str | None = field(name="TargetFile", default=None)
    directory_path: str | None = field(name="DirectoryPath", default=None)
    search_directory: str | None = field(name="SearchDirectory", default=None)
    pattern: str | None = field(name="Pattern", default=None)
    server_name: str | None = field(name="ServerName", default=None)
    tool_name: str | None = field(name="ToolName", default=None)
    url: str | None = field(name="Url", default=None)
    query: str | None = None


_line_decoder = msgspec.json.Decoder(_Line)


_params_decoder = msgspec.json.Decoder(_Params)


_NO_PARAMS = _Params()
