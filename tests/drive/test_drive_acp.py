"""The ACP backend against a scripted ACP agent (tests/drive/fakes/fake_acp.py)."""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from drivekit import bodies

import normalize
from normalize import (
    AgentExited,
    AgentNotFound,
    AssistantMessage,
    AuthenticationRequired,
    NotSupported,
    PermissionRequest,
    RequestResolved,
    SessionEvent,
    UnknownRequest,
    UsageError,
    UserQuestion,
)
from normalize._drive import ImageData
from normalize._model import Decision

FAKES = Path(__file__).parent / "fakes"
FAKE = [sys.executable, str(FAKES / "fake_acp.py")]
pytestmark = pytest.mark.anyio


def said(events: Sequence[Any]) -> list[str]:
    return [b.text for b in bodies(events, AssistantMessage)]


async def answering(s: normalize.DriveSession, text: str, decision: Decision | None) -> AsyncIterator[Any]:
    """One turn; each permission request answered with ``decision`` (None: left open)."""
    async for ev in s.turn(text):
        yield ev
        if decision is not None and isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
            await s.respond(ev.event.body.request_id, decision)


async def run(cwd: Path, *turns: tuple[str, Decision | None], **kw: Any) -> list[Any]:
    events: list[Any] = []
    async with normalize.drive("acp", command=FAKE, cwd=cwd, **kw) as s:
        for text, decision in turns:
            events += [ev async for ev in answering(s, text, decision)]
        await s.close()
        events += [ev async for ev in s]
    return events


async def test_two_prompts_are_two_turns_and_equal_the_conversion_of_the_recording(tmp_path: Path) -> None:
    record = tmp_path / "run.tap.jsonl"
    cwd = tmp_path / "project"
    cwd.mkdir()
    events = await run(cwd, ("hello", None), ("shell echo hi", "allow"), record=record)
    assert said(events) == ["echo: hello", "exit 0: hi\n"]
    assert [b.reason for b in bodies(events, normalize.TurnComplete)] == ["ok", "ok"]
    converted = list(normalize.events(normalize.read_records([record])))
    assert [normalize.encode(e) for e in events] == [normalize.encode(e) for e in converted]


@pytest.mark.parametrize(("decision", "option"), [("allow", "allow"), ("allow-always", "always")])
async def test_an_allowed_write_goes_through_fs(tmp_path: Path, decision: Decision, option: str) -> None:
    events = await run(tmp_path, ("write notes.txt some notes", decision))
    assert (tmp_path / "notes.txt").read_text() == "some notes"
    assert said(events) == ["read back: some notes"]
    (resolved,) = bodies(events, RequestResolved)
    assert (resolved.outcome, resolved.option_id, resolved.decision) == ("answered", option, decision)


async def test_a_denied_write_is_not_made(tmp_path: Path) -> None:
    events = await run(tmp_path, ("write notes.txt some notes", "deny"))
    assert not (tmp_path / "notes.txt").exists()
    assert said(events) == ["not written"]
    (resolved,) = bodies(events, RequestResolved)
    assert (resolved.option_id, resolved.decision) == ("reject", "deny")
    assert [c.phase for c in bodies(events, normalize.ToolCall)][-1] == "failed"


async def test_a_permission_answered_cancel_is_cancelled(tmp_path: Path) -> None:
    events = await run(tmp_path, ("shell touch made.txt", "cancel"))
    assert not (tmp_path / "made.txt").exists()
    (resolved,) = bodies(events, RequestResolved)
    assert resolved.outcome == "cancelled"


async def test_a_request_answered_twice_or_never_asked(tmp_path: Path) -> None:
    async with normalize.drive("acp", command=FAKE, cwd=tmp_path) as s:
        async for ev in s.turn("write a.txt x"):
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                await s.respond(ev.event.body.request_id, "allow")
                with pytest.raises(UnknownRequest, match="already resolved"):
                    await s.respond(ev.event.body.request_id, "deny")
        with pytest.raises(UnknownRequest, match="never asked"):
            await s.respond("12345", "allow")


async def test_cancel_mid_turn_answers_the_open_permission_cancelled(tmp_path: Path) -> None:
    events: list[Any] = []
    async with normalize.drive("acp", command=FAKE, cwd=tmp_path) as s:
        with anyio.fail_after(20):  # the fake ends the turn only once its permission request is answered
            async for ev in s.turn("slow"):
                events.append(ev)
                if isinstance(ev, SessionEvent) and isinstance(ev.event.body, PermissionRequest):
                    await s.cancel()
        assert s.turns == ["interrupt"]
        assert s.open_requests == {}
        events += [ev async for ev in s.turn("after")]  # the session goes on
        assert s.turns == ["interrupt", "ok"]
    (resolved,) = bodies(events, RequestResolved)
    assert resolved.outcome == "cancelled"
    assert said(events)[-1] == "echo: after"


async def test_a_terminal_runs_in_the_working_directory(tmp_path: Path) -> None:
    events = await run(tmp_path, ("shell pwd; echo made > made.txt", "allow"))
    assert (tmp_path / "made.txt").read_text() == "made\n"
    assert said(events) == [f"exit 0: {tmp_path.resolve()}\n"]


async def test_terminal_output_keeps_the_last_output_byte_limit_bytes(tmp_path: Path) -> None:
    # the fake asks for outputByteLimit 1000; a UTF-8 character is never cut in two
    events = await run(tmp_path, ("shell printf 'a%.0s' $(seq 1500); printf 'é%.0s' $(seq 600)", "allow"))
    (text,) = said(events)
    head, _, output = text.partition(": ")
    assert head == "exit 0 (truncated)"
    assert output == "é" * 500


async def test_a_failing_command_reports_its_exit_code(tmp_path: Path) -> None:
    events = await run(tmp_path, ("shell echo oops; exit 7", "allow"))
    assert said(events) == ["exit 7: oops\n"]


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _pid_of(path: Path) -> int:
    with anyio.fail_after(10):
        while not path.exists() or not path.read_text().strip():
            await anyio.sleep(0.05)
    return int(path.read_text())


@pytest.mark.parametrize("end", ["session closed", "agent exited"])
async def test_terminals_are_killed_when_the_session_ends(tmp_path: Path, end: str) -> None:
    async with normalize.drive("acp", command=FAKE, cwd=tmp_path) as s:
        events = [ev async for ev in s.turn("spawn echo $$ > pid.txt; exec sleep 60")]
        assert said(events) == ["started term-1"]
        pid = await _pid_of(tmp_path / "pid.txt")
        assert _running(pid)
        if end == "agent exited":
            [ev async for ev in s.turn("die")]
            with anyio.fail_after(10):
                while _running(pid):
                    await anyio.sleep(0.05)
    assert not _running(pid)


async def test_files_outside_the_working_directory_are_refused(tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    (cwd / "inside.txt").write_text("fine")
    (cwd / "link.txt").symlink_to(secret)
    (cwd / "sub").symlink_to(tmp_path)
    events = await run(
        cwd,
        (f"read {cwd / 'inside.txt'}", None),
        (f"read {secret}", None),
        (f"read {cwd / 'link.txt'}", None),
        (f"read {cwd / 'sub' / 'secret.txt'}", None),
        (f"read {cwd / '..' / 'secret.txt'}", None),
        ("read inside.txt", None),
        ("write ../escaped.txt out", "allow"),
        (f"read {cwd / 'missing.txt'}", None),
    )
    texts = said(events)
    assert texts[0] == "content: fine"
    for refused in texts[1:5]:
        assert refused.startswith("refused -32602: ")
        assert "outside the session's working directory" in refused
    assert texts[5] == "refused -32602: inside.txt: the path must be absolute"
    assert texts[6].startswith("refused -32602: ")
    assert texts[7].startswith("refused -32002: Resource not found")
    assert not (tmp_path / "escaped.txt").exists()
    assert secret.read_text() == "do not read"


async def test_an_unknown_agent_request_gets_method_not_found(tmp_path: Path) -> None:
    events = await run(tmp_path, ("unknown", None))
    assert said(events) == ["error -32601"]


ANSWERS: list[tuple[dict[str, str] | None, Decision | None, str]] = [
    ({"color": "blue", "count": "3"}, None, 'accept: {"color": "blue", "count": 3}'),
    ({"Which color?": "red"}, None, 'accept: {"color": "red"}'),  # by the question's text
    (None, "allow", "accept: null"),
    (None, "deny", "decline: null"),
    (None, "cancel", "cancel: null"),
]


@pytest.mark.parametrize(("answers", "decision", "expected"), ANSWERS)
async def test_a_question_is_answered(
    tmp_path: Path, answers: dict[str, str] | None, decision: Decision | None, expected: str
) -> None:
    events: list[Any] = []
    async with normalize.drive("acp", command=FAKE, cwd=tmp_path) as s:
        async for ev in s.turn("question"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, UserQuestion):
                await s.respond(ev.event.body.request_id, decision, answers=answers)
    assert said(events) == [expected]


async def test_an_answer_of_the_wrong_type_is_refused_and_the_question_stays_open(tmp_path: Path) -> None:
    events: list[Any] = []
    async with normalize.drive("acp", command=FAKE, cwd=tmp_path) as s:
        async for ev in s.turn("question"):
            events.append(ev)
            if isinstance(ev, SessionEvent) and isinstance(ev.event.body, UserQuestion):
                rid = ev.event.body.request_id
                with pytest.raises(UsageError, match="'count' must be of type integer"):
                    await s.respond(rid, answers={"count": "many"})
                assert rid in s.open_requests
                await s.respond(rid, answers={"count": "2"})
    assert said(events) == ['accept: {"count": 2}']


async def test_images_go_as_image_blocks_when_the_agent_takes_them(tmp_path: Path) -> None:
    image = ImageData("image/png", base64.b64encode(b"\x89PNG fake").decode())
    async with normalize.drive("acp", command=FAKE, cwd=tmp_path) as s:
        events = [ev async for ev in s.turn("images", images=[image, image])]
    assert said(events) == ["2 image(s)"]
    async with normalize.drive("acp", command=[*FAKE, "--no-image"], cwd=tmp_path) as s:
        with pytest.raises(NotSupported, match="image"):
            await s.prompt("images", images=[image])
        assert not s.turn_running
        events = [ev async for ev in s.turn("still here")]
    assert said(events) == ["echo: still here"]


async def test_mode_and_model_through_config_options(tmp_path: Path) -> None:
    async with normalize.drive("acp", command=FAKE, cwd=tmp_path, mode="auto") as s:
        await s.set_model("fake-large")
        backend: Any = s.backend
        current = {o["id"]: o["currentValue"] for o in backend.config_options}
    assert current == {"mode": "auto", "model": "fake-large"}


async def test_set_mode_where_the_agent_has_no_modes(tmp_path: Path) -> None:
    async with normalize.drive("acp", command=[sys.executable, str(FAKES / "tiny_acp.py")], cwd=tmp_path) as s:
        with pytest.raises(NotSupported, match="modes"):
            await s.set_mode("plan")
        with pytest.raises(NotSupported, match="model"):
            await s.set_model("m")


async def test_resume_loads_the_session_its_history_as_replay(tmp_path: Path) -> None:
    events = await run(tmp_path, ("and now?", None), resume="fake-acp-session-1")
    replayed = [e.event for e in events if isinstance(e, SessionEvent) and e.event.origin == "replay"]
    assert [b.text for b in bodies(events, AssistantMessage)] == ["an earlier answer", "echo: and now?"]
    assert any(isinstance(e.body, AssistantMessage) for e in replayed)
    assert [b.reason for b in bodies(events, normalize.TurnComplete)] == ["ok", "ok"]


async def test_authentication_required(tmp_path: Path) -> None:
    with pytest.raises(AuthenticationRequired, match="Fake login"):
        async with normalize.drive("acp", command=[*FAKE, "--auth"], cwd=tmp_path):
            pass


async def test_a_missing_binary(tmp_path: Path) -> None:
    with pytest.raises(AgentNotFound, match="no-such-acp-agent"):
        async with normalize.drive("acp", command=["no-such-acp-agent"], cwd=tmp_path):
            pass


async def test_the_agent_exiting_mid_turn(tmp_path: Path) -> None:
    events: list[Any] = []
    async with normalize.drive("acp", command=FAKE, cwd=tmp_path) as s:
        events += [ev async for ev in s.turn("die")]
        with pytest.raises(AgentExited) as info:
            await s.prompt("anyone?")
        events += [ev async for ev in s]
    assert info.value.returncode == 3
    assert "dying mid-turn" in info.value.stderr
    (failed,) = [e for e in events if isinstance(e, normalize.SessionFailed)]
    assert "turn:1" in failed.error.message
    assert [b.reason for b in bodies(events, normalize.TurnComplete)] == ["interrupt"]
