"""A stored session written as one JSON document over several lines (Gemini CLI before 0.39).

The parser reads such a file whole and gives one record per message: the document's other
fields first, then each element of ``messages``; a folder's ``.json`` documents are sessions
when an adapter reads them, and other ``.json`` files beside them are left alone.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from helpers import ADAPTERS, records_chunked
from normalize import LineTooLong, TruncatedLine, find_inputs
from normalize._lines import CaptureParser, LineProblem, Message

CHATS = ADAPTERS / "gemini-chat/captures"
DOCUMENT = CHATS / "gemini-cli-0.38.2/shell_allowed.json"


def records(data: bytes, max_line: int = 1 << 20) -> list[Message | LineProblem]:
    parser = CaptureParser(max_line)
    return [*parser.feed(data), *parser.close()]


def test_a_document_gives_its_fields_then_each_message_one_line_each() -> None:
    data = DOCUMENT.read_bytes()
    doc = json.loads(data)
    out = records(data)
    assert all(isinstance(r, Message) for r in out)
    messages = [r for r in out if isinstance(r, Message)]
    assert [json.loads(m.data) for m in messages] == [
        {k: v for k, v in doc.items() if k != "messages"},
        *doc["messages"],
    ]
    assert all(b"\n" not in m.data for m in messages)
    assert [m.line for m in messages] == list(range(1, len(doc["messages"]) + 2))


@pytest.mark.parametrize("seed", range(5))
def test_any_chunking_gives_the_same_records(seed: int) -> None:
    data = b"\xef\xbb\xbf\r\n" + DOCUMENT.read_bytes().replace(b"\n", b"\r\n")
    cuts = random.Random(seed).sample(range(1, len(data)), 60)
    assert list(records_chunked(data, cuts)) == records(DOCUMENT.read_bytes())


def test_a_document_without_messages_is_one_record() -> None:
    assert records(b'{\n  "a": [1,\n    2]\n}\n') == [Message(b'{"a":[1,2]}', line=1)]


def test_a_cut_document_is_truncated_and_kept() -> None:
    data = DOCUMENT.read_bytes()[:-40]
    (problem,) = records(data)
    assert isinstance(problem, LineProblem)
    assert isinstance(problem.error, TruncatedLine)
    assert (problem.error.kept or "").startswith("{\n")


def test_a_document_is_bounded_like_a_line() -> None:
    (problem,) = records(DOCUMENT.read_bytes(), max_line=1000)
    assert isinstance(problem, LineProblem)
    assert isinstance(problem.error, LineTooLong)


def test_jsonl_is_not_taken_for_a_document() -> None:
    assert records(b'{"a": 1}\n{\n')[0] == Message(b'{"a": 1}', line=1)


def test_a_folder_holds_json_chats_and_other_json_files_are_not_sessions(tmp_path: Path) -> None:
    chats = tmp_path / "tmp" / "0123abcd" / "chats"
    chats.mkdir(parents=True)
    (chats / DOCUMENT.name).write_bytes(DOCUMENT.read_bytes())
    (tmp_path / "settings.json").write_text('{\n  "security": {}\n}\n')
    (tmp_path / "tmp" / "0123abcd" / "logs.json").write_text("[]\n")
    found = list(find_inputs([tmp_path]))
    assert [(i.main, i.protocol) for i in found] == [(chats / DOCUMENT.name, "gemini-chat")]  # type: ignore[union-attr]


def test_stats_and_convert_of_a_folder_read_its_json_chats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from normalize._cli import main

    chats = tmp_path / "tmp" / "0123abcd" / "chats"
    chats.mkdir(parents=True)
    for name in ("shell_allowed.json", "two_turns.json"):
        (chats / name).write_bytes((DOCUMENT.parent / name).read_bytes())
    (tmp_path / "settings.json").write_text('{\n  "security": {}\n}\n')
    assert main(["stats", "--json", "-j", "1", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(g["agent"], g["sessions"]) for g in doc["groups"]] == [("gemini-cli", 2)]
    out = tmp_path / "out"
    assert main(["convert", "-j", "1", "-o", f"{out}/", str(tmp_path / "tmp")]) == 0
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.jsonl"))
    assert names == [
        "0123abcd/chats/shell_allowed.normalized.jsonl",
        "0123abcd/chats/two_turns.normalized.jsonl",
    ]


def test_a_forced_protocol_takes_no_json_document_its_adapter_does_not_read(tmp_path: Path) -> None:
    """Claude Code (2.1.20) keeps a ``sessions-index.json`` beside a project's sessions: an
    index, no session, also when the folder is read with ``--protocol claude-transcript``."""
    session = ADAPTERS / "claude-transcript/captures/claude-code-2.1.20/28-resume"
    for f in session.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    assert (tmp_path / "sessions-index.json").is_file()
    for protocol in (None, "claude-transcript"):
        found = list(find_inputs([tmp_path], protocol=protocol))
        assert [(i.main.name, i.protocol) for i in found] == [  # type: ignore[union-attr]
            ("7c0ef2f4-fab5-4bb6-bc82-99b923cb9b15.jsonl", "claude-transcript")
        ]
    chats = tmp_path / "chats"
    chats.mkdir()
    (chats / DOCUMENT.name).write_bytes(DOCUMENT.read_bytes())
    found = list(find_inputs([chats], protocol="gemini-chat"))
    assert [(i.main, i.protocol) for i in found] == [(chats / DOCUMENT.name, "gemini-chat")]  # type: ignore[union-attr]
