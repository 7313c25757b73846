"""OpenCode's older releases read right: token counts, refusals by a rule, the session's model.

Lines and parts below are copied from recordings of those releases (the fake model server
answers 1200 input tokens and 40 output tokens, 8 of them reasoning).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import normalize
from helpers import ADAPTERS, capture_id, convert_capture, fixed_clock


def envelopes(protocol: str, lines: list[dict[str, Any]]) -> list[normalize.EventEnvelope]:
    session = normalize.Session(normalize.adapter_class(protocol)(), clock=fixed_clock)
    out = [e for line in lines for e in session.feed(json.dumps(line).encode())] + session.close()
    return [e.event for e in out if isinstance(e, normalize.SessionEvent)]


def bodies(protocol: str, lines: list[dict[str, Any]]) -> list[Any]:
    return [e.body for e in envelopes(protocol, lines)]


def step_finish(tokens: dict[str, Any]) -> dict[str, Any]:
    part = {"id": "prt_1", "type": "step-finish", "reason": "stop", "tokens": tokens}
    return {"type": "step_finish", "timestamp": 1796401979456, "sessionID": "ses_1", "part": part}


# ---------------------------------------------------------------- tokens


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        # 1.14.34 and later: output without reasoning, total the provider's sum
        ({"total": 1240, "input": 1200, "output": 32, "reasoning": 8, "cache": {"read": 0, "write": 0}}, (1200, 40)),
        # 1.2.12 to 1.3.2: output with reasoning (input + output == total)
        ({"total": 1240, "input": 1200, "output": 40, "reasoning": 8, "cache": {"read": 0, "write": 0}}, (1200, 40)),
        # the same, with cache reads and writes (input is without them in every version)
        (
            {"total": 1540, "input": 1000, "output": 40, "reasoning": 8, "cache": {"read": 300, "write": 200}},
            (1500, 40),
        ),
        (
            {"total": 1540, "input": 1000, "output": 32, "reasoning": 8, "cache": {"read": 300, "write": 200}},
            (1500, 40),
        ),
        # 1.0.185 and 1.1.56: no total; output is the provider's count, reasoning included
        ({"input": 1200, "output": 40, "reasoning": 8, "cache": {"read": 0, "write": 0}}, (1200, 40)),
        # no reasoning: nothing to tell apart
        ({"total": 1240, "input": 1200, "output": 40, "reasoning": 0, "cache": {"read": 0, "write": 0}}, (1200, 40)),
    ],
    ids=["1.14-on", "to-1.3", "to-1.3-cached", "1.14-on-cached", "no-total", "no-reasoning"],
)
def test_a_step_counts_reasoning_once_in_its_output(tokens: dict[str, Any], expected: tuple[int, int]) -> None:
    (usage,) = [b for b in bodies("opencode-json", [step_finish(tokens)]) if isinstance(b, normalize.Usage)]
    assert usage.tokens is not None
    assert (usage.tokens.input, usage.tokens.output) == expected
    assert usage.tokens.reasoning == tokens["reasoning"]
    if "total" in tokens:  # OpenCode's total is input (cache included) + output (reasoning included)
        assert sum(expected) == tokens["total"]


# ---------------------------------------------------------------- a call a rule refused

#: How each release worded a refusal by a ``deny`` rule (the part's ``state.error``).
REFUSALS = {
    # 1.3.2 and later
    "1.3.2": "The user has specified a rule which prevents you from using this specific tool call. Here are some of"
    ' the relevant rules [{"permission":"*","action":"allow","pattern":"*"},'
    '{"permission":"bash","pattern":"rm *","action":"deny"}]',
    # 1.1.56 (its stored part; the stream leaves the call out) and 1.2.12
    "1.2.12": "Error: The user has specified a rule which prevents you from using this specific tool call. Here are"
    ' some of the relevant rules [{"permission":"*","pattern":"*","action":"allow"},'
    '{"permission":"bash","pattern":"rm *","action":"deny"}]',
    # 1.2.27: the error object printed
    "1.2.27": 'PermissionDeniedError({"ruleset":[{"permission":"*","pattern":"*","action":"allow"},'
    '{"permission":"bash","pattern":"rm *","action":"deny"}]})',
    # 1.0.185 (its stored part; the stream leaves the call out)
    "1.0.185": 'Error: The user has specifically restricted access to this command: "rm -f hello.txt", you are not'
    ' allowed to execute it. The user has these settings configured: {"*":"allow","rm *":"deny"}',
}


def refused_call(error: str) -> dict[str, Any]:
    state = {"status": "error", "input": {"command": "rm -f hello.txt"}, "error": error}
    part = {"id": "prt_2", "type": "tool", "callID": "call_1", "tool": "bash", "state": state}
    return {"type": "tool_use", "timestamp": 1796401979456, "sessionID": "ses_1", "part": part}


@pytest.mark.parametrize("version", REFUSALS)
def test_a_refusal_by_a_rule_is_a_permission_auto_deny_in_each_wording(version: str) -> None:
    events = envelopes("opencode-json", [refused_call(REFUSALS[version])])
    out = [e.body for e in events]
    kinds = [(e.kind, getattr(e.body, "phase", None)) for e in events]
    assert kinds == [
        ("turn-start", None),
        ("tool-call", "started"),
        ("permission-auto", None),
        ("tool-call", "failed"),
        ("error", None),  # cut off: the line is alone
        ("turn-complete", None),
    ]
    (auto,) = [b for b in out if isinstance(b, normalize.PermissionAuto)]
    assert (auto.option_id, auto.decision, auto.reason) == ("deny", "deny", REFUSALS[version])
    assert auto.tool_call is not None and auto.tool_call.call_id == "call_1"


def test_another_failure_is_no_refusal() -> None:
    out = bodies("opencode-json", [refused_call("Error: command not found: frobnicate")])
    assert not [b for b in out if isinstance(b, normalize.PermissionAuto)]
    assert [b.phase for b in out if isinstance(b, normalize.ToolCall)] == ["started", "failed"]


# ---------------------------------------------------------------- the session's model


def session_row(model: str | None) -> dict[str, Any]:
    row = {"table": "session", "id": "ses_1", "directory": "/home/user/project", "title": "OK.", "version": "1.14.34"}
    return row if model is None else {**row, "model": model}


def message(n: int, data: dict[str, Any]) -> dict[str, Any]:
    return {"table": "message", "id": f"msg_{n}", "session_id": "ses_1", "time_created": 1796402011228, "data": data}


def user(model: str) -> dict[str, Any]:
    return {"role": "user", "agent": "build", "model": {"providerID": "openai", "modelID": model}}


def assistant(model: str) -> dict[str, Any]:
    return {"role": "assistant", "modelID": model, "providerID": "openai", "finish": "stop"}


def models(rows: list[dict[str, Any]]) -> tuple[str | None, list[tuple[str, str | None]]]:
    """The session record's model, and where a ``session-info`` names one (after which event kind)."""
    session = normalize.Session(normalize.adapter_class("opencode-db")(), clock=fixed_clock)
    out = [e for row in rows for e in session.feed(json.dumps(row).encode())] + session.close()
    (created,) = [e for e in out if isinstance(e, normalize.SessionCreated)]
    events = [e.event for e in out if isinstance(e, normalize.SessionEvent)]
    infos = [
        (events[i + 1].kind, e.body.model) for i, e in enumerate(events) if isinstance(e.body, normalize.SessionInfo)
    ]
    return created.record.model, infos


def test_a_session_row_without_model_takes_it_from_its_messages() -> None:
    # OpenCode up to 1.14.41: no model column (1.2, 1.3) or an empty one (1.14)
    rows = [session_row(None), message(1, user("gpt-5")), message(2, assistant("gpt-5"))]
    assert models(rows) == (None, [("turn-start", "gpt-5")])  # said before the turn that uses it


def test_a_model_a_later_message_names_is_said_again() -> None:
    rows = [session_row(None), message(1, user("gpt-5")), message(2, assistant("gpt-5")), message(3, user("o3"))]
    assert models(rows) == (None, [("turn-start", "gpt-5"), ("turn-start", "o3")])


def test_an_assistant_message_names_the_model_when_the_user_message_does_not() -> None:
    rows = [session_row(None), message(1, {"role": "user"}), message(2, assistant("gpt-5"))]
    assert [model for _, model in models(rows)[1]] == ["gpt-5"]


def test_a_session_row_with_its_model_keeps_it_and_says_nothing_more() -> None:
    # OpenCode 1.18: the session names its model; its messages are not read for it
    rows = [session_row('{"id":"gpt-5","providerID":"openai"}'), message(1, user("o3")), message(2, assistant("o3"))]
    assert models(rows) == ("gpt-5", [])


# ---------------------------------------------------------------- the recordings

JSON_KIT = ADAPTERS / "opencode-json/captures"
DB_KIT = ADAPTERS / "opencode-db/captures"
#: the stored sessions: databases, and (1.0, 1.1) storage/ folders, one a case
STORED = sorted([*DB_KIT.glob("opencode-*/*.db"), *(p for p in DB_KIT.glob("opencode-*/*") if p.is_dir())])
RECORDED = sorted([*JSON_KIT.glob("opencode-*/*.jsonl"), *STORED])
#: 1.15.4's `run` exited before printing a line of text_thinking (a release that can stop before its
#: last lines; the database holds the whole session)
STREAM_PRINTED_NOTHING = ("1.15.4",)


def native_steps(capture: Path) -> list[dict[str, Any]]:
    """The token counts OpenCode wrote for each step (model request) of a recording."""
    if capture.suffix == ".jsonl":
        lines = [json.loads(x) for x in capture.read_text().splitlines()]
        return [x["part"]["tokens"] for x in lines if x["type"] == "step_finish"]
    if capture.is_dir():  # storage/: one JSON file a part
        parts = [json.loads(f.read_bytes()) for f in sorted(capture.glob("part/*/*.json"), key=lambda f: f.name)]
        return [p["tokens"] for p in parts if p["type"] == "step-finish"]
    with sqlite3.connect(f"file:{capture}?mode=ro", uri=True) as db:
        parts = [json.loads(d) for (d,) in db.execute("select data from part order by id")]
    return [p["tokens"] for p in parts if p["type"] == "step-finish"]


def usages(capture: Path) -> list[normalize.Tokens]:
    out = [e.event.body for e in convert_capture(capture) if isinstance(e, normalize.SessionEvent)]
    return [u.tokens for u in out if isinstance(u, normalize.Usage) and u.tokens is not None]


@pytest.mark.parametrize("capture", RECORDED, ids=capture_id)
def test_each_step_of_a_recording_counts_reasoning_once(capture: Path) -> None:
    steps, tokens = native_steps(capture), usages(capture)
    assert len(tokens) == len(steps)
    for native, t in zip(steps, tokens, strict=True):
        assert t.input is not None and t.output is not None
        assert t.reasoning == native["reasoning"]
        if "total" in native:  # the provider's total: input (cache included) + output (reasoning included)
            assert t.input + t.output == native["total"]
        else:  # OpenCode 1.0, 1.1: the provider's output count, as written
            assert t.output == native["output"]


@pytest.mark.parametrize(
    ("version", "native_output"),
    [
        ("1.0.185", 40),
        ("1.1.56", 40),
        ("1.2.12", 40),
        ("1.2.27", 40),
        ("1.3.2", 40),
        ("1.14.34", 32),
        ("1.15.4", 32),
        ("1.17.11", 32),
        ("1.18.33", 32),
    ],
)
def test_the_fake_servers_40_output_tokens_8_of_them_reasoning_read_40_in_every_version(
    version: str, native_output: int
) -> None:
    # the fake server answers 40 output tokens of which 8 reasoning: OpenCode writes 40 up to
    # 1.3.2 (reasoning included) and 32 from 1.14.34 (less reasoning); normalize says 40 for both
    capture = JSON_KIT / f"opencode-{version}/text_thinking.jsonl"
    if version in STREAM_PRINTED_NOTHING:  # its database has the step
        capture = DB_KIT / f"opencode-{version}/text_thinking.db"
    (native,) = native_steps(capture)
    assert (native["output"], native["reasoning"]) == (native_output, 8)
    (t,) = usages(capture)
    assert (t.input, t.output, t.reasoning) == (1200, 40, 8)


#: the versions whose stream prints a call a rule refused (1.0 and 1.1 leave it out)
REFUSED_IN_STREAM = ["1.2.12", "1.2.27", "1.3.2", "1.14.34", "1.15.4", "1.17.11", "1.18.33"]


@pytest.mark.parametrize(
    "capture",
    [JSON_KIT / f"opencode-{v}/shell_denied.jsonl" for v in REFUSED_IN_STREAM]
    + [DB_KIT / f"opencode-{v}/shell_denied.db" for v in REFUSED_IN_STREAM]
    + [DB_KIT / "opencode-1.1.56/shell_denied"],  # storage/ holds what the stream of 1.1 leaves out
    ids=capture_id,
)
def test_a_call_a_rule_refused_is_a_permission_auto_deny_in_every_recording(capture: Path) -> None:
    out = [e.event.body for e in convert_capture(capture) if isinstance(e, normalize.SessionEvent)]
    (auto,) = [b for b in out if isinstance(b, normalize.PermissionAuto)]
    assert (auto.option_id, auto.decision) == ("deny", "deny")
    calls = [(b.call_id, b.phase) for b in out if isinstance(b, normalize.ToolCall)]
    assert auto.tool_call is not None and calls == [
        (auto.tool_call.call_id, "started"),
        (auto.tool_call.call_id, "failed"),
    ]


@pytest.mark.parametrize("version", ["1.0.185", "1.1.56"])
def test_opencode_1_0_and_1_1_streams_leave_a_refused_call_out(version: str) -> None:
    # the call is only in the session's storage/ files (read by opencode-db)
    capture = JSON_KIT / f"opencode-{version}/shell_denied.jsonl"
    out = [e.event.body for e in convert_capture(capture) if isinstance(e, normalize.SessionEvent)]
    assert not [b for b in out if isinstance(b, (normalize.ToolCall, normalize.PermissionAuto))]


@pytest.mark.parametrize("capture", STORED, ids=capture_id)
def test_every_recorded_database_session_has_its_model_before_its_first_turn(capture: Path) -> None:
    events = convert_capture(capture)
    (created,) = [e for e in events if isinstance(e, normalize.SessionCreated)]
    envelopes = [e.event for e in events if isinstance(e, normalize.SessionEvent)]
    first_turn = next(i for i, e in enumerate(envelopes) if e.kind == "turn-start")
    infos = [e.body.model for e in envelopes[:first_turn] if isinstance(e.body, normalize.SessionInfo)]
    version = created.record.agent_version or ""
    if version.startswith(("1.0.", "1.1.", "1.2.", "1.3.", "1.14.")):  # the session row names no model
        assert (created.record.model, infos) == (None, ["gpt-5"])
    else:
        assert (created.record.model, infos) == ("gpt-5", [])
