"""The real Claude Code CLI against the recorder's fake Anthropic server (tools/record/servers.py).

The server is the one the captures were recorded with: a scripted ``POST /v1/messages``
streaming server on 127.0.0.1, whose conversations are recognised by a marker in their
first user message.  The CLI runs in a scratch HOME with a fake API key, as
``tools/record/record.py`` runs it, so nothing leaves the machine.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from drivekit import DEFAULT_BIN, agent_binary

ROOT = Path(__file__).resolve().parents[2]


def find_claude() -> Path | None:
    """The ``claude`` program (drivekit.agent_binary says where it is looked for)."""
    return agent_binary("claude")


WHY_MISSING = (
    "the Claude Code CLI is not installed (looked in $NORMALIZE_AGENTS_BIN, "
    f"{DEFAULT_BIN} and PATH; scripts/install-agents installs it)"
)


def _servers() -> ModuleType:
    """tools/record/servers.py, the recorder's fake model servers (standard library only)."""
    name = "normalize_record_servers"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / "record" / "servers.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


servers: Any = _servers()
Script: Any = servers.Script
Step: Any = servers.Step
Text: Any = servers.Text
Tool: Any = servers.Tool


@dataclass
class FakeAnthropic:
    """A running fake server, and what the CLI needs to use it."""

    url: str
    home: Path
    requests: Path

    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-key",
            "IS_SANDBOX": "1",
            "DISABLE_AUTOUPDATER": "1",
            "NO_COLOR": "1",
        }


@contextmanager
def fake_anthropic(tmp_path: Path, conversations: dict[str, list[Any]]) -> Iterator[FakeAnthropic]:
    """The fake Anthropic server answering ``conversations`` (marker -> steps), with a scratch HOME."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    log = tmp_path / "requests.jsonl"
    with servers.FakeServer(Script(conversations), log, servers.AnthropicHandler) as srv:
        yield FakeAnthropic(url=srv.url, home=home, requests=log)
