"""codex-exec-json: every capture meets the adapter's promises; precise mappings by hand."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from helpers import ADAPTERS, convert_capture, convert_records, session_captures
from normalize import CaptureParser, SessionCreated, SessionEvent, SessionUpdate, detect_protocol, encode
from normalize._model import _Core
from normalize.adapters.codex_exec_json import CodexExecJsonAdapter

#: the versions whose facts these tests state (older shapes: their own tests below,
#: tests/test_history.py and the goldens)
VERSIONS = (
    "codex-0.55.0",
    "codex-0.87.0",
    "codex-0.96.0",
    "codex-0.107.0",
    "codex-0.125.0",
    "codex-0.131.0",
    "codex-0.142.2",
    "codex-0.155.0",
    "codex-0.169.0",
    "codex-0.171.0",
)
CAPTURES = [
    c
    for c in session_captures()
    if c.relative_to(ADAPTERS).parts[0] == "codex-exec-json" and c.relative_to(ADAPTERS).parts[2] in VERSIONS
]


#: how a retry notice starts (0.5x spells it "Re-connecting...")
RETRY = ("Reconnecting...", "Re-connecting...")


def _id(p: Path) -> str:
    return p.name


def native_lines(capture: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capture.read_text().splitlines() if line.strip()]


def bodies(events: list[_Core]) -> list[dict[str, Any]]:
    return [json.loads(encode(e))["event"] for e in events if isinstance(e, SessionEvent)]


def convert_lines(*lines: dict[str, Any]) -> list[_Core]:
    parser = CaptureParser()
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    out: list[_Core] = convert_records([*parser.feed(data), *parser.close()], "codex-exec-json")
    return out


def test_there_are_captures() -> None:
    assert len(CAPTURES) >= 2


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_errors_only_where_codex_reported_one(capture: Path) -> None:
    fatal = [
        line["message"]
        for line in native_lines(capture)
        if line["type"] == "error" and not line["message"].startswith(RETRY)
    ]
    errors = [b for b in bodies(convert_capture(capture)) if b["kind"] == "error"]
    assert [e["message"] for e in errors] == fatal
    retries = [b for b in bodies(convert_capture(capture)) if b["kind"] == "warning"]
    assert all(r["message"].startswith(RETRY) for r in retries)


def test_a_retry_notice_spelt_re_connecting_is_a_warning() -> None:
    """Up to 0.5x the retry notice reads "Re-connecting... 1/1": the turn goes on."""
    out = bodies(
        convert_lines(
            {"type": "thread.started", "thread_id": "t"},
            {"type": "turn.started"},
            {"type": "error", "message": "Re-connecting... 1/5"},
            {"type": "turn.completed", "usage": {"input_tokens": 1, "cached_input_tokens": 0, "output_tokens": 1}},
        )
    )
    assert [(b["kind"], b["message"]) for b in out if b["kind"] in ("warning", "error")] == [
        ("warning", "Re-connecting... 1/5")
    ]


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_no_content_left_untranslated(capture: Path) -> None:
    """session.update only for thread.started (its id is the session record) and the
    todo_list completion that repeats the last plan."""
    events = convert_capture(capture)
    for upd in (e for e in events if isinstance(e, SessionUpdate)):
        payload = json.loads(bytes(upd.update.payload))
        assert payload["type"] == "thread.started" or (
            payload["type"] == "item.completed" and payload["item"]["type"] == "todo_list"
        ), payload


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_every_call_ends_in_exactly_one_terminal_phase(capture: Path) -> None:
    phases: dict[tuple[str, str], list[str]] = defaultdict(list)
    for b in bodies(convert_capture(capture)):
        if b["kind"] in ("tool-call", "mcp-tool"):
            phases[(b["kind"], b["callId"])].append(b["phase"])
    native = {
        line["item"]["id"]
        for line in native_lines(capture)
        if line["type"].startswith("item.")
        and line["item"]["type"] in ("command_execution", "file_change", "mcp_tool_call")
    }
    assert {cid for _, cid in phases} == native
    for key, seen in phases.items():
        assert sum(p in ("completed", "failed") for p in seen) == 1, (key, seen)


@pytest.mark.parametrize("capture", CAPTURES, ids=_id)
def test_one_turn_complete_per_native_turn_end_with_the_turn_s_usage(capture: Path) -> None:
    lines = native_lines(capture)
    ends = [line for line in lines if line["type"] in ("turn.completed", "turn.failed")]
    out = bodies(convert_capture(capture))
    completes = [b for b in out if b["kind"] == "turn-complete"]
    assert [c["reason"] for c in completes] == ["ok" if e["type"] == "turn.completed" else "interrupt" for e in ends]
    usage = [b for b in out if b["kind"] == "usage"]
    expected = [e["usage"] for e in ends if e["type"] == "turn.completed"]
    assert [u["scope"] for u in usage] == ["turn"] * len(expected)
    for u, native in zip(usage, expected, strict=True):
        assert u["tokens"]["input"] == native["input_tokens"]
        assert u["tokens"]["output"] == native["output_tokens"]
        assert u["tokens"]["cacheRead"] == native["cached_input_tokens"]
        assert u["tokens"]["total"] == native["input_tokens"] + native["output_tokens"]


@pytest.mark.parametrize("capture", [c for c in CAPTURES if c.name == "failed_turn.jsonl"], ids=lambda c: c.parent.name)
def test_a_failed_turn_reports_its_error_once(capture: Path) -> None:
    # the retry notice is a warning, the fatal error one error, the turn ends interrupt
    out = [(b["kind"], b.get("reason"), b.get("stopReason")) for b in bodies(convert_capture(capture))]
    assert out == [
        ("turn-start", None, None),
        ("warning", None, None),
        ("error", None, None),
        ("turn-complete", "interrupt", "failed"),
    ]


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_the_session_is_codex_s_without_a_version(capture: Path) -> None:
    out = convert_capture(capture)
    (created,) = [e for e in out if isinstance(e, SessionCreated)]
    # `codex exec --json` never says its version: left unset, not guessed
    assert created.record.agent == "codex" and created.record.agent_version is None
    thread = next(json.loads(x)["thread_id"] for x in capture.read_text().splitlines() if "thread.started" in x)
    assert created.record.native_session_id == thread
    assert {e.event.agent for e in out if isinstance(e, SessionEvent)} == {"codex"}


def test_a_stream_without_thread_started_is_still_codex_s() -> None:
    out = convert_lines({"type": "turn.started"}, {"type": "turn.completed"})
    (created,) = [e for e in out if isinstance(e, SessionCreated)]
    assert created.record.agent == "codex" and created.record.native_session_id is None


def test_turn_failed_alone_is_an_error() -> None:
    out = bodies(
        convert_lines(
            {"type": "thread.started", "thread_id": "t"},
            {"type": "turn.started"},
            {"type": "turn.failed", "error": {"message": "quota exceeded"}},
        )
    )
    assert [(b["kind"], b.get("message")) for b in out] == [
        ("turn-start", None),
        ("error", "quota exceeded"),
        ("turn-complete", None),
    ]


def test_web_search_keeps_the_model_s_id_of_the_duplicated_key() -> None:
    (capture,) = [c for c in CAPTURES if c.name == "mixed_items.jsonl"]
    searches = [b for b in bodies(convert_capture(capture)) if b["kind"] == "web-search"]
    assert [(s["callId"], s["phase"], s.get("query")) for s in searches] == [
        ("ws_x6", "started", None),
        ("ws_x6", "completed", "python f-string"),
    ]


def test_todo_list_is_a_plan_and_its_final_repeat_is_not_sent_again() -> None:
    (capture,) = [c for c in CAPTURES if c.name == "mixed_items.jsonl"]
    plans = [b for b in bodies(convert_capture(capture)) if b["kind"] == "plan"]
    assert [[e["status"] for e in p["entries"]] for p in plans] == [["pending", "pending"], ["completed", "completed"]]


def test_an_item_open_at_turn_end_ends_failed_and_one_open_at_close_is_reported() -> None:
    cmd = {
        "id": "item_1",
        "type": "command_execution",
        "command": "sleep 9",
        "aggregated_output": "",
        "exit_code": None,
        "status": "in_progress",
    }
    out = bodies(
        convert_lines(
            {"type": "thread.started", "thread_id": "t"},
            {"type": "turn.started"},
            {"type": "item.started", "item": cmd},
            {"type": "turn.completed", "usage": {"input_tokens": 1, "cached_input_tokens": 0, "output_tokens": 1}},
            {"type": "turn.started"},
            {"type": "item.started", "item": {**cmd, "id": "item_2"}},
        )
    )
    calls = [(b["callId"], b["phase"]) for b in out if b["kind"] == "tool-call"]
    # the core settles both with one policy: the first when its turn ends, the second at close
    assert calls == [("item_1", "started"), ("item_1", "failed"), ("item_2", "started"), ("item_2", "failed")]
    warnings = [b for b in out if b["kind"] == "warning"]
    assert [w["message"] for w in warnings] == [
        "tool call item_1 (exec_command) was still open when turn:1 ended",
        "tool call item_2 (exec_command) never finished: the input ended first",
    ]
    assert {w["native"]["protocol"] for w in warnings} == {"core"}
    assert out[-1]["kind"] == "turn-complete" and out[-1]["reason"] == "interrupt"  # cut off


def test_an_mcp_call_open_when_its_turn_fails_ends_failed_in_both_its_views() -> None:
    mcp = {
        "id": "item_1",
        "type": "mcp_tool_call",
        "server": "docs",
        "tool": "search",
        "arguments": {"q": "x"},
        "status": "in_progress",
    }
    out = bodies(
        convert_lines(
            {"type": "thread.started", "thread_id": "t"},
            {"type": "turn.started"},
            {"type": "item.started", "item": mcp},
            {"type": "turn.failed", "error": {"message": "boom"}},
        )
    )
    kinds = [(b["kind"], b.get("phase")) for b in out if b["kind"] in ("tool-call", "mcp-tool", "warning")]
    assert kinds == [
        ("tool-call", "started"),
        ("mcp-tool", "started"),
        ("warning", None),  # the core fails the call left open, saying why
        ("tool-call", "failed"),
        ("mcp-tool", "failed"),  # and its MCP view with it
    ]
    (view,) = [b for b in out if b["kind"] == "mcp-tool" and b["phase"] == "failed"]
    assert (view["server"], view["tool"]) == ("docs", "search")
    (failed,) = [b for b in out if b["kind"] == "tool-call" and b["phase"] == "failed"]
    assert (failed["tool"], failed["category"]) == ("search", "mcp")
    assert out[-1]["kind"] == "turn-complete" and out[-1]["stopReason"] == "failed"


def test_detection() -> None:
    for capture in CAPTURES:
        sample = [(line, "agent") for line in capture.read_bytes().splitlines()[:20]]
        assert CodexExecJsonAdapter.detect(sample) > 0.9  # type: ignore[arg-type]
        assert detect_protocol(sample) == "codex-exec-json"  # type: ignore[arg-type]
    rollout = ADAPTERS / "codex-rollout/captures/codex-0.169.0/exec-mixed_items.jsonl"
    assert CodexExecJsonAdapter.detect([(rollout.read_bytes().splitlines()[0], "agent")]) == 0.0
    rpc = b'{"method":"turn/started","params":{"turn":{"id":"x"}},"emittedAtMs":1}'
    assert CodexExecJsonAdapter.detect([(rpc, "agent")]) == 0.0


# -- the older shape (codex-cli 0.40: config line, prompt line, {id, msg} core events) ------------

OLD = ADAPTERS / "codex-exec-json" / "captures" / "codex-0.40.0"


def _kinds(out: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(b["kind"], b.get("phase") or b.get("reason") or b.get("text")) for b in out if b["kind"] != "usage"]


@pytest.mark.parametrize("capture", sorted(OLD.glob("*.jsonl")), ids=_id)
def test_the_older_shape_is_detected(capture: Path) -> None:
    sample = [(line, "agent") for line in capture.read_bytes().splitlines()[:20]]
    assert detect_protocol(sample) == "codex-exec-json"  # type: ignore[arg-type]


def test_the_older_shape_gives_the_prompt_the_calls_and_an_inferred_turn_end() -> None:
    out = convert_capture(OLD / "shell_command.jsonl")
    (created,) = [e for e in out if isinstance(e, SessionCreated)]
    assert (created.record.cwd, created.record.model) == ("/home/user/project", "gpt-5.5")
    assert _kinds(bodies(out)) == [
        ("turn-start", None),
        ("user-message", "scenario shell: list the files"),
        ("tool-call", "started"),
        ("command-output", None),
        ("tool-call", "completed"),
        ("assistant-message", "There is one file: hello.txt."),
        ("turn-complete", "ok"),  # no task_complete is printed: the end of the stream, nothing pending
    ]
    turn_usage = [b for b in bodies(out) if b["kind"] == "usage" and b.get("scope") == "turn"]
    assert [u["tokens"]["output"] for u in turn_usage] == [80]


def test_the_older_shape_ends_a_turn_failed_after_a_terminal_error() -> None:
    out = bodies(convert_capture(OLD / "http_500.jsonl"))
    assert _kinds(out)[2:] == [
        ("warning", None),  # stream_error: a retry notice
        ("error", None),
        ("turn-complete", "interrupt"),
    ]
    assert out[-1]["stopReason"] == "failed"


def test_the_older_shape_left_waiting_is_cut_off() -> None:
    config = {"model": "m", "provider": "p", "workdir": "/w", "approval": "never", "sandbox": "read-only"}
    begin = {"type": "exec_command_begin", "call_id": "c1", "command": ["ls"], "cwd": "/w"}
    out = bodies(
        convert_lines(
            config,
            {"prompt": "hi"},
            {"id": "0", "msg": {"type": "task_started"}},
            {"id": "0", "msg": begin},
        )
    )
    assert [b.get("errorType") for b in out if b["kind"] == "error"] == ["cut-off"]


# -- both shapes read with one view ----------------------------------------------------------------


def _translated(out: list[_Core]) -> list[dict[str, Any]]:
    return [{k: v for k, v in b.items() if k != "native"} for b in bodies(out)]


def test_a_field_only_the_other_shape_reads_does_not_change_a_line() -> None:
    # A line is decoded with one view holding both shapes' fields; a field of the other
    # shape, of a type that shape would not take, is no reason to refuse the line (an older
    # line's "item" or "usage"; a current line's "msg", which the older view never decodes).
    config = {"model": "m", "provider": "p", "workdir": "/w", "approval": "never", "sandbox": "read-only"}
    reply = {"type": "agent_message", "message": "hello"}
    plain: list[dict[str, Any]] = [
        config,
        {"prompt": "hi"},
        {"id": "0", "msg": reply},
        {"type": "thread.started", "thread_id": "t1"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": "done"}},
        {"type": "turn.completed"},
    ]
    extra: list[dict[str, Any]] = [
        config,
        {"prompt": "hi", "item": "not an item"},
        {"id": "0", "msg": reply, "usage": [1, 2]},
        {"type": "thread.started", "thread_id": "t1", "msg": "not an event"},
        {"type": "turn.started", "msg": [1]},
        {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": "done"}},
        {"type": "turn.completed", "msg": {"type": 1}},
    ]
    expected = _translated(convert_lines(*plain))
    assert [b["kind"] for b in expected if b["kind"] != "session.update"][:4] == [
        "turn-start",
        "user-message",
        "assistant-message",
        "turn-complete",
    ]
    assert _translated(convert_lines(*extra)) == expected


def test_a_line_whose_type_is_null_is_bad_input_not_the_older_shape() -> None:
    out = bodies(convert_lines({"type": None, "thread_id": "t1"}, {"type": "turn.started"}))
    errors = [b["message"] for b in out if b["kind"] == "error" and b["errorType"] == "malformed"]
    assert errors == ["not a codex exec --json line: Expected `str`, got `null` - at `$.type`"]


@pytest.mark.parametrize("msg", ["x", {"type": 5}, {"type": "agent_message", "message": 7}])
def test_an_older_line_whose_msg_cannot_be_read_is_an_error_and_the_stream_goes_on(msg: object) -> None:
    config = {"model": "m", "provider": "p", "workdir": "/w", "approval": "never", "sandbox": "read-only"}
    out = bodies(
        convert_lines(
            config,
            {"prompt": "hi"},
            {"id": "0", "msg": msg},
            {"id": "0", "msg": {"type": "agent_message", "message": "still here"}},
        )
    )
    errors = [b for b in out if b["kind"] == "error"]
    assert [e["errorType"] for e in errors] == ["malformed"]
    assert errors[0]["message"].startswith("not a codex exec --json line: ")
    assert ("assistant-message", "still here") in _kinds(out)


@pytest.mark.parametrize("version", ["0.20.0", "0.29.0", "0.40.0"])
def test_the_older_shape_s_added_file_is_an_add_with_its_content(version: str) -> None:
    # Up to 0.40 a patch's changes are externally tagged, {"add": {"content": ...}}: the file
    # is new and its diff is its content, as the later {"type": "add", "content": ...} says.
    capture = ADAPTERS / "codex-exec-json" / "captures" / f"codex-{version}" / "apply_patch.jsonl"
    out = bodies(convert_capture(capture))
    (diff,) = [b for b in out if b["kind"] == "file-diff"]
    assert (diff["path"], diff["changeKind"], diff["diff"]) == (
        "/home/user/project/notes.txt",
        "add",
        "@@ -0,0 +1,1 @@\n+some notes\n",
    )
    calls = [b for b in out if b["kind"] == "tool-call"]
    assert [c["input"]["changes"] for c in calls] == [[{"path": "/home/user/project/notes.txt", "kind": "add"}]] * 2


def test_the_older_shape_s_updated_moved_and_deleted_files() -> None:
    config = {"model": "m", "provider": "p", "workdir": "/w", "approval": "never", "sandbox": "read-only"}
    changes = {
        "/w/a.txt": {"update": {"unified_diff": "@@ -1 +1 @@\n-a\n+b\n", "move_path": "/w/b.txt"}},
        "/w/c.txt": {"delete": {"content": "c\n"}},
        "/w/d.txt": "delete",  # the unit variant of the oldest releases
    }
    begin = {"type": "patch_apply_begin", "call_id": "p1", "auto_approved": True, "changes": changes}
    out = bodies(convert_lines(config, {"prompt": "hi"}, {"id": "0", "msg": begin}))
    diffs = {b["path"]: (b["changeKind"], b["diff"]) for b in out if b["kind"] == "file-diff"}
    assert diffs["/w/a.txt"] == ("move", "@@ -1 +1 @@\n-a\n+b\n")
    assert diffs["/w/c.txt"] == ("delete", "@@ -1,1 +0,0 @@\n-c\n")
    assert diffs["/w/d.txt"][0] == "delete"
    started = next(b for b in out if b["kind"] == "tool-call")
    assert started["category"] == "edit"
    assert [c["kind"] for c in started["input"]["changes"]] == ["move", "delete", "delete"]
