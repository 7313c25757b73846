"""Nothing from the input reaches a terminal as a control sequence or as rich markup.

Session files are untrusted: a model name, a native type name, an agent version or
a file name can carry ESC/OSC/CSI sequences (set the window title, clear the
screen, write a link) that ``stats``, ``doctor`` and ``detect`` would otherwise
print raw.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from helpers import ADAPTERS
from normalize._cli import main
from normalize._doctor import add_doctor_command, diagnose, format_json
from normalize._term import json_for_terminal, printable

CAPTURE = ADAPTERS / "claude-stream-json" / "captures" / "claude-code-2.1.332" / "01-print-text.jsonl"

#: OSC set-title, clear screen, a C1 CSI, a right-to-left override, and rich markup for a link
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202e[link=https://evil.example]click[/link][bold]x"
HOSTILE_JSON = "\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31m\\u202e[link=https://evil.example]click[/link][bold]x"

#: any character a terminal would act on, but the tab and newline the commands themselves print
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def hostile_capture(folder: Path, name: str = "s.jsonl") -> Path:
    """The real capture with its model name, agent version and a native type name made hostile."""
    text = CAPTURE.read_text()
    text = text.replace('"model":"claude-opus-5-5"', f'"model":"{HOSTILE_JSON}"')
    text = text.replace('"claude_code_version":"2.1.332"', f'"claude_code_version":"2.1.332{HOSTILE_JSON}"')
    text += f'{{"type":"brand_new{HOSTILE_JSON}","session_id":"x"}}\n'
    out = folder / name
    out.write_text(text)
    return out


def test_printable_escapes_every_terminal_control_and_keeps_the_rest() -> None:
    assert printable("\x1b]0;t\x07") == "\\x1b]0;t\\x07"
    assert printable("a\nb\tc\rd") == "a\\x0ab\\x09c\\x0dd"
    assert printable("\x9b2J\x7f") == "\\x9b2J\\x7f"
    assert printable("abc\u202edef\u2066") == "abc\\u202edef\\u2066"
    assert printable("line\u2028sep") == "line\\u2028sep"
    ordinary = "claude-opus-5-5 C:\\Users\\me café 日本語 [bold]"
    assert printable(ordinary) == ordinary
    assert printable(42) == "42"


def test_stats_shows_a_hostile_model_name_escaped_and_never_as_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("rich")
    # a pipe with no terminal width set: the table is not narrowed, so the name is on one line
    monkeypatch.delenv("COLUMNS", raising=False)
    hostile_capture(tmp_path)
    assert main(["stats", str(tmp_path), "-j", "1"]) == 0
    out = capsys.readouterr().out
    assert not CONTROL.search(out), repr(out)
    # the whole name, escaped, and its markup printed as the text it is (rich would drop the tags)
    assert printable(HOSTILE) in out
    assert printable(HOSTILE).endswith("[link=https://evil.example]click[/link][bold]x")


def test_doctor_escapes_native_type_names_versions_and_file_paths(tmp_path: Path) -> None:
    f = hostile_capture(tmp_path, "ses\x1b[2Jsion.jsonl")
    (tmp_path / "not\x1b]0;x\x07a-session.jsonl").write_text('{"hello":1}\n')
    parser = argparse.ArgumentParser(prog="normalize")
    add_doctor_command(parser.add_subparsers(dest="command", required=True))
    out = io.StringIO()
    args = parser.parse_args(["doctor", str(tmp_path)])
    assert args.func(args, out) == 0
    report = out.getvalue()
    assert not CONTROL.search(report), repr(report)
    assert "brand_new\\x1b]0;pwned\\x07" in report  # the native type name
    assert "2.1.332\\x1b]0;pwned" in report  # the agent version
    assert printable(str(f)) in report  # the example's path
    assert "not\\x1b]0;x\\x07a-session.jsonl" in report  # the file not recognised


def test_detect_and_error_messages_escape_file_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hostile_capture(tmp_path, "a\x1b]0;t\x07.jsonl")
    (tmp_path / "b\x9b2J.jsonl").write_text("not json at all\n")
    assert main(["detect", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert not CONTROL.search(out), repr(out)
    assert not CONTROL.search(err), repr(err)
    assert "a\\x1b]0;t\\x07.jsonl\tclaude-stream-json" in out
    assert "b\\x9b2J.jsonl" in err


def test_validate_escapes_what_it_quotes_from_the_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "ev\x1b[2J.jsonl"
    f.write_text(
        '{"type":"stream.header","schemaVersion":"1","library":"x","libraryVersion":"1"}\n{"type":"\\u001b]0;t"}\n'
    )
    assert main(["validate", str(f)]) == 1
    out, err = capsys.readouterr()
    assert not CONTROL.search(out + err), repr(out + err)
    assert "ev\\x1b[2J.jsonl: line 2" in out


RAW_UTF8 = re.compile(rb"\x7f|\xc2[\x80-\x9f]|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]")


def test_json_for_a_terminal_escapes_what_json_leaves_raw_and_keeps_the_value() -> None:
    value = {"model": HOSTILE + "\x7f\u2028\u2067"}
    plain = msgspec.json.encode(value)
    assert RAW_UTF8.search(plain)  # JSON alone leaves C1, DEL and bidi marks raw
    safe = json_for_terminal(plain)
    assert not RAW_UTF8.search(safe)
    assert b"\\u009b" in safe and b"\\u202e" in safe
    assert msgspec.json.decode(safe) == value


def test_convert_to_a_terminal_writes_no_raw_control_but_to_a_file_the_exact_bytes(tmp_path: Path) -> None:
    f = hostile_capture(tmp_path)
    to_file = subprocess.run(
        [sys.executable, "-m", "normalize", "convert", str(f)], capture_output=True, check=True
    ).stdout
    assert RAW_UTF8.search(to_file)  # a pipe gets JSON as msgspec writes it
    main_fd, tty_fd = os.openpty()
    chunks = []
    try:
        proc = subprocess.Popen([sys.executable, "-m", "normalize", "convert", str(f)], stdout=tty_fd)
        os.close(tty_fd)  # the child holds the terminal now; read while it writes (a pty buffers little)
        while True:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:  # the terminal's other end is closed: everything was read
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(main_fd)
    shown = b"".join(chunks)
    assert b'"type":"session.created"' in shown
    assert not RAW_UTF8.search(shown)
    assert b"\\u009b31m" in shown


def test_doctor_json_escapes_c1_and_bidi_marks(tmp_path: Path) -> None:
    hostile_capture(tmp_path)
    text = format_json(diagnose([tmp_path]))
    assert b"brand_new" in text
    assert not RAW_UTF8.search(text)
