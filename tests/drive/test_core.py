"""The drive core with a tiny scripted ACP agent: what every backend relies on."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from drivekit import bodies
from tiny import TinyAcp

import normalize
from normalize import (
    AgentExited,
    AgentNotFound,
    PermissionRequest,
    RequestResolved,
    SessionEvent,
    TurnRunning,
    UnknownRequest,
    UsageError,
)
from normalize._drive import option_for
from normalize._model import PermissionOption, ToolCallRef

pytestmark = pytest.mark.anyio


async def test_two_prompts_two_turns(tmp_path: Path) -> None:
    events: list[Any] = []
    async with normalize.drive(TinyAcp, cwd=tmp_path) as s:
        for text in ("one", "two"):
            events.extend([ev async for ev in s.turn(text)])
        assert s.turns == ["ok", "ok"]
    texts = [b.text for b in bodies(events, normalize.AssistantMessage)]
    assert texts == ["echo: one", "echo: two"]
    accepted = [e.message_id for e in events if isinstance(e, normalize.MessageAccepted)]
    assert len(accepted) == 2
    assert len(set(accepted)) == 2


async def test_prompt_returns_the_accepted_message_id(tmp_path: Path) -> None:
    async with normalize.drive(TinyAcp, cwd=tmp_path) as s:
        mid = await s.prompt("hi")
        seen = []
        async for ev in s:
            seen.append(ev)
            if isinstance(ev, SessionEvent) and ev.event.kind == "turn-complete":
                break
    assert mid == next(e.message_id for e in seen if isinstance(e, normalize.MessageAccepted))


@pytest.mark.parametrize(("decision", "option"), [("allow", "yes"), ("deny", "no")])
async def test_a_permission_answered_once(tmp_path: Path, decision: Any, option: str) -> None:
    events: list[Any] = []
    async with normalize.drive(TinyAcp, cwd=tmp_path) as s:
        async for ev in s.turn("ask"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                rid = ev.event.body.request_id
                assert rid in s.open_requests
                await s.respond(rid, decision)
                with pytest.raises(UnknownRequest, match="already resolved"):
                    await s.respond(rid, decision)
        with pytest.raises(UnknownRequest, match="never asked"):
            await s.respond("no-such-request", "allow")
    (resolved,) = bodies(events, RequestResolved)
    assert resolved.decision == decision
    assert resolved.option_id == option
    assert bodies(events, normalize.AssistantMessage)[-1].text == f"chosen: {option}"


async def test_a_prompt_during_a_turn_is_refused_then_cancel_ends_it(tmp_path: Path) -> None:
    async with normalize.drive(TinyAcp, cwd=tmp_path) as s:
        events = []
        async for ev in s.turn("slow"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and ev.event.kind == "assistant-delta":
                with pytest.raises(TurnRunning):
                    await s.prompt("too early")
                await s.cancel()
        assert s.turns == ["interrupt"]
        assert not s.turn_running
        events.extend([ev async for ev in s.turn("after")])  # the session goes on
        assert s.turns == ["interrupt", "ok"]


async def test_the_agent_exiting_mid_turn(tmp_path: Path) -> None:
    events: list[Any] = []
    async with normalize.drive(TinyAcp, cwd=tmp_path) as s:
        events.extend([ev async for ev in s.turn("die")])
        with pytest.raises(AgentExited) as info:
            await s.prompt("anyone?")
    assert info.value.returncode == 3
    assert "tiny agent: boom" in info.value.stderr
    events.extend([ev async for ev in s])  # the rest: the session end
    # the turn the agent never closed is settled by the core, and the session failed
    assert [b.reason for b in bodies(events, normalize.TurnComplete)] == ["interrupt"]
    (failed,) = [e for e in events if isinstance(e, normalize.SessionFailed)]
    assert "ended during turn:1" in failed.error.message
    assert isinstance(events[-1], normalize.SessionStateChanged)
    assert events[-1].state == "failed"


async def test_the_driven_events_are_those_of_converting_the_recording(tmp_path: Path) -> None:
    record = tmp_path / "run.tap.jsonl"
    driven: list[Any] = []
    async with normalize.drive(TinyAcp, cwd=tmp_path, record=record) as s:
        for text in ("one", "ask"):
            async for ev in s.turn(text):
                driven.append(ev)
                if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                    await s.respond(ev.event.body.request_id, "allow")
        driven.extend([ev async for ev in _rest(s)])
    converted = list(normalize.events(normalize.read_records([record])))
    assert [normalize.encode(e) for e in driven] == [normalize.encode(e) for e in converted]


async def _rest(s: normalize.DriveSession) -> Any:
    await s.close()
    async for ev in s:
        yield ev


async def test_a_missing_agent(tmp_path: Path) -> None:
    with pytest.raises(AgentNotFound, match="not found"):
        async with normalize.drive(TinyAcp, cwd=tmp_path, command=[str(tmp_path / "no-such-agent")]):
            pass
    with pytest.raises(AgentNotFound, match="no-such-agent-anywhere"):
        async with normalize.drive(TinyAcp, cwd=tmp_path, command=["no-such-agent-anywhere"]):
            pass


async def test_an_agent_that_dies_during_the_handshake(tmp_path: Path) -> None:
    script = "import sys; sys.stderr.write('needs a login'); sys.exit(2)"
    with pytest.raises(AgentExited, match="needs a login") as info:
        async with normalize.drive(TinyAcp, cwd=tmp_path, command=[sys.executable, "-c", script]):
            pass
    assert info.value.returncode == 2


def test_acp_needs_its_command_and_unknown_agents_are_named() -> None:
    with pytest.raises(UsageError, match="command"):
        normalize.drive("acp")
    with pytest.raises(UsageError, match="known: "):
        normalize.drive("nobody")


def test_option_for_picks_the_kind_of_the_decision() -> None:
    ref = ToolCallRef(call_id="c", tool="Bash", title="touch x")
    opts = [
        PermissionOption(id="a", label="Allow", kind="allow_once"),
        PermissionOption(id="r", label="No", kind="reject_once"),
    ]
    body = PermissionRequest(request_id="1", tool_call=ref, options=opts)
    assert option_for(body, "allow").id == "a"  # type: ignore[union-attr]
    assert option_for(body, "allow-always").id == "a"  # type: ignore[union-attr]  # the closest there is
    assert option_for(body, "deny-always").id == "r"  # type: ignore[union-attr]
    assert option_for(body, "cancel") is None


async def test_anyio_backends(tmp_path: Path) -> None:
    async with normalize.drive(TinyAcp, cwd=tmp_path) as s:
        with anyio.fail_after(30):
            async for _ in s.turn("x"):
                pass
        assert s.turns == ["ok"]
