"""Stored sessions of every agent version read right: turns, cut-offs, sub-agents, versions.

* every capture of every kit ends cut off only when its kit README lists it as really cut;
* no user message, assistant message or tool call of the main thread falls outside a turn;
* (``normalize stats`` over the recordings written by other projects:
  tests/analytics/test_analytics_history.py);
* the kits' VERSIONS list at least five Claude Code and five Codex versions with real
  recordings, and every OpenCode version recorded, each naming a capture folder that exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import ADAPTERS, EDGE_CASES, capture_files, capture_id, convert_capture
from normalize import EventEnvelope, SessionEvent

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


# -- the version matrix ------------------------------------------------------------------------------

_ROW = re.compile(r"^\| (claude-code|codex|opencode) \| ([0-9][^|]*?) \| ([^|]+?) \| ([^|]+?) \| (.+?) \|$", re.M)


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


def test_versions_lists_every_opencode_recording() -> None:
    # both OpenCode kits: each capture folder of a version has its row, each row its folder
    listed = _versions().get("opencode", set())
    recorded = {p.name.removeprefix("opencode-") for p in ADAPTERS.glob("opencode-*/captures/opencode-*")}
    assert listed == recorded
    assert len(listed) >= 5
