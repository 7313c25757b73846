"""The agy backend against a scripted agy speaking headless stream-json (fakes/fake_agy.py).

agy has stream-json input but no control messages: prompts queue, approvals are never asked
(soft-denied by its flags), cancel is SIGINT and ends the process.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import drivekit
import pytest
from drivekit import bodies, rest

import normalize
from normalize import (
    AgentExited,
    AgentNotFound,
    AgentRequestFailed,
    AssistantMessage,
    AuthenticationRequired,
    MessageCompleted,
    NotSupported,
    PermissionAuto,
    PermissionRequest,
    SessionEvent,
    SessionFailed,
    SessionInfo,
    TurnComplete,
    UnknownRequest,
    UserMessage,
)
from normalize._cli import main
from normalize._drive import DriveSession, ImageData
from normalize._drive._agy import AgyBackend

FAKE = Path(__file__).parent / "fakes" / "fake_agy.py"
AGY = [sys.executable, str(FAKE)]
pytestmark = pytest.mark.anyio


def agy(tmp_path: Path, record: str = "agy.tap.jsonl", **kw: Any) -> DriveSession:
    kw.setdefault("command", AGY)
    return normalize.drive("agy", cwd=tmp_path, record=tmp_path / record, **kw)


def sent(tmp_path: Path, record: str = "agy.tap.jsonl") -> list[Any]:
    lines = [json.loads(x) for x in (tmp_path / record).read_text().splitlines()]
    return [x["msg"] for x in lines if x["from"] == "client"]


def assert_replays(driven: list[Any], tmp_path: Path, record: str = "agy.tap.jsonl") -> None:
    """The driven events are exactly those of converting the recording."""
    drivekit.assert_replays(driven, tmp_path / record)


async def test_two_prompts_in_one_process(tmp_path: Path) -> None:
    events: list[Any] = []
    mids = []
    async with agy(tmp_path, model="gemini-test") as s:
        for text in ("hello", "again"):
            turn = s.turn(text)
            events.extend([ev async for ev in turn])
            mids.append(turn.message_id)
        assert s.turns == ["ok", "ok"]
        events.extend([ev async for ev in rest(s)])
    assert s.returncode == 0
    assert mids == ["prompt:1", "prompt:2"]
    assert [b.text for b in bodies(events, AssistantMessage)] == ["You said: hello", "You said: again"]
    # the session opens with the first prompt; agy's init (after it) says what runs
    (info,) = bodies(events, SessionInfo)
    assert (info.model, info.cwd) == ("gemini-test", str(tmp_path))
    assert sent(tmp_path) == [
        {"event": "user", "message": {"role": "user", "content": "hello"}},
        {"event": "user", "message": {"role": "user", "content": "again"}},
    ]
    assert_replays(events, tmp_path)


async def test_a_prompt_during_a_turn_is_queued_by_agy(tmp_path: Path) -> None:
    events: list[Any] = []
    async with agy(tmp_path) as s:
        with anyio.fail_after(20):
            assert await s.prompt("pause") == "prompt:1"
            assert s.turn_running
            # agy queues it: sent at once, taken (and its id known) when the first turn ended
            assert await s.prompt("next") == "prompt:2"
            async for ev in s:
                events.append(ev)
                if len(s.turns) == 2:
                    break
        assert s.turns == ["ok", "ok"]
        events.extend([ev async for ev in rest(s)])
    users = bodies(events, UserMessage)
    assert [(u.text, u.queued) for u in users] == [("pause", None), ("next", True)]
    assert [b.text for b in bodies(events, AssistantMessage)] == ["Paused.", "You said: next"]


async def test_a_shell_command_is_soft_denied_without_asking(tmp_path: Path) -> None:
    events: list[Any] = []
    async with agy(tmp_path) as s:
        events.extend([ev async for ev in s.turn("run: touch denied.txt")])
        assert not s.open_requests
        with pytest.raises(UnknownRequest):
            await s.respond("anything", "allow")
        events.extend([ev async for ev in rest(s)])
    assert not (tmp_path / "denied.txt").exists()
    assert not bodies(events, PermissionRequest)
    (auto,) = bodies(events, PermissionAuto)
    assert auto.decision == "deny"
    assert_replays(events, tmp_path)


async def test_the_flags_are_the_approval_policy(tmp_path: Path) -> None:
    events: list[Any] = []
    async with agy(tmp_path, args=["--dangerously-skip-permissions"]) as s:
        events.extend([ev async for ev in s.turn("run: touch allowed.txt")])
        events.extend([ev async for ev in rest(s)])
    assert (tmp_path / "allowed.txt").exists()
    assert not bodies(events, PermissionAuto)
    assert_replays(events, tmp_path)


async def test_cancel_is_sigint_and_ends_the_process_then_resume_continues(tmp_path: Path) -> None:
    events: list[Any] = []
    async with agy(tmp_path) as s:
        with anyio.fail_after(20):  # the fake's slow turn would take 30 s
            async for ev in s.turn("slow"):
                events.append(ev)
                if isinstance(ev, SessionEvent) and ev.event.kind == "assistant-delta":
                    await s.cancel()
        assert s.turns == ["interrupt"]
        with pytest.raises(AgentExited):
            await s.prompt("again")
    events.extend([ev async for ev in s])
    (end,) = bodies(events, TurnComplete)
    assert (end.reason, end.stop_reason) == ("interrupt", "ERROR")
    assert [m.result.stop_reason for m in events if isinstance(m, MessageCompleted)] == ["cancelled"]
    assert_replays(events, tmp_path)
    assert isinstance(s.backend, AgyBackend)
    conversation = s.backend.conversation_id
    assert conversation == "5f0c7a2e-0000-4000-8000-00000000fa4e"  # the fake's
    # the conversation goes on in a new process
    again: list[Any] = []
    async with agy(tmp_path, record="again.tap.jsonl", resume=conversation) as s2:
        again.extend([ev async for ev in s2.turn("again")])
        again.extend([ev async for ev in rest(s2)])
    init = next(e for e in again if isinstance(e, SessionEvent) and e.event.native.method == "init")
    assert init.event.native.data["conversation_id"] == conversation
    assert [b.text for b in bodies(again, AssistantMessage)] == ["You said: again"]


async def test_what_agy_cannot_do_raises_not_supported(tmp_path: Path) -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n fake").decode()
    async with agy(tmp_path) as s:
        with pytest.raises(NotSupported, match="text only"):
            await s.prompt("look", images=[ImageData("image/png", png)])
        assert not s.turn_running
        with pytest.raises(NotSupported):
            await s.set_mode("plan")
        with pytest.raises(NotSupported):
            await s.set_model("gemini-other")
    assert sent(tmp_path) == []  # nothing reached agy


async def test_cancel_with_no_turn_running_sends_nothing(tmp_path: Path) -> None:
    async with agy(tmp_path) as s:
        await s.cancel()  # SIGINT would end an idle agy
        events = [ev async for ev in s.turn("hello")]
        assert s.turns == ["ok"]
    assert s.returncode == 0
    assert [b.text for b in bodies(events, AssistantMessage)] == ["You said: hello"]


async def test_no_login_is_authentication_required(tmp_path: Path) -> None:
    async with agy(tmp_path, env={"FAKE_AGY_NO_LOGIN": "1"}) as s:
        with pytest.raises(AuthenticationRequired, match="authentication required"):
            await s.prompt("hello")
        assert not s.turn_running


async def test_a_prompt_agy_refuses_before_the_turn(tmp_path: Path) -> None:
    async with agy(tmp_path, model="no-such-model") as s:
        with pytest.raises(AgentRequestFailed, match="invalid model selection") as info:
            await s.prompt("hello")
    assert info.value.method == "prompt"
    events = [ev async for ev in s]
    assert_replays(events, tmp_path)


async def test_agy_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AgentNotFound, match="agy"):
        async with normalize.drive("agy", cwd=tmp_path):
            pass


async def test_agy_exiting_mid_turn(tmp_path: Path) -> None:
    events: list[Any] = []
    async with agy(tmp_path) as s:
        events.extend([ev async for ev in s.turn("crash")])
        with pytest.raises(AgentExited) as info:
            await s.prompt("anyone?")
    events.extend([ev async for ev in s])
    assert info.value.returncode == 1
    assert "the model connection broke" in info.value.stderr
    assert [e for e in events if isinstance(e, SessionFailed)]
    assert [t.reason for t in bodies(events, TurnComplete)] == ["interrupt"]
    assert_replays(events, tmp_path)


async def test_bad_flags_fail_the_first_prompt(tmp_path: Path) -> None:
    async with agy(tmp_path, args=["--no-such-flag"]) as s:
        with pytest.raises(AgentExited, match="unknown flag") as info:
            await s.prompt("hello")
    assert info.value.returncode == 2


@pytest.mark.parametrize(("agy_args", "created"), [([], False), (["--", "--dangerously-skip-permissions"], True)])
def test_normalize_run_agy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agy_args: list[str], created: bool) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "agy").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    (bin_dir / "agy").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    work, out, rec = tmp_path / "work", tmp_path / "events.jsonl", tmp_path / "run.tap.jsonl"
    work.mkdir()
    argv = ["run", "agy", "--prompt", "hello", "--prompt", "run: touch notes.txt"]
    assert main([*argv, "--cwd", str(work), "-o", str(out), "--record", str(rec), *agy_args]) == 0
    assert (work / "notes.txt").exists() is created
    converted = [normalize.encode(e) for e in normalize.events(normalize.read_records([rec]))]
    assert out.read_bytes().splitlines()[1:] == converted
