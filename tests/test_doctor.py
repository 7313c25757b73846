"""normalize doctor: the drift report over crafted inputs and over every real capture."""

from __future__ import annotations

import argparse
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from helpers import ADAPTERS, GOLDEN, capture_files, golden_path
from normalize._convert import store_records
from normalize._doctor import DoctorReport, Entry, Group, add_doctor_command, diagnose, format_text

CLAUDE = ADAPTERS / "claude-stream-json" / "captures" / "claude-code-2.1.332"
PRINT_TEXT = CLAUDE / "01-print-text.jsonl"
BASH = CLAUDE / "05-bash-ls-bypass.jsonl"

NEW_TYPE = b'{"type":"brand_new_notice","detail":{"level":3},"session_id":"x"}'


def run_cli(*argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="normalize")
    add_doctor_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["doctor", *argv])
    out = io.StringIO()
    code = args.func(args, out)
    return code, out.getvalue()


def only_group(report: DoctorReport) -> Group:
    assert len(report.groups) == 1, [(g.agent, g.version) for g in report.groups]
    return report.groups[0]


def entry(entries: list[Entry], name: str) -> Entry:
    found = [e for e in entries if e.name == name]
    assert len(found) == 1, [e.name for e in entries]
    return found[0]


def with_lines(src: Path, dest: Path, inserts: dict[int, bytes]) -> Path:
    """``src`` with extra lines put before the given 1-based line numbers of the result."""
    lines = src.read_bytes().splitlines()
    for at in sorted(inserts):
        lines.insert(at - 1, inserts[at])
    dest.write_bytes(b"".join(line + b"\n" for line in lines))
    return dest


# ------------------------------------------------------------ crafted inputs


def test_an_unknown_native_type_is_reported_with_its_line(tmp_path: Path) -> None:
    f = with_lines(BASH, tmp_path / "s.jsonl", {3: NEW_TYPE, 6: NEW_TYPE})
    g = only_group(diagnose([f]))
    assert (g.agent, g.version, g.protocols) == ("claude-code", "2.1.332", ["claude-stream-json"])
    e = entry(g.untranslated, "brand_new_notice")
    assert e.protocol == "claude-stream-json"
    assert e.count == 2
    assert (e.example.path, e.example.line) == (str(f), 3)
    assert e.example.excerpt == NEW_TYPE.decode()
    assert g.messages == 8
    assert g.errors == []


def test_a_malformed_line_is_an_error_at_its_line(tmp_path: Path) -> None:
    f = with_lines(PRINT_TEXT, tmp_path / "s.jsonl", {2: b'{"type":"assistant", this is not json'})
    g = only_group(diagnose([f]))
    e = entry(g.errors, "malformed")
    assert (e.count, e.example.line) == (1, 2)
    assert e.example.excerpt is not None and e.example.excerpt.startswith('{"type":"assistant", this')
    assert e.message


def test_a_cut_off_session_shows_the_fallbacks_at_the_end_of_the_input(tmp_path: Path) -> None:
    f = tmp_path / "cut.jsonl"
    f.write_bytes(b"".join(line + b"\n" for line in BASH.read_bytes().splitlines()[:3]))
    g = only_group(diagnose([f]))
    cut = entry(g.errors, "cut-off")
    assert cut.protocol == "core"
    assert (cut.example.path, cut.example.line) == (str(f), None)
    assert cut.example.where() == f"{f}:end"
    closing = entry(g.fallbacks, "turn-complete (close)")
    assert closing.protocol == "core" and closing.count == 1


def test_a_tap_file_gives_the_tap_line(tmp_path: Path) -> None:
    tap = CLAUDE / "16-permission-stdio-allow.tap.jsonl"
    wrapped = b'{"t":"2026-11-29T19:05:39.123Z","from":"agent","msg":' + NEW_TYPE + b"}"
    f = with_lines(tap, tmp_path / "s.tap.jsonl", {4: wrapped})
    e = entry(only_group(diagnose([f])).untranslated, "brand_new_notice")
    assert (e.count, e.example.line) == (1, 4)


def test_sessions_group_by_agent_version_and_unknown_files_are_listed(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(PRINT_TEXT.read_bytes())
    (tmp_path / "b.jsonl").write_bytes(BASH.read_bytes())
    rollout = ADAPTERS / "codex-rollout" / "captures" / "codex-0.169.0" / "exec-failed_turn.jsonl"
    (tmp_path / "c.jsonl").write_bytes(rollout.read_bytes())
    (tmp_path / "notes.jsonl").write_bytes(b'{"hello":"world"}\n')
    report = diagnose([tmp_path])
    groups = {(g.agent, g.version): g for g in report.groups}
    assert set(groups) == {("claude-code", "2.1.332"), ("codex", "0.169.0")}
    assert groups["claude-code", "2.1.332"].sessions == 2
    assert groups["claude-code", "2.1.332"].files == 2
    assert [s.path for s in report.skipped] == [str(tmp_path / "notes.jsonl")]


def test_a_clean_session_reports_nothing_to_fix() -> None:
    g = only_group(diagnose([PRINT_TEXT]))
    assert (g.untranslated, g.errors, g.fallbacks) == ([], [], [])
    assert g.messages == 3


# ------------------------------------------------------------ the command


def test_the_command_prints_a_readable_report_and_exits_0(tmp_path: Path) -> None:
    f = with_lines(BASH, tmp_path / "s.jsonl", {2: NEW_TYPE, 4: b"not json"})
    code, out = run_cli(str(f))
    assert code == 0
    assert "claude-code 2.1.332  (claude-stream-json): 1 session(s), 1 file(s), 8 native message(s)" in out
    assert f"claude-stream-json brand_new_notice  {f}:2" in out
    assert "errors: 1 event(s) of 1 kind(s)" in out
    assert f"{f}:4" in out


def test_the_command_writes_json_for_machines(tmp_path: Path) -> None:
    f = with_lines(BASH, tmp_path / "s.jsonl", {2: NEW_TYPE})
    code, out = run_cli("--json", str(f))
    assert code == 0
    data = json.loads(out)
    (group,) = data["groups"]
    assert (group["agent"], group["version"]) == ("claude-code", "2.1.332")
    (unknown,) = [e for e in group["untranslated"] if e["name"] == "brand_new_notice"]
    assert unknown["example"] == {"path": str(f), "line": 2, "excerpt": NEW_TYPE.decode()}
    assert data["skipped"] == []


def test_an_empty_corpus_is_still_a_report(tmp_path: Path) -> None:
    code, out = run_cli(str(tmp_path))
    assert code == 0
    assert out.startswith("normalize doctor: 0 session(s), 0 agent version(s)")


# ------------------------------------------------------------ the real captures


def golden_counts() -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]]:
    """session.update per (protocol, method) and errors per (protocol, errorType), read from the goldens."""
    updates: Counter[tuple[str, str]] = Counter()
    errors: Counter[tuple[str, str]] = Counter()
    for capture in capture_files():
        for line in golden_path(capture).read_text().splitlines():
            ev = json.loads(line)
            if ev["type"] == "session.update":
                updates[ev["update"]["protocol"], ev["update"].get("method") or "(no method)"] += 1
            elif ev["type"] == "session.event" and ev["event"]["kind"] == "error":
                errors[ev["event"]["native"]["protocol"], ev["event"].get("errorType") or "(none)"] += 1
    return updates, errors


@pytest.fixture(scope="module")
def real() -> DoctorReport:
    """The report over every kit, each read as its protocol (as the golden tests read them)."""
    groups: list[Group] = []
    skipped = []
    for kit in sorted(p for p in ADAPTERS.iterdir() if (p / "captures").is_dir()):
        report = diagnose([kit / "captures"], protocol=kit.name)
        groups += report.groups
        skipped += report.skipped
    return DoctorReport(groups=groups, skipped=skipped)


def test_over_the_captures_the_counts_agree_with_the_goldens(real: DoctorReport) -> None:
    assert GOLDEN.is_dir()
    updates, errors = golden_counts()
    seen_updates: Counter[tuple[str, str]] = Counter()
    seen_errors: Counter[tuple[str, str]] = Counter()
    for g in real.groups:
        for e in g.untranslated:
            seen_updates[e.protocol, e.name] += e.count
        for e in g.errors:
            seen_errors[e.protocol, e.name] += e.count
    assert seen_updates == updates
    assert seen_errors == errors
    assert real.skipped == []
    assert sum(g.sessions for g in real.groups) == len(capture_files())


def test_undetectable_files_are_listed_not_fatal() -> None:
    report = diagnose([CLAUDE])
    assert [Path(s.path).name for s in report.skipped] == ["35-stream-json-without-verbose.jsonl"]
    assert "empty input" in report.skipped[0].reason
    assert sum(g.sessions for g in report.groups) == len(list(CLAUDE.glob("*.jsonl"))) - 1


def _line(path: str, n: int) -> str:
    """Line ``n`` of a file; of a database session (``file.db#<session>``): its ``n``th row record."""
    if "#" in path:
        db, key = path.rsplit("#", 1)
        rows = [rec.data for rec in store_records(Path(db), key)]
        return rows[n - 1].decode()
    return Path(path).read_bytes().split(b"\n")[n - 1].decode("utf-8", "replace")


def test_over_the_captures_every_example_points_at_its_line(real: DoctorReport) -> None:
    checked = 0
    for g in real.groups:
        for e in [*g.untranslated, *g.errors, *g.fallbacks]:
            ex = e.example
            if ex.line is None:
                assert e.protocol == "core"  # only what normalize settles at the end has no line
                continue
            line = _line(ex.path, ex.line)
            if ex.excerpt is not None:
                head = ex.excerpt.removesuffix("…")[:200]
                assert head in line, (ex.where(), head)
                checked += 1
    assert checked > 100


def test_over_the_captures_versions_come_from_the_sessions(real: DoctorReport) -> None:
    versions = {(g.agent, g.version) for g in real.groups}
    assert ("claude-code", "2.1.332") in versions
    assert ("codex", "0.169.0") in versions
    assert ("codex", "via @agentclientprotocol/codex-acp 2.6.0") in versions
    text = format_text(real)
    for g in real.groups:
        assert f"{g.agent} {g.version or 'version unknown'}  (" in text


# ------------------------------------------------------------ what a next release will do


HM = ADAPTERS / "hm-json" / "captures" / "hm-handwritten" / "01_plain_answer.jsonl"


def test_a_new_line_type_and_a_banner_are_drift_not_an_unknown_file(tmp_path: Path) -> None:
    new = b'{"v":1,"type":"brand_new_notice","session":"20261106-k3j9x2","level":3}'
    f = with_lines(HM, tmp_path / "s.jsonl", {1: b"hm: checking for updates...", 3: new})
    report = diagnose([f])
    assert report.skipped == []
    g = only_group(report)
    e = entry(g.untranslated, "brand_new_notice")
    assert (e.protocol, e.count, e.example.where()) == ("hm-json", 1, f"{f}:3")
    banner = entry(g.errors, "malformed")
    assert banner.example.where() == f"{f}:1"


def test_normalize_output_among_the_inputs_is_listed_apart_not_read(tmp_path: Path) -> None:
    import normalize
    from normalize._codec import encode_header

    (tmp_path / "s.jsonl").write_bytes(HM.read_bytes())
    events = normalize.events(normalize.read_records([HM]))
    lines = [encode_header(library_version="1", input=str(HM), protocol="hm-json"), *map(normalize.encode, events)]
    (tmp_path / "s.normalized.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    report = diagnose([tmp_path])
    assert only_group(report).sessions == 1
    assert [(s.path, s.kind) for s in report.skipped] == [(str(tmp_path / "s.normalized.jsonl"), "normalized")]
    assert "normalize output, not read: 1 file(s)" in format_text(report)


def test_doctor_shows_a_progress_bar_over_a_folder_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_bytes(HM.read_bytes())
    term = Terminal()
    monkeypatch.setattr("sys.stderr", term)
    code, out = run_cli(str(tmp_path))
    assert code == 0 and "2 session(s)" in out
    assert "\rnormalize: reading [" in term.getvalue() and "2/2" in term.getvalue()
    assert term.getvalue().endswith("\r\x1b[K")  # erased at the end
    plain = io.StringIO()
    monkeypatch.setattr("sys.stderr", plain)
    run_cli(str(tmp_path))
    assert plain.getvalue() == ""


def test_over_mixed_versions_it_says_per_version_what_was_inferred() -> None:
    claude = ADAPTERS / "claude-transcript" / "captures"
    rollout = ADAPTERS / "codex-rollout" / "captures"
    report = diagnose(
        [
            claude / "claude-code-1.0.98",
            claude / "claude-code-2.0.76" / "12-subagent-task",
            claude / "claude-code-2.1.332" / "12-subagent-task",
            rollout / "codex-0.40.0",
            rollout / "codex-0.169.0",
        ]
    )
    inferred = {(g.agent, g.version): {e.name: e.count for e in g.inferred} for g in report.groups}
    # 1.0.98 writes no turn end: each one is inferred (15 sessions' worth), its inline sub-agent linked
    assert inferred["claude-code", "1.0.98"]["turn end inferred (ok)"] >= 12
    assert inferred["claude-code", "1.0.98"]["sub-agent linked to its call"] == 1
    # 2.0.76: the Task agent beside the session is linked, the two warm-up agents have no call
    assert inferred["claude-code", "2.0.76"]["sub-agent linked to its call"] == 1
    assert inferred["claude-code", "2.0.76"]["sub-agent without a parent call"] == 2
    # 2.1.332 ends its own turns; its sub-agent is linked by the parent's result
    assert "turn start inferred" not in inferred["claude-code", "2.1.332"]
    assert inferred["claude-code", "2.1.332"]["sub-agent linked to its call"] == 1
    # Codex 0.40 has no task events: every turn start and end is inferred; 0.169 writes its own
    assert inferred["codex", "0.40.0"]["turn start inferred"] == 5
    assert inferred["codex", "0.169.0"] == {}
    text = format_text(report)
    assert "inferred (turn rules, sub-agent links)" in text
    assert "sub-agent without a parent call" in text
