"""The three questions docs/analytics.md answers in SQL give what ``normalize stats`` prints."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from helpers import ADAPTERS
from normalize.analytics import export_duckdb, load, summarize

DOC = Path(__file__).resolve().parents[2] / "docs" / "analytics.md"
INPUTS = [ADAPTERS / "claude-transcript" / "captures", ADAPTERS / "codex-rollout" / "captures"]


def _questions() -> list[str]:
    text = DOC.read_text()
    section = text[text.index("## Three questions, in SQL") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(r"```sql\n(.*?)```", section, re.S)


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[list[tuple[Any, ...]]], Any]:
    duckdb = pytest.importorskip("duckdb")
    loaded = load(INPUTS)
    db = tmp_path_factory.mktemp("sql") / "sessions.duckdb"
    export_duckdb(loaded, db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [con.execute(q).fetchall() for q in _questions()], loaded
    finally:
        con.close()


def _cost(line: dict[str, Any]) -> float | None:
    return None if line["cost"] is None else float(line["cost"]["amount"])


def test_the_doc_asks_three_questions() -> None:
    assert len(_questions()) == 3


def test_tokens_and_cost_per_day(answers: tuple[list[list[tuple[Any, ...]]], Any]) -> None:
    results, loaded = answers
    stats = {g["day"]: g for g in summarize(loaded.sessions.values(), by="day").as_json()["groups"]}
    sql = {str(day): row for day, *row in results[0]}
    assert set(sql) == set(stats)
    for day, (inp, cache_read, out, cost) in sql.items():
        t = stats[day]["tokens"]
        assert (inp, cache_read, out) == (t["input_tokens"], t["cache_read_tokens"], t["output_tokens"])
        assert cost == pytest.approx(_cost(stats[day]), abs=1e-6)


def test_cost_per_model(answers: tuple[list[list[tuple[Any, ...]]], Any]) -> None:
    results, loaded = answers
    stats = {g["model"]: g for g in summarize(loaded.sessions.values(), by="model").as_json()["groups"]}
    rows = results[1]
    in_sql = {r[0] for r in rows}
    assert in_sql <= set(stats)  # stats also has lines for the models of sessions that used no tokens
    assert {m for m, g in stats.items() if any(g["tokens"].values())} <= in_sql
    for model, out, cost, estimated in rows:
        assert out == stats[model]["tokens"]["output_tokens"]
        assert cost == pytest.approx(_cost(stats[model]), abs=1e-6)
        assert 0 <= estimated <= (cost or 0) + 1e-9
    assert any(est > 0 for *_, est in rows)  # Codex: priced from the table
    assert any(cost and not est for _, _, cost, est in rows)  # Claude: the agent's own


def test_work_per_project(answers: tuple[list[list[tuple[Any, ...]]], Any]) -> None:
    results, loaded = answers
    stats = {g["project"]: g for g in summarize(loaded.sessions.values(), by="project").as_json()["groups"]}
    for project, sessions, turns, calls, out, cost in results[2]:
        g = stats[project]
        assert (sessions, turns, calls, out) == (
            g["sessions"],
            g["turns"],
            g["tool_calls"],
            g["tokens"]["output_tokens"],
        )
        assert cost == pytest.approx(_cost(g), abs=1e-6)
    assert sum(r[1] for r in results[2]) == len(loaded.sessions)
