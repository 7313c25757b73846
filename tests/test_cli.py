"""The command line: convert, detect, schema, validate; their output and exit codes."""

from __future__ import annotations

import json
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
