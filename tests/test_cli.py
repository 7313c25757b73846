"""The command line: convert, detect, schema, validate; their output and exit codes."""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

import pytest

from normalize._cli import main
from normalize._schema import json_schema

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "adapters" / "hm-json" / "captures" / "hm-handwritten" / "01_plain_answer.jsonl"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_convert_writes_a_header_then_events(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "convert", str(SAMPLE))
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["type"] == "stream.header"
    assert lines[0]["schemaVersion"] == "1" and lines[0]["input"] == str(SAMPLE)
    assert lines[0]["protocol"] == "hm-json"
    assert lines[1]["type"] == "session.created"
    assert sum(1 for x in lines if x["type"] == "session.event") > 10


def test_convert_to_a_file_then_validate_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    assert run(capsys, "convert", str(SAMPLE), "-o", str(out))[0] == 0
    code, stdout, _ = run(capsys, "validate", str(out))
    assert (code, stdout) == (0, "")


def test_convert_a_folder_to_one_file_per_session(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    (folder / "b.jsonl").write_bytes(SAMPLE.read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    assert run(capsys, "convert", str(folder), "-o", str(out))[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["a.normalized.jsonl", "b.normalized.jsonl"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty input"),
        (b"\n\n", "empty input"),
        (b'{"hello": "world"}\n', "unknown format"),
        (b"not json at all\n", "unknown format"),
    ],
)
def test_convert_gives_clear_messages_for_empty_or_undetectable_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, message: str
) -> None:
    f = tmp_path / "x.jsonl"
    f.write_bytes(content)
    code, out, err = run(capsys, "convert", str(f))
    assert code == 1
    assert out == ""
    assert message in err and str(f) in err


def test_convert_missing_file_and_unknown_protocol_are_usage_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "convert", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "no such file" in err
    code, _, err = run(capsys, "convert", "-p", "nope", str(SAMPLE))
    assert code == 2 and "no adapter for protocol 'nope'" in err


def test_convert_unreadable_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    d = tmp_path / "dir.jsonl"
    d.mkdir()
    code, _, err = run(capsys, "convert", "-p", "hm-json", str(d))
    assert code in (1, 2) and err


def test_detect(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "detect", str(SAMPLE))
    assert (code, out.split()) == (0, [str(SAMPLE), "hm-json"])


def test_the_published_schema_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "schema")
    assert code == 0
    assert json.loads(out) == json_schema()
    published = json.loads((ROOT / "docs" / "schema.json").read_text())
    assert published == json_schema(), "docs/schema.json is stale: normalize schema > docs/schema.json"


def test_validate_reports_line_and_field_of_each_problem(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    assert run(capsys, "convert", str(SAMPLE), "-o", str(good))[0] == 0
    lines = good.read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if '"type":"session.event"' in line)
    ev = json.loads(lines[i])
    ev["event"]["seq"] = 99  # a gap
    lines[i] = json.dumps(ev)
    lines[i + 1] = lines[i + 1].replace('"sessionId"', '"sessionID"', 1)  # a wrong field name
    lines.insert(i + 2, "{not json")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    code, out, _ = run(capsys, "validate", str(bad))
    assert code == 1
    assert f"{bad}: line {i + 1}: event.seq: expected 1, got 99" in out
    assert f"{bad}: line {i + 2}: sessionId: Field required" in out
    assert f"{bad}: line {i + 3}: not JSON" in out


def test_validate_accepts_a_session_resumed_by_a_session_object_of_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A Codex thread made in one recording and resumed in the next: ``convert FOLDER`` gives
    two streams of the same sessionId, each Session object's seq from 1; both are valid."""
    kit = ROOT / "adapters" / "codex-app-server" / "captures" / "codex-0.155.0"
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("g_resume_pre.tap.jsonl", "g_resume.tap.jsonl"):
        (folder / name).write_bytes((kit / name).read_bytes())
    out = tmp_path / "out.jsonl"
    assert run(capsys, "convert", str(folder), "-o", str(out))[0] == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    records = [(e["type"], e["sessionId"]) for e in lines if e["type"] in ("session.created", "session.resumed")]
    assert sorted(t for t, _ in records) == ["session.created", "session.resumed"]
    assert records[0][1] == records[1][1]
    assert run(capsys, "validate", str(out))[0] == 0

    # without its header, the second stream is still one Session object after another
    # (its record line says so)
    one = tmp_path / "one.jsonl"
    one.write_text("".join(json.dumps(e) + "\n" for i, e in enumerate(lines) if e["type"] != "stream.header" or i == 0))
    assert run(capsys, "validate", str(one))[0] == 0

    # but a seq that starts again with no record line before it is a gap
    second = [i for i, e in enumerate(lines) if e["type"] in ("session.created", "session.resumed")][1]
    cut = [e for i, e in enumerate(lines) if (e["type"] != "stream.header" or i == 0) and i != second]
    (tmp_path / "cut.jsonl").write_text("".join(json.dumps(e) + "\n" for e in cut))
    code, text, _ = run(capsys, "validate", str(tmp_path / "cut.jsonl"))
    assert code == 1 and "event.seq: expected" in text and ", got 1 (seq is contiguous from 1)" in text


@pytest.mark.parametrize("ts", ["[trimmed for fixture]", "2025-09-24T19:22:20", "2025-13-01T00:00:00Z", ""])
def test_validate_rejects_a_ts_that_is_not_rfc_3339(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, ts: str
) -> None:
    good = tmp_path / "good.jsonl"
    assert run(capsys, "convert", str(SAMPLE), "-o", str(good))[0] == 0
    assert run(capsys, "validate", str(good))[0] == 0
    lines = good.read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if '"type":"session.event"' in line)
    ev = json.loads(lines[i])
    ev["event"]["ts"] = ts
    lines[i] = json.dumps(ev)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    code, out, _ = run(capsys, "validate", str(bad))
    assert code == 1
    assert f"{bad}: line {i + 1}: event.ts: {ts!r} is not an RFC 3339 date-time" in out


def test_convert_to_a_new_folder_named_with_a_slash(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "new" / "out"
    assert run(capsys, "convert", str(SAMPLE), "-o", f"{out}/")[0] == 0
    assert [p.name for p in out.iterdir()] == ["01_plain_answer.normalized.jsonl"]


def test_convert_redact_scrubs_secrets_and_says_what(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    secret = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA"
    f = tmp_path / "s.jsonl"
    f.write_text(SAMPLE.read_text().replace("Keep it short.", f"Keep it short. My key is {secret}"))
    code, plain, _ = run(capsys, "convert", str(f))
    planted = plain.count(secret)
    assert planted >= 2  # in native payloads and in the user-message body
    code, out, err = run(capsys, "convert", "--redact", str(f))
    assert code == 0
    assert secret not in out
    assert out.count("[REDACTED:anthropic-key]") == planted
    assert f"redacted {planted} anthropic-key" in err


# ------------------------------------------------------------ files and folders (docs/reliability.md)

CODEX_EXEC = ROOT / "adapters" / "codex-exec-json" / "captures" / "codex-0.171.0" / "shell_command.jsonl"


def outputs(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def headers(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if '"stream.header"' in line]


def test_convert_a_folder_gives_every_session_its_own_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src = tmp_path / "in"
    for rel in ("projA/session.jsonl", "projB/session.jsonl", "projB/session.tap.jsonl"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(SAMPLE.read_bytes())
    out = tmp_path / "out"
    code, _, err = run(capsys, "convert", str(src), "-o", f"{out}/")
    assert code == 0
    assert outputs(out) == [
        "projA/session.normalized.jsonl",
        "projB/session.normalized.jsonl",
        "projB/session~2.normalized.jsonl",
    ]
    assert "projB/session.tap.jsonl" in err and "is taken in this run" in err  # never silent
    assert "3 session(s) converted" in err
    for f in out.rglob("*.jsonl"):
        assert headers(f.read_text())[0]["input"] in {
            str(src / r) for r in ("projA/session.jsonl", "projB/session.jsonl", "projB/session.tap.jsonl")
        }


def test_output_names_differing_only_in_case_do_not_collide(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "Run.jsonl").write_bytes(SAMPLE.read_bytes())
    (src / "run.jsonl").write_bytes(SAMPLE.read_bytes())
    out = tmp_path / "out"
    code, _, err = run(capsys, "convert", str(src), "-o", f"{out}/")
    assert code == 0
    names = outputs(out)
    assert len({n.casefold() for n in names}) == 2, names  # distinct on a case-insensitive file system too
    assert "is taken in this run" in err


def test_convert_never_writes_over_its_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "x.jsonl"
    f.write_bytes(SAMPLE.read_bytes())
    code, _, err = run(capsys, "convert", str(f), "-o", str(f))
    assert code == 2 and "will not write over an input" in err
    assert f.read_bytes() == SAMPLE.read_bytes()
    # a folder converted into itself, holding a native file with an output's name
    same = tmp_path / "same"
    same.mkdir()
    (same / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    native = same / "a.normalized.jsonl"
    native.write_bytes(CODEX_EXEC.read_bytes())
    code, _, err = run(capsys, "convert", str(same), "-o", f"{same}/")
    assert native.read_bytes() == CODEX_EXEC.read_bytes()
    assert code == 1 and f"{native} is one of the inputs" in err


def test_the_inputs_of_a_run_are_known_through_links_as_same_file_knows_them(tmp_path: Path) -> None:
    from normalize._outputs import InputFiles, same_file

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(b"{}\n")
    b.write_bytes(b"{}\n")
    os.link(a, tmp_path / "hard.jsonl")
    (tmp_path / "soft.jsonl").symlink_to(b)
    (tmp_path / "dangling.jsonl").symlink_to(tmp_path / "gone.jsonl")
    (tmp_path / "other.jsonl").write_bytes(b"{}\n")
    inputs = [a, tmp_path / "sub" / ".." / "b.jsonl", tmp_path / "gone.jsonl"]  # one input never existed
    known = InputFiles(inputs)
    for name in ("a", "b", "hard", "soft", "dangling", "gone", "other", "missing"):
        path = tmp_path / f"{name}.jsonl"
        assert (path in known) == any(same_file(path, p) for p in inputs), name
    assert {n for n in ("a", "hard", "soft", "other") if tmp_path / f"{n}.jsonl" in known} == {"a", "hard", "soft"}
    assert list(known) == inputs


def test_convert_into_the_input_folder_twice_reads_no_output_as_a_session(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    (folder / "b.jsonl").write_bytes(CODEX_EXEC.read_bytes())
    assert run(capsys, "convert", str(folder), "-o", f"{folder}/")[0] == 0
    first = outputs(folder)
    code, _, err = run(capsys, "convert", str(folder), "-o", f"{folder}/")
    assert code == 0, err
    assert outputs(folder) == first == ["a.jsonl", "a.normalized.jsonl", "b.jsonl", "b.normalized.jsonl"]
    assert "2 session(s) converted" in err and "2 normalized stream(s) left as they are" in err
    # detect says what they are, and is not failed by them
    code, out, err = run(capsys, "detect", str(folder))
    assert code == 0
    assert out.split() == [str(folder / "a.jsonl"), "hm-json", str(folder / "b.jsonl"), "codex-exec-json"]
    assert "normalize's own output" in err


def test_a_forced_protocol_does_not_read_normalize_output_as_a_session(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "events.jsonl"
    assert run(capsys, "convert", str(SAMPLE), "-o", str(out))[0] == 0
    code, stdout, err = run(capsys, "convert", "-p", "claude-transcript", str(out))
    assert code == 1 and stdout == ""
    assert "normalize's own output" in err


def test_an_output_name_too_long_for_the_file_system_is_shortened(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    long_a = "a" * 243 + ".jsonl"  # 249 characters: with .normalized.jsonl it is past 255 bytes
    long_b = "a" * 242 + "b.jsonl"
    (src / long_a).write_bytes(SAMPLE.read_bytes())
    (src / long_b).write_bytes(SAMPLE.read_bytes())
    (src / "short.jsonl").write_bytes(SAMPLE.read_bytes())
    out = tmp_path / "out"
    code, _, err = run(capsys, "convert", str(src), "-o", f"{out}/")
    assert code == 0, err
    names = outputs(out)
    assert len(names) == 3 and "short.normalized.jsonl" in names
    assert all(len(n.encode()) <= 255 and n.endswith(".normalized.jsonl") for n in names)
    assert "too long for the file system" in err


def _failing_open(monkeypatch: pytest.MonkeyPatch, victim: Path, *, after_opens: int) -> None:
    """``victim`` opens ``after_opens`` times, then every read of it fails with EIO."""
    import errno

    real_open = Path.open
    # counted in a file: the opens may be made by the worker processes of --jobs, forked after this
    count = victim.with_name(f".{victim.name}.opens")  # not a *.jsonl: no input of its own
    count.write_bytes(b"")

    class Broken:
        def __init__(self, f: object) -> None:
            self.f = f

        def __enter__(self) -> Broken:
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()  # type: ignore[attr-defined]

        def read(self, n: int = -1) -> bytes:
            raise OSError(errno.EIO, "Input/output error")

        readline = read

        def close(self) -> None:
            self.f.close()  # type: ignore[attr-defined]

    def fake_open(self: Path, *args: object, **kw: object) -> object:
        f = real_open(self, *args, **kw)  # type: ignore[call-overload]
        if self == victim:
            fd = os.open(count, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, b".")  # one byte an open, appended atomically
            finally:
                os.close(fd)
            if count.stat().st_size > after_opens:
                return Broken(f)
        return f

    monkeypatch.setattr(Path, "open", fake_open)


@pytest.mark.parametrize("after_opens", [0, 1], ids=["detecting", "converting"])
def test_one_unreadable_file_does_not_stop_a_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after_opens: int
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        (src / name).write_bytes(SAMPLE.read_bytes())
    _failing_open(monkeypatch, src / "b.jsonl", after_opens=after_opens)
    out = tmp_path / "out"
    code, _, err = run(capsys, "convert", str(src), "-o", f"{out}/")
    assert code == 1
    assert f"{src / 'b.jsonl'}: Input/output error" in err
    assert "2 session(s) converted" in err and "1 could not be read or written" in err
    assert {"a.normalized.jsonl", "c.normalized.jsonl"} <= set(outputs(out))


def test_detect_and_doctor_go_on_past_an_unreadable_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    (src / "b.jsonl").write_bytes(SAMPLE.read_bytes())
    _failing_open(monkeypatch, src / "a.jsonl", after_opens=0)
    code, out, err = run(capsys, "detect", str(src))
    assert code == 1
    assert out.split() == [str(src / "b.jsonl"), "hm-json"]
    assert f"{src / 'a.jsonl'}: Input/output error" in err
    code, out, err = run(capsys, "doctor", str(src))
    assert code == 0
    assert "1 session(s)" in out and "could not be read: 1 file(s)" in out and "a.jsonl: Input/output error" in out


def test_an_os_error_names_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "a.jsonl"
    f.write_bytes(SAMPLE.read_bytes())
    _failing_open(monkeypatch, f, after_opens=1)
    code, _, err = run(capsys, "convert", str(f))
    assert code == 1
    assert f"normalize: {f}: Input/output error" in err


# ------------------------------------------------------------ several inputs, the rest still processed


def test_detect_goes_on_after_a_file_it_cannot_detect(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"theme": "dark"}\n')
    code, out, err = run(capsys, "detect", str(settings), str(CODEX_EXEC))
    assert code == 1
    assert out.split() == [str(CODEX_EXEC), "codex-exec-json"]
    assert f"{settings}: unknown format" in err


def test_convert_bad_then_good_converts_the_good_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("this is not a session\n")
    code, out, err = run(capsys, "convert", str(bad), str(SAMPLE))
    assert code == 1
    assert [h["input"] for h in headers(out)] == [str(SAMPLE)]
    assert f"skipped: {bad}: unknown format" in err
    assert "1 session(s) converted, 1 file(s) not recognised" in err


def test_stats_bad_then_good_counts_the_good_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("this is not a session\n")
    code, out, _ = run(capsys, "stats", "--json", "-j", "1", str(bad), str(SAMPLE))
    assert code == 1
    doc = json.loads(out)
    assert doc["inputs"] == 1 and any(str(bad) in p for p in doc["problems"])


def test_stats_goes_on_past_an_unreadable_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("duckdb")
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    (src / "b.jsonl").write_bytes(CODEX_EXEC.read_bytes())
    _failing_open(monkeypatch, src / "a.jsonl", after_opens=0)
    code, out, _ = run(capsys, "stats", "--json", "-j", "1", str(src))
    assert code == 1
    doc = json.loads(out)
    assert doc["inputs"] == 1
    assert any(f"{src / 'a.jsonl'}: Input/output error" in p for p in doc["problems"])


def test_stats_bounds_the_lines_of_a_normalized_stream(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("duckdb")
    from normalize.analytics import _load

    good = tmp_path / "events.jsonl"
    assert run(capsys, "convert", str(SAMPLE), "-o", str(good))[0] == 0
    monkeypatch.setattr(_load, "MAX_LINE", 200)  # the 16 MiB bound, scaled down
    code, out, _ = run(capsys, "stats", "--json", "-j", "1", str(good))
    assert code == 1
    assert any("longer than 200 bytes" in p for p in json.loads(out)["problems"])


def test_a_forced_protocol_that_recognises_nothing_warns(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "convert", "-p", "claude-transcript", str(SAMPLE))
    assert code == 0 and out
    assert f"warning: {SAMPLE}: no message was recognised as claude-transcript" in err
    code, _, err = run(capsys, "convert", "-p", "hm-json", str(SAMPLE))
    assert code == 0 and "warning" not in err


def test_convert_reads_standard_input(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import types

    monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=io.BytesIO(SAMPLE.read_bytes())))
    code, out, _ = run(capsys, "convert", "-")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["type"] == "stream.header" and lines[0]["input"] == "-" and lines[0]["protocol"] == "hm-json"
    code, expected, _ = run(capsys, "convert", str(SAMPLE))
    assert out.splitlines()[1:] == expected.splitlines()[1:]
    monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=io.BytesIO(b"not a session\n")))
    code, out, err = run(capsys, "convert", "-")
    assert (code, out) == (1, "") and "-: unknown format" in err


def test_replay_with_an_unknown_protocol_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "replay", "-p", "bogus", "--speed", "0", str(SAMPLE))
    assert (code, out) == (2, "")
    assert "no adapter for protocol 'bogus'" in err and "Traceback" not in err


def test_replay_of_a_folder_replays_every_session(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    (folder / "b.jsonl").write_bytes(CODEX_EXEC.read_bytes())
    code, out, err = run(capsys, "replay", "--speed", "0", str(folder))
    assert code == 0
    assert [(h["input"], h["protocol"]) for h in headers(out)] == [
        (str(folder / "a.jsonl"), "hm-json"),
        (str(folder / "b.jsonl"), "codex-exec-json"),
    ]
    created = [json.loads(line) for line in out.splitlines() if '"session.created"' in line]
    assert len(created) == 2
    assert "replayed 2 sessions" in err


@pytest.mark.parametrize("what", ["folder", "missing"])
def test_follow_on_a_folder_or_a_missing_file_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, what: str
) -> None:
    target = tmp_path if what == "folder" else tmp_path / "missing.jsonl"
    code, out, err = run(capsys, "convert", "--follow", "--idle-timeout", "0.1", str(target))
    assert (code, out) == (2, "")
    assert str(target) in err


def test_follow_on_a_file_that_is_not_a_session_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "settings.jsonl"
    f.write_text('{"theme": "dark"}\n')
    code, out, err = run(capsys, "convert", "--follow", "--idle-timeout", "0.1", "--poll", "0.02", str(f))
    assert (code, out) == (1, "")
    assert "unknown format" in err


def test_convert_shows_a_progress_bar_on_a_terminal(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    src = tmp_path / "in"
    src.mkdir()
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        (src / name).write_bytes(SAMPLE.read_bytes())
    term = Terminal()
    monkeypatch.setattr("sys.stderr", term)
    assert main(["convert", str(src), "-o", str(tmp_path / "out") + "/"]) == 0
    shown = term.getvalue()
    assert "\rnormalize: converting [" in shown and "3/3" in shown
    assert shown.rstrip().endswith(f"normalize: 3 session(s) converted into {tmp_path / 'out'}")
    # not on a terminal: only the summary
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    assert main(["convert", str(src), "-o", str(tmp_path / "out2") + "/"]) == 0
    assert pipe.getvalue() == f"normalize: 3 session(s) converted into {tmp_path / 'out2'}\n"


# ------------------------------------------------------------ validate (for untrusted input)


def _events_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, list[str]]:
    f = tmp_path / "good.jsonl"
    assert run(capsys, "convert", str(SAMPLE), "-o", str(f))[0] == 0
    return f, f.read_text().splitlines()


def _first_event(lines: list[str]) -> int:
    return next(n for n, line in enumerate(lines) if '"type":"session.event"' in line)


@pytest.mark.parametrize("seq", ["1", True, 1.0], ids=["string", "bool", "float"])
def test_validate_wants_seq_an_integer(capsys: pytest.CaptureFixture[str], tmp_path: Path, seq: object) -> None:
    _, lines = _events_file(tmp_path, capsys)
    i = _first_event(lines)
    ev = json.loads(lines[i])
    ev["event"]["seq"] = seq
    lines[i] = json.dumps(ev)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "validate", str(bad))
    assert code == 1
    assert f"{bad}: line {i + 1}: event.seq: Input should be a valid integer" in out
    assert "Traceback" not in err


def test_validate_reports_deep_nesting_instead_of_raising(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _, lines = _events_file(tmp_path, capsys)
    i = _first_event(lines)
    ev = json.loads(lines[i])
    deep = "[" * 2000 + "]" * 2000
    lines[i] = json.dumps(ev).replace('"payload":', f'"payload":{deep},"x":', 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    code, out, _ = run(capsys, "validate", str(bad))
    assert code == 1
    assert f"line {i + 1}: JSON nested too deeply" in out


def test_validate_checks_the_header_after_leading_blank_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, lines = _events_file(tmp_path, capsys)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n\n" + "\n".join(lines[1:]) + "\n")  # blank lines, then no header
    code, out, _ = run(capsys, "validate", str(bad))
    assert code == 1
    assert f"{bad}: line 3: type: the first line must be the stream.header" in out


def test_validate_bounds_the_line_length(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good, lines = _events_file(tmp_path, capsys)
    long = max(range(len(lines)), key=lambda n: len(lines[n]))
    bound = len(lines[long].encode()) - 1  # the 16 MiB default, scaled down to one line of this file
    code, out, _ = run(capsys, "validate", "--max-line", str(bound), str(good))
    assert code == 1
    assert f"line {long + 1}: longer than {bound} bytes" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty input: a normalized stream starts with a stream.header line"),
        (b"{}\n", 'line 1: no "type" member'),
        (b'{"type": "nope"}\n', "line 1: unknown \"type\" 'nope'"),
    ],
    ids=["empty", "no-type", "unknown-type"],
)
def test_validate_speaks_of_the_wire_never_of_internal_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, message: str
) -> None:
    f = tmp_path / "x.jsonl"
    f.write_bytes(content)
    code, out, _ = run(capsys, "validate", str(f))
    assert code == 1
    assert message in out
    assert "tag_" not in out and "discriminator" not in out


def test_doctor_goes_on_past_a_file_that_fails_while_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    (src / "b.jsonl").write_bytes(SAMPLE.read_bytes())
    _failing_open(monkeypatch, src / "a.jsonl", after_opens=1)  # detected, then fails while read
    code, out, _ = run(capsys, "doctor", str(src))
    assert code == 0
    assert "1 session(s)" in out and f"{src / 'a.jsonl'}: Input/output error" in out


def test_a_closed_stdout_is_not_reported_as_a_bad_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import types

    class Closed(io.BytesIO):
        def write(self, data: object) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", types.SimpleNamespace(buffer=Closed()))
    code = main(["convert", str(SAMPLE), str(SAMPLE)])
    _, err = capsys.readouterr()
    assert code == 0
    assert "Broken pipe" not in err and "skipped" not in err


def _mixed_folder(tmp_path: Path) -> Path:
    """A folder of sessions of every protocol (multi-session connections too), and one file that is not a session."""
    src = tmp_path / "in"
    for proto_dir in sorted((ROOT / "adapters").iterdir()):
        captures = sorted((proto_dir / "captures").rglob("*.jsonl"))[:3]
        for i, capture in enumerate(captures):
            dest = src / proto_dir.name / f"{i}-{capture.name}"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(capture.read_bytes())
    (src / "notes.jsonl").write_text('{"hello": "world"}\n')
    return src


def _untimed(data: str) -> str:
    """The output without its times: events with no native time take the clock's, which moves."""
    return re.sub(r'"ts":"[^"]*"', '"ts":""', data)


def test_convert_on_several_workers_writes_what_one_process_writes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src = _mixed_folder(tmp_path)
    code, out, err = run(capsys, "convert", str(src), "--jobs", "1")
    assert out.count('"type":"stream.header"') > 20 and "skipped" in err
    code3, out3, err3 = run(capsys, "convert", str(src), "--jobs", "3")
    assert (code3, _untimed(out3), err3) == (code, _untimed(out), err)
    # into a folder: the same files, the same names, the same content
    run(capsys, "convert", str(src), "--jobs", "1", "-o", f"{tmp_path / 'one'}/")
    run(capsys, "convert", str(src), "--jobs", "3", "-o", f"{tmp_path / 'three'}/")

    def files(folder: Path) -> dict[Path, str]:
        return {p.relative_to(folder): _untimed(p.read_text()) for p in folder.rglob("*") if p.is_file()}

    assert files(tmp_path / "three") == files(tmp_path / "one")
    assert len(files(tmp_path / "one")) > 20


def test_convert_jobs_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "convert", str(SAMPLE), str(SAMPLE), "--jobs", "0")
    assert code == 2 and "--jobs must be at least 1" in err


def test_convert_jobs_keeps_only_a_few_sessions_ahead_of_the_output(tmp_path: Path) -> None:
    """Workers convert a bounded number of groups ahead of the one written: finished outputs do not pile up."""
    from normalize._cli import _AHEAD, _Item, _parser, _Workers
    from normalize._convert import SessionInput

    src = tmp_path / "in"
    src.mkdir()
    items = []
    for n in range(40):
        path = src / f"{n}.jsonl"
        path.write_bytes(SAMPLE.read_bytes() * 60)  # 0.7 MB each: a few a group, 20 groups or so
        items.append(_Item(SessionInput(path, "hm-json"), Path(path.name)))
    args = _parser().parse_args(["convert", str(src)])
    with _Workers(2) as workers:
        works = workers.plan(items, args, None, [])
        first = works[0]
        assert first is not None
        recognised, data, error = workers.result(first)
        assert recognised and error is None and data is not None and data.startswith(b'{"type":"stream.header"')
        assert workers._submitted <= 1 + _AHEAD * 2 < len(workers._groups)


# ------------------------------------------------------------------ the parser, built for the command


OWN_COMMAND_LINES = [
    ["convert", str(SAMPLE)],
    ["convert", "-p", "hm-json", "--redact", "--jobs", "2", "-o", "out/", str(SAMPLE), str(SAMPLE)],
    ["tap", "--", "agent", "--flag"],
    ["replay", "--speed", "2", str(SAMPLE)],
    ["detect", str(SAMPLE)],
    ["schema"],
    ["validate", str(SAMPLE)],
    ["convert", "--bogus"],  # refused by both
    ["adapters"],
]


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


@pytest.mark.parametrize("argv", OWN_COMMAND_LINES, ids=lambda a: " ".join(a[:3]))
def test_a_command_of_the_core_parses_as_with_every_command(argv: list[str]) -> None:
    """The parser built for one of the core's commands leaves the other modules' commands
    out; what it makes of a command line is what the whole parser makes of it."""
    from normalize._cli import _OWN_COMMANDS, _parser

    assert argv[0] in _OWN_COMMANDS
    lean, whole = _parser(argv[0]), _parser()
    assert "stats" not in _commands(lean) and "stats" in _commands(whole)
    try:
        want = vars(whole.parse_args(argv))
    except SystemExit:  # options this test does not know: both parsers refuse them alike
        with pytest.raises(SystemExit):
            lean.parse_args(argv)
        return
    assert vars(lean.parse_args(argv)) == want


def test_convert_imports_none_of_the_other_commands_modules() -> None:
    """``normalize convert`` (and the core's other commands) starts without the modules of
    doctor, stats, export, otel, show and run: a third of a short conversion's time."""
    import subprocess
    import sys

    others = ("normalize._doctor", "normalize.analytics", "normalize._show", "normalize._drive")
    code = (
        "import sys; from normalize._cli import main\n"
        f"assert main(['convert', {str(SAMPLE)!r}]) == 0\n"
        f"print(' '.join(m for m in {others!r} if m in sys.modules), file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith('{"type":"stream.header"')  # it converted
    assert out.stderr.strip() == ""
