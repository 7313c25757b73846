"""Codex items -> normalized bodies, shared by the three Codex adapters.

Codex reports the same work items on three surfaces: the app-server's
``ThreadItem`` (camelCase, ``item/started`` / ``item/completed``), ``codex exec
--json`` items (snake_case, ``item.completed``) and the rollout file's
``item_completed`` TurnItems (PascalCase tags).  Their shapes differ, their
meaning does not.  Each adapter decodes its own shape and calls the functions
here with plain values, so one command, patch, MCP call or search gives the
same bodies whichever surface it was read from (live and replay agree).

Stable API (the Codex adapters import these names; keep their signatures):

* :func:`phase_of` - a native item status (``inProgress``, ``in_progress``,
  ``completed``, ``failed``, ``declined``, ``interrupted``) -> tool-call phase.
* :func:`user_message`, :func:`agent_message`, :func:`reasoning`
* :func:`command_started`, :func:`command_finished`
* :class:`Change`, :func:`file_change_started`, :func:`file_change_finished`,
  :func:`file_diffs`, :func:`patch_started`, :func:`patch_finished`
* :func:`mcp_started`, :func:`mcp_finished`
* :func:`web_search_started`, :func:`web_search_finished`
* :func:`image_view`, :func:`compaction`
* :func:`tokens`, :func:`plan_status`, :func:`error_type`
* :func:`error_notice`, :func:`failed_turn`

Decisions (documented in ``adapters/codex-app-server/README.md``):

* tool names are Codex's own tool names: ``exec_command`` (category
  ``execute``), ``apply_patch`` (``edit``; ``delete`` / ``move`` when every change
  is one), ``view_image`` (``read``), an MCP tool's own name (``mcp``);
* an MCP call gives both a ``tool-call`` (category ``mcp``: every tool call of
  every agent is one ``tool-call`` stream, which analytics count) and an
  ``mcp-tool`` body (server, tool, arguments, result), with the same call id;
* a command's output is ``command-output`` (stream ``merged``: Codex merges
  stdout and stderr) only when no output delta was seen; the completed
  ``tool-call`` always carries the whole output, so nothing is sent twice;
* a tool call keeps one title in every phase: a command's is its command line
  (an argv shell-quoted), a patch's its paths sorted;
* a declined or failed item ends ``failed``; an item still open when its turn
  ends is closed ``failed`` by the adapter;
* a retry notice (Codex retries the model request itself and the turn goes on)
  is a ``warning``; a terminal error is an ``error`` (``recoverable: false``);
* a failed turn ends ``turn-complete`` reason ``interrupt`` (it did not complete
  normally) with ``stopReason: "failed"``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal

import msgspec
from msgspec import Raw

from normalize import (
    AssistantMessage,
    Body,
    Category,
    CommandOutput,
    Compaction,
    Error,
    FileDiff,
    Image,
    Location,
    McpTool,
    Reasoning,
    Subagent,
    Task,
    Tokens,
    ToolCall,
    TurnComplete,
    UserMessage,
    WebSearch,
)
from normalize import Warning as WarningBody

from ._codex_items_views import Change

__all__ = [
    "AGENT_END",
    "NULL",
    "Change",
    "agent_message",
    "collab_subagent",
    "command_finished",
    "command_started",
    "compaction",
    "error_notice",
    "error_type",
    "failed_turn",
    "file_change_finished",
    "file_change_started",
    "file_diffs",
    "image_view",
    "mcp_finished",
    "mcp_started",
    "patch_finished",
    "patch_started",
    "phase_of",
    "plan_status",
    "present",
    "raw_or_none",
    "reasoning",
    "tokens",
    "user_message",
    "web_search_finished",
    "web_search_started",
]

#: An absent or ``null`` JSON value kept as Raw (msgspec cannot put Raw in a union).
NULL: Raw = Raw(b"null")


#: A collab sub-agent's state that ends it, and how: the app-server's ``agentsStates``
#: (camelCase) and a 0.96 rollout's ``wait`` output (snake_case) spell the same states.
AGENT_END: dict[str, Literal["completed", "failed", "cancelled"]] = {
    "completed": "completed",
    "errored": "failed",
    "shutdown": "cancelled",
    "interrupted": "cancelled",
    "notFound": "failed",
    "not_found": "failed",
}


def collab_subagent(
    thread: str,
    phase: Literal["started", "completed", "failed", "cancelled"],
    call: str | None,
    label: str | None = None,
    *,
    prompt: str | None = None,
    model: str | None = None,
) -> list[Body]:
    """A collab sub-agent (its own thread) by phase: ``subagent`` and ``task`` (collab)."""
    return [
        Subagent(subagent_id=thread, phase=phase, name=label, prompt=prompt, model=model, call_id=call),
        Task(task_id=thread, task_kind="collab", phase=phase, label=label, parent_call_id=call),
    ]


def present(value: Raw) -> bool:
    """Whether a Raw field holds a value (absent and ``null`` do not)."""
    return bytes(value) != b"null"


def raw_or_none(value: Raw) -> Raw | None:
    """The Raw value, or None when absent or ``null`` (absent fields are omitted, never null)."""
    return value if present(value) else None


COMMAND_TOOL: Final = "exec_command"
PATCH_TOOL: Final = "apply_patch"
IMAGE_TOOL: Final = "view_image"

Phase = Literal["started", "updated", "completed", "failed"]

# Every spelling of an item status seen across the surfaces, folded:
# lower case, no "_" ("inProgress" / "in_progress" -> "inprogress").
_TERMINAL: Final[dict[str, Literal["completed", "failed"]]] = {
    "completed": "completed",
    "failed": "failed",
    "declined": "failed",
    "interrupted": "failed",
    "cancelled": "failed",
    "canceled": "failed",
}


def _fold(status: str) -> str:
    return status.replace("_", "").lower()


def phase_of(status: str | None) -> Phase:
    """The tool-call phase of a native item status (``None`` or in progress: ``started``)."""
    if status is None:
        return "started"
    return _TERMINAL.get(_fold(status), "started")


def plan_status(status: str) -> Literal["pending", "in_progress", "completed"]:
    """A plan step's status in any spelling (``inProgress``, ``in_progress``, ...)."""
    folded = _fold(status)
    if folded == "completed":
        return "completed"
    if folded == "inprogress":
        return "in_progress"
    return "pending"


def error_type(info: Any) -> str | None:
    """``codexErrorInfo`` is a bare string or a one-key object: its name either way."""
    if isinstance(info, str):
        return info
    if isinstance(info, dict) and len(info) == 1:
        return str(next(iter(info)))
    return None


def error_notice(message: str, *, retrying: bool, error_type: str | None = None) -> Error | WarningBody:
    """An error Codex reports: a ``warning`` if Codex retries on its own, else a terminal ``error``.

    The app-server says which with ``willRetry``; ``codex exec --json`` only by the
    message (``Reconnecting... 1/5``).  The turn survives a retry, so it is not an
    error of the session; a terminal error ends the turn (``turn.failed``,
    ``turn/completed`` ``failed``).
    """
    if retrying:
        return WarningBody(message=message, source="codex")
    return Error(message=message, error_type=error_type, recoverable=False)


def failed_turn(native_turn_id: str | None = None) -> TurnComplete:
    """The end of a failed turn: it did not complete normally (reason ``interrupt``)."""
    return TurnComplete(reason="interrupt", stop_reason="failed", native_turn_id=native_turn_id)


def tokens(
    *,
    input: int | None,
    output: int | None,
    total: int | None = None,
    cached: int | None = None,
    cache_write: int | None = None,
    reasoning: int | None = None,
) -> Tokens:
    """Codex's token breakdown.  ``input`` includes cached input and ``output``
    includes reasoning output, as Codex (OpenAI) counts them; ``total`` defaults
    to input + output."""
    if total is None and input is not None and output is not None:
        total = input + output
    return Tokens(
        input=input, output=output, total=total, cache_read=cached, cache_write=cache_write, reasoning=reasoning
    )


# ----------------------------------------------------------------- messages


def user_message(item_id: str, texts: Iterable[str], images: Sequence[Image] = ()) -> UserMessage:
    """The user's input: text parts joined by a blank line, images kept apart."""
    return UserMessage(message_id=item_id, text="\n\n".join(texts), images=list(images) or None)


def agent_message(item_id: str, text: str) -> AssistantMessage:
    return AssistantMessage(message_id=item_id, text=text)


def reasoning(item_id: str, summary: Sequence[str], content: Sequence[str] = ()) -> Reasoning:
    """A reasoning item.  Codex keeps the raw reasoning encrypted and usually sends
    only a summary: ``redacted`` says the raw text is not available."""
    return Reasoning(
        reasoning_id=item_id,
        redacted=not content,
        text="\n\n".join(content) or None,
        summary="\n\n".join(summary) or None,
    )


# ----------------------------------------------------------------- commands


def _command_input(command: str | Sequence[str], cwd: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"command": command}
    if cwd is not None:
        out["cwd"] = cwd
    return out


#: a character ``shlex.quote`` quotes an argument for
_UNSAFE: Final = re.compile(r"[^\w@%+=:,./-]", re.ASCII).search


def _quoted(arg: str) -> str:
    """``shlex.quote(arg)``, the same text (a test holds them together): compiled, without
    the standard library's Python frames, a third of what it cost."""
    if not arg:
        return "''"
    if _UNSAFE(arg) is None:
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def _command_title(command: str | Sequence[object]) -> str:
    """The command as one line: a string as given; an argv shell-quoted, as the app-server
    writes its ``command`` (``["/bin/bash", "-lc", "cat a.py"]`` -> ``/bin/bash -lc 'cat a.py'``),
    as ``shlex.join`` does.  An argument that is not a string (a model's arguments are
    not checked) is quoted as its JSON text."""
    if isinstance(command, str):
        return command
    quoted = _quoted
    return " ".join([quoted(arg if isinstance(arg, str) else _json_text(arg)) for arg in command])


def _json_text(value: object) -> str:
    return msgspec.json.encode(value).decode()


def command_started(call_id: str, command: str | Sequence[str], cwd: str | None) -> ToolCall:
    return ToolCall(
        call_id=call_id,
        tool=COMMAND_TOOL,
        phase="started",
        title=_command_title(command),
        category="execute",
        input=_command_input(command, cwd),
    )


def command_finished(
    call_id: str,
    command: str | Sequence[str],
    cwd: str | None,
    status: str | None,
    output: str | None,
    exit_code: int | None,
    *,
    output_streamed: bool,
    title: str | None = None,
) -> list[Body]:
    """The end of a command: its output (unless deltas already streamed it) and
    one terminal ``tool-call`` carrying the whole output and exit code.

    ``title``: the title the call started with, when the end names the command
    differently (a rollout's start has the model's ``cmd``, its end the argv that
    ran); a call keeps one title in every phase.
    """
    out: list[Body] = []
    if output and not output_streamed:
        out.append(CommandOutput(call_id=call_id, stream="merged", delta=output))
    phase = phase_of(status)
    out.append(
        ToolCall(
            call_id=call_id,
            tool=COMMAND_TOOL,
            phase=phase if phase != "started" else "completed",
            title=title if title is not None else _command_title(command),
            category="execute",
            input=_command_input(command, cwd),
            output=output,
            exit_code=exit_code,
            description=status if status is not None and _fold(status) == "declined" else None,
        )
    )
    return out


# ----------------------------------------------------------------- file changes


def _as_diff(change: Change) -> str:
    text = change.diff or ""
    if change.kind not in ("add", "delete") or text.startswith("@@"):
        return text
    lines = text.splitlines()
    n = len(lines)
    if change.kind == "add":
        return f"@@ -0,0 +1,{n} @@\n" + "".join(f"+{line}\n" for line in lines)
    return f"@@ -1,{n} +0,0 @@\n" + "".join(f"-{line}\n" for line in lines)


def _change_kind(change: Change) -> str:
    return "move" if change.move_path else change.kind


def _patch_category(changes: Sequence[Change]) -> Category:
    kinds = {_change_kind(c) for c in changes}
    if kinds == {"delete"}:
        return "delete"
    if kinds == {"move"}:
        return "move"
    return "edit"


def _patch_call(call_id: str, changes: Sequence[Change], phase: Phase, status: str | None = None) -> ToolCall:
    paths = [c.path for c in changes]
    return ToolCall(
        call_id=call_id,
        tool=PATCH_TOOL,
        phase=phase,
        # sorted: a patch's text lists files in the model's order, Codex's change maps in
        # their own; the title must not depend on which one a phase was read from
        title=", ".join(sorted(paths)) or None,
        category=_patch_category(changes),
        locations=[Location(path=p) for p in paths] or None,
        input={"changes": [{"path": c.path, "kind": _change_kind(c)} for c in changes]},
        description=status if status is not None and _fold(status) == "declined" else None,
    )


def file_diffs(call_id: str, changes: Sequence[Change], seen: set[tuple[str, str]]) -> list[Body]:
    """A ``file-diff`` per change not yet in ``seen`` (which it updates)."""
    out: list[Body] = []
    for c in changes:
        diff = _as_diff(c)
        key = (c.path, diff)
        if key in seen:
            continue
        seen.add(key)
        out.append(FileDiff(call_id=call_id, path=c.path, diff=diff, change_kind=_change_kind(c)))
    return out


def patch_started(call_id: str, changes: Sequence[Change]) -> ToolCall:
    """A patch's started ``tool-call`` alone (a surface that has no diffs, a start whose
    diffs come later)."""
    return _patch_call(call_id, changes, "started")


def patch_finished(call_id: str, changes: Sequence[Change], status: str | None) -> ToolCall:
    """A patch's terminal ``tool-call`` alone."""
    phase = phase_of(status)
    return _patch_call(call_id, changes, phase if phase != "started" else "completed", status)


def file_change_started(call_id: str, changes: Sequence[Change], seen: set[tuple[str, str]]) -> list[Body]:
    """``tool-call`` started, then a ``file-diff`` per change (Codex knows the diff
    before it asks for approval)."""
    return [patch_started(call_id, changes), *file_diffs(call_id, changes, seen)]


def file_change_finished(
    call_id: str, changes: Sequence[Change], status: str | None, seen: set[tuple[str, str]]
) -> list[Body]:
    """Diffs not reported yet, then the terminal ``tool-call``."""
    return [*file_diffs(call_id, changes, seen), patch_finished(call_id, changes, status)]


# ----------------------------------------------------------------- MCP


def mcp_started(call_id: str, server: str, tool: str, arguments: Any) -> list[Body]:
    return [
        ToolCall(
            call_id=call_id, tool=tool, phase="started", title=f"{server}.{tool}", category="mcp", input=arguments
        ),
        McpTool(call_id=call_id, server=server, tool=tool, phase="started", arguments=arguments),
    ]


def mcp_finished(
    call_id: str,
    server: str,
    tool: str,
    arguments: Any,
    status: str | None,
    result: Any,
    error: Any,
    duration_ms: float | None = None,
) -> list[Body]:
    """Terminal ``tool-call`` and ``mcp-tool``: ``result`` when it succeeded, else the error."""
    phase = phase_of(status)
    failed = phase == "failed" or (result is None and error is not None)
    outcome = error if failed and error is not None else result
    return [
        ToolCall(
            call_id=call_id,
            tool=tool,
            phase="failed" if failed else "completed",
            title=f"{server}.{tool}",
            category="mcp",
            input=arguments,
            output=outcome,
        ),
        McpTool(
            call_id=call_id,
            server=server,
            tool=tool,
            phase="failed" if failed else "completed",
            arguments=arguments,
            result=outcome,
            duration_ms=duration_ms,
        ),
    ]


# ----------------------------------------------------------------- others


def web_search_started(call_id: str, query: str | None) -> WebSearch:
    return WebSearch(call_id=call_id, phase="started", query=query or None)


def web_search_finished(call_id: str, query: str | None, results: Any = None, *, failed: bool = False) -> WebSearch:
    return WebSearch(call_id=call_id, phase="failed" if failed else "completed", query=query or None, results=results)


def image_view(call_id: str, path: str, phase: Phase) -> ToolCall:
    return ToolCall(
        call_id=call_id,
        tool=IMAGE_TOOL,
        phase=phase,
        title=path,
        category="read",
        locations=[Location(path=path)],
        input={"path": path},
    )


def compaction(item_id: str, status: Literal["in_progress", "completed", "failed", "cancelled"]) -> Compaction:
    return Compaction(compaction_id=item_id, status=status)
