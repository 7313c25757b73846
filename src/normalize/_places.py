"""Where the agents keep their sessions, for the commands run without a path.

Facts (the agents' own layouts, docs in each kit's README):

* Claude Code: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, then ``projects/`` (one
  folder per working directory, one ``<session>.jsonl`` each, sub-agents beside
  it).  ``~/.claude/history.jsonl`` is the prompt history of the input box, not a
  session.
* Codex: ``$CODEX_HOME`` or ``~/.codex``, then ``sessions/YYYY/MM/DD/rollout-*.jsonl``,
  and ``archived_sessions/`` for the rollouts archived from the app.
  ``~/.codex/history.jsonl`` is the prompt history, ``session_index.jsonl`` an index.
* Gemini CLI: ``~/.gemini/tmp/<project>/chats/``; OpenCode: the database
  ``~/.local/share/opencode/opencode.db``, and (1.0, 1.1) ``~/.local/share/opencode/storage``
  (each adapter's ``default_paths``).
* ACP agents, Antigravity and hm keep no session files normalize reads: their
  sessions are read from recordings (``normalize tap --record``).

:func:`is_agent_file` names the agents' own non-session files, so a folder holding
them (``normalize stats ~/.claude ~/.codex``) is read without reporting them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TextIO

from ._errors import InputError

__all__ = ["Place", "default_places", "describe", "inputs_or_defaults", "is_agent_file"]


@dataclass(frozen=True)
class Place:
    """One folder an agent stores sessions in."""

    agent: str
    path: Path

    @property
    def exists(self) -> bool:
        return self.path.exists()  # a folder, or a database file (OpenCode)


def _home(variable: str, default: str) -> Path:
    value = os.environ.get(variable)
    return Path(value).expanduser() if value else Path.home() / default


def _claude_home() -> Path:
    return _home("CLAUDE_CONFIG_DIR", ".claude")


def _codex_home() -> Path:
    return _home("CODEX_HOME", ".codex")


def default_places() -> list[Place]:
    """Every folder the agents are known to store sessions in, existing or not, in a fixed order."""
    claude, codex = _claude_home(), _codex_home()
    places = [
        Place("claude-code", claude / "projects"),
        Place("codex", codex / "sessions"),
        Place("codex", codex / "archived_sessions"),
    ]
    # the others the registered adapters name (Gemini CLI's chats, OpenCode's database, third parties)
    from ._registry import available

    known = {p.path for p in places} | {Path("~/.claude/projects").expanduser(), Path("~/.codex/sessions").expanduser()}
    for cls in available().values():
        for default in cls.default_paths:
            path = Path(default).expanduser()
            if path not in known:
                known.add(path)
                places.append(Place(cls.agent, path))
    return places


#: Per agent home, the files in it that are the agent's own bookkeeping, not sessions.
_AGENT_FILES: dict[str, tuple[str, ...]] = {
    "claude": ("history.jsonl",),
    "codex": ("history.jsonl", "session_index.jsonl"),
}


@lru_cache(maxsize=4)
def _homes(env: tuple[str | None, ...]) -> dict[str, set[Path]]:
    return {"claude": {_claude_home(), Path.home() / ".claude"}, "codex": {_codex_home(), Path.home() / ".codex"}}


def is_agent_file(path: Path) -> bool:
    """Whether ``path`` is one of the agents' own non-session files (their prompt history, an index)."""
    if path.name not in ("history.jsonl", "session_index.jsonl"):
        return False
    homes = _homes(tuple(os.environ.get(v) for v in ("HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME")))
    parent = path.parent
    for agent, names in _AGENT_FILES.items():
        if path.name in names and (parent in homes[agent] or parent.name == f".{agent}"):
            return True
    return False


def _short(path: Path) -> str:
    home = Path.home()
    try:
        return "~/" + path.relative_to(home).as_posix()
    except ValueError:
        return str(path)


def describe(places: list[Place]) -> str:
    """One line saying which places are read and which were not found."""
    read = [f"{_short(p.path)} ({p.agent})" for p in places if p.exists]
    missing = [_short(p.path) for p in places if not p.exists]
    text = "reading " + (", ".join(read) if read else "nothing")
    if missing:
        text += "; not found: " + ", ".join(missing)
    return text


def inputs_or_defaults(inputs: Sequence[str], *, err: TextIO | None = None) -> list[Path]:
    """The paths a command was given, or, when none, the agents' default places that exist (said on ``err``).

    Raises :class:`InputError` when no path was given and no default place exists.
    """
    if inputs:
        return [Path(p).expanduser() for p in inputs]
    places = default_places()
    print(f"normalize: {describe(places)}", file=err if err is not None else sys.stderr)
    found = [p.path for p in places if p.exists]
    if not found:
        raise InputError("no agent session folder found; give files or folders to read")
    return found
