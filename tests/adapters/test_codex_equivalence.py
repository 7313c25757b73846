"""The same Codex session, read live and from its rollout file, gives the same bodies.

Pairs (same run, for each version in ``VERSIONS``): rollout ``exec-<case>.jsonl`` with
codex-exec-json ``<case>.jsonl``, and rollout ``app-server-<case>.jsonl`` with
codex-app-server ``<case>.tap.jsonl``.  Each body is reduced to its kind and key fields;
what a format really lacks is listed below with its reason and left out of both sides
before comparing (``NOT_STORED``: the runs whose rollout cannot say it at all).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import ADAPTERS, convert_capture, convert_records, records_of
from normalize import SessionEvent, encode

#: why a resumed thread's usage is not compared (thread/resume's live history has none)
_RESUMED_USAGE = "thread/resume's history has no usage; the rollout keeps the first process's"
#: why the sub-agent run of 0.87 to 0.107 is not compared
_COLLAB_CALLS = (
    "live, the sub-agent's thread is on the same stream (its own session; the rollout keeps it in its own "
    "file) and the calls are collabAgentToolCalls (spawnAgent, wait; stored: the spawn_agent and wait "
    "function calls)"
)
#: why the sub-agent run of 0.125 and 0.131 is not compared
_COLLAB_SPAWN = (
    "live, the sub-agent's thread is on the same stream and the spawn is a collabAgentToolCall (stored: "
    "the spawn_agent call, whose output names no thread: no spawn)"
)

#: The versions recorded in the kits (0.55 and 0.29: exec and rollouts only, 0.55's
#: app-server has no thread API, 0.29 has none), each with whether its rollout keeps Codex's
#: message ids (0.169's items do; 0.142's messages are event_msg lines with none: the adapter
#: numbers them, ``user@N``, ``msg@N``).
VERSIONS = {
    "0.169.0": True,
    "0.155.0": True,
    "0.142.2": False,
    "0.131.0": False,
    "0.125.0": False,
    "0.107.0": False,
    "0.96.0": False,
    "0.87.0": False,
    "0.55.0": False,
    "0.29.0": False,
}
#: The versions whose rollouts write no task events (0.87 and 0.96, like 0.77; 0.107 writes
#: them): their turns are inferred (made by the core, ``native.protocol`` "core") and end
#: without a ``stopReason``; the live turns are compared with them by their kind and reason.
INFERRED_TURNS = {"0.96.0", "0.87.0", "0.55.0", "0.29.0"}
#: The versions whose exec stream is the older shape, which names no thread: its session id
#: is made up and cannot be the rollout's (the thread id of the file's first line).
NO_THREAD_ID = {"0.29.0": "the older exec shape (config line, prompt line, {id, msg}) has no thread id"}
#: Runs whose stored side cannot say what the live one does, and why.
NOT_STORED = {
    ("0.155.0", "g_resume"): _RESUMED_USAGE,
    ("0.155.0", "i_collab_agent"): "live, the sub-agent's thread is on the same stream (its own session; the "
    "rollout keeps it in its own file) and the spawn is a subAgentActivity item (spawnAgent; stored: the "
    "spawn_agent call)",
    ("0.142.2", "failed_turn"): "0.142 stores a failed turn's task_complete without its error: it reads completed",
    ("0.142.2", "http_500"): "the same",
    ("0.142.2", "h_api_error"): "the same",
    ("0.142.2", "g_resume"): _RESUMED_USAGE,
    ("0.142.2", "i_collab_agent"): "live, the sub-agent's thread is on the same stream (its own session; the "
    "rollout keeps it in its own file) and the spawn is an item (spawnAgent; stored: the spawn_agent call)",
    ("0.131.0", "failed_turn"): "0.131 stores a failed turn's task_complete without its error, as 0.142",
    ("0.131.0", "http_500"): "the same",
    ("0.131.0", "h_api_error"): "the same",
    ("0.131.0", "g_resume"): _RESUMED_USAGE,
    ("0.131.0", "i_collab_agent"): _COLLAB_SPAWN,
    ("0.125.0", "failed_turn"): "0.125 stores a failed turn's task_complete without its error, as 0.142",
    ("0.125.0", "http_500"): "the same",
    ("0.125.0", "h_api_error"): "the same",
    ("0.125.0", "g_resume"): _RESUMED_USAGE,
    ("0.125.0", "i_collab_agent"): _COLLAB_SPAWN,
    ("0.107.0", "failed_turn"): "0.107 stores a failed turn's task_complete without its error, as 0.142",
    ("0.107.0", "http_500"): "the same",
    ("0.107.0", "h_api_error"): "the same",
    ("0.107.0", "g_resume"): _RESUMED_USAGE,
    ("0.107.0", "i_collab_agent"): _COLLAB_CALLS,
    ("0.96.0", "failed_turn"): "0.96 stores neither the error nor the turn's end: the file ends mid-turn (cut off)",
    ("0.96.0", "http_500"): "the same",
    ("0.96.0", "h_api_error"): "the same",
    ("0.96.0", "g_resume"): _RESUMED_USAGE,
    ("0.96.0", "i_collab_agent"): _COLLAB_CALLS,
    ("0.87.0", "failed_turn"): "0.87 stores neither the error nor the turn's end: the file ends mid-turn (cut off)",
    ("0.87.0", "http_500"): "the same",
    ("0.87.0", "g_resume"): _RESUMED_USAGE,
    ("0.87.0", "i_collab_agent"): _COLLAB_CALLS,
    ("0.55.0", "failed_turn"): "0.55 stores neither the error nor the turn's end: the file ends mid-turn (cut off)",
    ("0.55.0", "http_500"): "the same",
    ("0.29.0", "failed_turn"): "0.29 stores neither the error nor the turn's end: the file ends at the prompt",
    ("0.29.0", "http_500"): "the same",
}
#: The versions whose app-server never starts a declined command (no item/started: the
#: approval request, then item/completed ``declined``); the rollout's function_call does.
NO_DECLINED_START = {"0.107.0", "0.96.0"}
#: The versions whose rollouts keep a patch only as the model's call (no patch events):
#: its paths and kinds, no diffs.
NO_STORED_DIFFS = {"0.125.0", "0.107.0", "0.96.0", "0.87.0"}


def rollouts(version: str) -> Path:
    return ADAPTERS / f"codex-rollout/captures/codex-{version}"


def exec_json(version: str) -> Path:
    return ADAPTERS / f"codex-exec-json/captures/codex-{version}"


def app_server(version: str) -> Path:
    return ADAPTERS / f"codex-app-server/captures/codex-{version}"


Key = tuple[Any, ...]


def bodies(capture: Path) -> list[dict[str, Any]]:
    return [json.loads(encode(e))["event"] for e in convert_capture(capture) if isinstance(e, SessionEvent)]


def key(b: dict[str, Any], *, ids: bool, message_ids: bool = True, inferred: bool = False) -> Key | None:
    """The fields both formats must agree on (None: not compared); ``ids``: call ids (and
    message ids, unless ``message_ids`` is false); ``inferred``: the stored turns are
    inferred (no stopReason)."""
    kind = b["kind"]
    cid = b.get("callId") if ids else None
    mids = ids and message_ids
    match kind:
        case "turn-start":
            return (kind,)
        case "turn-complete":
            # a failed turn is reason "interrupt" with stopReason "failed" in every format
            return (kind, b["reason"], None if inferred else b.get("stopReason"))
        case "user-message" | "assistant-message":
            return (kind, b["text"], b["messageId"] if mids else None)
        case "reasoning":
            return (kind, b.get("summary"), b["reasoningId"] if mids else None)
        case "tool-call":
            return (kind, cid, b["tool"], b["category"], b["phase"])
        case "mcp-tool":
            return (kind, cid, b["server"], b["tool"], b["phase"])
        case "command-output":
            return (kind, cid)
        case "file-diff":
            return (kind, b.get("callId"), b["path"], b["diff"])
        case "web-search":
            return (kind, b["callId"], b["phase"], b.get("query"))
        case "plan":
            return (kind, tuple((e["content"], e["status"]) for e in b["entries"]))
        case "usage":
            return (kind, b["tokens"]["total"]) if b.get("scope") == "turn" else None
        case "error":
            return (kind, b["message"])
        case _:
            return None


def project(
    out: list[dict[str, Any]],
    *,
    ids: bool,
    drop: Callable[[dict[str, Any]], bool],
    message_ids: bool = True,
    inferred: bool = False,
) -> list[Key]:
    keys = [key(b, ids=ids, message_ids=message_ids, inferred=inferred) for b in out if not drop(b)]
    return [k for k in keys if k is not None]


# ------------------------------------------------------------ exec --json vs rollout

#: What `codex exec --json` does not carry, or carries differently (the reason each).
EXEC_LACKS: dict[str, Callable[[dict[str, Any]], bool]] = {
    # the prompt is an argument of `codex exec`, never printed on stdout
    "user-message": lambda b: b["kind"] == "user-message",
    # file_change items name paths and kinds, no diffs
    "file-diff": lambda b: b["kind"] == "file-diff",
    # the rollout never stores the start of a web search, only its end
    "web-search started": lambda b: b["kind"] == "web-search" and b["phase"] == "started",
    # 0.96 prints a file_change only when it is done (item.completed, no item.started)
    "patch started": lambda b: b["kind"] == "tool-call" and b["tool"] == "apply_patch" and b["phase"] == "started",
}


def exec_plan(k: Key) -> Key:
    """todo_list entries are {text, completed}: a step in progress reads as pending."""
    if k[0] != "plan":
        return k
    return ("plan", tuple((c, "pending" if s == "in_progress" else s) for c, s in k[1]))


#: (version, case) of every exec run whose rollout was recorded with it
EXEC_RUNS = [
    (v, p.stem)
    for v in VERSIONS
    for p in sorted(exec_json(v).glob("*.jsonl"))
    if (rollouts(v) / f"exec-{p.name}").exists()
]


@pytest.mark.parametrize(("version", "case"), [r for r in EXEC_RUNS if r not in NOT_STORED])
def test_exec_json_and_its_rollout_give_the_same_bodies(version: str, case: str) -> None:
    def drop(b: dict[str, Any]) -> bool:
        return any(f(b) for f in EXEC_LACKS.values())

    inferred = version in INFERRED_TURNS
    # item ids differ by design: exec numbers items (item_0, ...), the rollout keeps call ids
    live = project(bodies(exec_json(version) / f"{case}.jsonl"), ids=False, drop=drop, inferred=inferred)
    stored = project(bodies(rollouts(version) / f"exec-{case}.jsonl"), ids=False, drop=drop, inferred=inferred)
    live, stored = [exec_plan(k) for k in live], [exec_plan(k) for k in stored]
    assert live == stored
    assert len(live) >= 3


# ------------------------------------------------------------ app-server vs rollout

#: What a rollout file does not store, that the live app-server stream shows.
APP_LACKS: dict[str, Callable[[dict[str, Any]], bool]] = {
    # deltas are never persisted; the completed text is
    "deltas": lambda b: b["kind"] in ("assistant-delta", "reasoning-delta", "command-output"),
    # approvals are never persisted
    "approvals": lambda b: b["kind"] in ("permission-request", "request-resolved", "permission-auto"),
    # plan updates are stored as update_plan calls only when the model called the tool;
    # turn/plan/updated repeats them: compared below on their content
    # the rollout never stores the start of a web search
    "web-search started": lambda b: b["kind"] == "web-search" and b["phase"] == "started",
    # the start of a patch: the live stream knows its diffs before approval, the rollout
    # only at its end (diffs are compared, not where they sit)
    "file-diff": lambda b: b["kind"] == "file-diff",
    # error notifications are not persisted; a failed turn's error is in task_complete
    "error": lambda b: b["kind"] == "error",
    # a message still streaming when the turn was interrupted is closed by the live
    # adapter at turn/completed; Codex never stores the unfinished message
    "interrupted message": lambda b: b["kind"] == "assistant-message" and b["native"].get("method") == "turn/completed",
    # the end of a live stream cut off mid-turn is synthesized by the library
    "cut off": lambda b: b["native"]["protocol"] == "core",
}

#: (version, case) of every app-server run whose rollout was recorded with it
APP_RUNS = [
    (v, p.name[len("app-server-") : -len(".jsonl")])
    for v in VERSIONS
    for p in sorted(rollouts(v).glob("app-server-*.jsonl"))
    if (app_server(v) / (p.name[len("app-server-") : -len(".jsonl")] + ".tap.jsonl")).exists()
]


@pytest.mark.parametrize(("version", "case"), [r for r in APP_RUNS if r not in NOT_STORED])
def test_app_server_and_its_rollout_give_the_same_bodies(version: str, case: str) -> None:
    inferred = version in INFERRED_TURNS

    # a rollout without task events: the core makes its turns (and their usage), there is
    # nothing cut off to leave out
    lacks = [f for name, f in APP_LACKS.items() if not (inferred and name == "cut off")]

    def drop(b: dict[str, Any]) -> bool:
        return any(f(b) for f in lacks)

    live_out = bodies(app_server(version) / f"{case}.tap.jsonl")
    stored_out = bodies(rollouts(version) / f"app-server-{case}.jsonl")
    if version in NO_DECLINED_START:
        declined = {b["callId"] for b in stored_out if b["kind"] == "tool-call" and b.get("description") == "declined"}
        stored_out = [
            b
            for b in stored_out
            if not (b["kind"] == "tool-call" and b["phase"] == "started" and b["callId"] in declined)
        ]
    live = project(live_out, ids=True, drop=drop, message_ids=VERSIONS[version], inferred=inferred)
    stored = project(stored_out, ids=True, drop=drop, message_ids=VERSIONS[version], inferred=inferred)
    if case.endswith("_PARTIAL"):
        # the wire capture was cut off mid-turn; the rollout ran to the end of the process
        stored = stored[: len(live)]
    assert live == stored
    # per-call diffs agree; the turn's whole diff (turn/diff/updated, no call id) is never stored
    stored_diffs = {(b["callId"], b["path"], b["diff"]) for b in stored_out if b["kind"] == "file-diff"}
    diffs = {(b["callId"], b["path"], b["diff"]) for b in live_out if b["kind"] == "file-diff" and "callId" in b}
    if version in NO_STORED_DIFFS:
        assert stored_diffs == set()
        return
    assert diffs == stored_diffs


def _session_ids(capture: Path, protocol: str) -> set[str]:
    return {e.session_id for e in convert_records(records_of([capture]), protocol) if isinstance(e, SessionEvent)}


@pytest.mark.parametrize(("version", "case"), APP_RUNS)
def test_a_thread_and_its_rollout_give_the_same_session_id(version: str, case: str) -> None:
    """Every thread of the run, a sub-agent's too (live on the same stream; stored in a
    rollout of its own, ``app-server-<case>-2.jsonl``)."""
    live = _session_ids(app_server(version) / f"{case}.tap.jsonl", "codex-app-server")
    stored = _session_ids(rollouts(version) / f"app-server-{case}.jsonl", "codex-rollout")
    for other in sorted(rollouts(version).glob(f"app-server-{case}-[0-9].jsonl")):
        stored |= _session_ids(other, "codex-rollout")
    assert live == stored


@pytest.mark.parametrize(("version", "case"), [r for r in EXEC_RUNS if r[0] not in NO_THREAD_ID])
def test_exec_json_and_its_rollout_give_the_same_session_id(version: str, case: str) -> None:
    assert _session_ids(exec_json(version) / f"{case}.jsonl", "codex-exec-json") == _session_ids(
        rollouts(version) / f"exec-{case}.jsonl", "codex-rollout"
    )
