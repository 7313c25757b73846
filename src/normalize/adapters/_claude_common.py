"""What Claude Code's two formats share: tools, content blocks, tool results, usage.

Used by the ``claude-stream-json`` adapter (the CLI's stdout) and the
``claude-transcript`` adapter (the session files under ``~/.claude/projects``).
Both carry the same Anthropic content blocks, one block per line/entry, and the
same raw tool results (``tool_use_result`` on stdout, ``toolUseResult`` on disk),
so both translate them here, the same way.  Pure functions and frozen views only;
nothing here keeps state.

Stable API (keep signatures; add, do not change):

* :func:`tool_category`, :func:`mcp_name`, :func:`is_subagent_tool`,
  :func:`is_shell_tool`, :func:`is_edit_tool`: what a tool is, by name;
* :func:`decode_input`, :func:`tool_title`, :func:`tool_locations`: a tool
  call's input (``ToolInput`` view) and what to show for it;
* :func:`call_started`: the bodies a ``tool_use`` block gives;
* :func:`decode_tool_result`, :func:`call_finished`: the bodies a
  ``tool_result`` block (plus its raw ``tool_use_result``) gives;
  :func:`reads_result`: whether that raw result matters for a tool;
* :func:`text_of`: the text of a string-or-blocks ``content``; :func:`content_text`: the same
  of one already decoded;
* :func:`tokens_of`: Anthropic ``usage`` -> :class:`~normalize.Tokens`;
  :func:`total_tokens`: its ``total`` alone;
* :class:`PermissionDecision`, :func:`permission_auto`: the permission decision a
  tool result carries -> ``permission-auto`` when no one was asked;
* :func:`block_message_id`, :func:`block_reasoning_id`: ids of the
  ``assistant-message`` / ``reasoning`` bodies made from content blocks;
* :data:`SUBAGENT_TOOLS`: the names of the sub-agent tool.

Conventions:

* A sub-agent's ``subagentId`` is the ``tool_use`` id of the Agent/Task call that
  spawned it (``parent_tool_use_id`` on stdout; ``toolUseId`` of the sub-agent's
  ``.meta.json`` on disk), so live and stored sessions name it the same.
* ``assistant-message`` ids: the API ``message.id`` for the first text block of
  a message, ``"<message.id>:<block index>"`` for later text blocks;
  ``reasoning`` ids are always ``"<message.id>:<block index>"``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Literal, Protocol

import msgspec
from msgspec import Raw

from normalize import (
    Body,
    Category,
    CommandOutput,
    FileDiff,
    Location,
    McpTool,
    PermissionAuto,
    Plan,
    PlanEntry,
    Subagent,
    Tokens,
    ToolCall,
    ToolCallRef,
    WebSearch,
)

from ._claude_common_views import (
    _INPUT,
    _RESULT,
    _TEXT_CONTENT,
    NULL,
    ContentBlock,
    PermissionDecision,
    ToolInput,
    ToolResult,
    ToolResultView,
    Usage,
    _Hunk,
    _TextBlock,
)

__all__ = [
    "SUBAGENT_TOOLS",
    "AgentInput",
    "NULL",
    "ContentBlock",
    "content_text",
    "PermissionDecision",
    "ToolInput",
    "ToolResultView",
    "Usage",
    "block_message_id",
    "block_reasoning_id",
    "call_finished",
    "call_started",
    "decode_input",
    "decode_tool_result",
    "is_edit_tool",
    "is_shell_tool",
    "is_subagent_tool",
    "mcp_name",
    "permission_auto",
    "present",
    "reads_result",
    "subagent_started",
    "text_of",
    "tokens_of",
    "total_tokens",
    "tool_category",
    "tool_locations",
    "tool_title",
]

# --------------------------------------------------------------------------
# Tools by name

#: The sub-agent tool: ``Agent`` in ``tool_use`` blocks since 2.1.2xx, ``Task`` in
#: ``init.tools`` and in older builds.
SUBAGENT_TOOLS: Final = frozenset({"Agent", "Task"})

_SHELL_TOOLS: Final = frozenset({"Bash", "BashOutput", "KillShell", "KillBash", "PowerShell"})
_EDIT_TOOLS: Final = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})

_CATEGORIES: Final[dict[str, Category]] = {
    "Bash": "execute",
    "BashOutput": "execute",
    "KillShell": "execute",
    "KillBash": "execute",
    "PowerShell": "execute",
    "Read": "read",
    "NotebookRead": "read",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
    "Grep": "search",
    "Glob": "search",
    "LS": "search",
    "ToolSearch": "search",
    "WebFetch": "fetch",
    "WebSearch": "web-search",
    "web_search": "web-search",  # server_tool_use (run by the API)
    "web_fetch": "fetch",
    "TodoWrite": "think",
    "ExitPlanMode": "think",
}


def mcp_name(tool: str) -> tuple[str, str] | None:
    """``mcp__<server>__<tool>`` -> ``(server, tool)``; None for other tools."""
    if not tool.startswith("mcp__"):
        return None
    server, sep, name = tool[5:].partition("__")
    return (server, name) if sep else (server, "")


def tool_category(tool: str) -> Category:
    """The normalized category of a Claude Code tool (``other`` when unknown)."""
    if tool.startswith("mcp__"):
        return "mcp"
    return _CATEGORIES.get(tool, "other")


def is_subagent_tool(tool: str) -> bool:
    return tool in SUBAGENT_TOOLS


def is_shell_tool(tool: str) -> bool:
    return tool in _SHELL_TOOLS


def is_edit_tool(tool: str) -> bool:
    return tool in _EDIT_TOOLS


# --------------------------------------------------------------------------
# Views: the Structs are in _claude_common_views (interpreted in the compiled build)


def present(raw: Raw) -> Raw | None:
    """``raw`` unless it is absent or JSON ``null``."""
    # compared as a Raw: bytes(raw) would copy a whole tool output to look at four bytes
    return None if raw == NULL or not raw else raw


def decode_input(raw: Raw | None) -> ToolInput:
    """The interpreted fields of a tool input (empty when absent or not an object)."""
    if raw is None or present(raw) is None:
        return ToolInput()
    try:
        return _INPUT.decode(raw)
    except msgspec.ValidationError:
        return ToolInput()


def decode_tool_result(raw: Raw | None) -> ToolResult:
    """``tool_use_result`` decoded; None when absent or of an unexpected shape."""
    if raw is None or present(raw) is None:
        return None
    try:
        return _RESULT.decode(raw)
    except msgspec.ValidationError:
        return None


def _text_content(content: Raw | None) -> str | list[_TextBlock] | None:
    """A string-or-blocks ``content`` decoded; None when absent or of another shape."""
    if content is None or present(content) is None:
        return None
    try:
        return _TEXT_CONTENT.decode(content)
    except msgspec.ValidationError:
        return None


def text_of(content: Raw | None) -> str:
    """The text of a string-or-blocks ``content`` (non-text blocks are skipped)."""
    return content_text(_text_content(content))


#: a text block Claude Code (2.1.3xx) puts before a sub-agent's report, for the parent model: the
#: tools the sub-agent used, no part of its answer (stdout's task_notification leaves it out)
_HARNESS_NOTE: Final = re.compile(r"\s*<tools-used-before-summary>[^<]*</tools-used-before-summary>\s*")


def _answer_of(content: Raw | None) -> str:
    """A sub-agent's answer in its result's ``content``: the text blocks, less Claude Code's notes."""
    value = _text_content(content)
    if value is None or isinstance(value, str):
        return value or ""
    return "".join(
        b.text for b in value if b.type == "text" and b.text is not None and _HARNESS_NOTE.fullmatch(b.text) is None
    )


def content_text(content: str | Sequence[ContentBlock | _TextBlock] | None) -> str:
    """The text of a ``content`` already decoded: a string, or its text blocks joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if b.type == "text" and b.text is not None)


# --------------------------------------------------------------------------
# Ids


def block_message_id(message_id: str, index: int, first_text_index: int) -> str:
    """Id of the ``assistant-message`` for text block ``index`` (see module docstring)."""
    return message_id if index == first_text_index else f"{message_id}:{index}"


def block_reasoning_id(message_id: str, index: int) -> str:
    return f"{message_id}:{index}"


# --------------------------------------------------------------------------
# Tool calls


def tool_title(tool: str, inp: ToolInput) -> str:
    """A short human title: the command, the path, the pattern, else the tool name."""
    if is_shell_tool(tool) and inp.command:
        return inp.command
    if is_subagent_tool(tool):
        return inp.description or tool
    for value in (inp.file_path, inp.notebook_path, inp.pattern, inp.url, inp.query, inp.description):
        if value:
            return f"{tool} {value}"
    return tool


def tool_locations(inp: ToolInput) -> list[Location] | None:
    path = inp.file_path or inp.notebook_path or inp.path
    return [Location(path=path)] if path else None


_TODO_STATUS: Final[dict[str, Literal["pending", "in_progress", "completed"]]] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
}


def call_started(
    call_id: str, tool: str, raw_input: Raw | None, *, phase: Literal["started", "updated"] = "started"
) -> list[Body]:
    """Bodies for a ``tool_use`` block: a ``tool-call`` plus what the tool means.

    ``TodoWrite`` adds a ``plan``; an MCP tool an ``mcp-tool``; ``WebSearch`` a
    ``web-search``; the sub-agent tool a ``subagent`` (phase ``started``,
    ``subagentId`` = the call id, linked by ``callId``).  With ``phase="updated"``
    (the input of a call announced earlier by a stream became complete) only the
    ``tool-call`` is given, plus the ``plan`` for ``TodoWrite``.
    """
    raw_input = present(raw_input) if raw_input is not None else None
    inp = decode_input(raw_input)
    category = tool_category(tool)
    out: list[Body] = [
        ToolCall(
            call_id=call_id,
            tool=tool,
            phase=phase,
            title=tool_title(tool, inp),
            category=category,
            locations=tool_locations(inp),
            input=raw_input,
            description=inp.description if not is_subagent_tool(tool) else None,
        )
    ]
    if tool == "TodoWrite" and inp.todos is not None:
        entries = [PlanEntry(content=t.content, status=_TODO_STATUS.get(t.status, "pending")) for t in inp.todos]
        out.append(Plan(entries=entries))
    if phase != "started":
        return out
    mcp = mcp_name(tool)
    if mcp is not None:
        out.append(McpTool(call_id=call_id, server=mcp[0], tool=mcp[1], phase="started", arguments=raw_input))
    elif category == "web-search":
        out.append(WebSearch(call_id=call_id, phase="started", query=inp.query))
    elif is_subagent_tool(tool):
        out.append(subagent_started(call_id, inp))
    return out


class AgentInput(Protocol):
    """What an Agent/Task call's input says of the sub-agent it runs."""

    @property
    def description(self) -> str | None: ...
    @property
    def prompt(self) -> str | None: ...
    @property
    def subagent_type(self) -> str | None: ...
    @property
    def run_in_background(self) -> bool | None: ...
    @property
    def model(self) -> str | None: ...


def subagent_started(call_id: str, inp: AgentInput) -> Subagent:
    """The sub-agent an Agent/Task call ``call_id`` runs, as its input describes it."""
    return Subagent(
        subagent_id=call_id,
        phase="started",
        name=inp.subagent_type,
        description=inp.description,
        prompt=inp.prompt,
        background=inp.run_in_background,
        model=inp.model,
        call_id=call_id,
    )


_EXIT_CODE: Final = re.compile(r"^(?:Error: )?Exit code (\d+)")


def _unified_diff(path: str, hunks: list[_Hunk]) -> str:
    lines = [f"--- a/{path.lstrip('/')}", f"+++ b/{path.lstrip('/')}"]
    for h in hunks:
        lines.append(f"@@ -{h.old_start},{h.old_lines} +{h.new_start},{h.new_lines} @@")
        lines.extend(h.lines)
    return "\n".join(lines) + "\n"


def _created_diff(path: str, text: str) -> str:
    body = text.splitlines()
    head = ["--- /dev/null", f"+++ b/{path.lstrip('/')}", f"@@ -0,0 +1,{len(body)} @@"]
    return "\n".join(head + ["+" + line for line in body]) + "\n"


def _file_diff(call_id: str, view: ToolResultView) -> FileDiff | None:
    path = view.file_path
    if path is None:
        return None
    if view.type == "create" and view.original_file is None:
        content = text_of(view.content)
        return FileDiff(call_id=call_id, path=path, diff=_created_diff(path, content), change_kind="add")
    if view.structured_patch:
        return FileDiff(
            call_id=call_id, path=path, diff=_unified_diff(path, view.structured_patch), change_kind="update"
        )
    return None


def reads_result(tool: str) -> bool:
    """Whether :func:`call_finished` reads the raw ``tool_use_result`` of ``tool`` (shell, edit
    and sub-agent tools): for any other tool it need not be decoded (a ``Read``'s holds the
    whole file)."""
    return tool in _SHELL_TOOLS or tool in _EDIT_TOOLS or tool in SUBAGENT_TOOLS


def call_finished(
    call_id: str,
    tool: str,
    content: Raw | None,
    is_error: bool,
    result: ToolResult,
    *,
    subagent_done: bool = False,
    executed: bool = True,
    unreported: bool = False,
) -> list[Body]:
    """Bodies for a ``tool_result`` block: outputs first, then the terminal ``tool-call``.

    ``content`` is the block's content (what the model saw), ``result`` the raw
    ``tool_use_result`` decoded with :func:`decode_tool_result`.  Shell tools give
    ``command-output`` (``stdout``/``stderr`` from the raw result, else the content
    as ``merged``) and an exit code; edits a ``file-diff``; MCP, web search and a
    foreground sub-agent their own terminal body (the sub-agent's only when
    ``subagent_done`` is False, i.e. no task line ended it before).
    ``executed=False`` (a call refused or cancelled before it ran, e.g.
    ``non_execution_kind`` in stream-json's ``tool_result_meta``) gives no output
    and no exit code: only the terminal bodies.  ``unreported``: the line carries no
    ``tool_use_result`` at all (stream-json before 2.0.76): a sub-agent's successful
    result is then its answer, and ends it.
    """
    content = present(content) if content is not None else None
    category = tool_category(tool)
    out: list[Body] = []
    exit_code: int | None = None
    view = result if isinstance(result, ToolResultView) else None
    if is_shell_tool(tool) and executed:
        text = text_of(content)  # read here and for a sub-agent only: a Read's content is a whole file
        m = _EXIT_CODE.match(text)
        if view is not None and (view.stdout is not None or view.stderr is not None):
            if view.stdout:
                out.append(CommandOutput(call_id=call_id, stream="stdout", delta=view.stdout))
            if view.stderr:
                out.append(CommandOutput(call_id=call_id, stream="stderr", delta=view.stderr))
        else:
            # what the command printed: the content without the "Exit code N" line Claude
            # Code puts first for the model (the exit code, below)
            printed = text if m is None else text[m.end() :].removeprefix("\n")
            if printed:
                out.append(CommandOutput(call_id=call_id, stream="merged", delta=printed))
        if m is not None:
            exit_code = int(m.group(1))
        elif not is_error and tool == "Bash":
            exit_code = 0
    if view is not None and executed and not is_error and is_edit_tool(tool):
        diff = _file_diff(call_id, view)
        if diff is not None:
            out.append(diff)
    mcp = mcp_name(tool)
    if mcp is not None:
        out.append(
            McpTool(
                call_id=call_id, server=mcp[0], tool=mcp[1], phase="failed" if is_error else "completed", result=content
            )
        )
    elif category == "web-search":
        out.append(WebSearch(call_id=call_id, phase="failed" if is_error else "completed", results=content))
    elif is_subagent_tool(tool) and not subagent_done:
        text = text_of(content)
        if is_error:
            out.append(Subagent(subagent_id=call_id, phase="failed", result=text, call_id=call_id))
        elif view is not None and (
            view.status == "completed" or (view.status is None and view.total_tokens is not None)
        ):
            # before 2.1 a finished sub-agent's result has no ``status``, only its totals
            stats = {
                "total_tokens": view.total_tokens,
                "duration_ms": view.total_duration_ms,
                "tool_uses": view.total_tool_use_count,
            }
            out.append(
                Subagent(
                    subagent_id=call_id,
                    phase="completed",
                    result=_answer_of(view.content) or text,
                    stats={k: v for k, v in stats.items() if v is not None} or None,
                    model=view.resolved_model,
                    call_id=call_id,
                )
            )
        elif unreported:
            out.append(Subagent(subagent_id=call_id, phase="completed", result=text, call_id=call_id))
    out.append(
        ToolCall(
            call_id=call_id,
            tool=tool,
            phase="failed" if is_error else "completed",
            category=category,
            output=content,
            exit_code=exit_code,
        )
    )
    return out


# --------------------------------------------------------------------------
# Permissions


def permission_auto(call_id: str, tool: str, title: str, decided: PermissionDecision | None) -> PermissionAuto | None:
    """``permission-auto`` for a permission decided by a mode or rule (``source: "config"``).

    ``None`` when someone was asked: the live control protocol reports that as
    ``permission-request`` / ``request-resolved``.  ``optionId`` is ``allow`` or
    ``deny``, the ids of the options stream-json's ``can_use_tool`` requests offer.
    """
    if decided is None or decided.source != "config":
        return None
    ref = ToolCallRef(call_id=call_id, tool=tool, title=title, category=tool_category(tool))
    return PermissionAuto(tool_call=ref, option_id="allow" if decided.decision == "accept" else "deny")


# --------------------------------------------------------------------------
# Usage


def tokens_of(usage: Usage) -> Tokens:
    """Anthropic usage -> Tokens.

    Anthropic counts uncached input (``input_tokens``), cache reads and cache writes
    apart; normalized ``input`` is all three (docs/events.md), with ``cacheRead`` and
    ``cacheWrite`` the cached parts; ``total`` is input plus output; ``reasoning`` is
    ``output_tokens_details.thinking_tokens`` (part of ``output``).
    """
    inp = usage.input_tokens or 0
    out = usage.output_tokens or 0
    cr = usage.cache_read_input_tokens or 0
    cw = usage.cache_creation_input_tokens or 0
    details = usage.output_tokens_details
    return Tokens(
        input=inp + cr + cw,
        output=out,
        total=inp + out + cr + cw,
        cache_read=usage.cache_read_input_tokens,
        cache_write=usage.cache_creation_input_tokens,
        reasoning=details.thinking_tokens if details is not None and details.thinking_tokens else None,
    )


def total_tokens(usage: Usage) -> int:
    """``tokens_of(usage).total``, without making the :class:`~normalize.Tokens`."""
    return (
        (usage.input_tokens or 0)
        + (usage.output_tokens or 0)
        + (usage.cache_read_input_tokens or 0)
        + (usage.cache_creation_input_tokens or 0)
    )
