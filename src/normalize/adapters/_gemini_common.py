"""Gemini CLI tools -> normalized values, shared by `gemini-stream-json` and `gemini-chat`.

Both surfaces name a call by Gemini CLI's own tool name (``run_shell_command``,
``replace``...) and its call id (``<tool>__<tool>_<epoch ms>_<n>``, the same in the
stream and in the stored chat); this module gives both the same category and title,
so one call reads the same live and stored.
"""

from __future__ import annotations

from typing import Any

from normalize import Category, Tokens

__all__ = ["SHELL_TOOL", "category_of", "refused_by_rule", "title_of", "tokens"]

SHELL_TOOL = "run_shell_command"

#: Gemini CLI 0.61's built-in tools (the names the model is offered).
_CATEGORIES: dict[str, Category] = {
    "run_shell_command": "execute",
    "read_file": "read",
    "read_many_files": "read",
    "list_directory": "read",
    "glob": "search",
    "grep_search": "search",
    "search_file_content": "search",
    "replace": "edit",
    "write_file": "edit",
    "web_fetch": "fetch",
    "google_web_search": "web-search",
    "save_memory": "other",
    "write_todos": "think",
    "enter_plan_mode": "think",
    "update_topic": "think",
}


def refused_by_rule(message: str) -> bool:
    """Whether a failed call's error is Gemini CLI's own refusal by the user's rules (a
    decision made without asking), in the words of each release: a policy rule's
    ``Tool execution denied by policy.`` (0.38 on; 0.20: ``Tool execution for "Shell" denied
    by policy.``), 0.11's ``tools.exclude``: ``Command '...' is blocked by configuration``,
    or ``Shell tool is globally disabled in configuration``.  The stream also says it by the
    error's type; the stored chat keeps these words only."""
    return (
        (message.startswith("Tool execution ") and message.endswith(" denied by policy."))
        or message.endswith(" is blocked by configuration")
        or message.startswith("Shell tool is globally disabled")
    )


def category_of(tool: str) -> Category:
    """The category of a Gemini CLI tool (an MCP tool is ``server__tool``: mcp)."""
    if tool in _CATEGORIES:
        return _CATEGORIES[tool]
    return "mcp" if "__" in tool else "other"


def title_of(tool: str, args: Any) -> str:
    """A call's one title in every phase: a command's command line, a file tool's path."""
    if isinstance(args, dict):
        for key in ("command", "file_path", "dir_path", "pattern", "query", "url"):
            value = args.get(key)
            if isinstance(value, str) and value:
                return value
    return tool


def tokens(
    *, input: int | None, output: int | None, cached: int | None, total: int | None, thoughts: int | None = None
) -> Tokens:
    """Gemini's counts as normalize counts them: ``input`` includes the cached part, ``output``
    the thoughts (Gemini counts them apart: its total is input + output + thoughts)."""
    if thoughts is not None and output is not None:
        output += thoughts
    elif total is not None and input is not None and output is not None and total > input + output:
        output = total - input  # the stream's stats give no thoughts count, only the total
    return Tokens(input=input, output=output, cache_read=cached or None, reasoning=thoughts, total=total)
