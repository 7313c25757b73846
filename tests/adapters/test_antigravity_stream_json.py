"""The antigravity-stream-json adapter: its promises over every capture, precise mappings, the fake agy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

import normalize
from helpers import ADAPTERS, ROOT, convert_capture, convert_records, session_captures
from normalize import (
    AssistantDelta,
    AssistantMessage,
    CaptureParser,
    Error,
    Message,
    MessageCompleted,
    PermissionAuto,
    SessionCreated,
    SessionEvent,
    SessionUpdate,
    Subagent,
    Tokens,
    ToolCall,
    TurnComplete,
    Usage,
    UserMessage,
    detect_protocol,
)
from normalize import (
    Warning as WarningBody,
)
from normalize._model import _Core

PROTOCOL = "antigravity-stream-json"
CAPTURES = [c for c in session_captures() if c.relative_to(ADAPTERS).parts[0] == PROTOCOL]
FAKES = ROOT / "tests" / "fakes"
Line = dict[str, Any]
CID = "c0ffee00-0000-4000-8000-000000000001"


def _id(p: Path) -> str:
    return p.name


def agent_lines(capture: Path) -> list[dict[str, Any]]:
    msgs = [r for r in CaptureParser().feed(capture.read_bytes() + b"\n") if isinstance(r, Message)]
    return [json.loads(m.data) for m in msgs if m.from_ == "agent"]


def bodies(events: list[_Core]) -> list[Any]:
    return [e.event.body for e in events if isinstance(e, SessionEvent)]


def of(events: list[_Core], kind: type[Any]) -> list[Any]:
    return [b for b in bodies(events) if isinstance(b, kind)]


def convert_lines(*lines: dict[str, Any] | tuple[str, dict[str, Any]]) -> list[_Core]:
    """Convert native messages given inline; a (from, msg) pair gives the direction."""
    recs = []
    for i, line in enumerate(lines, 1):
        from_, msg = line if isinstance(line, tuple) else ("agent", line)
        recs.append(Message(json.dumps(msg).encode(), from_, None, i))  # type: ignore[arg-type]
    return convert_records(recs, PROTOCOL)


def step(idx: int, state: str, step_type: str, **kw: Any) -> dict[str, Any]:
    return {
        "event": "step_update",
        "step_update": {"conversation_id": CID, "step_index": idx, "state": state, "step_type": step_type, **kw},
    }


def result(
    status: str = "SUCCESS", *, num_turns: int = 1, usage: tuple[int, int] = (10, 5), **kw: Any
) -> dict[str, Any]:
    i, o = usage
    u = {"input_tokens": i, "output_tokens": o, "thinking_tokens": 0, "cache_read_tokens": 0, "total_tokens": i + o}
    res = {"conversation_id": CID, "status": status, "num_turns": num_turns, "usage": u, **kw}
    return {"event": "result", "result": res}


INIT = {
    "event": "init",
    "conversation_id": CID,
    "init": {"cwd": "/w", "tools": ["run_command"], "permission_mode": "request-review"},
}
USER_INPUT = step(0, "DONE", "user_input")


def tool_step(idx: int, state: str, tool: str = "run_command", **info: Any) -> dict[str, Any]:
    return step(
        idx, state, "tool", tool_name=tool, tool_info={"name": tool, "parameters": {"CommandLine": "make"}, **info}
    )


# --------------------------------------------------------------------------
# Every capture


def test_every_capture_of_the_kit_is_here() -> None:
    assert len(CAPTURES) == 6


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_the_protocol_is_detected(capture: Path) -> None:
    msgs = [r for r in CaptureParser().feed(capture.read_bytes()) if isinstance(r, Message)]
    assert detect_protocol([(m.data, m.from_) for m in msgs[:20]]) == PROTOCOL


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_no_error_event_unless_the_cli_reported_one(capture: Path) -> None:
    reported = 0
    for line in agent_lines(capture):
        s = line.get("step_update", {})
        r = line.get("result", {})
        reported += s.get("step_type") == "error_message"
        reported += s.get("step_type") == "agent_response" and s.get("state") == "ERROR"
        reported += bool(r.get("error")) and r.get("error") != "interrupted"
    assert len(of(convert_capture(capture), Error)) == reported


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_every_tool_step_is_one_call_with_one_terminal_phase(capture: Path) -> None:
    steps = {
        f"{s['conversation_id']}:{s['step_index']}": s["tool_name"]
        for line in agent_lines(capture)
        if (s := line.get("step_update", {})).get("step_type") in ("tool", "subagent")
    }
    calls = of(convert_capture(capture), ToolCall)
    phases: dict[str, list[str]] = defaultdict(list)
    for c in calls:
        phases[c.call_id].append(c.phase)
        assert c.tool == steps[c.call_id]
    assert set(phases) == set(steps)
    for call_id, seen in phases.items():
        assert seen[0] == "started", call_id
        assert sum(p in ("completed", "failed") for p in seen) == 1, (call_id, seen)
        assert seen[-1] in ("completed", "failed"), (call_id, seen)


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_one_turn_complete_and_one_message_completed_per_result(capture: Path) -> None:
    results = [line["result"] for line in agent_lines(capture) if line["event"] == "result"]
    events = convert_capture(capture)
    completes = of(events, TurnComplete)
    assert [c.reason for c in completes] == ["ok" if r["status"] == "SUCCESS" else "interrupt" for r in results]
    done = [e for e in events if isinstance(e, MessageCompleted)]
    assert len(done) == len(results)
    assert len({d.message_id for d in done}) == len(done)
    # every turn carries its id from turn-start to turn-complete; turn-completes are never synthesized
    envelopes = [e.event for e in events if isinstance(e, SessionEvent)]
    assert all(e.native.protocol == PROTOCOL for e in envelopes if isinstance(e.body, TurnComplete))
    assert sorted({e.turn_id for e in envelopes if e.turn_id}) == [f"turn:{n}" for n in range(1, len(results) + 1)]


def _sum(tokens: list[Tokens]) -> dict[str, int]:
    fields = ("input", "output", "total", "cache_read", "reasoning")
    return {f: sum(getattr(t, f) or 0 for t in tokens) for f in fields}


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_per_turn_usage_sums_to_the_final_cumulative_count(capture: Path) -> None:
    results = [line["result"] for line in agent_lines(capture) if line["event"] == "result"]
    usages = of(convert_capture(capture), Usage)
    turns = [u.tokens for u in usages if u.scope == "turn"]
    sessions = [u.tokens for u in usages if u.scope == "session"]
    assert len(turns) == len(sessions) == len(results)
    final = results[-1]["usage"]
    expected = {
        "input": final["input_tokens"],
        "output": final["output_tokens"],
        "total": final["total_tokens"],
        "cache_read": final["cache_read_tokens"],
        "reasoning": final["thinking_tokens"],
    }
    assert _sum(turns) == expected
    assert _sum(sessions[-1:]) == expected
    for t in turns:  # the wire's own arithmetic holds per turn too
        assert t.input + t.output == t.total
        assert t.reasoning <= t.output


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_turn_usage_is_the_sum_of_its_model_calls_unless_interrupted(capture: Path) -> None:
    per_turn: list[list[Tokens]] = [[]]
    turn_usage: list[Tokens] = []
    for u in of(convert_capture(capture), Usage):
        if u.scope == "call":
            per_turn[-1].append(u.tokens)
        elif u.scope == "turn":
            turn_usage.append(u.tokens)
            per_turn.append([])
    interrupted = [r["result"].get("error") == "interrupted" for r in agent_lines(capture) if r["event"] == "result"]
    for calls, turn, cut in zip(per_turn, turn_usage, interrupted, strict=False):
        if cut:  # SIGINT's result counts the call it cut, which no step reported
            assert _sum(calls)["output"] < (turn.output or 0)
        else:
            assert _sum(calls) == _sum([turn])


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_deltas_assemble_into_exactly_one_message_each(capture: Path) -> None:
    events = convert_capture(capture)
    streamed: dict[str, str] = defaultdict(str)
    for d in of(events, AssistantDelta):
        streamed[d.message_id] += d.text
    messages = of(events, AssistantMessage)
    assert all(n == 1 for n in Counter(m.message_id for m in messages).values())
    assert {m.message_id: m.text for m in messages if m.message_id in streamed} == dict(streamed)
    fragments = "".join(
        line["step_update"].get("text_delta", "") for line in agent_lines(capture) if line["event"] == "step_update"
    )
    assert "".join(streamed.values()) == fragments


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_translated_lines_are_never_kept_raw(capture: Path) -> None:
    kept = [e.update for e in convert_capture(capture) if isinstance(e, SessionUpdate)]
    raw = [json.loads(bytes(u.payload)) for u in kept]
    untranslated = {"system_message", "unknown", "user_input"}
    assert all(r.get("step_update", {}).get("step_type") in untranslated for r in raw), raw


# --------------------------------------------------------------------------
# The captures, case by case


def capture(name: str) -> Path:
    (found,) = [c for c in CAPTURES if c.name == name]
    return found


def test_init_gives_the_record_the_mode_and_the_tools() -> None:
    events = convert_capture(capture("01-streamed-answer.jsonl"))
    (created,) = [e for e in events if isinstance(e, SessionCreated)]
    assert created.record.native_session_id == "c2b9546e-0f02-40f3-adb7-f1d5cbf15150"
    assert created.record.model == "gemini-3.8-flash-high"
    assert created.record.cwd == "/home/ana/src/ledger"
    assert created.record.mode == "request-review"


def test_a_soft_denied_command_is_an_automatic_deny_of_its_call() -> None:
    (auto,) = of(convert_capture(capture("04-denied-command.jsonl")), PermissionAuto)
    assert auto.option_id == "deny"
    assert auto.tool_call.call_id == "b8004092-f9e2-4b92-9b38-eefa6bced784:4"
    assert auto.tool_call.tool == "run_command"
    assert auto.tool_call.title == "make test 2>&1 | tail -n 40"
    assert auto.tool_call.category == "execute"


def test_sigint_is_an_interrupted_turn_with_its_partial_reply() -> None:
    events = convert_capture(capture("05-interrupted.jsonl"))
    (complete,) = of(events, TurnComplete)
    assert complete.reason == "interrupt"
    (done,) = [e for e in events if isinstance(e, MessageCompleted)]
    assert done.result.stop_reason == "cancelled"
    assert done.result.error is None
    (message,) = of(events, AssistantMessage)
    assert message.text.startswith("# Migrating `atlas.yaml`")


def test_the_subagent_spans_its_launch_and_the_turn() -> None:
    events = convert_capture(capture("03-subagent.jsonl"))
    subs = of(events, Subagent)
    assert [s.phase for s in subs] == ["started", "progress", "completed"]
    assert {s.subagent_id for s in subs} == {"79bd40db-10e8-467f-95bc-10a5b0652c58"}
    assert {s.call_id for s in subs} == {"38b1f9a3-5c28-45ba-8f0f-9d8c7f51c46e:2"}
    assert subs[0].name == "research"
    assert subs[0].prompt is not None
    assert subs[0].prompt.startswith("Find where the HTTP client's retry policy")


def test_stdin_prompts_are_the_users_words_and_open_their_turns() -> None:
    events = convert_capture(capture("06-multiturn-stdin.tap.jsonl"))
    envelopes = [e.event for e in events if isinstance(e, SessionEvent)]
    users = [(e.turn_id, e.body.text) for e in envelopes if isinstance(e.body, UserMessage)]
    assert users == [
        ("turn:1", "Which Python versions does this project support? Answer in one line."),
        ("turn:2", "And which test runner does CI use?"),
    ]
    done = [e.message_id for e in events if isinstance(e, MessageCompleted)]
    assert done == ["prompt:1", "prompt:2"]


# --------------------------------------------------------------------------
# Precise mappings, inline


def test_a_tool_error_fails_its_call_and_a_permission_error_is_matched_to_the_denied_action() -> None:
    events = convert_lines(
        INIT,
        USER_INPUT,
        tool_step(3, "ACTIVE"),
        tool_step(3, "ERROR", error={"type": "TOOL_ERROR", "message": "permission check failed: run_command"}),
        result(denied_actions=[{"action": "command", "display_name": "RunCommand"}]),
    )
    calls = of(events, ToolCall)
    assert [(c.call_id, c.phase) for c in calls] == [(f"{CID}:3", "started"), (f"{CID}:3", "failed")]
    assert calls[1].output == "permission check failed: run_command"
    (auto,) = of(events, PermissionAuto)
    assert auto.tool_call.call_id == f"{CID}:3"
    assert of(events, Error) == []


def test_a_tool_step_whose_parameters_are_null_is_a_call_without_input_that_reads_back_the_same() -> None:
    events = convert_lines(
        INIT,
        USER_INPUT,
        step(3, "ACTIVE", "tool", tool_name="run_command", tool_info={"name": "run_command", "parameters": None}),
        step(3, "DONE", "tool", tool_name="run_command", tool_info={"name": "run_command", "parameters": None}),
        result(),
    )
    calls = of(events, ToolCall)
    assert [(c.phase, c.input) for c in calls] == [("started", None), ("completed", None)]
    for ev in events:  # absent, not written as null: the line decodes to the same event
        line = normalize.encode(ev)
        assert normalize.encode(normalize.decode(line)) == line


def test_a_denied_action_is_matched_to_the_latest_started_call_whatever_order_they_ended_in() -> None:
    # two commands run at once, the later one ends first; a denied step 8 is still open at result
    events = convert_lines(
        INIT,
        USER_INPUT,
        tool_step(3, "ACTIVE"),
        tool_step(5, "ACTIVE"),
        tool_step(5, "DONE"),
        tool_step(3, "DONE"),
        tool_step(6, "DONE", tool="view_file"),
        result(denied_actions=[{"action": "command"}, {"action": "command"}, {"action": "command"}]),
    )
    refs = [a.tool_call for a in of(events, PermissionAuto)]
    assert [r.call_id for r in refs] == [f"{CID}:5", f"{CID}:3", f"{CID}:denied:2"]
    assert [(r.tool, r.title, r.category) for r in refs[:2]] == [("run_command", "make", "execute")] * 2
    assert json.loads(bytes(refs[0].input)) == {"CommandLine": "make"}


def test_a_call_open_at_the_result_is_a_candidate_for_its_denial() -> None:
    events = convert_lines(
        INIT, USER_INPUT, tool_step(3, "ACTIVE"), tool_step(4, "ACTIVE"), result(denied_actions=[{"action": "command"}])
    )
    (auto,) = of(events, PermissionAuto)
    assert auto.tool_call.call_id == f"{CID}:4"


def test_a_denied_action_without_its_step_gets_a_call_of_its_own() -> None:
    events = convert_lines(
        INIT, USER_INPUT, result(denied_actions=[{"action": "write_file", "display_name": "WriteToFile"}])
    )
    (auto,) = of(events, PermissionAuto)
    assert auto.tool_call.call_id == f"{CID}:denied:0"
    assert auto.tool_call.tool == "write_to_file"
    assert auto.tool_call.title == "WriteToFile"


def test_a_tool_step_seen_only_done_still_starts_and_ends() -> None:
    events = convert_lines(INIT, USER_INPUT, tool_step(2, "DONE", output="a\r\nb\r\n"), result())
    calls = of(events, ToolCall)
    assert [c.phase for c in calls] == ["started", "completed"]
    assert calls[0].title == "make"
    assert calls[0].category == "execute"
    out = [b for b in bodies(events) if type(b).__name__ == "CommandOutput"]
    assert [(o.stream, o.delta) for o in out] == [("merged", "a\r\nb\r\n")]


def test_a_call_open_when_the_turn_ends_fails_and_at_close_is_reported() -> None:
    ended = convert_lines(INIT, USER_INPUT, tool_step(2, "ACTIVE"), result("ERROR", error="interrupted"))
    assert [c.phase for c in of(ended, ToolCall)] == ["started", "failed"]
    assert of(ended, Error) == []
    cut = convert_lines(INIT, USER_INPUT, tool_step(2, "ACTIVE"))
    (warning,) = of(cut, WarningBody)
    assert f"{CID}:2" in warning.message
    assert [e.error_type for e in of(cut, Error)] == ["cut-off"]  # the Session's own report


def test_an_agent_error_reports_the_step_and_the_results_text() -> None:
    events = convert_lines(
        INIT,
        USER_INPUT,
        step(1, "DONE", "error_message"),
        result("ERROR", error="Individual quota reached. Resets in 34m13s.", response=""),
    )
    errors = of(events, Error)
    assert [e.error_type for e in errors] == ["error_message", "result"]
    assert errors[1].message == "Individual quota reached. Resets in 34m13s."
    (done,) = [e for e in events if isinstance(e, MessageCompleted)]
    assert done.result.stop_reason == "error"
    assert done.result.error is not None
    assert done.result.error.message.startswith("Individual quota")
    (complete,) = of(events, TurnComplete)
    assert (complete.reason, complete.stop_reason) == ("interrupt", "ERROR")


def test_a_pre_flight_failure_is_a_lone_failed_turn() -> None:
    events = convert_lines(result("ERROR", usage=(0, 0), error='invalid model selection (--model "x")', response=""))
    (created,) = [e for e in events if isinstance(e, SessionCreated)]
    assert created.record.native_session_id == CID
    assert len(of(events, TurnComplete)) == 1
    assert [e.message for e in of(events, Error)] == ['invalid model selection (--model "x")']


def test_a_reply_no_delta_carried_comes_from_the_result() -> None:
    events = convert_lines(INIT, USER_INPUT, step(1, "DONE", "agent_response"), result(response="PONG\n"))
    (message,) = of(events, AssistantMessage)
    assert message.text == "PONG\n"
    assert of(events, AssistantDelta) == []


def test_print_timeout_is_a_warning_and_an_unfinished_turn() -> None:
    events = convert_lines(INIT, USER_INPUT, result(usage=(0, 0), response="partial"))
    assert len(of(events, WarningBody)) == 1
    (complete,) = of(events, TurnComplete)
    assert complete.reason == "interrupt"
    assert of(events, Error) == []


def test_a_resumed_conversation_counts_only_this_turns_calls() -> None:
    call = {"input_tokens": 100, "output_tokens": 7, "thinking_tokens": 0, "cache_read_tokens": 0, "total_tokens": 107}
    events = convert_lines(
        INIT,
        step(6, "DONE", "user_input"),
        step(7, "DONE", "agent_response", text_delta="ok", usage=call),
        result(num_turns=3, usage=(900, 50)),
    )
    usages = {u.scope: u.tokens for u in of(events, Usage)}
    assert (usages["turn"].input, usages["turn"].total) == (100, 107)
    assert (usages["session"].input, usages["session"].total) == (900, 950)


def test_a_prompt_written_during_a_turn_is_queued_for_the_next() -> None:
    first = ("client", {"event": "user", "message": {"role": "user", "content": "one"}})
    second = ("client", {"event": "user", "message": {"role": "user", "content": [{"type": "text", "text": "two"}]}})
    events = convert_lines(
        first,
        INIT,
        USER_INPUT,
        second,
        result(),
        step(2, "DONE", "user_input"),
        result(num_turns=2, usage=(30, 9)),
    )
    envelopes = [e.event for e in events if isinstance(e, SessionEvent)]
    users = [(e.turn_id, e.body.text, e.body.queued) for e in envelopes if isinstance(e.body, UserMessage)]
    assert users == [("turn:1", "one", None), ("turn:1", "two", True)]
    turns = [(e.turn_id, e.body.reason) for e in envelopes if isinstance(e.body, TurnComplete)]
    assert turns == [("turn:1", "ok"), ("turn:2", "ok")]
    assert [e.message_id for e in events if isinstance(e, MessageCompleted)] == ["prompt:1", "prompt:2"]
    assert [u.tokens.total for u in of(events, Usage) if u.scope == "turn"] == [15, 24]


def test_unknown_lines_are_kept_and_bad_lines_are_errors() -> None:
    events = convert_lines(INIT, {"event": "telemetry", "x": 1}, step(4, "DONE", "novel_step"))
    kept = [e.update.method for e in events if isinstance(e, SessionUpdate)]
    assert kept == ["telemetry", "step_update"]
    recs = [Message(b"not json", "agent", None, 1), Message(b'{"event":"step_update","step_update":{}}', "agent")]
    errors = of(convert_records(recs, PROTOCOL), Error)
    assert [e.error_type for e in errors] == ["malformed", "protocol"]


# --------------------------------------------------------------------------
# The fake agy


def _run(args: list[str], stdin: bytes, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(args, input=stdin, capture_output=True, timeout=30, check=False, env=full_env)


def _agent_wire(capture: Path) -> list[bytes]:
    return [r.data for r in CaptureParser().feed(capture.read_bytes()) if isinstance(r, Message) and r.from_ == "agent"]


def test_the_player_plays_a_tap_captures_agent_lines_byte_for_byte() -> None:
    tap = capture("06-multiturn-stdin.tap.jsonl")
    done = _run([sys.executable, str(FAKES / "play_capture.py"), str(tap), "--speed", "0"], b"one\ntwo\n")
    assert done.returncode == 0
    assert done.stdout.splitlines() == _agent_wire(tap)


def test_the_player_waits_for_each_client_line_and_stops_when_stdin_ends() -> None:
    tap = capture("06-multiturn-stdin.tap.jsonl")
    done = _run([sys.executable, str(FAKES / "play_capture.py"), str(tap), "--speed", "0"], b"one\n")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines == _agent_wire(tap)[:7]  # turn 1 only: the second prompt never came
    assert json.loads(lines[-1])["event"] == "result"
    nothing = _run([sys.executable, str(FAKES / "play_capture.py"), str(tap), "--speed", "0"], b"")
    assert nothing.stdout == b""


def test_the_player_keeps_the_recorded_pacing(tmp_path: Path) -> None:
    tap = tmp_path / "paced.tap.jsonl"
    tap.write_text(
        '{"t":"2026-01-01T00:00:00.000Z","from":"agent","msg":{"event":"init"}}\n'
        '{"t":"2026-01-01T00:00:00.600Z","from":"agent","msg":{"event":"result"}}\n'
    )
    player = [sys.executable, str(FAKES / "play_capture.py"), str(tap)]
    start = time.monotonic()
    done = _run([*player, "--speed", "1"], b"")
    real = time.monotonic() - start
    start = time.monotonic()
    _run([*player, "--speed", "4"], b"")
    fast = time.monotonic() - start
    assert done.stdout == b'{"event":"init"}\n{"event":"result"}\n'
    assert real >= 0.6
    assert fast < real - 0.3


def test_fake_agy_plays_the_capture_named_by_its_environment() -> None:
    plain = capture("02-tools-read-run-edit.jsonl")
    flags = ["--output-format", "stream-json", "--dangerously-skip-permissions"]
    done = _run(
        [sys.executable, str(FAKES / "agy"), *flags], b"", {"AGY_FAKE_CAPTURE": str(plain), "AGY_FAKE_SPEED": "0"}
    )
    assert done.returncode == 0
    assert done.stdout == plain.read_bytes()
    unset = _run([sys.executable, str(FAKES / "agy")], b"", {"AGY_FAKE_CAPTURE": ""})
    assert unset.returncode == 2
    assert b"AGY_FAKE_CAPTURE" in unset.stderr
