"""The hm backend against a scripted hm speaking ``hm agent --rpc`` (fakes/fake_hm.py).

Every driven session is recorded; its events must be those converting the recording gives.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
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
    MessageCompleted,
    ModeUpdate,
    PermissionRequest,
    RequestResolved,
    SessionEvent,
    SessionFailed,
    ToolCall,
    TurnComplete,
    TurnRunning,
    UnknownRequest,
    UserMessage,
    UserQuestion,
)
from normalize._cli import main
from normalize._drive import DriveSession, ImageData

FAKE = Path(__file__).parent / "fakes" / "fake_hm.py"
HM = [sys.executable, str(FAKE)]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.anyio


def hm(tmp_path: Path, **kw: Any) -> DriveSession:
    kw.setdefault("command", HM)
    return normalize.drive("hm", cwd=tmp_path, record=tmp_path / "hm.tap.jsonl", **kw)


def sent(tmp_path: Path) -> list[dict[str, Any]]:
    """The commands the backend wrote on hm's stdin, from the recording."""
    lines = [json.loads(x) for x in (tmp_path / "hm.tap.jsonl").read_text().splitlines()]
    return [x["msg"] for x in lines if x["from"] == "client"]


def assert_replays(driven: list[Any], tmp_path: Path) -> None:
    """The driven events are exactly those of converting the recording."""
    drivekit.assert_replays(driven, tmp_path / "hm.tap.jsonl")


async def test_two_prompts_two_turns_and_the_events_of_normalize_convert(tmp_path: Path) -> None:
    events: list[Any] = []
    mids = []
    async with hm(tmp_path, mode="plan", model="m-1") as s:
        for text in ("hello", "again"):
            turn = s.turn(text)
            events.extend([ev async for ev in turn])
            mids.append(turn.message_id)
        assert s.turns == ["ok", "ok"]
        events.extend([ev async for ev in rest(s)])
    assert s.returncode == 0
    assert mids == ["cmd-1", "cmd-2"]  # the ids the hm-json adapter gives the prompt commands
    assert [m.message_id for m in events if isinstance(m, MessageCompleted)] == mids
    assert [b.text for b in bodies(events, AssistantMessage)] == ["You said: hello", "You said: again"]
    created = next(e for e in events if isinstance(e, normalize.SessionCreated))
    assert (created.record.cwd, created.record.mode, created.record.model) == (str(tmp_path), "plan", "m-1")
    assert [c["type"] for c in sent(tmp_path)] == ["prompt", "prompt"]
    assert_replays(events, tmp_path)
    # and `normalize convert` on the command line says the same
    cli = subprocess.run(
        [str(BIN / "normalize"), "convert", str(tmp_path / "hm.tap.jsonl")],
        capture_output=True,
        check=True,
    )
    assert cli.stdout.splitlines()[1:] == [normalize.encode(e) for e in events]


@pytest.mark.parametrize(
    ("decision", "approve", "option"),
    [
        ("allow", {"allow": True}, "allow"),
        ("allow-always", {"allow": True, "for_session": True}, "allow-session"),
    ],
)
async def test_a_shell_command_allowed_runs(
    tmp_path: Path, decision: Any, approve: dict[str, Any], option: str
) -> None:
    events: list[Any] = []
    async with hm(tmp_path) as s:
        async for ev in s.turn("run: touch allowed.txt"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                await s.respond(ev.event.body.request_id, decision)
        events.extend([ev async for ev in rest(s)])
    assert (tmp_path / "allowed.txt").exists()
    (request,) = bodies(events, PermissionRequest)
    assert request.detail.command == "touch allowed.txt"
    (resolved,) = bodies(events, RequestResolved)
    assert (resolved.request_id, resolved.decision, resolved.option_id) == (request.request_id, decision, option)
    assert [c.phase for c in bodies(events, ToolCall)] == ["started", "completed"]
    approve_sent = next(c for c in sent(tmp_path) if c["type"] == "approve")
    assert approve_sent == {"id": "2", "type": "approve", "call_id": request.request_id, **approve}
    assert_replays(events, tmp_path)


@pytest.mark.parametrize("decision", ["deny", "deny-always"])
async def test_a_shell_command_denied_does_not_run(tmp_path: Path, decision: Any) -> None:
    events: list[Any] = []
    async with hm(tmp_path) as s:
        async for ev in s.turn("run: touch denied.txt"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                await s.respond(ev.event.body.request_id, decision)
        assert s.turns == ["ok"]
        events.extend([ev async for ev in rest(s)])
    assert not (tmp_path / "denied.txt").exists()
    (resolved,) = bodies(events, RequestResolved)
    assert resolved.decision == "deny"  # hm has no lasting refusal: deny-always refuses this call
    assert [c.phase for c in bodies(events, ToolCall)] == ["started", "failed"]
    assert bodies(events, AssistantMessage)[-1].text == "The command was refused."
    assert_replays(events, tmp_path)


@pytest.mark.parametrize("prompt", ["run: touch never.txt", "ask: Which database?"])
async def test_respond_cancel_aborts_the_turn(tmp_path: Path, prompt: str) -> None:
    events: list[Any] = []
    async with hm(tmp_path) as s:
        with anyio.fail_after(20):
            async for ev in s.turn(prompt):
                events.append(ev)
                if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest | UserQuestion):
                    await s.respond(ev.event.body.request_id, "cancel")
        assert s.turns == ["interrupt"]
        events.extend([ev async for ev in rest(s)])
    assert not (tmp_path / "never.txt").exists()
    assert [c["type"] for c in sent(tmp_path)] == ["prompt", "abort"]
    (resolved,) = bodies(events, RequestResolved)
    assert resolved.decision == "cancel"
    assert_replays(events, tmp_path)


async def test_resume_opens_the_saved_session(tmp_path: Path) -> None:
    async with hm(tmp_path, resume="20261101-saved") as s:
        events = [ev async for ev in s.turn("hello")]
    resumed = [e for e in events if isinstance(e, normalize.SessionResumed)]
    assert [r.record.native_session_id for r in resumed] == ["20261101-saved"]


async def test_a_question_answered(tmp_path: Path) -> None:
    events: list[Any] = []
    async with hm(tmp_path) as s:
        async for ev in s.turn("ask: Which database should the tests use?"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, UserQuestion):
                (q,) = ev.event.body.questions
                await s.respond(ev.event.body.request_id, answers={q.prompt: "SQLite"})
        events.extend([ev async for ev in rest(s)])
    (resolved,) = bodies(events, RequestResolved)
    assert (resolved.outcome, resolved.decision, resolved.answer) == ("answered", "answered", {"text": "SQLite"})
    assert bodies(events, AssistantMessage)[-1].text == "You answered: SQLite"
    assert_replays(events, tmp_path)


async def test_cancel_aborts_the_turn_and_the_session_goes_on(tmp_path: Path) -> None:
    events: list[Any] = []
    async with hm(tmp_path) as s:
        with anyio.fail_after(20):  # the fake's slow turn would take 30 s
            async for ev in s.turn("slow"):
                events.append(ev)
                if isinstance(ev, SessionEvent) and ev.event.kind == "assistant-delta":
                    await s.cancel()
        assert s.turns == ["interrupt"]
        events.extend([ev async for ev in s.turn("after")])
        assert s.turns == ["interrupt", "ok"]
        events.extend([ev async for ev in rest(s)])
    ends = bodies(events, TurnComplete)
    assert [(t.reason, t.stop_reason) for t in ends] == [("interrupt", "aborted"), ("ok", None)]
    completed = [m.result.stop_reason for m in events if isinstance(m, MessageCompleted)]
    assert completed == ["cancelled", "end_turn"]
    assert [c["type"] for c in sent(tmp_path)] == ["prompt", "abort", "prompt"]
    assert_replays(events, tmp_path)


async def test_a_prompt_while_a_turn_runs_is_refused_and_not_sent(tmp_path: Path) -> None:
    async with hm(tmp_path) as s:
        with anyio.fail_after(20):
            assert await s.prompt("slow") == "cmd-1"
            with pytest.raises(TurnRunning):
                await s.prompt("too early")
            await s.cancel()
            async for ev in s:
                if isinstance(ev, SessionEvent) and isinstance(ev.event.body, TurnComplete):
                    break
    assert [c.get("text") for c in sent(tmp_path) if c["type"] == "prompt"] == ["slow"]


async def test_requests_never_asked_or_already_answered(tmp_path: Path) -> None:
    async with hm(tmp_path) as s:
        with pytest.raises(UnknownRequest, match="never asked"):
            await s.respond("call_99", "allow")
        async for ev in s.turn("run: touch x.txt"):
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                request, rid = ev.event, ev.event.body.request_id
                await s.respond(rid, "allow")
                with pytest.raises(UnknownRequest, match="already resolved"):
                    await s.respond(rid, "deny")
        # hm's own refusal (the call no longer waits) is the same error
        with pytest.raises(UnknownRequest, match="not waiting"):
            await s.backend.respond(s.wire, request, "allow", None)
    refused = [c for c in sent(tmp_path) if c["type"] == "approve"]
    assert len(refused) == 2  # the core sent nothing for the two it knew were not open


async def test_set_mode_and_set_model_apply_from_the_next_turn(tmp_path: Path) -> None:
    events: list[Any] = []
    async with hm(tmp_path) as s:
        await s.set_mode("plan")
        await s.set_model("m-2")
        events.extend([ev async for ev in s.turn("hi")])
        events.extend([ev async for ev in rest(s)])
    updates = [(m.mode_id, m.model) for m in bodies(events, ModeUpdate)]
    assert updates[-2:] == [("plan", None), (None, "m-2")]
    commands = sent(tmp_path)
    assert commands[:2] == [
        {"id": "1", "type": "set_mode", "mode": "plan"},
        {"id": "2", "type": "set_model", "model": "m-2"},
    ]
    assert_replays(events, tmp_path)


async def test_images_are_sent_as_hm_takes_them(tmp_path: Path) -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n fake").decode()
    events: list[Any] = []
    async with hm(tmp_path) as s:
        events.extend([ev async for ev in s.turn("look", images=[ImageData("image/png", png)])])
        events.extend([ev async for ev in rest(s)])
    assert sent(tmp_path)[0]["images"] == [{"data": png}]
    (user,) = bodies(events, UserMessage)
    assert [i.data for i in user.images] == [png]
    assert_replays(events, tmp_path)


async def test_a_prompt_hm_refuses_raises_with_its_reason_and_no_turn_runs(tmp_path: Path) -> None:
    not_an_image = base64.b64encode(b"plain text").decode()
    async with hm(tmp_path) as s:
        with pytest.raises(AgentRequestFailed, match="not a PNG") as info:
            await s.prompt("look", images=[ImageData("image/png", not_an_image)])
        assert not s.turn_running
        events = [ev async for ev in s.turn("hello")]
    assert info.value.method == "prompt"
    assert info.value.code is None  # hm's responses have no error codes
    assert [b.text for b in bodies(events, AssistantMessage)] == ["You said: hello"]


async def test_leaving_during_a_turn_aborts_it_and_hm_ends_cleanly(tmp_path: Path) -> None:
    events: list[Any] = []
    with anyio.fail_after(20):
        async with hm(tmp_path) as s:
            await s.prompt("slow")
        events.extend([ev async for ev in s])
    assert s.returncode == 0
    assert [c["type"] for c in sent(tmp_path)] == ["prompt", "abort"]
    assert [t.reason for t in bodies(events, TurnComplete)] == ["interrupt"]
    assert not [e for e in events if isinstance(e, SessionFailed)]
    assert_replays(events, tmp_path)


async def test_hm_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AgentNotFound, match="hm"):
        async with normalize.drive("hm", cwd=tmp_path):
            pass
    with pytest.raises(AgentNotFound):
        async with hm(tmp_path, command=[str(tmp_path / "bin" / "hm")]):
            pass


async def test_hm_exiting_mid_turn(tmp_path: Path) -> None:
    events: list[Any] = []
    async with hm(tmp_path) as s:
        events.extend([ev async for ev in s.turn("crash")])
        with pytest.raises(AgentExited) as info:
            await s.prompt("anyone?")
    events.extend([ev async for ev in s])
    assert info.value.returncode == 1
    assert "the model connection broke" in info.value.stderr
    assert isinstance(events[-2], SessionFailed)
    assert [t.reason for t in bodies(events, TurnComplete)] == ["interrupt"]
    assert_replays(events, tmp_path)


async def test_bad_flags_exit_before_the_session(tmp_path: Path) -> None:
    with pytest.raises(AgentExited, match="bad usage") as info:
        async with hm(tmp_path, args=["--no-such-flag"]):
            pass
    assert info.value.returncode == 2


@pytest.mark.parametrize(("policy", "created"), [("allow", True), ("deny", False)])
def test_normalize_run_hm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str, created: bool) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "hm").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    (bin_dir / "hm").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    work, out, rec = tmp_path / "work", tmp_path / "events.jsonl", tmp_path / "run.tap.jsonl"
    work.mkdir()
    argv = ["run", "hm", "--approve", policy, "--prompt", "hello", "--prompt", "run: touch notes.txt"]
    assert main([*argv, "--cwd", str(work), "-o", str(out), "--record", str(rec)]) == 0
    assert (work / "notes.txt").exists() is created
    converted = [normalize.encode(e) for e in normalize.events(normalize.read_records([rec]))]
    assert out.read_bytes().splitlines()[1:] == converted
