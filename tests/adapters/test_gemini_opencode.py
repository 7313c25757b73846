"""Gemini CLI and OpenCode: detection, OpenCode's database read safely, `stats` with no path."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from helpers import ADAPTERS, capture_files, convert_capture, fixed_clock, protocol_of
from normalize import SessionCreated, SessionEvent, Usage, encode, events, find_inputs
from normalize._cli import main
from normalize._convert import detect_file
from normalize._lines import Message

NEW = ("gemini-stream-json", "gemini-chat", "opencode-json", "opencode-db")
#: (an empty file names no protocol: OpenCode 1.15.4's `run` can exit before printing a line)
CAPTURES = [
    c
    for c in capture_files()
    if protocol_of(c) in NEW and "edge-cases" not in c.parts and not (c.is_file() and c.stat().st_size == 0)
]
ALL_DATABASES = sorted((ADAPTERS / "opencode-db" / "captures").rglob("*.db"))
DATABASES = sorted((ADAPTERS / "opencode-db" / "captures" / "opencode-1.18.33").glob("*.db"))

#: What a secret looks like in a capture: OpenCode's tokens, API keys, bearer headers.
SECRET = re.compile(rb"(access_token|refresh_token|Bearer |sk-[A-Za-z0-9]{8}|AIza[0-9A-Za-z_-]{20})")


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.relative_to(ADAPTERS).as_posix())
def test_each_capture_is_found_as_its_protocol(capture: Path) -> None:
    (inp,) = find_inputs([capture])
    assert not isinstance(inp, Exception)
    assert inp.protocol == protocol_of(capture)
    if capture.suffix != ".db" and not capture.is_dir():  # not a store (a database, a storage/ folder)
        assert detect_file(capture) == protocol_of(capture)


def test_the_kits_hold_both_agents_in_every_scenario() -> None:
    cases = {"text_thinking", "shell_allowed", "shell_denied", "file_edit", "two_turns", "api_error"}
    for protocol, suffix in (("gemini-stream-json", ".jsonl"), ("gemini-chat", ".jsonl"), ("opencode-json", ".jsonl")):
        assert {p.name.removesuffix(suffix) for p in (ADAPTERS / protocol / "captures").rglob("*" + suffix)} >= cases
    assert {p.stem for p in DATABASES} == cases


# ---------------------------------------------------------------- OpenCode's database


@pytest.mark.parametrize("db", ALL_DATABASES, ids=lambda p: p.name)
def test_database_captures_hold_only_session_tables_and_no_secret(db: Path) -> None:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
    assert tables == {"project", "session", "message", "part"}
    assert SECRET.search(db.read_bytes()) is None
    assert db.stat().st_size < 64 * 1024


def _with_credentials(tmp_path: Path) -> Path:
    """A capture database with OpenCode's account and credential tables, holding fake tokens."""
    db = tmp_path / "opencode.db"
    shutil.copy(ADAPTERS / "opencode-db/captures/opencode-1.18.33/shell_allowed.db", db)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "create table account (id text primary key, email text, url text, access_token text,"
            " refresh_token text, token_expiry integer, time_created integer, time_updated integer)"
        )
        conn.execute(
            "insert into account values ('a1', 'me@example.com', 'https://opencode.ai',"
            " 'ACCESS-TOKEN-0123456789', 'REFRESH-TOKEN-0123456789', 0, 0, 0)"
        )
        conn.execute("create table credential (id text primary key, label text, value text)")
        conn.execute("insert into credential values ('c1', 'openai', 'CREDENTIAL-VALUE-0123456789')")
        conn.execute("create table session_share (session_id text primary key, secret text, url text)")
        conn.execute(
            "insert into session_share select id, 'SHARE-SECRET-0123456789', 'https://opncd.ai/s/x' from session"
        )
    return db


def test_reading_a_database_never_outputs_its_credentials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _with_credentials(tmp_path)
    db.chmod(stat.S_IRUSR | stat.S_IRGRP)  # read-only: normalize never writes to it
    before = db.read_bytes()
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert main(["convert", str(db), "-o", str(out_dir)]) == 0
    assert main(["doctor", "--json", str(db)]) == 0
    written = b"".join(p.read_bytes() for p in out_dir.rglob("*") if p.is_file()) + capsys.readouterr().out.encode()
    assert b"ses_" in written
    for secret in (b"ACCESS-TOKEN", b"REFRESH-TOKEN", b"CREDENTIAL-VALUE", b"SHARE-SECRET", b"me@example.com"):
        assert secret not in written
    assert db.read_bytes() == before


def test_each_session_of_a_database_is_an_input_of_its_own(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    shutil.copy(DATABASES[0], db)
    other = DATABASES[1]
    with sqlite3.connect(db) as conn:
        conn.execute("attach database ? as other", (f"{other}",))
        for table in ("session", "message", "part"):
            conn.execute(f"insert into {table} select * from other.{table}")
    inputs = [i for i in find_inputs([tmp_path]) if not isinstance(i, Exception)]
    assert [i.protocol for i in inputs] == ["opencode-db", "opencode-db"]
    natives = []
    for inp in inputs:
        created = list(events(inp.records(), protocol=inp.protocol, clock=fixed_clock))
        (record,) = [e.record for e in created if isinstance(e, SessionCreated)]
        natives.append(record.native_session_id)
        assert all(e.event.origin == "replay" for e in created if isinstance(e, SessionEvent))
    assert set(natives) == {i.key for i in inputs}
    assert len(set(natives)) == 2


def test_a_database_session_converts_to_its_golden(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ADAPTERS / "opencode-db/captures/opencode-1.18.33/two_turns.db"
    assert main(["convert", str(db)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    kinds = [x["event"]["kind"] for x in lines if x["type"] == "session.event"]
    assert kinds.count("turn-start") == kinds.count("turn-complete") == 2
    assert lines[0]["protocol"] == "opencode-db"


@pytest.mark.parametrize(
    "dropped",
    [
        ("agent", "model", "path", "cost", "workspace_id"),  # a session table of OpenCode 1.2
        ("cost", "tokens_input", "tokens_output", "tokens_reasoning", "tokens_cache_read", "metadata"),  # 1.14
    ],
    ids=["opencode-1.2", "opencode-1.14"],
)
def test_a_database_of_an_older_opencode_reads_as_one_of_today(
    dropped: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # OpenCode added session columns over time: a database written by an older version
    # lacks them, and its sessions read as they would with those columns empty
    source = ADAPTERS / "opencode-db/captures/opencode-1.18.33/two_turns.db"
    old = tmp_path / "opencode.db"
    shutil.copy(source, old)
    with sqlite3.connect(old) as db:
        for column in dropped:
            db.execute(f"alter table session drop column {column}")

    def read(db: Path) -> list[dict[str, Any]]:
        # the session row, kept as written, lacks the dropped columns: compared apart
        assert main(["convert", str(db)]) == 0
        lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()][1:]
        for x in lines:
            if x["type"] == "session.update" and x["update"]["payload"]["table"] == "session":
                assert not set(dropped) & set(x["update"]["payload"]) or db == source
                x["update"]["payload"] = None
            native = x["event"].get("native", {}) if x["type"] == "session.event" else {}
            if native.get("payload", {}).get("table") == "session":
                x["event"]["native"] = None
        return lines

    today, older = read(source), read(old)
    assert older[0]["type"] == "session.created"
    if "model" in dropped:
        # the session's model is then read from its messages, and said as a session-info
        # before the first turn: the same model
        assert "model" not in older[0]["record"]
        infos = [x for x in older if x["type"] == "session.event" and x["event"]["kind"] == "session-info"]
        assert [x["event"]["model"] for x in infos] == [today[0]["record"].pop("model")]
        older = [x for x in older if x not in infos]
        for x in older + today:  # one event fewer: the seq after it differ
            if x["type"] == "session.event":
                del x["event"]["seq"]

        def states(lines: list[dict[str, Any]]) -> list[str]:  # the state moves, told apart from when
            return [x.pop("state") for x in lines if x["type"] == "session.stateChanged"]

        assert states(older) == ["idle", *states(today)]  # idle: the session-info, before any turn
        older, today = ([x for x in lines if x["type"] != "session.stateChanged"] for lines in (older, today))
    assert older == today
    kinds = [x["event"]["kind"] for x in older if x["type"] == "session.event"]
    assert kinds.count("turn-start") == kinds.count("turn-complete") == 2
    assert "error" not in kinds


# ---------------------------------------------------------------- stats with no path


def test_stats_with_no_path_reads_the_agents_own_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    chats = tmp_path / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(ADAPTERS / "gemini-chat/captures/gemini-cli-0.61.0/shell_allowed.jsonl", chats / "session-1.jsonl")
    store = tmp_path / ".local" / "share" / "opencode"
    store.mkdir(parents=True)
    shutil.copy(ADAPTERS / "opencode-db/captures/opencode-1.18.33/two_turns.db", store / "opencode.db")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["stats", "--json", "-j", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    sessions = {g["agent"]: g["sessions"] for g in doc["groups"]}
    assert sessions == {"gemini-cli": 1, "opencode": 1}


def test_stats_with_no_path_and_no_session_folder_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for variable in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(variable, raising=False)
    assert main(["stats"]) == 1  # nothing to read: an input problem, said in one line
    err = capsys.readouterr().err
    assert "no agent session folder found" in err and "~/.gemini/tmp" in err


def test_live_and_stored_gemini_calls_share_one_id(capsys: pytest.CaptureFixture[str]) -> None:
    live = ADAPTERS / "gemini-stream-json/captures/gemini-cli-0.61.0/shell_denied.jsonl"
    assert main(["convert", str(live)]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    (failed,) = [x["event"] for x in out if x["type"] == "session.event" and x["event"].get("phase") == "failed"]
    assert failed["output"]["type"] == "policy_violation"


def test_follow_refuses_a_database(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "--follow", str(DATABASES[0])]) == 2
    assert "not a session database" in capsys.readouterr().err


def test_follow_refuses_a_chat_kept_as_one_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    chat = ADAPTERS / "gemini-chat/captures/gemini-cli-0.38.2/two_turns.json"
    assert main(["convert", "--follow", str(chat)]) == 2  # it would wait for lines that never come
    err = capsys.readouterr().err
    assert "one JSON document" in err and "without --follow" in err
    assert main(["convert", str(chat)]) == 0  # read whole, it converts


def test_detect_names_each_session_of_a_database(capsys: pytest.CaptureFixture[str]) -> None:
    db = ADAPTERS / "opencode-db/captures/opencode-1.18.33/two_turns.db"
    assert main(["detect", str(db)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    where, protocol = line.split("\t")
    assert protocol == "opencode-db"
    assert where.startswith(f"{db}#ses_")


def test_gemini_over_acp_is_agent_gemini_cli_with_its_quota_as_turn_usage() -> None:
    capture = ADAPTERS / "acp/captures/gemini-cli-0.61.0/gemini-b-shell-allow.tap.jsonl"
    out = [e for e in convert_capture(capture) if isinstance(e, SessionEvent)]
    assert {e.event.agent for e in out} == {"gemini-cli"}
    (usage,) = [e.event.body for e in out if isinstance(e.event.body, Usage)]
    assert usage.scope == "turn"
    assert usage.tokens is not None
    assert (usage.tokens.input, usage.tokens.output) == (2400, 80)  # _meta.quota.token_count


# ---------------------------------------------------------------- older Gemini CLI releases

GEMINI_LIVE = ADAPTERS / "gemini-stream-json" / "captures"


def _bodies(capture: Path) -> list[dict[str, Any]]:
    return [json.loads(encode(e))["event"] for e in convert_capture(capture) if isinstance(e, SessionEvent)]


@pytest.mark.parametrize(
    ("version", "reason"),
    [
        ("0.61.0", "Tool execution denied by policy."),  # policy_violation
        ("0.56.0", "Tool execution denied by policy."),  # policy_violation
        ("0.51.0", "Tool execution denied by policy."),  # policy_violation
        ("0.45.2", "Tool execution denied by policy."),  # policy_violation
        ("0.41.2", "Tool execution denied by policy."),  # policy_violation
        ("0.38.2", "Tool execution denied by policy."),  # policy_violation
        ("0.25.0", "Tool execution denied by policy."),  # policy_violation
        ("0.20.0", 'Tool execution for "Shell" denied by policy.'),  # unhandled_exception
        ("0.11.3", "Command 'rm -f hello.txt' is blocked by configuration"),  # invalid_tool_params (tools.exclude)
    ],
)
def test_every_release_s_refused_call_is_a_permission_auto_deny(version: str, reason: str) -> None:
    """Live and stored: the chat keeps the refusal's words only (no error type), and they suffice."""
    chats = ADAPTERS / "gemini-chat" / "captures" / f"gemini-cli-{version}"
    (chat,) = [p for p in chats.glob("shell_denied.json*") if p.suffix in (".json", ".jsonl")]
    for capture in (GEMINI_LIVE / f"gemini-cli-{version}" / "shell_denied.jsonl", chat):
        out = _bodies(capture)
        (auto,) = [b for b in out if b["kind"] == "permission-auto"]
        assert (auto["decision"], auto["optionId"], auto["reason"]) == ("deny", "deny", reason)
        assert auto["toolCall"]["title"] == "rm -f hello.txt"
        failed = [b for b in out if b["kind"] == "tool-call" and b["phase"] == "failed"]
        assert [b["callId"] for b in failed] == [auto["toolCall"]["callId"]]
        assert out.index(auto) < out.index(failed[0])


@pytest.mark.parametrize(
    ("error_type", "message"),
    [
        ("invalid_tool_params", "Command rejected because it could not be parsed safely"),
        ("unhandled_exception", "boom: denied by policy. (not a refusal's wording)"),
        ("execution_failed", "Command 'x' is blocked by configuration"),
    ],
)
def test_a_call_failing_on_its_own_is_no_permission_decision(error_type: str, message: str) -> None:
    lines = [
        {"type": "init", "timestamp": "2026-01-01T00:00:00Z", "session_id": "s", "model": "m"},
        {"type": "message", "timestamp": "2026-01-01T00:00:01Z", "role": "user", "content": "hi"},
        {
            "type": "tool_use",
            "timestamp": "2026-01-01T00:00:02Z",
            "tool_name": "run_shell_command",
            "tool_id": "c1",
            "parameters": {"command": "ls"},
        },
        {
            "type": "tool_result",
            "timestamp": "2026-01-01T00:00:03Z",
            "tool_id": "c1",
            "status": "error",
            "output": message,
            "error": {"type": error_type, "message": message},
        },
    ]
    records = [Message(json.dumps(line).encode()) for line in lines]
    out = [
        json.loads(encode(e))["event"]
        for e in events(records, protocol="gemini-stream-json")
        if isinstance(e, SessionEvent)
    ]
    kinds = [b["kind"] for b in out]
    assert "permission-auto" not in kinds
    assert [b["phase"] for b in out if b["kind"] == "tool-call"] == ["started", "failed"]


@pytest.mark.parametrize("version", ["0.20.0", "0.11.3"])
def test_old_stats_without_cached_counts_give_no_cache_figure(version: str) -> None:
    """0.20 and 0.11 ``result.stats`` have no ``cached``/``input``: usage says nothing of the cache."""
    for capture in sorted((GEMINI_LIVE / f"gemini-cli-{version}").glob("*.jsonl")):
        for stats in (json.loads(line).get("stats") for line in capture.read_text().splitlines()):
            assert stats is None or "cached" not in stats
        (usage,) = [b for b in _bodies(capture) if b["kind"] == "usage"]
        assert set(usage["tokens"]) == {"input", "output", "total"}
        assert usage["tokens"]["input"] > 0


def test_a_shell_output_kept_as_the_terminal_screen_is_its_text() -> None:
    """0.38's chat keeps a shell's ``resultDisplay`` as the screen: lines of styled pieces,
    padded, the cursor on a line of its own.  Read as the text (as 0.31's string and the live
    stream of other releases give it), not as the pieces."""
    chat = ADAPTERS / "gemini-chat/captures/gemini-cli-0.38.2/shell_allowed.json"
    out = _bodies(chat)
    assert [b["delta"] for b in out if b["kind"] == "command-output"] == ["hello.txt"]
    (done,) = [b for b in out if b["kind"] == "tool-call" and b["phase"] == "completed"]
    assert done["output"] == "hello.txt"


# ---------------------------------------------------------------- OpenCode 1.0 / 1.1: storage/

STORAGE = ADAPTERS / "opencode-db/captures/opencode-1.1.56"


def test_the_opencode_data_folder_gives_each_storage_session_once_and_no_file_of_it(tmp_path: Path) -> None:
    data = tmp_path / "opencode"
    for case in ("text_thinking", "two_turns"):
        shutil.copytree(STORAGE / case, data / "storage", dirs_exist_ok=True)
    (data / "storage/project").mkdir()
    (data / "storage/project/global.json").write_text('{\n  "id": "global"\n}\n')
    inputs = list(find_inputs([data]))
    assert all(not isinstance(i, Exception) for i in inputs)
    assert [(i.main, i.protocol) for i in inputs] == [(data / "storage", "opencode-db")] * 2  # type: ignore[union-attr]
    ids = {f.stem for f in (data / "storage/session").glob("*/*.json")}
    assert {i.key for i in inputs} == ids  # type: ignore[union-attr]


def test_a_storage_session_a_database_also_holds_is_read_once(tmp_path: Path) -> None:
    shutil.copytree(STORAGE / "text_thinking", tmp_path / "storage")
    (sid,) = [f.stem for f in (tmp_path / "storage/session").glob("*/*.json")]
    db = tmp_path / "opencode.db"
    shutil.copy(ADAPTERS / "opencode-db/captures/opencode-1.18.33/text_thinking.db", db)
    with sqlite3.connect(db) as conn:  # as OpenCode 1.2 copies storage/ into its new database
        conn.execute("update session set id = ?", (sid,))
    inputs = [i for i in find_inputs([tmp_path]) if not isinstance(i, Exception)]
    assert [(i.main, i.key) for i in inputs] == [(db, sid)]


def test_a_storage_part_that_is_not_json_is_an_error_and_the_rest_is_read(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    shutil.copytree(STORAGE / "text_thinking", storage)
    text = next(f for f in storage.glob("part/*/*.json") if '"Hello from the fake' in f.read_text())
    text.write_text('{\n  "id": "prt_broken", "type": "text", "text": "cut off')
    (inp,) = find_inputs([storage])
    assert not isinstance(inp, Exception)
    kinds = [
        e.event.kind
        for e in events(inp.records(), protocol=inp.protocol, clock=fixed_clock)
        if isinstance(e, SessionEvent)
    ]
    assert "error" in kinds and "assistant-message" not in kinds
    assert kinds[-2:] == ["usage", "turn-complete"]  # the parts after it are read
    assert "reasoning" in kinds
