"""Stored sessions of every agent version read right: turns, cut-offs, sub-agents, versions.

* every capture of every kit ends cut off only when its kit README lists it as really cut;
* no user message, assistant message or tool call of the main thread falls outside a turn;
* ``normalize stats`` over the recordings written by other projects gives one turn per real
  prompt, counted from the native files with plain ``json`` (tests/analytics/native_totals.py);
* the kits' VERSIONS list at least five Claude Code and five Codex versions with real
  recordings, each naming a capture folder that exists.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from analytics.native_totals import TURN_READERS, claude_subagent_files
from helpers import ADAPTERS, EDGE_CASES, capture_files, capture_id, convert_capture, protocol_of
from normalize import EventEnvelope, SessionEvent, find_inputs
from normalize.analytics._cli import add_commands

CAPTURES = capture_files()
#: the heading of each kit README's list of recordings that really end mid-turn
CUT_HEADING = "## Really cut recordings"
MAIN_THREAD_KINDS = frozenset({"user-message", "assistant-message", "tool-call"})


def _really_cut() -> dict[str, str]:
    """``<protocol>/captures/<file>`` -> the reason, from every kit README's list."""
    out: dict[str, str] = {}
    for readme in sorted(ADAPTERS.glob("*/README.md")):
        text = readme.read_text(encoding="utf-8")
        if CUT_HEADING not in text:
            continue
        section = text.split(CUT_HEADING, 1)[1].split("\n## ", 1)[0]
        for m in re.finditer(r"^- `(captures/[^`]+)`: (.+)$", section, re.M):
            out[f"{readme.parent.name}/{m.group(1)}"] = m.group(2)
    return out


REALLY_CUT = _really_cut()


def _events(capture: Path) -> list[EventEnvelope]:
    return [e.event for e in convert_capture(capture) if isinstance(e, SessionEvent)]


@pytest.mark.parametrize("capture", CAPTURES, ids=capture_id)
def test_a_capture_ends_cut_off_only_when_its_kit_readme_says_it_is_really_cut(capture: Path) -> None:
    cut = [e for e in _events(capture) if e.kind == "error" and getattr(e.body, "error_type", None) == "cut-off"]
    listed = capture_id(capture) in REALLY_CUT
    assert bool(cut) == listed, (
        f"cut off but not in its kit README's '{CUT_HEADING}'" if cut else "listed as really cut, but converts whole"
    )


def test_every_really_cut_entry_names_a_capture_and_gives_a_reason() -> None:
    assert REALLY_CUT, "no kit README lists its really cut recordings"
    ids = {capture_id(c) for c in CAPTURES}
    assert sorted(set(REALLY_CUT) - ids) == []
    assert all(len(reason) > 10 for reason in REALLY_CUT.values())


@pytest.mark.parametrize(
    "capture", [c for c in CAPTURES if EDGE_CASES not in c.relative_to(ADAPTERS).parts], ids=capture_id
)
def test_no_message_or_tool_call_of_the_main_thread_is_outside_a_turn(capture: Path) -> None:
    outside = [
        (e.seq, e.kind, e.native.method)
        for e in _events(capture)
        if e.kind in MAIN_THREAD_KINDS and e.turn_id is None and e.subagent_id is None
    ]
    assert outside == []


# -- stats over the recordings written by other projects ------------------------------------------

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
    assert (tokens["input"], tokens["output"]) == (sum(i for i, _ in seen.values()), sum(o for _, o in seen.values()))


# -- the version matrix ------------------------------------------------------------------------------

_ROW = re.compile(r"^\| (claude-code|codex) \| ([0-9][^|]*?) \| ([^|]+?) \| ([^|]+?) \| (.+?) \|$", re.M)


def _versions() -> dict[str, set[str]]:
    """Agent -> the versions some kit's VERSIONS lists with real recordings whose folder exists."""
    out: dict[str, set[str]] = {}
    for f in sorted(ADAPTERS.glob("*/VERSIONS")):
        for agent, versions, captures, _source, _checked in _ROW.findall(f.read_text(encoding="utf-8")):
            folders = [c.strip().split("/")[0] for c in captures.split(",")]
            for folder in folders:
                assert (f.parent / "captures" / folder).is_dir(), f"{f}: no capture folder {folder}"
            out.setdefault(agent, set()).update(v.strip() for v in versions.split(","))
    return out


def test_versions_lists_at_least_five_claude_code_and_five_codex_versions_with_real_recordings() -> None:
    versions = _versions()
    assert len(versions.get("claude-code", set())) >= 5, versions
    assert len(versions.get("codex", set())) >= 5, versions
