"""The real Codex CLI driven through ``normalize.drive("codex")``, against the fake Responses server.

Skipped, with the reason, when codex is not installed (tests/drive/real_codex_env.py says where
it is looked for).  Each scenario checks what a host relies on (the turns, the files a command
made or did not make) and that the events are those ``normalize convert`` gives for the
recorded wire.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from drivekit import assert_replays, bodies
from real_codex_env import VERSION, codex_binary, codex_env, codex_version, record_module

import normalize
from normalize import AssistantMessage, PermissionRequest, RequestResolved, SessionEvent, TurnComplete
from normalize._cli import main

BINARY = codex_binary()
pytestmark = [
    pytest.mark.agents,
    pytest.mark.anyio,
    pytest.mark.skipif(
        BINARY is None,
        reason=f"the Codex CLI is not installed ($NORMALIZE_AGENTS_BIN, /tmp/normalize-drive-npm, PATH; "
        f"npm install @openai/codex@{VERSION})",
    ),
]
#: Seconds one scenario may take (Codex starts in about a second here).
LIMIT = 120
STORY = " ".join(f"Sentence {i} of a long story." for i in range(60))


@pytest.fixture
def anyio_backend() -> str:
    """The real CLI runs once, on asyncio (both event loops are covered by the fake's tests)."""
    return "asyncio"


@pytest.fixture(scope="module")
def servers() -> Any:
    return record_module("servers")


def escalated(servers: Any, cmd: str) -> Any:
    """The model's call of Codex's shell tool asking to run outside the sandbox: Codex asks the client."""
    args = {"cmd": cmd, "workdir": "{cwd}", "sandbox_permissions": "require_escalated", "justification": "May I?"}
    return servers.Tool("exec_command", args)


async def rest(s: normalize.DriveSession) -> list[Any]:
    await s.close()
    return [ev async for ev in s]


def test_the_installed_codex_is_the_tested_version() -> None:
    assert BINARY is not None
    assert codex_version(BINARY) == VERSION


async def test_two_prompts(tmp_path: Path, servers: Any) -> None:
    assert BINARY is not None
    script = {
        "scenario twoturns": [
            servers.Step(blocks=(servers.Text("First answer."),)),
            servers.Step(blocks=(servers.Thinking("About the second."), servers.Text("Second answer."))),
        ]
    }
    record = tmp_path / "run.tap.jsonl"
    events: list[Any] = []
    with codex_env(tmp_path, BINARY, script) as run, anyio.fail_after(LIMIT):
        async with normalize.drive("codex", cwd=run.cwd, command=[str(run.binary)], env=run.env, record=record) as s:
            for text in ("scenario twoturns: first question", "scenario twoturns: second question"):
                events.extend([ev async for ev in s.turn(text)])
            assert s.turns == ["ok", "ok"]
            events.extend(await rest(s))
    assert [b.text for b in bodies(events, AssistantMessage)] == ["First answer.", "Second answer."]
    assert [b.reason for b in bodies(events, TurnComplete)] == ["ok", "ok"]
    assert_replays(events, record)


@pytest.mark.parametrize(("decision", "made"), [("allow", True), ("deny", False)])
async def test_a_shell_command_allowed_or_denied(tmp_path: Path, servers: Any, decision: Any, made: bool) -> None:
    assert BINARY is not None
    script = {
        "scenario shell": [
            servers.Step(blocks=(servers.Text("I'll create it."), escalated(servers, "touch made.txt"))),
            servers.Step(blocks=(servers.Text("Done."),)),
        ]
    }
    record = tmp_path / "run.tap.jsonl"
    events: list[Any] = []
    with codex_env(tmp_path, BINARY, script) as run, anyio.fail_after(LIMIT):
        # read-only: the sandbox keeps the command in, so Codex asks before running it outside
        async with normalize.drive(
            "codex", cwd=run.cwd, command=[str(run.binary)], env=run.env, record=record, mode="read-only"
        ) as s:
            async for ev in s.turn("scenario shell: create made.txt"):
                events.append(ev)
                if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                    await s.respond(ev.event.body.request_id, decision)
            assert s.turns == ["ok"]
            events.extend(await rest(s))
        assert (run.cwd / "made.txt").exists() is made
    (request,) = bodies(events, PermissionRequest)
    assert "touch made.txt" in request.tool_call.title
    (resolved,) = bodies(events, RequestResolved)
    assert resolved.decision == decision
    assert json.loads(bytes(resolved.answer)) == {"decision": "accept" if made else "decline"}
    assert_replays(events, record)


async def test_cancel_mid_turn(tmp_path: Path, servers: Any) -> None:
    assert BINARY is not None
    script = {
        "scenario interrupt": [
            servers.Step(blocks=(servers.Text(STORY),), delay=0.5),
            servers.Step(blocks=(servers.Text("Briefly: done."),)),
        ]
    }
    record = tmp_path / "run.tap.jsonl"
    events: list[Any] = []
    with codex_env(tmp_path, BINARY, script) as run, anyio.fail_after(LIMIT):
        async with normalize.drive("codex", cwd=run.cwd, command=[str(run.binary)], env=run.env, record=record) as s:
            async for ev in s.turn("scenario interrupt: tell a long story"):
                events.append(ev)
                if isinstance(ev, SessionEvent) and ev.event.kind == "assistant-delta" and s.turn_running:
                    with pytest.raises(normalize.TurnRunning):
                        await s.prompt("scenario interrupt: too early")
                    await s.cancel()
            events.extend([ev async for ev in s.turn("scenario interrupt: and now briefly")])
            assert s.turns == ["interrupt", "ok"]
            events.extend(await rest(s))
    assert [b.stop_reason for b in bodies(events, TurnComplete)] == ["interrupted", "completed"]
    assert bodies(events, AssistantMessage)[-1].text == "Briefly: done."
    assert_replays(events, record)


async def test_leaving_during_a_turn_interrupts_it(tmp_path: Path, servers: Any) -> None:
    assert BINARY is not None
    script = {"scenario leave": [servers.Step(blocks=(servers.Text(STORY),), delay=0.5)]}
    record = tmp_path / "run.tap.jsonl"
    events: list[Any] = []
    with codex_env(tmp_path, BINARY, script) as run, anyio.fail_after(LIMIT):
        async with normalize.drive("codex", cwd=run.cwd, command=[str(run.binary)], env=run.env, record=record) as s:
            async for ev in s.turn("scenario leave: tell a long story"):
                events.append(ev)
                if isinstance(ev, SessionEvent) and ev.event.kind == "assistant-delta":
                    break
        events.extend([ev async for ev in s])
    assert [b.stop_reason for b in bodies(events, TurnComplete)] == ["interrupted"]
    assert not [e for e in events if isinstance(e, normalize.SessionFailed)]
    assert s.returncode == 0
    assert_replays(events, record)


async def test_resume_continues_the_thread_in_a_new_process(tmp_path: Path, servers: Any) -> None:
    assert BINARY is not None
    script = {
        "scenario resume": [
            servers.Step(blocks=(servers.Text("First answer."),)),
            servers.Step(blocks=(servers.Text("Second answer, after the resume."),)),
        ]
    }
    first: list[Any] = []
    again: list[Any] = []
    with codex_env(tmp_path, BINARY, script) as run, anyio.fail_after(LIMIT):
        opts: dict[str, Any] = {"cwd": run.cwd, "command": [str(run.binary)], "env": run.env}
        async with normalize.drive("codex", record=tmp_path / "first.tap.jsonl", **opts) as s:
            first.extend([ev async for ev in s.turn("scenario resume: first question")])
            thread = s.backend.thread_id  # type: ignore[attr-defined]
            first.extend(await rest(s))
        record = tmp_path / "again.tap.jsonl"
        async with normalize.drive("codex", record=record, resume=thread, **opts) as s:
            again.extend([ev async for ev in s.turn("scenario resume: second question")])
            assert s.turns == ["ok"]
            again.extend(await rest(s))
    (resumed,) = [e for e in again if isinstance(e, normalize.SessionResumed)]
    assert resumed.record.native_session_id == thread
    # the first process's conversation comes back as history, then the new turn runs live
    texts = [
        (e.event.origin, e.event.body.text)
        for e in again
        if isinstance(e, SessionEvent) and isinstance(e.event.body, AssistantMessage)
    ]
    assert texts == [("replay", "First answer."), ("live", "Second answer, after the resume.")]
    assert_replays(again, record)


def test_normalize_run_two_turns_with_an_approval_each(
    tmp_path: Path, servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert BINARY is not None
    steps = [
        servers.Step(blocks=(escalated(servers, "touch one.txt"),)),
        servers.Step(blocks=(servers.Text("Created one.txt."),)),
        servers.Step(blocks=(escalated(servers, "touch two.txt"),)),
        servers.Step(blocks=(servers.Text("Created two.txt."),)),
    ]
    out, rec = tmp_path / "events.jsonl", tmp_path / "run.tap.jsonl"
    with codex_env(tmp_path, BINARY, {"scenario drive-run": steps}) as run:
        for name, value in run.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("PATH", f"{BINARY.parent}:{os.environ['PATH']}")  # `codex` as a user has it
        argv = ["run", "codex", "--approve", "allow", "--mode", "read-only", "--cwd", str(run.cwd)]
        argv += ["-o", str(out), "--record", str(rec)]
        code = main([*argv, "--prompt", "scenario drive-run: create one.txt", "--prompt", "now two.txt"])
        assert code == 0
        assert (run.cwd / "one.txt").exists()
        assert (run.cwd / "two.txt").exists()
    written = [normalize.decode(line) for line in out.read_bytes().splitlines()[1:]]
    assert [b.decision for b in bodies(written, RequestResolved)] == ["allow", "allow"]
    assert [b.reason for b in bodies(written, TurnComplete)] == ["ok", "ok"]
    converted = [normalize.encode(e) for e in normalize.events(normalize.read_records([rec]))]
    assert out.read_bytes().splitlines()[1:] == converted
