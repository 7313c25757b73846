"""The real Claude Code CLI driven through ``normalize.drive``, against the fake Anthropic server.

Skipped, with the reason, when the CLI is not installed (scripts/install-agents installs the
version of adapters/claude-stream-json/VERSIONS).  Each session is compared with ``normalize
convert`` of its recording, as the fake-CLI tests do.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from drivekit import bodies
from real_claude_env import WHY_MISSING, FakeAnthropic, Step, Text, Tool, fake_anthropic, find_claude
from test_claude import assert_replays

import normalize
from normalize import (
    AssistantDelta,
    AssistantMessage,
    AuthenticationRequired,
    Decision,
    PermissionRequest,
    RequestResolved,
    SessionEvent,
    ToolCall,
    TurnComplete,
    UserMessage,
)
from normalize._cli import main

CLAUDE = find_claude()

pytestmark = [
    pytest.mark.agents,
    pytest.mark.anyio,
    pytest.mark.skipif(CLAUDE is None, reason=WHY_MISSING),
]


@pytest.fixture
def anyio_backend() -> str:
    """One event loop is enough here: the fake CLI's tests run both."""
    return "asyncio"


#: Seconds a real session may take (the CLI starts in 1-2 s; a slow machine takes longer).
LIMIT = 120


def real_claude(tmp_path: Path, server: FakeAnthropic, *args: str) -> normalize.DriveSession:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return normalize.drive(
        "claude", cwd=work, command=[str(CLAUDE)], args=args, env=server.env(), record=tmp_path / "run.tap.jsonl"
    )


async def test_two_prompts(tmp_path: Path) -> None:
    steps = [Step(blocks=(Text("First answer."),)), Step(blocks=(Text("Second answer."),))]
    events: list[Any] = []
    with fake_anthropic(tmp_path, {"scenario drive-two": steps}) as server:
        with anyio.fail_after(LIMIT):
            async with real_claude(tmp_path, server) as s:
                for text in ("scenario drive-two: first question", "second question"):
                    events.extend([ev async for ev in s.turn(text)])
                assert s.turns == ["ok", "ok"]
        events.extend([ev async for ev in s])
    assert [b.text for b in bodies(events, AssistantMessage)] == ["First answer.", "Second answer."]
    assert [b.reason for b in bodies(events, TurnComplete)] == ["ok", "ok"]
    assert_replays(events, tmp_path)


@pytest.mark.parametrize(("decision", "exists"), [("allow", True), ("deny", False)])
async def test_a_shell_command_allowed_or_denied(tmp_path: Path, decision: Decision, exists: bool) -> None:
    touch = Tool("Bash", {"command": "touch made-by-claude.txt", "description": "Create a file"})
    steps = [Step(blocks=(touch,)), Step(blocks=(Text("Done, or not."),))]
    events: list[Any] = []
    with fake_anthropic(tmp_path, {"scenario drive-shell": steps}) as server:
        with anyio.fail_after(LIMIT):
            async with real_claude(tmp_path, server) as s:
                async for ev in s.turn("scenario drive-shell: create the file"):
                    events.append(ev)
                    if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                        await s.respond(ev.event.body.request_id, decision)
                assert s.turns == ["ok"]
        events.extend([ev async for ev in s])
    assert (tmp_path / "work" / "made-by-claude.txt").exists() is exists
    (request,) = bodies(events, PermissionRequest)
    assert request.detail.command == "touch made-by-claude.txt"
    (resolved,) = bodies(events, RequestResolved)
    assert resolved.decision == decision
    assert [c.phase for c in bodies(events, ToolCall)][-1] == ("completed" if exists else "failed")
    assert_replays(events, tmp_path)


async def test_a_cancel_mid_turn(tmp_path: Path) -> None:
    story = " ".join(f"Sentence {i} of a long story." for i in range(60))
    cancelled = False
    steps = [Step(blocks=(Text(story),), delay=0.5), Step(blocks=(Text("Briefly: done."),))]
    events: list[Any] = []
    with fake_anthropic(tmp_path, {"scenario drive-cancel": steps}) as server:
        with anyio.fail_after(LIMIT):
            async with real_claude(tmp_path, server, "--include-partial-messages") as s:
                async for ev in s.turn("scenario drive-cancel: tell a long story"):
                    events.append(ev)
                    if len(bodies(events, AssistantDelta)) == 1 and not s.turns and not cancelled:
                        cancelled = True
                        await s.cancel()
                events.extend([ev async for ev in s.turn("and now briefly")])
                assert s.turns == ["interrupt", "ok"]
        events.extend([ev async for ev in s])
    assert bodies(events, AssistantMessage)[-1].text == "Briefly: done."
    assert story not in [b.text for b in bodies(events, AssistantMessage)]  # the story was cut short
    assert_replays(events, tmp_path)


async def test_no_credentials(tmp_path: Path) -> None:
    with fake_anthropic(tmp_path, {}) as server:
        env = {**server.env(), "ANTHROPIC_API_KEY": ""}
        session = normalize.drive("claude", cwd=tmp_path, command=[str(CLAUDE)], env=env)
        with pytest.raises(AuthenticationRequired):
            async with session:
                pass


async def test_a_prompt_during_a_turn_is_queued(tmp_path: Path) -> None:
    steps = [Step(blocks=(Text("A slow first answer."),), delay=0.5), Step(blocks=(Text("The queued answer."),))]
    events: list[Any] = []
    with fake_anthropic(tmp_path, {"scenario drive-queue": steps}) as server:
        with anyio.fail_after(LIMIT):
            async with real_claude(tmp_path, server, "--include-partial-messages") as s:
                await s.prompt("scenario drive-queue: first")
                async for ev in s:
                    events.append(ev)
                    if isinstance(ev, SessionEvent) and isinstance(ev.event.body, AssistantDelta):
                        break
                assert s.turn_running
                await s.prompt("second, while the first runs")
                async for ev in s:
                    events.append(ev)
                    if len(s.turns) == 2:
                        break
                assert s.turns == ["ok", "ok"]
        events.extend([ev async for ev in s])
    said = [(b.text, b.queued) for b in bodies(events, UserMessage)]
    assert said == [("scenario drive-queue: first", None), ("second, while the first runs", True)]
    assert [b.text for b in bodies(events, AssistantMessage)] == ["A slow first answer.", "The queued answer."]
    assert_replays(events, tmp_path)


def test_normalize_run_two_turns_with_an_approval_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert CLAUDE is not None
    steps = [
        Step(blocks=(Tool("Bash", {"command": "touch one.txt", "description": "Create one.txt"}),)),
        Step(blocks=(Text("Created one.txt."),)),
        Step(blocks=(Tool("Bash", {"command": "touch two.txt", "description": "Create two.txt"}),)),
        Step(blocks=(Text("Created two.txt."),)),
    ]
    work, out, rec = tmp_path / "work", tmp_path / "events.jsonl", tmp_path / "run.tap.jsonl"
    work.mkdir()
    with fake_anthropic(tmp_path, {"scenario drive-run": steps}) as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("PATH", f"{CLAUDE.parent}:{os.environ['PATH']}")  # `claude` as a user has it
        argv = ["run", "claude", "--approve", "allow", "--cwd", str(work), "-o", str(out), "--record", str(rec)]
        code = main([*argv, "--prompt", "scenario drive-run: create one.txt", "--prompt", "now two.txt"])
    assert code == 0
    assert (work / "one.txt").exists()
    assert (work / "two.txt").exists()
    written = [normalize.decode(line) for line in out.read_bytes().splitlines()[1:]]
    assert [b.decision for b in bodies(written, RequestResolved)] == ["allow", "allow"]
    assert [b.reason for b in bodies(written, TurnComplete)] == ["ok", "ok"]
    converted = [normalize.encode(e) for e in normalize.events(normalize.read_records([rec]))]
    assert out.read_bytes().splitlines()[1:] == converted


async def test_resume_a_session(tmp_path: Path) -> None:
    steps = [Step(blocks=(Text("Hello, first run."),)), Step(blocks=(Text("Hello again, resumed."),))]
    with fake_anthropic(tmp_path, {"scenario drive-resume": steps}) as server:
        with anyio.fail_after(LIMIT):
            async with real_claude(tmp_path, server) as s:
                first = [ev async for ev in s.turn("scenario drive-resume: hello")]
            (created,) = [e for e in first if isinstance(e, normalize.SessionCreated)]
            native = created.record.native_session_id
            assert native
            async with normalize.drive(
                "claude", cwd=tmp_path / "work", command=[str(CLAUDE)], env=server.env(), resume=native
            ) as again:
                events = [ev async for ev in again.turn("and again")]
                assert again.turns == ["ok"]
    assert bodies(events, AssistantMessage)[-1].text == "Hello again, resumed."
    (created,) = [e for e in events if isinstance(e, normalize.SessionCreated)]
    assert created.record.native_session_id == native
    # the model saw the first run's conversation: the resumed session's request starts with it
    asked = [json.loads(line)["body"] for line in server.requests.read_text().splitlines()]
    last = [b for b in asked if b and b.get("tools")][-1]
    said = json.dumps(last["messages"])
    assert "scenario drive-resume: hello" in said
    assert "Hello, first run." in said
