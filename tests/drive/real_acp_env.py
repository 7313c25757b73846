"""The real ACP adapters (claude-agent-acp, codex-acp) against tools/record's fake model servers.

Binaries are looked up in ``$NORMALIZE_AGENTS_BIN``, then
/tmp/normalize-drive-npm/node_modules/.bin, then ``PATH``; a test skips with the
reason when one is missing.  Each run gets a scratch HOME and working directory
(holding ``hello.txt``) and a fake model server on 127.0.0.1 playing a script, as
``tools/record/record.py`` runs them; nothing else is contacted.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from drivekit import DEFAULT_BIN, agent_binary

RECORD = Path(__file__).resolve().parents[2] / "tools" / "record"
sys.path.insert(0, str(RECORD))

from record import CODEX_CONFIG  # type: ignore[import-not-found]  # noqa: E402
from scenarios import with_cwd  # type: ignore[import-not-found]  # noqa: E402
from servers import (  # type: ignore[import-not-found]  # noqa: E402
    AnthropicHandler,
    FakeServer,
    GeminiHandler,
    ResponsesHandler,
    Script,
    Step,
    Text,
    Thinking,
    Tool,
)

__all__ = ["AGENTS", "AcpAgent", "AcpRun", "Script", "Step", "Text", "Thinking", "agent_binary", "fake_model"]


@dataclass(frozen=True)
class AcpAgent:
    """One ACP adapter: its binary, the fake model it talks to, its ask mode and its shell tool."""

    name: str
    handler: type[Any]
    ask_mode: str  # a mode in which a shell command needs the user's permission
    shell: Callable[[str], Any]  # the model's tool call running a command
    program: str = ""  # the executable, when not the agent's name
    args: tuple[str, ...] = ()  # what makes it speak ACP

    def binary(self) -> Path:
        program = self.program or self.name
        path = agent_binary(program)
        if path is None:
            pytest.skip(f"{program} is not installed (looked in $NORMALIZE_AGENTS_BIN, {DEFAULT_BIN}, PATH)")
        return path


def _claude_shell(cmd: str) -> Any:
    return Tool("Bash", {"command": cmd, "description": "Run " + cmd})


def _codex_shell(cmd: str) -> Any:
    why = f"Do you allow running {cmd}?"
    args = {"cmd": cmd, "workdir": "{cwd}", "sandbox_permissions": "require_escalated", "justification": why}
    return Tool("exec_command", args)


def _gemini_shell(cmd: str) -> Any:
    return Tool("run_shell_command", {"command": cmd, "description": "Run " + cmd})


AGENTS = {
    "claude-agent-acp": AcpAgent("claude-agent-acp", AnthropicHandler, "default", _claude_shell),
    "codex-acp": AcpAgent("codex-acp", ResponsesHandler, "read-only", _codex_shell),
    "gemini-acp": AcpAgent("gemini-acp", GeminiHandler, "default", _gemini_shell, "gemini", ("--acp",)),
}


@dataclass(frozen=True)
class AcpRun:
    """What ``normalize.drive("acp", ...)`` needs for one run."""

    command: list[str]
    cwd: Path
    env: dict[str, str]


@contextmanager
def fake_model(agent: AcpAgent, root: Path, conversations: dict[str, list[Any]]) -> Iterator[AcpRun]:
    """A scratch HOME and project under ``root`` and the fake model playing ``conversations``."""
    binary = agent.binary()
    home, cwd = root / "home", root / "project"
    home.mkdir()
    cwd.mkdir()
    (cwd / "hello.txt").write_text("hello world\n")
    script = with_cwd(Script(conversations), str(cwd))
    with FakeServer(script, root / "requests.jsonl", agent.handler) as server:
        env = {"HOME": str(home), "TMPDIR": str(root), "NO_COLOR": "1"}
        if agent.name == "claude-agent-acp":
            env |= {
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "sk-ant-fake-key",
                "IS_SANDBOX": "1",  # Claude Code as root
                "DISABLE_AUTOUPDATER": "1",
                # no side request suggesting the next prompt: it would play a step of the script
                "CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION": "false",
            }
            claude = binary.parent / "claude"
            if claude.is_file():  # the Claude Code installed beside the adapter
                env["CLAUDE_CODE_EXECUTABLE"] = str(claude)
        elif agent.handler is GeminiHandler:
            settings = home / ".gemini" / "settings.json"  # API-key auth, as tools/record sets it up
            settings.parent.mkdir()
            settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
            env |= {
                "GEMINI_API_KEY": "fake-gemini-key",
                "GOOGLE_GEMINI_BASE_URL": server.url,
                "GEMINI_CLI_TRUST_WORKSPACE": "true",
            }
        else:
            codex_home = home / ".codex"
            codex_home.mkdir()
            (codex_home / "config.toml").write_text(CODEX_CONFIG.format(url=server.url))
            env["CODEX_HOME"] = str(codex_home)
        yield AcpRun([str(binary), *agent.args], cwd, env)
