"""The questions people ask of their sessions: where they are, what they cost, per day, model, project."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import ADAPTERS
from normalize import (
    Cost,
    EventEnvelope,
    Native,
    SessionCreated,
    SessionEvent,
    SessionRecord,
    Tokens,
    TurnComplete,
    TurnStart,
    Usage,
    UserMessage,
)
from normalize.analytics import column_names, load, summarize, tables_of
from normalize.analytics._cli import add_commands, render_stats
from normalize.analytics._prices import estimate
from normalize.analytics._stats import Filter, parse_day

CLAUDE = ADAPTERS / "claude-transcript" / "captures"
CODEX = ADAPTERS / "codex-rollout" / "captures"


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="normalize")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


def dicts(rows: Any, table: str) -> list[dict[str, Any]]:
    names = column_names(table)
    return [dict(zip(names, r, strict=True)) for r in rows.tables[table]]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder as the agents leave it: sessions, and their own history files beside them."""
    root = tmp_path / "home"
    # the kits' versions recorded on 2026-11-29 (the dates the tests below state)
    for folder in sorted(CLAUDE.glob("claude-code-2.1.332*")):
        shutil.copytree(folder, root / ".claude" / "projects" / folder.name)
    day = root / ".codex" / "sessions" / "2026" / "11" / "29"
    day.mkdir(parents=True)
    for version in ("codex-0.169.0", "codex-0.171.0"):
        for f in (CODEX / version).rglob("*.jsonl"):
            shutil.copy(f, day / f.name)
    (root / ".claude" / "history.jsonl").write_text('{"display":"fix the tests","timestamp":1764443000000}\n')
    (root / ".codex" / "history.jsonl").write_text('{"session_id":"x","ts":1764443000,"text":"fix the tests"}\n')
    monkeypatch.setenv("HOME", str(root))
    for variable in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COLUMNS"):
        monkeypatch.delenv(variable, raising=False)
    return root


# --------------------------------------------------------------------------
# No path: the agents' own folders


def test_stats_without_a_path_reads_the_agents_folders_and_says_which(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(["stats", "--json", "-j", "1"]) == 0
    captured = capsys.readouterr()
    assert "~/.claude/projects (claude-code)" in captured.err
    assert "~/.codex/sessions (codex)" in captured.err
    doc = json.loads(captured.out)
    assert {g["agent"] for g in doc["groups"]} == {"claude-code", "codex"}
    assert doc["problems"] == []


def test_the_agents_history_files_are_skipped_without_failing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["stats", str(home / ".claude"), str(home / ".codex"), "--json", "-j", "1"]) == 0
    captured = capsys.readouterr()
    assert "history.jsonl" not in captured.err
    assert json.loads(captured.out)["problems"] == []


def test_no_agent_folder_at_all_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    from normalize._cli import main

    assert main(["stats"]) == 1
    err = capsys.readouterr().err
    assert "no agent session folder found" in err and "Traceback" not in err


def test_export_doctor_and_convert_read_the_agents_folders_too(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("duckdb")
    from normalize._cli import main

    assert main(["export", "--duckdb", str(tmp_path / "s.duckdb"), "-j", "1"]) == 0
    assert "added" in capsys.readouterr().err
    assert main(["doctor", "--json"]) == 0
    assert "~/.claude/projects" in capsys.readouterr().err
    out = tmp_path / "out"
    assert main(["convert", "-o", f"{out}/"]) == 0
    assert len(list(out.rglob("*.normalized.jsonl"))) > 10  # each under its path relative to its folder
    assert main(["convert"]) == 2  # to stdout, a folder's worth of sessions would be one stream: say where


# --------------------------------------------------------------------------
# stats --by, --since, --until, --project


def _summary_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert _run(["stats", *argv, "--json", "-j", "1"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


@pytest.mark.parametrize("by", ["day", "week", "month", "model", "project", "agent"])
def test_every_grouping_adds_up_to_the_same_totals(home: Path, by: str, capsys: pytest.CaptureFixture[str]) -> None:
    plain = _summary_json([], capsys)["total"]
    doc = _summary_json(["--by", by], capsys)
    assert doc["total"]["tokens"] == plain["tokens"]
    assert doc["total"]["sessions"] == plain["sessions"]
    assert sum(g["tokens"]["output_tokens"] for g in doc["groups"]) == plain["tokens"]["output_tokens"]
    assert all(set(g) >= {by, "sessions", "tokens", "cost"} for g in doc["groups"])


def test_by_day_week_month_name_the_periods(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    days = {g["day"] for g in _summary_json(["--by", "day"], capsys)["groups"]}
    assert "2026-11-29" in days
    weeks = {g["week"] for g in _summary_json(["--by", "week"], capsys)["groups"]}
    assert "2026-11-23" in weeks  # the Monday of that week
    months = {g["month"] for g in _summary_json(["--by", "month"], capsys)["groups"]}
    assert "2026-11" in months


def test_since_and_until_keep_only_their_days(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inside = _summary_json(["--since", "2026-11-29", "--until", "20261129"], capsys)["total"]
    assert inside["tokens"]["output_tokens"] > 0
    after = _summary_json(["--since", "2099-01-01"], capsys)["total"]  # after every capture
    assert after["tokens"]["output_tokens"] == 0 and after["sessions"] == 0


def test_a_bad_day_is_a_usage_error(home: Path) -> None:
    from normalize._cli import main

    assert main(["stats", "--since", "yesterday"]) == 2


def test_project_keeps_the_sessions_of_one_folder(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    projects = {g["project"]: g for g in _summary_json(["--by", "project"], capsys)["groups"]}
    assert len(projects) >= 2
    cwd, group = next((p, g) for p, g in sorted(projects.items()) if p)
    by_path = _summary_json(["--project", cwd], capsys)["total"]
    by_name = _summary_json(["--project", Path(cwd).name], capsys)["total"]
    assert by_path["sessions"] == by_name["sessions"] == group["sessions"]
    assert by_path["tokens"] == group["tokens"]


def test_subagents_are_counted_once(capsys: pytest.CaptureFixture[str]) -> None:
    capture = CLAUDE / "claude-code-2.1.332" / "24-subagent-with-tool"
    loaded = load([capture])
    (rows,) = loaded.sessions.values()
    doc = summarize(loaded.sessions.values()).as_json()["total"]
    assert doc["sessions"] == 1 and doc["subagents"] == 1
    assert doc["tokens"]["output_tokens"] == rows.session["output_tokens"]
    (sub,) = dicts(rows, "subagents")
    assert 0 < sub["output_tokens"] < rows.session["output_tokens"]


# --------------------------------------------------------------------------
# Models and cost


def test_claude_sessions_have_the_model_their_calls_name() -> None:
    # 2.1.332: every scenario's main thread calls the model (in 2.0.x a failed scenario's only
    # output is the warm-up agents', which name no model)
    loaded = load(sorted(CLAUDE.glob("claude-code-2.1.332*")))
    models = [r.session["model"] for r in loaded.sessions.values() if r.session["output_tokens"]]
    assert models and all(m is not None and m.startswith("claude-") for m in models)
    for rows in loaded.sessions.values():
        assert all(u["model"] is not None for u in dicts(rows, "usage") if u["output_tokens"])


def test_codex_cost_is_estimated_and_marked(capsys: pytest.CaptureFixture[str]) -> None:
    loaded = load([CODEX])
    priced = [r.session for r in loaded.sessions.values() if r.session["cost"] is not None]
    assert priced and all(s["cost_source"] == "estimated" for s in priced)
    doc = summarize(loaded.sessions.values(), by="agent").as_json()
    (codex,) = doc["groups"]
    assert codex["cost"]["source"] == "estimated" and codex["cost"]["amount"] > 0


def test_the_agents_own_cost_is_preferred() -> None:
    """A Claude transcript's cost-state: the agent's figure, not an estimate."""
    loaded = load([CLAUDE / "claude-code-2.1.332" / "24-subagent-with-tool"])
    (rows,) = loaded.sessions.values()
    assert rows.session["cost_source"] == "agent"
    assert all(u["cost_source"] in (None, "agent") for u in dicts(rows, "usage"))


def _session(model: str, cost: float | None = None) -> list[Any]:
    def env(seq: int, body: Any) -> SessionEvent:
        return SessionEvent(
            session_id="s-1",
            event=EventEnvelope(
                session_id="s-1",
                agent="a",
                seq=seq,
                ts=f"2026-01-01T00:00:{seq:02d}.000Z",
                origin="live",
                native=Native(protocol="core", payload=None),
                body=body,
                turn_id="turn:1",
            ),
        )

    record = SessionRecord(id="s-1", agent="a", protocol="p", native_session_id="n", model=model)
    c = None if cost is None else Cost(amount=cost, currency="USD", source="agent")
    tokens = Tokens(input=1000, output=100, cache_read=800)
    return [
        SessionCreated(session_id="s-1", record=record),
        env(1, TurnStart()),
        env(2, UserMessage(message_id="m", text="\n  Fix the flaky test in tests/test_io.py\nand more")),
        env(3, Usage(tokens=tokens, cost=c, scope="call")),
        env(4, TurnComplete(reason="ok", stop_reason="end_turn")),
    ]


def test_unknown_model_gives_null_cost_not_zero() -> None:
    (rows,) = tables_of(_session("a-model-no-price-table-knows"))
    assert rows.session["cost"] is None and rows.session["cost_source"] is None
    doc = summarize([rows]).as_json()["total"]
    assert doc["cost"] is None
    assert doc["unpriced_usage_rows"] == 1


def test_cached_tokens_are_priced_as_cached() -> None:
    (rows,) = tables_of(_session("claude-sonnet-4-5"))
    cost = rows.session["cost"]
    uncached = estimate("claude-sonnet-4-5", input=1000, output=100, ts="2026-01-01T00:00:03.000Z")
    assert cost is not None and uncached is not None
    assert cost < uncached  # 800 of the 1000 input tokens were cache reads
    assert rows.session["uncached_input_tokens"] == 200
    assert rows.session["cost_source"] == "estimated"
    (with_agent,) = tables_of(_session("claude-sonnet-4-5", cost=0.5))
    assert with_agent.session["cost"] == 0.5 and with_agent.session["cost_source"] == "agent"


def test_title_stop_reason_and_usage_rows_that_add_up() -> None:
    (rows,) = tables_of(_session("claude-sonnet-4-5"))
    assert rows.session["title"] == "Fix the flaky test in tests/test_io.py"
    (turn,) = dicts(rows, "turns")
    assert turn["stop_reason"] == "end_turn"
    (usage,) = dicts(rows, "usage")
    assert usage["basis"] == "reported" and usage["model"] == "claude-sonnet-4-5"


def test_usage_rows_add_up_to_the_session_for_every_capture() -> None:
    loaded = load([ADAPTERS])
    for rows in loaded.sessions.values():
        s = rows.session
        usage = dicts(rows, "usage")
        for name in ("input_tokens", "output_tokens", "cache_read_tokens"):
            assert sum(u[name] or 0 for u in usage) == (s[name] or 0), (rows.source, name)
        assert sum(u["cost"] or 0.0 for u in usage) == pytest.approx(s["cost"] or 0.0, abs=1e-9), rows.source
        assert all(u["ts"] is not None for u in usage if s["started_at"] is not None), rows.source


def test_parse_day() -> None:
    assert parse_day("20261129") == parse_day("2026-11-29")
    assert Filter(parse_day("2026-11-29")).day_ok(None) is False


# --------------------------------------------------------------------------
# The table


def test_the_table_never_cuts_a_number_in_100_columns(home: Path) -> None:
    import io

    loaded = load([home / ".claude" / "projects", home / ".codex" / "sessions"])
    summary = summarize(loaded.sessions.values(), by="project")
    for line in summary.lines.values():  # numbers as big as a year of use
        for name in line.tokens:
            line.tokens[name] *= 100_000
    out = io.StringIO()
    render_stats(summary, out, width=100)
    text = out.getvalue()
    assert "…" not in text
    total = summary.total()
    assert f"{total.tokens['input_tokens']:,}" in text
    assert f"{total.tokens['cache_read_tokens']:,}" in text


def test_stats_runs_on_the_base_install_without_pyarrow_or_duckdb(home: Path) -> None:
    """pyarrow and duckdb made unimportable: the table still prints."""
    code = (
        "import sys; sys.modules['pyarrow'] = None; sys.modules['duckdb'] = None\n"
        "from normalize._cli import main; raise SystemExit(main(['stats', '-j', '1']))"
    )
    env = {**os.environ, "HOME": str(home), "COLUMNS": "100"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert "claude-code" in done.stdout and "codex" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 100
