"""The ACP backend driving the real claude-agent-acp and codex-acp against fake model servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from drivekit import bodies
from real_acp_env import AGENTS, AcpAgent, Step, Text, Thinking, fake_model

import normalize
from normalize import AssistantDelta, AssistantMessage, PermissionRequest, RequestResolved, SessionEvent
from normalize._cli import main
from normalize._model import Decision

pytestmark = [pytest.mark.agents, pytest.mark.anyio]
#: Seconds one real turn may take (the adapters start Claude Code or Codex behind them).
TURN = 120


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the agents are slow to start; the backend's anyio use is covered on trio by test_acp.py


@pytest.fixture(params=sorted(AGENTS))
def agent(request: pytest.FixtureRequest) -> AcpAgent:
    return AGENTS[str(request.param)]


async def answered(s: normalize.DriveSession, text: str, decision: Decision) -> list[Any]:
    events: list[Any] = []
    with anyio.fail_after(TURN):
        async for ev in s.turn(text):
            events.append(ev)
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                await s.respond(ev.event.body.request_id, decision)
    return events


async def test_two_prompts(agent: AcpAgent, tmp_path: Path) -> None:
    steps = [
        Step(blocks=(Text("Hello from the fake model server!"),)),
        Step(blocks=(Thinking("Two and two make four."), Text("2 + 2 = 4."))),
    ]
    record = tmp_path / "run.tap.jsonl"
    events: list[Any] = []
    with fake_model(agent, tmp_path, {"scenario text": steps}) as run:
        async with normalize.drive("acp", command=run.command, cwd=run.cwd, env=run.env, record=record) as s:
            for text in ("scenario text: hello", "scenario text: please think about 2+2"):
                with anyio.fail_after(TURN):
                    events += [ev async for ev in s.turn(text)]
            assert s.turns == ["ok", "ok"]
            await s.close()
            events += [ev async for ev in s]
    texts = [b.text for b in bodies(events, AssistantMessage)]
    assert texts[-2:] == ["Hello from the fake model server!", "2 + 2 = 4."]
    converted = list(normalize.events(normalize.read_records([record])))
    assert [normalize.encode(e) for e in events] == [normalize.encode(e) for e in converted]


@pytest.mark.parametrize(("decision", "made"), [("allow", True), ("deny", False)])
async def test_a_shell_command_allowed_or_denied(
    agent: AcpAgent, tmp_path: Path, decision: Decision, made: bool
) -> None:
    steps = [
        Step(blocks=(Text("I'll create it."), agent.shell("touch made.txt"))),
        Step(blocks=(Text("Done."),)),
    ]
    with fake_model(agent, tmp_path, {"scenario shell": steps}) as run:
        async with normalize.drive("acp", command=run.command, cwd=run.cwd, env=run.env, mode=agent.ask_mode) as s:
            events = await answered(s, "scenario shell: create made.txt", decision)
        assert (run.cwd / "made.txt").exists() is made
    (request,) = bodies(events, PermissionRequest)
    (resolved,) = bodies(events, RequestResolved)
    assert resolved.request_id == request.request_id
    assert resolved.decision == decision


async def test_a_cancel_mid_turn(agent: AcpAgent, tmp_path: Path) -> None:
    story = " ".join(f"Word{i}" for i in range(400))
    steps = [Step(blocks=(Text(story),), delay=0.7), Step(blocks=(Text("Briefly: done."),))]
    events: list[Any] = []
    cancelled = False
    with fake_model(agent, tmp_path, {"scenario cancel": steps}) as run:
        async with normalize.drive("acp", command=run.command, cwd=run.cwd, env=run.env) as s:
            with anyio.fail_after(TURN):
                async for ev in s.turn("scenario cancel: tell a long story"):
                    events.append(ev)
                    if not cancelled and isinstance(ev, SessionEvent) and isinstance(ev.event.body, AssistantDelta):
                        cancelled = True
                        await s.cancel()
            assert s.turns == ["interrupt"]
            with anyio.fail_after(TURN):
                events += [ev async for ev in s.turn("scenario cancel: and now briefly")]
            assert s.turns == ["interrupt", "ok"]
    assert [b.text for b in bodies(events, AssistantMessage)][-1] == "Briefly: done."


async def test_a_session_loaded_by_a_new_process(agent: AcpAgent, tmp_path: Path) -> None:
    if agent.name == "gemini-acp":
        # gemini-cli 0.61 answers session/load here with -32603 "No previous sessions found for this
        # project" although the chat file is on disk (docs/drive-acp.md, "Tested against")
        pytest.skip("gemini-cli 0.61 does not find a session driven here when loaded by a new process")
    steps = [Step(blocks=(Text("First answer."),)), Step(blocks=(Text("Second answer, after the load."),))]
    with fake_model(agent, tmp_path, {"scenario load": steps}) as run:
        async with normalize.drive("acp", command=run.command, cwd=run.cwd, env=run.env) as s:
            with anyio.fail_after(TURN):
                first = [ev async for ev in s.turn("scenario load: first question")]
            backend: Any = s.backend
            native = backend.session_id
        async with normalize.drive("acp", command=run.command, cwd=run.cwd, env=run.env, resume=native) as s:
            with anyio.fail_after(TURN):
                second = [ev async for ev in s.turn("scenario load: and a second question")]
            assert s.turns == ["ok"]
    assert [b.text for b in bodies(first, AssistantMessage)][-1] == "First answer."
    replayed = [e.event.body for e in second if isinstance(e, SessionEvent) and e.event.origin == "replay"]
    live = [e.event.body for e in second if isinstance(e, SessionEvent) and e.event.origin == "live"]
    assert "First answer." in [b.text for b in replayed if isinstance(b, AssistantMessage)]
    assert [b.text for b in live if isinstance(b, AssistantMessage)][-1] == "Second answer, after the load."


def test_normalize_run_acp_two_turns_with_an_approval_each(
    agent: AcpAgent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = [
        Step(blocks=(Text("First file."), agent.shell("touch one.txt"))),
        Step(blocks=(Text("Made one.txt."),)),
        Step(blocks=(Text("Second file."), agent.shell("touch two.txt"))),
        Step(blocks=(Text("Made two.txt."),)),
    ]
    out, record = tmp_path / "events.jsonl", tmp_path / "run.tap.jsonl"
    with fake_model(agent, tmp_path, {"scenario run": steps}) as run:
        for name, value in run.env.items():
            monkeypatch.setenv(name, value)
        argv = ["run", "acp", "--approve", "allow", "--mode", agent.ask_mode, "--cwd", str(run.cwd)]
        argv += ["--prompt", "scenario run: make one.txt", "--prompt", "scenario run: now two.txt"]
        code = main([*argv, "-o", str(out), "--record", str(record), "--", *run.command])
        assert code == 0
        assert (run.cwd / "one.txt").exists()
        assert (run.cwd / "two.txt").exists()
    events = [e for e in map(normalize.decode, out.read_bytes().splitlines()[1:]) if isinstance(e, SessionEvent)]
    resolved = bodies(events, RequestResolved)
    assert [r.decision for r in resolved] == ["allow", "allow"]
    assert [b.reason for b in bodies(events, normalize.TurnComplete)] == ["ok", "ok"]
