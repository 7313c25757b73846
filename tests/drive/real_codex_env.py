"""The real Codex CLI, talking to tools/record's fake Responses server on 127.0.0.1.

For tests/drive/test_real_codex.py.  The binary is looked up in ``$NORMALIZE_AGENTS_BIN``,
then /tmp/normalize-drive-npm/node_modules/.bin (where the npm install of the CLIs goes),
then ``PATH``.  Each run gets a scratch ``HOME`` and ``CODEX_HOME`` whose config.toml
points Codex at the fake server, as tools/record/record.py configures it: nothing else
is contacted, and no API key is needed.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from drivekit import agent_binary

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "tools" / "record"
#: The version the integration tests were written against (adapters/codex-app-server/VERSIONS).
VERSION = "0.171.0"

#: tools/record's config: the fake server as the model provider; approvals per thread.
CONFIG = """\
model = "gpt-5.5"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "mock"
base_url = "{url}/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 1
"""


def record_module(name: str) -> ModuleType:
    """A module of tools/record (``servers``, ``scenarios``): the fake model servers and their scripts."""
    if str(RECORD) not in sys.path:
        sys.path.insert(0, str(RECORD))
    return importlib.import_module(name)


def codex_binary() -> Path | None:
    """The codex executable to test, or None when it is not installed (drivekit.agent_binary)."""
    return agent_binary("codex")


def codex_version(binary: Path) -> str | None:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False)
    m = re.search(r"\d+\.\d+\.\d+", out.stdout)
    return m.group(0) if m else None


@dataclass(frozen=True)
class CodexRun:
    binary: Path
    cwd: Path  # the project: holds hello.txt
    env: dict[str, str]
    requests: Path  # what the fake server was asked (requests.jsonl)


@contextmanager
def codex_env(tmp_path: Path, binary: Path, conversations: dict[str, list[Any]]) -> Iterator[CodexRun]:
    """A scratch home and project, and the fake Responses server playing ``conversations``.

    ``conversations``: per marker of the first prompt, the model's answers in order
    (``servers.Step`` lists); ``{cwd}`` in tool inputs becomes the project's path.
    """
    servers = record_module("servers")
    scenarios = record_module("scenarios")
    home = tmp_path / "home"
    project = tmp_path / "project"
    (home / ".codex").mkdir(parents=True)
    project.mkdir()
    (project / "hello.txt").write_text("hello world\n")
    script = scenarios.with_cwd(servers.Script(conversations), str(project))
    requests = tmp_path / "requests.jsonl"
    with servers.FakeServer(script, requests, servers.ResponsesHandler) as srv:
        (home / ".codex" / "config.toml").write_text(CONFIG.format(url=srv.url))
        env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex"), "TMPDIR": str(tmp_path), "NO_COLOR": "1"}
        yield CodexRun(binary, project, env, requests)
