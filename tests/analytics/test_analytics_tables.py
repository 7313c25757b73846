"""The analytics tables over every capture and golden: totals against the native files, keys, no double counting."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from native_totals import READERS, TOOL_READERS, TURN_READERS, claude_transcript_calls

from helpers import ADAPTERS, GOLDEN, convert_capture, golden_path, in_versions, protocol_of, session_captures
from normalize import (
    Cost,
    EventEnvelope,
    Native,
    PermissionOption,
    SessionCreated,
    SessionEvent,
    SessionRecord,
    Subagent,
    Tokens,
    ToolCall,
    TurnComplete,
    TurnStart,
    Usage,
)
from normalize.analytics import (
    ANALYTICS_SCHEMA_VERSION,
    TABLES,
    InputSpec,
    SessionRows,
    column_names,
    discover,
    load,
    read_input,
    tables_of,
)
from normalize.analytics._tables import decision_of

CAPTURES = session_captures()


def _id(p: Path) -> str:
    return p.relative_to(ADAPTERS).as_posix()


def native_rows(capture: Path) -> list[SessionRows]:
    (spec,) = [s for s in discover([capture], protocol=protocol_of(capture)) if isinstance(s, InputSpec)]
    return read_input(spec)


def dicts(rows: SessionRows, table: str) -> list[dict[str, Any]]:
    names = column_names(table)
    return [dict(zip(names, r, strict=True)) for r in rows.tables[table]]


def roots(rows: list[SessionRows]) -> list[dict[str, Any]]:
    return [r.session for r in rows]


# --------------------------------------------------------------------------
# Totals against what the native files say


def _expected(capture: Path) -> dict[str, float] | None:
    return READERS[protocol_of(capture)](capture)


#: stream-json recordings whose ``modelUsage`` counts no input at all (``inputTokens: 0`` for
#: every model, a cost of the output alone) while each ``result.usage`` counts the call's input:
#: Claude Code 2.0.30. The tables keep the turns' figures where that total is below them; the
#: cost is the CLI's
NO_INPUT_IN_MODEL_USAGE = ("claude-code-2.0.30",)


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_session_tokens_match_the_native_capture(capture: Path) -> None:
    expected = _expected(capture)
    if expected is None:
        pytest.skip("the capture reports no usage")
    sessions = roots(native_rows(capture))
    parts = capture.relative_to(ADAPTERS).parts
    if parts[0] == "claude-stream-json" and parts[2] in NO_INPUT_IN_MODEL_USAGE:
        assert expected["input"] == 0
        assert sum(s["cost"] or 0.0 for s in sessions) == pytest.approx(expected["cost"], abs=1e-9)
        return
    assert sum(s["input_tokens"] or 0 for s in sessions) == expected["input"]
    assert sum(s["output_tokens"] or 0 for s in sessions) == expected["output"]
    if "cost" in expected:
        assert sum(s["cost"] or 0.0 for s in sessions) == pytest.approx(expected["cost"], abs=1e-9)


@pytest.mark.parametrize("capture", [c for c in CAPTURES if protocol_of(c) == "claude-transcript"], ids=_id)
def test_claude_transcript_calls_match_the_assistant_lines(capture: Path) -> None:
    """Per-call usage rows (main and sub-agents): one per model call the transcript records."""
    expected = claude_transcript_calls(capture)
    if expected is None:
        pytest.skip("no model call recorded")
    calls = [u for rows in native_rows(capture) for u in dicts(rows, "usage") if u["scope"] == "call"]
    assert sum(u["input_tokens"] for u in calls) == expected["input"]
    assert sum(u["output_tokens"] for u in calls) == expected["output"]


@pytest.mark.parametrize("capture", [c for c in CAPTURES if protocol_of(c) in TOOL_READERS], ids=_id)
def test_tool_calls_are_the_calls_the_agent_made(capture: Path) -> None:
    """One ``tool_calls`` row per call id the native capture holds, sub-agents' included."""
    expected = TOOL_READERS[protocol_of(capture)](capture)
    got = [c["call_id"] for rows in native_rows(capture) for c in dicts(rows, "tool_calls")]
    assert sorted(got) == sorted(expected)


@pytest.mark.parametrize("capture", [c for c in CAPTURES if protocol_of(c) in TURN_READERS], ids=_id)
def test_turns_are_the_turns_the_agent_ran(capture: Path) -> None:
    expected = TURN_READERS[protocol_of(capture)](capture)
    rows = native_rows(capture)
    assert sum(len(r.tables["turns"]) for r in rows) == expected
    assert sum(r.session["turns"] for r in rows) == expected


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_turn_figures_never_exceed_the_session(capture: Path) -> None:
    """Turns (sub-agents rolled in) add up to at most the session: nothing is counted twice."""
    for rows in native_rows(capture):
        s = rows.session
        turns = dicts(rows, "turns")
        for name in ("input_tokens", "output_tokens"):
            assert sum(t[name] or 0 for t in turns) <= (s[name] or 0)
        assert sum(t["cost"] or 0.0 for t in turns) <= (s["cost"] or 0.0) + 1e-9


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_the_golden_stream_gives_the_same_rows_as_the_capture(capture: Path) -> None:
    """A normalized file read back with decode gives the capture's keys and figures (times aside)."""
    golden = golden_path(capture)
    assert golden.exists()
    from_golden = read_input(InputSpec("normalized", str(golden)))
    from_native = native_rows(capture)
    assert [r.key for r in from_golden] == [r.key for r in from_native]
    for g, n in zip(from_golden, from_native, strict=True):
        # errors and events are left out: a golden awaiting its update may differ there, not in what is counted
        for table in ("sessions", "turns", "tool_calls", "permissions", "usage"):
            keys = [r[0] for r in g.tables[table]]
            assert keys == [r[0] for r in n.tables[table]], table
        for name in ("turns", "tool_calls", "errors", "events", "input_tokens", "output_tokens", "cost", "model"):
            assert g.session[name] == n.session[name], name


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_rows_are_well_formed(capture: Path) -> None:
    for rows in native_rows(capture):
        for table, columns in TABLES.items():
            for r in rows.tables[table]:
                assert len(r) == len(columns)
            keys = [r[0] for r in rows.tables[table]]
            assert len(keys) == len(set(keys)), f"{table}: duplicate keys"
            if table != "sessions":
                assert {r[column_names(table).index("root_key")] for r in rows.tables[table]} <= {rows.key}
        s = rows.session
        assert s["schema_version"] == ANALYTICS_SCHEMA_VERSION
        assert s["turns"] == len(rows.tables["turns"])
        assert s["events"] == len(rows.tables["events"])
        for call in dicts(rows, "tool_calls"):
            assert call["status"] in ("completed", "failed", "open")
            assert call["category"] in (
                "read", "edit", "delete", "move", "search", "execute", "fetch", "mcp", "web-search", "think", "other"
            )  # fmt: skip
            if call["duration_ms"] is not None:
                assert call["duration_ms"] >= 0


def test_every_protocol_with_captures_is_covered() -> None:
    protocols = {protocol_of(c) for c in CAPTURES}
    assert protocols <= set(READERS)
    assert {"claude-transcript", "codex-rollout", "hm-json"} <= protocols


# --------------------------------------------------------------------------
# The same session from several inputs is counted once


#: versions whose live and stored figures disagree by the agent's own account: before 2.1
#: Claude Code's stream-json ``result`` counts the last call only (1.0.98), every call with one
#: output token too many (1.0.60; 1.0.30's one-call runs too) or the warm-up
#: requests too (2.0.x), and the stored lines the calls of the conversation; 2.1.142's
#: ``modelUsage`` counts the session-title requests too (one per prompt, asked of the main
#: model), which its session file neither holds nor totals (it writes no ``cost-state``); so
#: do 2.1.190's, 2.1.235's and 2.1.260's; 2.1.20's and 2.1.42's session files keep only each
#: streamed message's start usage (``output_tokens: 1``, no final line) where stdout's ``result``
#: has the final counts
OWN_FIGURES_DIFFER = (
    "claude-code-1.",
    "claude-code-2.0.",
    "claude-code-2.1.20",
    "claude-code-2.1.42",
    "claude-code-2.1.142",
    "claude-code-2.1.190",
    "claude-code-2.1.235",
    "claude-code-2.1.260",
)

#: single runs whose figures disagree so: 2.1.67's stream-json totals leave out the reply asked
#: again without streaming after a cut stream (``result.usage`` zero, ``modelUsage`` empty),
#: which its session file counts as the call it was;
#: 2.1.290's totals (stdout's ``modelUsage``, the file's ``cost-state``) leave out the reply cut
#: by an interrupt, whose call both carry (stdout's ``message_delta``, the file's line): the live
#: turn's figure is the CLI's ``result.usage`` (zero), the stored session adds up its calls
OWN_FIGURES_DIFFER_RUNS = {("claude-code-2.1.67", "41-stream-cut-midway"), ("claude-code-2.1.290", "27-interrupt")}


def test_a_live_stream_and_its_stored_file_share_keys_and_totals() -> None:
    """Claude stream-json runs and their transcripts, Codex app-server runs and their rollouts: one key each."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    for capture in CAPTURES:
        parts = capture.relative_to(ADAPTERS).parts
        if in_versions(parts[2], OWN_FIGURES_DIFFER) or (parts[2], parts[3].split(".")[0]) in OWN_FIGURES_DIFFER_RUNS:
            continue
        for rows in native_rows(capture):
            if rows.session["native_session_id"] is not None:
                by_key.setdefault(rows.key, []).append(rows.session)
    shared = {
        k: v for k, v in by_key.items() if {s["protocol"] for s in v} >= {"claude-stream-json", "claude-transcript"}
    }
    codex = {k: v for k, v in by_key.items() if {s["protocol"] for s in v} >= {"codex-app-server", "codex-rollout"}}
    if not shared and not codex:
        pytest.skip("no session captured both live and stored")
    for sessions in [*shared.values(), *codex.values()]:
        full = [s for s in sessions if s["turns"] == max(x["turns"] for x in sessions)]
        # every view holding the whole session reports the same totals (no tokens reported is none counted)
        assert len({(s["input_tokens"] or 0, s["output_tokens"] or 0) for s in full}) == 1, sessions


def test_loading_twice_or_with_goldens_counts_each_session_once() -> None:
    once = load([ADAPTERS])
    twice = load([ADAPTERS, ADAPTERS, GOLDEN])
    assert set(twice.sessions) == set(once.sessions)
    assert twice.duplicates >= len(once.sessions)
    for key, rows in once.sessions.items():
        assert twice.sessions[key].session["input_tokens"] == rows.session["input_tokens"]


def test_the_richest_input_of_a_session_wins() -> None:
    """A resumed Claude session: the transcript holds both turns, each live stream one."""
    folder = ADAPTERS / "claude-stream-json" / "captures" / "claude-code-2.1.332"
    transcript = ADAPTERS / "claude-transcript" / "captures" / "claude-code-2.1.332" / "28-resume"
    if not (folder / "28-resume.jsonl").exists() or not transcript.exists():
        pytest.skip("resume captures absent")
    loaded = load([folder / "28-resume-pre.jsonl", folder / "28-resume.jsonl", transcript])
    (rows,) = loaded.sessions.values()
    assert rows.session["protocol"] == "claude-transcript"
    assert rows.session["turns"] == 2


def test_worker_processes_give_the_same_rows() -> None:
    """With two workers (which also detect the folders' files): the same sessions, rows and problems."""
    folders = [ADAPTERS / "hm-json", ADAPTERS / "claude-transcript"]  # sub-agents read with their sessions
    one = load(folders, jobs=1)
    two = load(folders, jobs=2)
    assert {k: r.tables for k, r in one.sessions.items()} == {k: r.tables for k, r in two.sessions.items()}
    assert (one.inputs, sorted(one.problems)) == (two.inputs, sorted(two.problems))
    assert len(one.sessions) > 40


# --------------------------------------------------------------------------
# Counting rules, by hand


def _env(
    seq: int, body: Any, *, turn: int | None = None, sub: str | None = None, ts: str | None = None
) -> SessionEvent:
    return SessionEvent(
        session_id="s-1",
        event=EventEnvelope(
            session_id="s-1",
            agent="a",
            seq=seq,
            ts=ts or f"2026-01-01T00:00:{seq:02d}.000Z",
            origin="live",
            native=Native(protocol="core", payload=None),
            body=body,
            turn_id=None if turn is None else f"turn:{turn}",
            subagent_id=sub,
        ),
    )


def _created(native: str = "n-1") -> SessionCreated:
    return SessionCreated(
        session_id="s-1", record=SessionRecord(id="s-1", agent="a", protocol="p", native_session_id=native)
    )


def _cum(seq: int, turn: int | None, inp: int, out: int, cost: float | None = None) -> SessionEvent:
    c = None if cost is None else Cost(amount=cost, currency="USD", source="agent")
    return _env(seq, Usage(tokens=Tokens(input=inp, output=out), cost=c, scope="session"), turn=turn)


def test_cumulative_counters_become_per_turn_deltas() -> None:
    events = [
        _created(),
        _env(1, TurnStart(), turn=1),
        _cum(2, 1, 100, 10, 0.5),
        _env(3, TurnComplete(reason="ok"), turn=1),
        _env(4, TurnStart(), turn=2),
        _cum(5, 2, 250, 30, 1.25),
        _env(6, TurnComplete(reason="ok"), turn=2),
    ]
    (rows,) = tables_of(events)
    turns = dicts(rows, "turns")
    assert [(t["input_tokens"], t["output_tokens"], t["cost"]) for t in turns] == [(100, 10, 0.5), (150, 20, 0.75)]
    assert {t["usage_basis"] for t in turns} == {"session-delta"}
    s = rows.session
    assert (s["input_tokens"], s["output_tokens"], s["cost"]) == (250, 30, 1.25)


def test_subagent_usage_rolls_up_once() -> None:
    """Calls of the main agent and of a sub-agent, and a cumulative total covering both."""

    def call(seq: int, inp: int, sub: str | None = None) -> SessionEvent:
        usage = Usage(tokens=Tokens(input=inp, output=1), scope="call")
        return _env(seq, usage, turn=1 if sub is None else None, sub=sub)

    events = [
        _created(),
        _env(1, TurnStart(), turn=1),
        call(2, 100),
        _env(3, Subagent(subagent_id="sa", phase="started", call_id="c1"), turn=1),
        _env(4, TurnComplete(reason="ok"), turn=1),
        call(5, 40, "sa"),  # after the turn, as a background sub-agent or a transcript's sidechain
        call(6, 60, "sa"),
        _cum(7, None, 200, 3),
    ]
    (rows,) = tables_of(events)
    (turn,) = dicts(rows, "turns")
    assert turn["input_tokens"] == 200  # 100 own + 100 from the sub-agent spawned in this turn
    sessions = dicts(rows, "sessions")
    assert sessions[0]["input_tokens"] == 200  # not 200 + 100 + 100
    assert len(sessions) == 1  # the sub-agent has its own table: a sum over sessions counts it once
    (sub,) = dicts(rows, "subagents")
    assert sub["subagent_id"] == "sa"
    assert sub["parent_key"] == rows.key
    assert sub["spawn_call_id"] == "c1"
    assert sub["input_tokens"] == 100


def test_keys_come_from_content_not_from_reading_order() -> None:
    a = [_created("n-9"), _env(1, TurnStart(), turn=1), _env(2, ToolCall(call_id="c", tool="t", phase="started"))]
    b = [_created("n-9"), _env(7, TurnStart(), turn=1), _env(9, ToolCall(call_id="c", tool="t", phase="started"))]
    (ra,), (rb,) = tables_of(a), tables_of(b)
    assert ra.key == rb.key
    assert ra.tables["turns"][0][0] == rb.tables["turns"][0][0]
    assert ra.tables["tool_calls"][0][0] == rb.tables["tool_calls"][0][0]
    (other,) = tables_of([_created("n-10")])
    assert other.key != ra.key


def test_unknown_times_are_null_not_the_conversion_time() -> None:
    from normalize.analytics import UNKNOWN_TS

    (rows,) = tables_of([_created(), _env(1, TurnStart(), turn=1, ts=UNKNOWN_TS)])
    (turn,) = dicts(rows, "turns")
    assert turn["started_at"] is None
    assert rows.session["started_at"] is None


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"behavior": "allow", "updatedInput": {}}, ("allow", "once")),
        ({"behavior": "deny", "message": "no"}, ("deny", "once")),
        ({"decision": "accept"}, ("allow", "once")),
        ({"decision": "acceptForSession"}, ("allow", "session")),
        ({"decision": "decline"}, ("deny", "once")),
        ({"optionId": "allow_always", "kind": "allow_always"}, ("allow", "always")),
        ({"optionId": "reject", "kind": "reject_once"}, ("deny", "once")),
        ({"optionId": "allow-session", "allow": True, "forSession": True}, ("allow", "session")),
        ({"optionId": "x2"}, ("deny", "always")),  # the request's options say what x2 is
    ],
)
def test_permission_decisions_from_every_answer_shape(answer: Any, expected: tuple[str, str]) -> None:
    options = [PermissionOption(id="x2", kind="reject_always", label="Never")]
    decision, scope, _ = decision_of(answer, options)
    assert (decision, scope) == expected


def _iter_tool_rows(rows: list[SessionRows]) -> Iterator[dict[str, Any]]:
    for r in rows:
        yield from dicts(r, "tool_calls")


def test_permissions_link_to_their_tool_calls() -> None:
    captures = [c for c in CAPTURES if protocol_of(c) in ("codex-app-server", "claude-stream-json", "hm-json")]
    linked = 0
    for capture in captures:
        for rows in native_rows(capture):
            calls = {c["call_id"]: c for c in dicts(rows, "tool_calls")}
            for p in dicts(rows, "permissions"):
                if p["mode"] == "asked" and p["call_id"] in calls and p["outcome"] == "answered":
                    assert calls[p["call_id"]]["permission"] == "asked"
                    assert p["decision"] in ("allow", "deny")
                    linked += 1
    assert linked > 0


def test_a_rule_deciding_an_asked_call_gives_the_rules_decision() -> None:
    """hm asks, then its rules allow (permission-auto) and the request is withdrawn (cancelled)."""
    from normalize import PermissionAuto, PermissionRequest, RequestResolved, ToolCallRef

    ref = ToolCallRef(call_id="c1", tool="shell", title="ls", category="execute")
    options = [PermissionOption(id="allow", kind="allow_once", label="Allow")]
    events = [
        _created(),
        _env(1, TurnStart(), turn=1),
        _env(2, ToolCall(call_id="c1", tool="shell", phase="started", category="execute"), turn=1),
        _env(3, PermissionRequest(request_id="c1", tool_call=ref, options=options), turn=1),
        _env(4, PermissionAuto(tool_call=ref, option_id="allow"), turn=1),
        _env(5, RequestResolved(request_id="c1", outcome="cancelled"), turn=1),
        _env(6, ToolCall(call_id="c1", tool="shell", phase="completed", exit_code=0), turn=1),
    ]
    (rows,) = tables_of(events)
    (call,) = dicts(rows, "tool_calls")
    assert (call["permission"], call["decision"], call["status"], call["exit_code"]) == (
        "asked",
        "allow",
        "completed",
        0,
    )
    assert call["duration_ms"] == 4000.0
    perms = dicts(rows, "permissions")
    assert [(p["mode"], p["outcome"], p["decision"]) for p in perms] == [
        ("asked", "cancelled", "cancelled"),
        ("auto", "auto", "allow"),
    ]
    assert perms[0]["latency_ms"] == 2000.0


@pytest.mark.parametrize("version", ["0.149.1", "0.150.0"])
def test_a_codex_sub_agent_run_again_by_a_follow_up_is_one_row_to_its_last_end(version: str) -> None:
    """A sub-agent that a follow-up ran again is one row of the subagents table, not two:
    from its first start to the end of its last run."""
    capture = ADAPTERS / f"codex-app-server/captures/codex-{version}/i_collab_followup.tap.jsonl"
    (sub,) = [d for rows in native_rows(capture) for d in dicts(rows, "subagents")]
    assert sub["status"] == "completed" and sub["spawn_call_id"]
    # the sub-agent's turn ends, as its own session says them: its first run's, its second's
    events = [e.event for e in convert_capture(capture) if isinstance(e, SessionEvent)]
    first, second = [e.ts for e in events if e.session_id != events[0].session_id and isinstance(e.body, TurnComplete)]
    assert str(sub["started_at"]) < first < second <= str(sub["ended_at"])


@pytest.mark.parametrize(
    "version",
    ["0.171.0", "0.155.0", "0.150.0", "0.149.1", "0.142.2", "0.131.0", "0.125.0", "0.107.0", "0.96.0", "0.87.0"],
)
def test_a_codex_sub_agent_has_its_end_and_duration_whatever_the_version(version: str) -> None:
    """The subagents table reads the same for every Codex: the sub-agent that ran and
    completed has its end, status and duration, whether Codex said the end (0.150 on), said
    it late (0.87 to 0.107, in a ``wait``) or never (0.125 to 0.142)."""
    capture = ADAPTERS / f"codex-app-server/captures/codex-{version}/i_collab_agent.tap.jsonl"
    subs = [d for rows in native_rows(capture) for d in dicts(rows, "subagents")]
    (sub,) = subs
    assert sub["status"] == "completed" and sub["spawn_call_id"]
    assert sub["started_at"] <= sub["ended_at"] and sub["duration_ms"] >= 0
