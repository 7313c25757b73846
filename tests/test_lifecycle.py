"""The lifecycle rules the core applies for every agent: one vocabulary of decisions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import ADAPTERS, convert_capture
from normalize import (
    PermissionAuto,
    PermissionOption,
    PermissionRequest,
    RequestResolved,
    ToolCalled,
    ToolCallRef,
    ToolFinished,
    UserQuestion,
)
from normalize._lifecycle import DECISION_WORDS, Requests, decision_of

REF = ToolCallRef(call_id="c1", tool="Bash", title="ls")


def _ask(requests: Requests, rid: str = "r1") -> None:
    options = [
        PermissionOption(id="yes", kind="allow_once", label="Yes"),
        PermissionOption(id="always", kind="allow_always", label="Always"),
        PermissionOption(id="no", kind="reject_once", label="No"),
        PermissionOption(id="never", kind="reject_always", label="Never"),
    ]
    requests.ask(PermissionRequest(request_id=rid, tool_call=REF, options=options))


@pytest.mark.parametrize(
    ("option", "decision"), [("yes", "allow"), ("always", "allow-always"), ("no", "deny"), ("never", "deny-always")]
)
def test_the_chosen_option_kind_gives_the_decision(option: str, decision: str) -> None:
    requests = Requests(10)
    _ask(requests)
    resolved = requests.resolve(RequestResolved(request_id="r1", outcome="answered", option_id=option))
    assert resolved.decision == decision
    assert not requests  # no longer open


def test_an_unanswered_request_is_cancel_and_a_question_answered() -> None:
    requests = Requests(10)
    _ask(requests)
    assert requests.resolve(RequestResolved(request_id="r1", outcome="cancelled")).decision == "cancel"
    requests.ask(UserQuestion(request_id="q", blocking=True, questions=[]))
    assert requests.resolve(RequestResolved(request_id="q", outcome="answered", answer={"a": 1})).decision == "answered"


def test_an_unknown_request_is_read_from_its_option_word_and_never_guessed() -> None:
    requests = Requests(10)
    assert requests.resolve(RequestResolved(request_id="x", outcome="answered", option_id="decline")).decision == "deny"
    assert requests.resolve(RequestResolved(request_id="x", outcome="answered", option_id="maybe")).decision is None
    assert requests.resolve(RequestResolved(request_id="x", outcome="answered")).decision is None


def test_the_adapters_own_decision_is_kept_and_auto_decisions_are_read() -> None:
    requests = Requests(10)
    _ask(requests)
    given = RequestResolved(request_id="r1", outcome="answered", option_id="yes", decision="deny")
    assert requests.resolve(given).decision == "deny"
    assert Requests.auto(PermissionAuto(tool_call=REF, option_id="reject")).decision == "deny"
    assert Requests.auto(PermissionAuto(tool_call=REF, option_id="allow-session")).decision == "allow-always"


def test_the_oldest_open_request_is_forgotten_past_the_limit() -> None:
    requests = Requests(2)
    for rid in ("a", "b", "c"):
        _ask(requests, rid)
    assert len(requests) == 2
    # "a" was forgotten: its option id alone says nothing, so no decision is made up
    assert requests.resolve(RequestResolved(request_id="a", outcome="answered", option_id="yes")).decision is None
    assert requests.resolve(RequestResolved(request_id="b", outcome="answered", option_id="yes")).decision == "allow"


def test_every_word_maps_into_the_vocabulary() -> None:
    assert set(DECISION_WORDS.values()) <= {"allow", "allow-always", "deny", "deny-always", "cancel", "answered"}
    assert decision_of(None) is None


# The same fact from every agent: a shell command allowed once, and one declined.
ALLOWED_ONCE = [
    "claude-stream-json/captures/claude-code-2.1.332/16-permission-stdio-allow.tap.jsonl",
    "codex-app-server/captures/codex-0.171.0/b_command_approval_accept.tap.jsonl",
    "acp/captures/claude-agent-acp-0.101.0/claude-b-shell-allow.tap.jsonl",
    "acp/captures/codex-acp-2.6.0/codex-b-shell-allow.tap.jsonl",
    "hm-json/captures/hm-handwritten/09_rpc_commands.tap.jsonl",
]
DECLINED = [
    "claude-stream-json/captures/claude-code-2.1.332/15-permission-stdio-deny.tap.jsonl",
    "codex-app-server/captures/codex-0.171.0/c_command_approval_decline.tap.jsonl",
    "acp/captures/claude-agent-acp-0.101.0/claude-c-shell-reject.tap.jsonl",
    "acp/captures/codex-acp-2.6.0/codex-c-shell-reject.tap.jsonl",
    "antigravity-stream-json/captures/agy-handwritten/04-denied-command.jsonl",
    "claude-transcript/captures/claude-code-2.1.332/14-permission-denied-print",
    "hm-json/captures/hm-handwritten/03_blocked_and_refused.jsonl",
]


def _decisions(rel: str) -> list[tuple[str, str | None]]:
    path = ADAPTERS / rel
    if path.is_dir():
        (path,) = sorted(Path(path).glob("*.jsonl"))
    out: list[tuple[str, str | None]] = []
    for event in convert_capture(path):
        body = getattr(getattr(event, "event", None), "body", None)
        if isinstance(body, RequestResolved | PermissionAuto):
            out.append((type(body).__name__, body.decision))
    return out


@pytest.mark.parametrize("rel", ALLOWED_ONCE)
def test_allowed_once_reads_the_same_for_every_agent(rel: str) -> None:
    assert ("RequestResolved", "allow") in _decisions(rel)
    assert all(d != "deny" for _, d in _decisions(rel) if _ == "RequestResolved")


@pytest.mark.parametrize("rel", DECLINED)
def test_a_decline_reads_deny_for_every_agent(rel: str) -> None:
    decisions = [d for _, d in _decisions(rel)]
    assert "deny" in decisions
    assert "allow" not in decisions


# MCP calls: tool.called when one starts, tool.finished with its duration when it ends.
MCP_CAPTURES = [
    ("codex-app-server/captures/codex-0.169.0/d_mcp_tool_call_and_web_search.tap.jsonl", "durationMs"),
    ("codex-rollout/captures/codex-0.169.0/app-server-d_mcp_tool_call_and_web_search.jsonl", "duration"),
]


def _native_durations(rel: str, field: str) -> dict[str, float]:
    """The duration each finished MCP call has in the native file, read with plain json."""
    found: dict[str, float] = {}

    def walk(value: object) -> None:
        if isinstance(value, dict):
            kind = str(value.get("type", "")).lower()
            if kind in ("mcptoolcall", "mcp_tool_call") and value.get(field) is not None:
                d = value[field]
                found[value["id"]] = d["secs"] * 1000 + d["nanos"] / 1e6 if isinstance(d, dict) else float(d)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for line in (ADAPTERS / rel).read_text().splitlines():
        walk(json.loads(line))
    return found


@pytest.mark.parametrize(("rel", "field"), MCP_CAPTURES)
def test_an_mcp_call_gives_tool_called_and_tool_finished_with_its_duration(rel: str, field: str) -> None:
    events = convert_capture(ADAPTERS / rel)
    native = _native_durations(rel, field)
    assert native, "the capture has a finished MCP call"
    called = [e.call_id for e in events if isinstance(e, ToolCalled)]
    finished = {e.call_id: e for e in events if isinstance(e, ToolFinished)}
    assert set(called) == set(native) == set(finished)
    for call_id, ms in native.items():
        assert finished[call_id].ok
        assert finished[call_id].duration_ms == pytest.approx(ms)
    # in stream order: called before its finish, each after the session event it comes from
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ToolCalled") < kinds.index("ToolFinished")


def test_without_any_time_no_duration_is_made_up() -> None:
    events = convert_capture(ADAPTERS / "codex-exec-json/captures/codex-0.169.0/mixed_items.jsonl")
    assert [e.tool for e in events if isinstance(e, ToolCalled)] == ["search_docs"]
    assert not [e for e in events if isinstance(e, ToolFinished)]  # exec --json has no times
