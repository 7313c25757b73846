"""docs/drive.md's script, written once, run unchanged against the real Claude Code, Codex and claude-agent-acp.

Each agent talks to a fake model server on 127.0.0.1 that asks for a shell command in each of
the two turns; the agent's own settings (not the script) make it ask before running one. The
script answers every permission request with ``allow``: both files exist afterwards, both turns
completed, and the events it printed are those of converting its recording.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import real_acp_env
import real_claude_env
import real_codex_env

import normalize

pytestmark = pytest.mark.agents
DOC = Path(__file__).resolve().parents[2] / "docs" / "drive.md"
MARKER = "create the file one.txt"
LIMIT = 300


def script() -> str:
    """The python block under "One script, any agent"."""
    text = DOC.read_text()
    section = text[text.index("## One script, any agent") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


class Run:
    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.argv, self.cwd, self.env = argv, cwd, env


@contextmanager
def claude(tmp_path: Path) -> Iterator[Run]:
    binary = real_claude_env.find_claude()
    if binary is None:
        pytest.skip(real_claude_env.WHY_MISSING)
    s = real_claude_env
    steps = [s.Step(blocks=(s.Tool("Bash", {"command": f"touch {f}", "description": f"Create {f}"}),)) for f in NAMES]
    with s.fake_anthropic(tmp_path, {MARKER: interleave(steps, s.Step, s.Text)}) as server:
        work = tmp_path / "work"
        work.mkdir()
        yield Run(["claude"], work, {**server.env(), "PATH": f"{binary.parent}:{os.environ['PATH']}"})


@contextmanager
def codex(tmp_path: Path) -> Iterator[Run]:
    binary = real_codex_env.codex_binary()
    if binary is None:
        pytest.skip("the Codex CLI is not installed ($NORMALIZE_AGENTS_BIN, /tmp/normalize-drive-npm, PATH)")
    servers = real_codex_env.record_module("servers")

    def shell(name: str) -> Any:
        args = {"cmd": f"touch {name}", "workdir": "{cwd}", "sandbox_permissions": "require_escalated"}
        return servers.Step(blocks=(servers.Tool("exec_command", {**args, "justification": "May I?"}),))

    steps = interleave([shell(f) for f in NAMES], servers.Step, servers.Text)
    with real_codex_env.codex_env(tmp_path, binary, {MARKER: steps}) as run:
        config = Path(run.env["CODEX_HOME"]) / "config.toml"  # the user's settings: ask before escalating
        text = config.read_text().replace('approval_policy = "never"', 'approval_policy = "on-request"')
        config.write_text(text.replace('sandbox_mode = "danger-full-access"', 'sandbox_mode = "read-only"'))
        yield Run(["codex"], run.cwd, {**run.env, "PATH": f"{binary.parent}:{os.environ['PATH']}"})


@contextmanager
def claude_agent_acp(tmp_path: Path) -> Iterator[Run]:
    agent = real_acp_env.AGENTS["claude-agent-acp"]
    s = real_acp_env
    steps = interleave([s.Step(blocks=(agent.shell(f"touch {f}"),)) for f in NAMES], s.Step, s.Text)
    with s.fake_model(agent, tmp_path, {MARKER: steps}) as run:
        settings = Path(run.env["HOME"]) / ".claude" / "settings.json"  # the user's settings: ask first
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"permissions": {"defaultMode": "default"}}))
        yield Run(["acp", *run.command], run.cwd, run.env)


NAMES = ("one.txt", "two.txt")


def interleave(shells: list[Any], step: Any, text: Any) -> list[Any]:
    """Per turn: the shell call, then the model's last word once the call's result came back."""
    return [s for call, name in zip(shells, NAMES, strict=True) for s in (call, step(blocks=(text(f"Made {name}."),)))]


@pytest.mark.parametrize("agent", [claude, codex, claude_agent_acp], ids=["claude", "codex", "acp-claude-agent-acp"])
def test_the_documented_script_runs_unchanged(tmp_path: Path, agent: Any) -> None:
    code = tmp_path / "script.py"
    code.write_text(script())
    with agent(tmp_path) as run:
        env = {**os.environ, **run.env}
        done = subprocess.run(
            [sys.executable, str(code), *run.argv], cwd=run.cwd, env=env, capture_output=True, timeout=LIMIT
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
        for name in NAMES:
            assert (run.cwd / name).exists(), f"{name} was not made"
    printed = [normalize.decode(line) for line in done.stdout.splitlines()]
    bodies = [e.event.body for e in printed if isinstance(e, normalize.SessionEvent)]
    assert [b.decision for b in bodies if isinstance(b, normalize.RequestResolved)] == ["allow", "allow"]
    assert [b.reason for b in bodies if isinstance(b, normalize.TurnComplete)] == ["ok", "ok"]
    assert b"turns: ['ok', 'ok']" in done.stderr
    converted = list(normalize.events(normalize.read_records([run.cwd / "run.tap.jsonl"])))
    assert [normalize.encode(e) for e in printed] == [normalize.encode(e) for e in converted][: len(printed)]
