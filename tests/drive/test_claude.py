"""The Claude Code backend against a fake CLI (tests/drive/fakes/fake_claude.py).

Every session's events are compared with ``normalize convert`` of its recording: a driven
session replays like any other.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import drivekit
import msgspec
import pytest
from drivekit import bodies

import normalize
from normalize import (
    AgentExited,
    AgentNotFound,
    AgentRequestFailed,
    AssistantMessage,
    AuthenticationRequired,
    ModeUpdate,
    PermissionRequest,
    RequestResolved,
    SessionEvent,
    ToolCall,
    TurnComplete,
    UnknownRequest,
    UserMessage,
    UserQuestion,
)
from normalize._drive import DriveOptions
from normalize._drive._claude import ClaudeBackend

pytestmark = pytest.mark.anyio

FAKE = Path(__file__).parent / "fakes" / "fake_claude.py"


def fake_claude(tmp_path: Path, *args: str, **kw: Any) -> normalize.DriveSession:
    """A session with the fake CLI in ``tmp_path/work``, recorded to ``tmp_path/run.tap.jsonl``."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return normalize.drive(
        "claude", cwd=work, command=[sys.executable, str(FAKE)], args=args, record=tmp_path / "run.tap.jsonl", **kw
    )


def assert_replays(events: list[Any], tmp_path: Path) -> None:
    """The driven events are exactly those of converting the recorded wire."""
    drivekit.assert_replays(events, tmp_path / "run.tap.jsonl")


def answer_of(resolved: RequestResolved) -> Any:
    """The answer a ``request-resolved`` carries (kept as the raw JSON sent)."""
    answer = resolved.answer
    return msgspec.json.decode(answer) if isinstance(answer, msgspec.Raw) else answer


def client_lines(tmp_path: Path) -> list[dict[str, Any]]:
    """What the backend wrote to the CLI's stdin, from the recording."""
    lines = [json.loads(x) for x in (tmp_path / "run.tap.jsonl").read_text().splitlines()]
    return [x["msg"] for x in lines if x["from"] == "client"]


async def answer_permissions(s: normalize.DriveSession, text: str, decision: Any) -> list[Any]:
    events = []
    async for ev in s.turn(text):
        events.append(ev)
        if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
            await s.respond(ev.event.body.request_id, decision)
    return events


def test_the_command_speaks_stream_json_both_ways_and_asks_permissions_on_stdio(tmp_path: Path) -> None:
    options = DriveOptions(cwd=tmp_path, args=["--max-turns", "3"], model="opus", mode="plan", resume="abc")
    assert ClaudeBackend(options).command() == [
        "claude",
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-prompt-tool",
        "stdio",
        "--model",
        "opus",
        "--permission-mode",
        "plan",
        "--resume",
        "abc",
        "--max-turns",
        "3",
    ]
    wrapped = DriveOptions(cwd=tmp_path, command=["npx", "claude"])
    assert ClaudeBackend(wrapped).command()[:3] == ["npx", "claude", "-p"]


async def test_two_prompts_two_turns(tmp_path: Path) -> None:
    events: list[Any] = []
    async with fake_claude(tmp_path) as s:
        ids = []
        for text in ("hello", "and again"):
            turn = s.turn(text)
            events.extend([ev async for ev in turn])
            ids.append(turn.message_id)
        assert s.turns == ["ok", "ok"]
        assert s.session_id is not None
    events.extend([ev async for ev in s])
    assert [b.text for b in bodies(events, AssistantMessage)] == ["Echo: hello", "Echo: and again"]
    assert ids == ["prompt:1", "prompt:2"]
    sent = client_lines(tmp_path)
    assert sent[0]["type"] == "control_request"
    assert sent[0]["request"]["subtype"] == "initialize"
    assert [m["message"]["content"] for m in sent[1:]] == ["hello", "and again"]
    assert_replays(events, tmp_path)


async def test_allowed_the_command_runs(tmp_path: Path) -> None:
    async with fake_claude(tmp_path) as s:
        events = await answer_permissions(s, "bash made.txt", "allow")
    events.extend([ev async for ev in s])
    assert (tmp_path / "work" / "made.txt").exists()
    (request,) = bodies(events, PermissionRequest)
    assert request.tool_call.tool == "Bash"
    assert request.detail.command == "touch made.txt"
    (resolved,) = bodies(events, RequestResolved)
    assert (resolved.decision, resolved.option_id) == ("allow", "allow")
    assert answer_of(resolved)["updatedInput"] == {"command": "touch made.txt", "description": "Create made.txt"}
    assert [c.phase for c in bodies(events, ToolCall)][-1] == "completed"
    assert_replays(events, tmp_path)


async def test_allowed_always_keeps_the_suggested_rules_but_not_a_mode_change(tmp_path: Path) -> None:
    async with fake_claude(tmp_path) as s:
        events = await answer_permissions(s, "bash kept.txt", "allow-always")
    events.extend([ev async for ev in s])
    assert (tmp_path / "work" / "kept.txt").exists()
    (resolved,) = bodies(events, RequestResolved)
    assert resolved.decision == "allow-always"
    # the fake suggested an allow rule and a switch to acceptEdits: only the rule is kept
    assert [p["type"] for p in answer_of(resolved)["updatedPermissions"]] == ["addRules"]
    assert_replays(events, tmp_path)


@pytest.mark.parametrize(("decision", "said"), [("deny", "deny"), ("deny-always", "deny"), ("cancel", "cancel")])
async def test_denied_the_command_does_not_run(tmp_path: Path, decision: Any, said: str) -> None:
    async with fake_claude(tmp_path) as s:
        events = await answer_permissions(s, "bash denied.txt", decision)
        assert s.turns == ["ok"]  # a refused call does not end the session
    events.extend([ev async for ev in s])
    assert not (tmp_path / "work" / "denied.txt").exists()
    (resolved,) = bodies(events, RequestResolved)
    assert resolved.decision == said  # Claude Code has no "deny from now on": deny-always is a deny
    assert [c.phase for c in bodies(events, ToolCall)][-1] == "failed"
    assert bodies(events, AssistantMessage)[-1].text == "I did not create denied.txt."
    assert_replays(events, tmp_path)


@pytest.mark.parametrize("decision", [None, "answered"])
async def test_a_question_answered(tmp_path: Path, decision: Any) -> None:
    events: list[Any] = []
    async with fake_claude(tmp_path) as s:
        async for ev in s.turn("ask"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, UserQuestion):
                (question,) = ev.event.body.questions
                assert [o.label for o in question.options] == ["red", "blue"]
                await s.respond(ev.event.body.request_id, decision, answers={"Which color?": "blue"})
    events.extend([ev async for ev in s])
    (resolved,) = bodies(events, RequestResolved)
    assert resolved.decision == "answered"
    assert bodies(events, AssistantMessage)[-1].text == "You chose blue."
    assert_replays(events, tmp_path)


async def test_a_respond_for_an_unknown_or_answered_request(tmp_path: Path) -> None:
    async with fake_claude(tmp_path) as s:
        with pytest.raises(UnknownRequest, match="never asked"):
            await s.respond("no-such-request", "allow")
        async for ev in s.turn("bash once.txt"):
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                rid = ev.event.body.request_id
                await s.respond(rid, "allow")
                with pytest.raises(UnknownRequest, match="already resolved"):
                    await s.respond(rid, "deny")
    answers = [m for m in client_lines(tmp_path) if m["type"] == "control_response"]
    assert len(answers) == 1  # nothing was sent for the refused calls


async def test_cancel_interrupts_the_turn_and_the_session_goes_on(tmp_path: Path) -> None:
    events: list[Any] = []
    async with fake_claude(tmp_path) as s:
        await s.prompt("slow story")
        await s.cancel()
        events.extend([ev async for ev in s.turn("hello")])
        assert s.turns == ["interrupt", "ok"]
    events.extend([ev async for ev in s])
    sent = [m["request"]["subtype"] for m in client_lines(tmp_path) if m["type"] == "control_request"]
    assert sent == ["initialize", "interrupt"]
    assert [b.reason for b in bodies(events, TurnComplete)] == ["interrupt", "ok"]
    assert bodies(events, AssistantMessage)[-1].text == "Echo: hello"
    assert_replays(events, tmp_path)


async def test_a_prompt_during_a_turn_is_queued(tmp_path: Path) -> None:
    events: list[Any] = []
    async with fake_claude(tmp_path) as s:
        first = await s.prompt("slow story")
        second = await s.prompt("queued one")  # Claude Code queues it: not refused
        assert (first, second) == ("prompt:1", "prompt:2")
        await s.cancel()
        async for ev in s:
            events.append(ev)
            if len(s.turns) == 2:
                break
        assert s.turns == ["interrupt", "ok"]
    events.extend([ev async for ev in s])
    said = [(b.text, b.queued) for b in bodies(events, UserMessage)]
    assert said == [("slow story", None), ("queued one", True), ("[Request interrupted by user]", None)]
    assert bodies(events, AssistantMessage)[-1].text == "Echo: queued one"
    assert_replays(events, tmp_path)


async def test_mode_and_model(tmp_path: Path) -> None:
    events: list[Any] = []
    async with fake_claude(tmp_path, model="claude-fake-9", mode="acceptEdits") as s:
        events.extend([ev async for ev in s.turn("hello")])
        await s.set_mode("plan")
        await s.set_model("claude-fake-10")
        with pytest.raises(AgentRequestFailed, match="must be one of"):
            await s.set_mode("no-such-mode")
    events.extend([ev async for ev in s])
    (created,) = [e for e in events if isinstance(e, normalize.SessionCreated)]
    assert (created.record.model, created.record.mode) == ("claude-fake-9", "acceptEdits")
    updates = [(m.mode_id, m.model) for m in bodies(events, ModeUpdate)]
    assert ("plan", None) in updates
    assert (None, "claude-fake-10") in updates
    assert_replays(events, tmp_path)


async def test_a_cli_without_credentials_needs_authentication(tmp_path: Path) -> None:
    with pytest.raises(AuthenticationRequired, match="ANTHROPIC_API_KEY"):
        async with fake_claude(tmp_path, "--fake-logged-out"):
            pass


async def test_the_exit_error_carries_the_end_of_stderr_read_after_stdout_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the stderr reader is a task of its own: when it runs late, the exit still waits for it
    late = normalize.DriveSession._read_stderr

    async def read_late(self: normalize.DriveSession) -> None:
        await anyio.sleep(0.3)
        await late(self)

    monkeypatch.setattr(normalize.DriveSession, "_read_stderr", read_late)
    async with fake_claude(tmp_path) as s:
        _ = [ev async for ev in s.turn("crash")]
        with pytest.raises(AgentExited) as info:
            await s.prompt("anyone there?")
        _ = [ev async for ev in s]
    assert "crashed in the middle of a turn" in info.value.stderr


async def test_the_program_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no claude there
    with pytest.raises(AgentNotFound, match="claude"):
        async with normalize.drive("claude", cwd=tmp_path):
            pass
    with pytest.raises(AgentNotFound, match="not found"):
        async with normalize.drive("claude", cwd=tmp_path, command=[str(tmp_path / "claude")]):
            pass


async def test_the_cli_exiting_mid_turn(tmp_path: Path) -> None:
    events: list[Any] = []
    async with fake_claude(tmp_path) as s:
        events.extend([ev async for ev in s.turn("crash")])
        with pytest.raises(AgentExited) as info:
            await s.prompt("anyone there?")
    events.extend([ev async for ev in s])
    assert info.value.returncode == 3
    assert "crashed in the middle of a turn" in info.value.stderr
    assert [b.reason for b in bodies(events, TurnComplete)] == ["interrupt"]
    (failed,) = [e for e in events if isinstance(e, normalize.SessionFailed)]
    assert "ended during turn" in failed.error.message
    assert_replays(events, tmp_path)


async def test_images_go_before_the_text(tmp_path: Path) -> None:
    picture = tmp_path / "dot.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n")
    async with fake_claude(tmp_path) as s:
        async for _ in s.turn("look at this", images=[picture]):
            pass
        assert s.turns == ["ok"]
    (prompt,) = [m for m in client_lines(tmp_path) if m["type"] == "user"]
    image, text = prompt["message"]["content"]
    assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    assert text == {"type": "text", "text": "look at this"}


@pytest.mark.parametrize("decision", ["cancel", "deny"])
async def test_a_question_refused(tmp_path: Path, decision: Any) -> None:
    events: list[Any] = []
    async with fake_claude(tmp_path) as s:
        async for ev in s.turn("ask"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, UserQuestion):
                with pytest.raises(normalize.UsageError, match="allow-always"):
                    await s.respond(ev.event.body.request_id, "allow-always")
                await s.respond(ev.event.body.request_id, decision)
    events.extend([ev async for ev in s])
    (resolved,) = bodies(events, RequestResolved)
    assert (resolved.outcome, resolved.decision) == ("cancelled", "cancel")
    assert bodies(events, AssistantMessage)[-1].text == "You chose nothing."
    assert_replays(events, tmp_path)
