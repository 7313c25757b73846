"""The views :mod:`normalize.adapters._claude_common` reads Claude Code's lines with: the
msgspec Structs both Claude adapters decode content blocks, tool inputs and results, usage
and permission decisions into, and their decoders; a module apart, interpreted in the
compiled build (docs/adapters.md).  ``_claude_common`` gives them under the same names.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec
from msgspec import Raw, Struct, field

__all__ = [
    "NULL",
    "ContentBlock",
    "PermissionDecision",
    "ToolInput",
    "ToolResult",
    "ToolResultView",
    "Usage",
]

# ``gc=False``: decoded views never refer to anything made after them, so they cannot be
# part of a reference cycle; untracked by the garbage collector, they cost less to make
# and to free.

#: The default of a ``Raw`` field that was absent (msgspec cannot decode ``Raw | None``).
NULL: Raw = Raw(b"null")


class ContentBlock(Struct, frozen=True, kw_only=True, gc=False):
    """One Anthropic content block (only the fields normalize reads).

    ``content`` (tool_result) is a string or a list of blocks; ``input``
    (tool_use) is kept raw and decoded on demand with :func:`decode_input`.
    """

    type: str
    text: str | None = None
    thinking: str | None = None
    data: str | None = None  # redacted_thinking
    id: str | None = None
    name: str | None = None
    input: Raw = NULL
    tool_use_id: str | None = None
    content: Raw = NULL
    is_error: bool | None = None


class ToolInput(Struct, frozen=True, kw_only=True, gc=False):
    """The tool input fields normalize interprets, for any tool (all optional)."""

    command: str | None = None
    description: str | None = None
    file_path: str | None = None
    notebook_path: str | None = None
    path: str | None = None
    pattern: str | None = None
    url: str | None = None
    query: str | None = None
    prompt: str | None = None
    subagent_type: str | None = None
    run_in_background: bool | None = None
    model: str | None = None
    todos: list[_Todo] | None = None


class _Todo(Struct, frozen=True, kw_only=True, gc=False):
    content: str = ""
    status: str = "pending"
    activeForm: str | None = None


class _Hunk(Struct, frozen=True, kw_only=True, gc=False, rename="camel"):
    old_start: int = 0
    old_lines: int = 0
    new_start: int = 0
    new_lines: int = 0
    lines: list[str] = []


class _AgentUsage(Struct, frozen=True, kw_only=True, gc=False):
    total_tokens: int | None = None
    tool_uses: int | None = None
    duration_ms: int | None = None


class ToolResultView(Struct, frozen=True, kw_only=True, gc=False):
    """``tool_use_result`` / ``toolUseResult`` when it is an object (camelCase on the wire)."""

    # Bash
    stdout: str | None = None
    stderr: str | None = None
    interrupted: bool | None = None
    # Edit / Write / Read
    type: str | None = None
    file_path: str | None = field(name="filePath", default=None)
    structured_patch: list[_Hunk] | None = field(name="structuredPatch", default=None)
    original_file: str | None = field(name="originalFile", default=None)
    content: Raw = NULL
    # Agent / Task
    status: str | None = None
    agent_id: str | None = field(name="agentId", default=None)
    total_tokens: int | None = field(name="totalTokens", default=None)
    total_duration_ms: int | None = field(name="totalDurationMs", default=None)
    total_tool_use_count: int | None = field(name="totalToolUseCount", default=None)
    resolved_model: str | None = field(name="resolvedModel", default=None)


#: what ``tool_use_result`` holds: an object, a string (errors: ``"Error: ..."``),
#: or a list (an MCP tool's content blocks)
ToolResult = Union[ToolResultView, str, list[Any], None]


class Usage(Struct, frozen=True, kw_only=True, gc=False):
    """Anthropic ``usage`` (message and ``result`` lines)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    output_tokens_details: _OutputDetails | None = None


class _OutputDetails(Struct, frozen=True, kw_only=True, gc=False):
    thinking_tokens: int | None = None


class _TextBlock(Struct, frozen=True, kw_only=True, gc=False):
    type: str = ""
    text: str | None = None


_INPUT = msgspec.json.Decoder(ToolInput)
_RESULT = msgspec.json.Decoder(ToolResult)
_TEXT_CONTENT = msgspec.json.Decoder(Union[str, list[_TextBlock], None])


class PermissionDecision(Struct, frozen=True, kw_only=True, gc=False):
    """How a tool call's permission was decided, as its tool result records it.

    ``tool_result_meta[].permission_decision`` on stdout, ``permissionDecision``
    beside the ``tool_result`` line on disk (2.1.332); the two keys read here are
    spelled the same in both: ``decision`` (``accept`` | ``reject``) and
    ``source`` (``config``: a permission mode or rule decided without asking;
    ``user_temporary``, ``user_reject``, ...: someone was asked).
    """

    decision: str | None = None
    source: str | None = None
