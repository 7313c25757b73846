"""``normalize stats`` over real recordings of older agent versions written by other projects.

One turn per real prompt, counted from the native files with plain ``json``
(native_totals.TURN_READERS); a 2.0.x sub-agent file counted once, with its session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from native_totals import TURN_READERS, claude_subagent_files

from helpers import ADAPTERS, capture_id, protocol_of
from normalize import find_inputs
from normalize.analytics._cli import add_commands

EXTERNAL = sorted(p for p in ADAPTERS.glob("*/captures/external-*") if p.is_dir())


def _stats(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    import argparse

    parser = argparse.ArgumentParser(prog="normalize")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["stats", str(path), "--json", "-j", "1"])
    assert int(args.func(args)) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _external_sessions(folder: Path) -> list[Path]:
    protocol = folder.parent.parent.name
    return [i.main for i in find_inputs([folder], protocol=protocol) if not isinstance(i, Exception)]


@pytest.mark.parametrize("capture", [c for f in EXTERNAL for c in _external_sessions(f)], ids=lambda c: capture_id(c))
def test_stats_over_an_external_recording_gives_one_turn_per_real_prompt(
    capture: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = TURN_READERS[protocol_of(capture)](capture)
    assert expected > 0
    doc = _stats(capture, capsys)
    assert doc["total"]["sessions"] == 1
    assert doc["total"]["turns"] == expected


def test_stats_counts_a_2_0_sub_agent_file_once_with_its_session(capsys: pytest.CaptureFixture[str]) -> None:
    folder = ADAPTERS / "claude-transcript" / "captures" / "external-lanegrid__agtrace"
    session = folder / "7f2abd2d-7cfc-4447-9ddd-3ca8d14e02e9.jsonl"
    assert [p.name for p in claude_subagent_files(session)] == ["agent-0c4c3cf8.jsonl"]
    doc = _stats(folder, capsys)
    assert (doc["total"]["sessions"], doc["total"]["subagents"], doc["duplicates"]) == (1, 1, 0)
    # the tokens of the session and of its sub-agent, each API message once (its largest figure)
    seen: dict[str, tuple[int, int]] = {}
    for f in (session, folder / "agent-0c4c3cf8.jsonl"):
        for line in f.read_text(encoding="utf-8").splitlines():
            m = json.loads(line)
            msg = m.get("message") or {}
            if m.get("type") == "assistant" and isinstance(msg.get("usage"), dict):
                u = msg["usage"]
                inp = u["input_tokens"] + u.get("cache_read_input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
                old = seen.get(msg["id"], (0, 0))
                seen[msg["id"]] = (max(old[0], inp), max(old[1], u["output_tokens"]))
    tokens = doc["total"]["tokens"]
    assert (tokens["input_tokens"], tokens["output_tokens"]) == (
        sum(i for i, _ in seen.values()),
        sum(o for _, o in seen.values()),
    )
