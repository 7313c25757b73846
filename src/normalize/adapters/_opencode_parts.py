"""OpenCode message parts -> normalized bodies, shared by `opencode-json` and `opencode-db`.

``opencode run --format json`` prints a session's parts as they finish; the database
stores the same parts (``part.data``, the ids in their own columns).  Both adapters
decode a part into :class:`Part` and call :func:`part_bodies`, so one call, text or
step reads the same live and stored.

Decisions (``adapters/opencode-json/README.md``):

* a ``text`` part is one ``assistant-message`` and a ``reasoning`` part one
  ``reasoning``, keyed by the part id (OpenCode writes them whole, no deltas);
* a ``tool`` part is written once it ran: its ``tool-call`` started, then (``bash``)
  the ``command-output``, then the terminal phase; ``status: error`` (a denial, a
  failure) ends ``failed`` with the error as output;
* ``step-finish`` (one model request) is a ``usage`` of scope ``call``, with the cost
  OpenCode computed (``source: agent``); a step that did not finish for tool calls
  ends the turn;
* OpenCode counts ``input`` without the cached part and (by 1.14.34) ``output`` without
  reasoning: normalize adds them back (input includes cached input, output includes
  reasoning); an ``output`` that already holds the reasoning (OpenCode up to 1.3.2: see
  :func:`output_has_reasoning`) is kept as it is;
* a call a permission rule refused gives ``permission-auto`` ``deny``, in each wording
  OpenCode gave that refusal (:data:`_RULE_REFUSED`).
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from normalize import (
    AssistantMessage,
    Body,
    Category,
    CommandOutput,
    Cost,
    PermissionAuto,
    Reasoning,
    Tokens,
    ToolCall,
    ToolCallRef,
    TurnComplete,
    Usage,
)
from normalize.adapters._times import ms_time

__all__ = [
    "PART_TYPES",
    "Part",
    "category_of",
    "error_message",
    "iso_ms",
    "output_has_reasoning",
    "part_bodies",
    "tokens",
]

#: The part types that carry something normalize translates.
PART_TYPES = frozenset({"text", "reasoning", "tool", "step-start", "step-finish"})

_CATEGORIES: dict[str, Category] = {
    "bash": "execute",
    "read": "read",
    "list": "read",
    "glob": "search",
    "grep": "search",
    "codesearch": "search",
    "edit": "edit",
    "write": "edit",
    "patch": "edit",
    "apply_patch": "edit",
    "multiedit": "edit",
    "webfetch": "fetch",
    "websearch": "web-search",
    "todowrite": "think",
    "todoread": "think",
    "task": "other",
    "skill": "other",
}


def iso_ms(ms: int | None) -> str | None:
    """Epoch milliseconds as normalize writes times; None when absent or no date holds it."""
    return None if ms is None else ms_time(ms)


def error_message(name: str | None, message: str | None) -> str:
    return message or name or "unknown error"


def category_of(tool: str) -> Category:
    """The category of an OpenCode tool (an MCP tool is ``<server>_<tool>``: mcp)."""
    return _CATEGORIES.get(tool) or ("mcp" if "_" in tool else "other")


class Cache(Struct, frozen=True, gc=False):
    read: int = 0
    write: int = 0


class PartTokens(Struct, frozen=True, gc=False):
    total: int | None = None
    input: int | None = None
    output: int | None = None
    reasoning: int | None = None
    cache: Cache | None = None


class ToolState(Struct, frozen=True, gc=False):
    status: str = ""
    input: Any = None
    output: str | None = None
    error: str | None = None
    title: str | None = None
    metadata: Any = None


class Part(Struct, frozen=True, gc=False):
    """A part, every type's fields in one view (``id`` is absent from the stored ``data``)."""

    type: str
    id: str | None = None
    text: str | None = None
    tool: str | None = None
    callID: str | None = None
    state: ToolState | None = None
    reason: str | None = None
    tokens: PartTokens | None = None
    cost: float | None = None


def output_has_reasoning(t: PartTokens) -> bool:
    """Whether OpenCode's ``output`` already counts the ``reasoning`` tokens.

    OpenCode up to 1.3.2 wrote the provider's output count, reasoning included, and by
    1.14.34 (with AI SDK 6) the output less reasoning; no line names the version, but ``total``
    (the provider's sum) tells: input + cache + output is the total only when the output
    holds the reasoning.  Without ``total`` (OpenCode 1.0 and 1.1, which wrote the
    provider's output count) the output is taken as it is.
    """
    if t.total is None:
        return True
    cache = t.cache or Cache()
    return (t.input or 0) + cache.read + cache.write + (t.output or 0) == t.total


def tokens(t: PartTokens) -> Tokens:
    cache = t.cache or Cache()
    inp = None if t.input is None else t.input + cache.read + cache.write
    out = t.output
    if out is not None and t.reasoning and not output_has_reasoning(t):
        out += t.reasoning
    return Tokens(
        input=inp,
        output=out,
        total=t.total,
        cache_read=cache.read or None,
        cache_write=cache.write or None,
        reasoning=t.reasoning,
    )


def _title(tool: str, state: ToolState) -> str:
    """One title in every phase, from the input (OpenCode's own ``title`` is set once the call
    ran, and for a patch it is the result's sentence)."""
    args = state.input
    if isinstance(args, dict):
        for key in ("command", "filePath", "path", "pattern", "url", "description"):
            if isinstance(args.get(key), str):
                return str(args[key])
    return tool


def _exit_code(metadata: Any) -> int | None:
    code = metadata.get("exit") if isinstance(metadata, dict) else None
    return code if isinstance(code, int) else None


def part_bodies(part_id: str, part: Part) -> list[Body] | None:
    """The bodies of a finished part (None: nothing to translate, keep it raw)."""
    if part.type == "text":
        return [AssistantMessage(message_id=part_id, text=part.text or "")]
    if part.type == "reasoning":
        return [Reasoning(reasoning_id=part_id, redacted=False, text=part.text or "")]
    if part.type == "tool":
        return _tool(part)
    if part.type == "step-finish":
        out: list[Body] = []
        if part.tokens is not None or part.cost is not None:
            cost = Cost(amount=part.cost, currency="USD", source="agent") if part.cost is not None else None
            out.append(Usage(tokens=tokens(part.tokens) if part.tokens else None, cost=cost, scope="call"))
        if part.reason != "tool-calls":
            out.append(TurnComplete(reason="ok", stop_reason=part.reason))
        return out
    return None


#: How OpenCode's error for a call a permission rule (``"deny"``) refused begins, after an
#: ``Error: `` some releases put first, in every wording it had: 1.3.2 and later; 1.1 and
#: 1.2.12 (``Error: `` first); 1.2.27 (the error object printed,
#: ``PermissionDeniedError({"ruleset":[...]})``); 1.0, a ``bash`` rule (``Error: The user
#: has specifically restricted access to this command``).
_RULE_REFUSED = (
    "The user has specified a rule which prevents you from using this specific tool call",
    "PermissionDeniedError(",
    "The user has specifically restricted access to this command",
)


def _tool(part: Part) -> list[Body] | None:
    state, tool, call_id = part.state, part.tool or "", part.callID or ""
    if state is None or state.status not in ("completed", "error"):
        return None  # pending / running: only the stored event log keeps those
    title, category = _title(tool, state), category_of(tool)
    started = ToolCall(call_id=call_id, tool=tool, phase="started", title=title, category=category, input=state.input)
    out: list[Body] = [started]
    if state.status == "error":
        # a permission rule refused it without asking
        if (state.error or "").removeprefix("Error: ").startswith(_RULE_REFUSED):
            ref = ToolCallRef(call_id=call_id, tool=tool, title=title, category=category)
            out.append(PermissionAuto(tool_call=ref, option_id="deny", reason=state.error))
        out.append(
            ToolCall(call_id=call_id, tool=tool, phase="failed", title=title, category=category, output=state.error)
        )
        return out
    if tool == "bash" and state.output:
        out.append(CommandOutput(call_id=call_id, stream="merged", delta=state.output))
    out.append(
        ToolCall(
            call_id=call_id,
            tool=tool,
            phase="completed",
            title=title,
            category=category,
            output=state.output,
            exit_code=_exit_code(state.metadata),
        )
    )
    return out
