"""The Codex backend against a fake ``codex app-server`` (tests/drive/fakes/fake_codex.py).

Every test also checks the promise of ``normalize.drive``: the events a host got
are those ``normalize convert`` gives for the recorded wire (protocol detected
from the recording, as for any other capture).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from drivekit import assert_replays, bodies, rest

import normalize
from normalize import (
    AgentExited,
    AgentNotFound,
    AssistantMessage,
    AuthenticationRequired,
    MessageAccepted,
    NotSupported,
    PermissionRequest,
    RequestResolved,
    SessionEvent,
    SessionFailed,
    TurnComplete,
    TurnRunning,
    UnknownRequest,
    UserQuestion,
)
from normalize._drive import DriveSession, ImageData
from normalize._drive._codex import CodexBackend

FAKE = Path(__file__).parent / "fakes" / "fake_codex.py"
FAKE_CODEX = [sys.executable, str(FAKE)]
THREAD = "01a2fake-0000-7000-8000-000000000001"  # the fake's thread id
pytestmark = pytest.mark.anyio


def plain(raw: Any) -> Any:
    """A payload kept as raw JSON, decoded."""
    return json.loads(bytes(raw))


def client_lines(record: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    return [line["msg"] for line in lines if line["from"] == "client"]


def codex(tmp_path: Path, *args: str, **kw: Any) -> DriveSession:
    record = tmp_path / "run.tap.jsonl"
    return normalize.drive("codex", cwd=tmp_path, command=FAKE_CODEX, args=args, record=record, **kw)


def test_the_command_is_codex_app_server_with_the_hosts_args(tmp_path: Path) -> None:
    s = normalize.drive("codex", cwd=tmp_path, args=["-c", 'model="o3"'])
    assert isinstance(s.backend, CodexBackend)
    assert s.backend.command() == ["codex", "app-server", "-c", 'model="o3"']
    s = normalize.drive("codex", cwd=tmp_path, command=["/opt/codex/bin/codex"])
    assert s.backend.command() == ["/opt/codex/bin/codex", "app-server"]


async def test_two_prompts_are_two_turns_on_one_thread(tmp_path: Path) -> None:
    events: list[Any] = []
    async with codex(tmp_path) as s:
        ids = []
        for text in ("hello one", "hello two"):
            turn = s.turn(text)
            events.extend([ev async for ev in turn])
            ids.append(turn.message_id)
        assert s.turns == ["ok", "ok"]
        events.extend([ev async for ev in rest(s)])
    assert [b.text for b in bodies(events, AssistantMessage)] == ["Hello from turn 1.", "Hello from turn 2."]
    # the messageId a prompt returns is Codex's turn id, the one message.accepted names
    assert ids == [e.message_id for e in events if isinstance(e, MessageAccepted)]
    assert ids == ["01a2fake-turn-7000-8000-000000000001", "01a2fake-turn-7000-8000-000000000002"]
    sent = client_lines(tmp_path / "run.tap.jsonl")
    assert [m.get("method") for m in sent] == [
        "initialize",
        "initialized",
        "account/read",
        "thread/start",
        "turn/start",
        "turn/start",
    ]
    assert all("jsonrpc" not in m for m in sent)  # Codex's dialect: the recording reads as Codex's own
    assert sent[3]["params"] == {"cwd": str(tmp_path.resolve())}
    assert sent[4]["params"]["input"] == [{"type": "text", "text": "hello one", "text_elements": []}]
    assert_replays(events, tmp_path / "run.tap.jsonl")


@pytest.mark.parametrize(
    ("decision", "native", "made"),
    [
        ("allow", "accept", True),
        ("allow-always", "acceptForSession", True),
        ("deny", "decline", False),
        ("deny-always", "decline", False),
        ("cancel", "cancel", False),
    ],
)
async def test_a_command_approval_answered(tmp_path: Path, decision: Any, native: str, made: bool) -> None:
    events: list[Any] = []
    async with codex(tmp_path) as s:
        async for ev in s.turn("run touch made.txt"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                await s.respond(ev.event.body.request_id, decision)
        events.extend([ev async for ev in rest(s)])
    assert (tmp_path / "made.txt").exists() is made
    (request,) = bodies(events, PermissionRequest)
    assert request.tool_call.input == {"command": "/bin/bash -lc 'touch made.txt'", "cwd": str(tmp_path.resolve())}
    (resolved,) = bodies(events, RequestResolved)
    assert plain(resolved.answer) == {"decision": native}
    # what normalize reads back from Codex's word: deny-always was sent as a plain decline
    assert resolved.decision == {"deny-always": "deny", "cancel": "deny"}.get(decision, decision)
    assert bodies(events, AssistantMessage)[-1].text == f"The decision was {native}."
    assert_replays(events, tmp_path / "run.tap.jsonl")


@pytest.mark.parametrize(
    ("decision", "answer"),
    [
        ("allow", {"permissions": {"network": {"enabled": True}, "fileSystem": None}, "scope": "turn"}),
        ("allow-always", {"permissions": {"network": {"enabled": True}, "fileSystem": None}, "scope": "session"}),
        ("deny", {"permissions": {}, "scope": "turn"}),
    ],
)
async def test_a_permissions_request_answered(tmp_path: Path, decision: Any, answer: dict[str, Any]) -> None:
    events: list[Any] = []
    async with codex(tmp_path) as s:
        async for ev in s.turn("grant me network access"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                await s.respond(ev.event.body.request_id, decision)
        events.extend([ev async for ev in rest(s)])
    (resolved,) = bodies(events, RequestResolved)
    assert plain(resolved.answer) == answer
    assert resolved.decision == decision  # nothing granted reads as a refusal
    assert_replays(events, tmp_path / "run.tap.jsonl")


async def test_a_question_answered_by_its_text(tmp_path: Path) -> None:
    events: list[Any] = []
    async with codex(tmp_path) as s:
        async for ev in s.turn("ask me"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, UserQuestion):
                (question,) = ev.event.body.questions
                assert question.prompt == "Which color?"
                with pytest.raises(normalize.UsageError, match="no question 'Which colour\\?'"):
                    await s.respond(ev.event.body.request_id, answers={"Which colour?": "blue"})
                await s.respond(ev.event.body.request_id, answers={"Which color?": "blue"})
        events.extend([ev async for ev in rest(s)])
    (resolved,) = bodies(events, RequestResolved)
    assert plain(resolved.answer) == {"answers": {"color": {"answers": ["blue"]}}}
    assert resolved.decision == "answered"
    assert bodies(events, AssistantMessage)[-1].text == "You said blue."
    assert_replays(events, tmp_path / "run.tap.jsonl")


async def test_unknown_and_resolved_requests_are_refused_and_nothing_is_sent(tmp_path: Path) -> None:
    async with codex(tmp_path) as s:
        async for ev in s.turn("run touch made.txt"):
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                rid = ev.event.body.request_id
                await s.respond(rid, "deny")
                with pytest.raises(UnknownRequest, match="already resolved"):
                    await s.respond(rid, "allow")
        with pytest.raises(UnknownRequest, match="never asked"):
            await s.respond("41", "allow")
    answers = [m for m in client_lines(tmp_path / "run.tap.jsonl") if "result" in m and "decision" in m["result"]]
    assert answers == [{"id": 0, "result": {"decision": "decline"}}]
    assert not (tmp_path / "made.txt").exists()


async def test_an_agent_request_nobody_serves_gets_an_error_at_once(tmp_path: Path) -> None:
    events: list[Any] = []
    async with codex(tmp_path) as s:
        events.extend([ev async for ev in s.turn("odd request")])
        assert s.turns == ["ok"]
        events.extend([ev async for ev in rest(s)])
    text = bodies(events, AssistantMessage)[-1].text
    assert "-32601" in text
    assert "item/unheardOf/request" in text
    assert_replays(events, tmp_path / "run.tap.jsonl")


async def test_cancel_interrupts_the_turn_and_a_prompt_meanwhile_is_refused(tmp_path: Path) -> None:
    events: list[Any] = []
    async with codex(tmp_path) as s:
        story = s.turn("story please")
        async for ev in story:
            events.append(ev)
            if isinstance(ev, SessionEvent) and ev.event.kind == "assistant-delta" and s.turn_running:
                with pytest.raises(TurnRunning):
                    await s.prompt("hello too early")
                await s.cancel()
        events.extend([ev async for ev in s.turn("hello again")])
        assert s.turns == ["interrupt", "ok"]
        await s.cancel()  # no turn runs: nothing to do
        events.extend([ev async for ev in rest(s)])
    (interrupt,) = [m for m in client_lines(tmp_path / "run.tap.jsonl") if m.get("method") == "turn/interrupt"]
    assert interrupt["params"] == {"threadId": THREAD, "turnId": story.message_id}
    assert [b.stop_reason for b in bodies(events, TurnComplete)] == ["interrupted", "completed"]
    assert_replays(events, tmp_path / "run.tap.jsonl")


async def test_leaving_during_a_turn_interrupts_it_first(tmp_path: Path) -> None:
    events: list[Any] = []
    async with codex(tmp_path) as s:
        async for ev in s.turn("story please"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and ev.event.kind == "assistant-delta":
                break  # the host leaves while the turn runs
    events.extend([ev async for ev in s])
    sent = [m.get("method") for m in client_lines(tmp_path / "run.tap.jsonl")]
    assert sent[-1] == "turn/interrupt"
    # the turn ends as stopped, not cut: no session.failed
    assert [b.stop_reason for b in bodies(events, TurnComplete)] == ["interrupted"]
    assert not [e for e in events if isinstance(e, SessionFailed)]
    assert s.returncode == 0
    assert_replays(events, tmp_path / "run.tap.jsonl")


async def test_the_agent_exiting_mid_turn(tmp_path: Path) -> None:
    events: list[Any] = []
    async with codex(tmp_path) as s:
        events.extend([ev async for ev in s.turn("die now")])
        with pytest.raises(AgentExited) as info:
            await s.prompt("hello?")
        events.extend([ev async for ev in rest(s)])
    assert info.value.returncode == 3
    assert "fake codex: crashed in the middle of a turn" in info.value.stderr
    (failed,) = [e for e in events if isinstance(e, SessionFailed)]
    assert "ended during turn:1" in failed.error.message
    assert [b.reason for b in bodies(events, TurnComplete)] == ["interrupt"]  # the cut turn, settled
    assert_replays(events, tmp_path / "run.tap.jsonl")


async def test_a_missing_binary(tmp_path: Path) -> None:
    with pytest.raises(AgentNotFound, match="codex"):
        async with normalize.drive("codex", cwd=tmp_path, command=["no-such-codex-here"]):
            pass
    with pytest.raises(AgentNotFound):
        async with normalize.drive("codex", cwd=tmp_path, command=[str(tmp_path / "bin" / "codex")]):
            pass


async def test_no_login_is_authentication_required(tmp_path: Path) -> None:
    with pytest.raises(AuthenticationRequired, match="codex login"):
        async with codex(tmp_path, "--no-auth"):
            pass
    sent = [m.get("method") for m in client_lines(tmp_path / "run.tap.jsonl")]
    assert sent == ["initialize", "initialized", "account/read"]  # no thread was opened


async def test_model_mode_resume_and_images_go_where_codex_takes_them(tmp_path: Path) -> None:
    pixel = ImageData("image/png", "iVBORw0KGgo=")
    async with codex(tmp_path, model="gpt-a", mode="read-only", resume="thread-7") as s:
        await s.set_model("gpt-b")
        await s.set_mode("full-access")
        with pytest.raises(NotSupported, match="plan"):
            await s.set_mode("plan")
        [ev async for ev in s.turn("hello", images=[pixel])]
        [ev async for ev in s.turn("hello again")]
    sent = client_lines(tmp_path / "run.tap.jsonl")
    resume = next(m for m in sent if m.get("method") == "thread/resume")
    assert resume["params"] == {
        "threadId": "thread-7",
        "cwd": str(tmp_path.resolve()),
        "model": "gpt-a",
        "approvalPolicy": "on-request",
        "sandbox": "read-only",
    }
    first, second = [m["params"] for m in sent if m.get("method") == "turn/start"]
    assert first["input"][1] == {"type": "image", "url": "data:image/png;base64,iVBORw0KGgo="}
    assert first["model"] == "gpt-b"
    assert (first["approvalPolicy"], first["sandboxPolicy"]) == ("never", {"type": "dangerFullAccess"})
    assert set(second) == {"threadId", "input"}  # Codex keeps the overrides for the turns after


async def test_a_decision_is_needed_for_a_permission(tmp_path: Path) -> None:
    async with codex(tmp_path) as s:
        async for ev in s.turn("run touch made.txt"):
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                with pytest.raises(normalize.UsageError, match="decision"):
                    await s.respond(ev.event.body.request_id, answers={"x": "y"})
                await s.respond(ev.event.body.request_id, "deny")
    assert not (tmp_path / "made.txt").exists()
