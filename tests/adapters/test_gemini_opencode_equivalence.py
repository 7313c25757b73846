"""The same Gemini CLI or OpenCode session, read live and stored, gives the same session and bodies.

Pairs (same run): gemini-stream-json ``<case>.jsonl`` with gemini-chat ``<case>.jsonl``, and
opencode-json ``<case>.jsonl`` with opencode-db ``<case>.db``.  A session continued in a
second process (``two_turns``) is one stored session: it is compared with both live streams
one after the other.  Each body is reduced to its kind and key fields; what a format really
lacks is listed below with its reason and left out of both sides before comparing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import ADAPTERS, convert_capture
from normalize import SessionCreated, SessionEvent, encode

GEMINI_LIVE = ADAPTERS / "gemini-stream-json/captures/gemini-cli-0.61.0"
GEMINI_STORED = ADAPTERS / "gemini-chat/captures/gemini-cli-0.61.0"
#: Every release whose chats are ``.jsonl`` (0.39 on), and whether its chat keeps the prompt of a
#: failed request (0.51, 0.45 and 0.41 do, unanswered; 0.61 and 0.56 withdraw it with a ``$set.messages``).
GEMINI_JSONL: dict[str, bool] = {"0.61.0": False, "0.56.0": False, "0.51.0": True, "0.45.2": True, "0.41.2": True}
#: Older releases, and the cases each could not run: their chats are one ``.json`` document each
#: (before 0.39); 0.11 has no ``--resume``.
GEMINI_OLD: dict[str, frozenset[str]] = {
    "0.38.2": frozenset(),
    "0.31.0": frozenset(),
    "0.25.0": frozenset(),
    "0.20.0": frozenset(),
    "0.11.3": frozenset({"two_turns"}),
}
#: the releases whose stream-json gives a shell call's result without its output (the chat has it):
#: 0.38's ``.json`` chats and 0.41's ``.jsonl``
GEMINI_STREAM_WITHOUT_SHELL_OUTPUT = ("0.41.2", "0.38.2")
OPENCODE_LIVE = ADAPTERS / "opencode-json/captures/opencode-1.18.33"
OPENCODE_STORED = ADAPTERS / "opencode-db/captures/opencode-1.18.33"
#: every OpenCode version recorded both live and stored (a database; 1.0 and 1.1: storage/ files)
OPENCODE_VERSIONS = sorted(
    p.name.removeprefix("opencode-")
    for p in (ADAPTERS / "opencode-db/captures").glob("opencode-*")
    if (ADAPTERS / "opencode-json/captures" / p.name).is_dir()
)

#: the versions whose stream leaves out a call a rule refused (tests/adapters/test_opencode_versions.py)
STREAM_LEAVES_REFUSED_CALL_OUT = ("1.0.185", "1.1.56")
#: the versions whose `run` has no --thinking, and prints no reasoning
STREAM_WITHOUT_REASONING = ("1.0.185",)
#: the versions whose `run` can exit before printing its last lines (the session is stored
#: whole): each run's stream is the start of its stored turn, then cut off
STREAM_CUT_SHORT = ("1.15.4",)

CASES = ["text_thinking", "shell_allowed", "shell_denied", "file_edit", "two_turns", "api_error"]

Key = tuple[Any, ...]
Drop = Callable[[dict[str, Any]], bool]


def converted(capture: Path) -> tuple[str | None, list[dict[str, Any]]]:
    """The native session id and the bodies of one capture."""
    native: str | None = None
    out: list[dict[str, Any]] = []
    for e in convert_capture(capture):
        if isinstance(e, SessionCreated):
            native = e.record.native_session_id
        elif isinstance(e, SessionEvent):
            out.append(json.loads(encode(e))["event"])
    return native, out


def live_runs(folder: Path, case: str) -> list[Path]:
    """The live capture(s) of a case: a continued session's first run comes first."""
    pre = folder / f"{case}_pre.jsonl"
    return [*([pre] if pre.exists() else []), folder / f"{case}.jsonl"]


def key(b: dict[str, Any], *, ids: bool) -> Key | None:
    kind = b["kind"]
    match kind:
        case "turn-start":
            return (kind,)
        case "turn-complete":
            return (kind, b["reason"])
        case "user-message" | "assistant-message":
            return (kind, b["text"], b["messageId"] if ids else None)
        case "reasoning":
            return (kind, b.get("text"), b["reasoningId"] if ids else None)
        case "tool-call":
            return (kind, b["callId"], b["tool"], b["category"], b["phase"], b.get("title"))
        case "command-output":
            return (kind, b["callId"], b["delta"])
        case "permission-auto":
            return (kind, b["toolCall"]["callId"], b["decision"], b.get("reason"))
        case "usage":
            return (kind, json.dumps(b.get("tokens"), sort_keys=True), json.dumps(b.get("cost"), sort_keys=True))
        case "error":
            return (kind, b["message"])
        case _:
            return None


def project(out: list[dict[str, Any]], drops: dict[str, Drop], *, ids: bool) -> list[Key]:
    keys = [key(b, ids=ids) for b in out if not any(d(b) for d in drops.values())]
    return [k for k in keys if k is not None]


def compare(live: list[Path], stored: Path, drops: dict[str, Drop], *, ids: bool) -> list[Key]:
    natives: set[str | None] = set()
    live_keys: list[Key] = []
    for capture in live:
        native, out = converted(capture)
        natives.add(native)
        live_keys += project(out, drops, ids=ids)
    stored_native, stored_out = converted(stored)
    assert natives == {stored_native}
    assert stored_native
    assert live_keys == project(stored_out, drops, ids=ids)
    return live_keys


# ---------------------------------------------------------------- Gemini CLI

#: What one side lacks (the reason each).
GEMINI_LACKS: dict[str, Drop] = {
    # text streams live; the chat keeps the whole message only
    "deltas": lambda b: b["kind"] == "assistant-delta",
    # stream-json never writes the model's thoughts; the chat keeps them
    "reasoning": lambda b: b["kind"] == "reasoning",
    # stream-json gives the process's totals (router side queries included) at the end, the
    # chat each main-model request's counts: the same requests, counted differently
    "usage": lambda b: b["kind"] == "usage",
    # an edit's diff is only in the chat (resultDisplay.fileDiff); live it is a sentence
    "file-diff": lambda b: b["kind"] == "file-diff",
    # an API error is never stored: the chat withdraws the failed prompt (its turn ends
    # interrupt in both, compared)
    "error": lambda b: b["kind"] == "error",
}


@pytest.mark.parametrize("version", list(GEMINI_JSONL))
@pytest.mark.parametrize("case", CASES)
def test_gemini_stream_json_and_its_chat_give_the_same_session_and_bodies(version: str, case: str) -> None:
    live = ADAPTERS / f"gemini-stream-json/captures/gemini-cli-{version}"
    stored = ADAPTERS / f"gemini-chat/captures/gemini-cli-{version}/{case}.jsonl"
    drops = dict(GEMINI_LACKS)
    prompt_kept = case == "api_error" and GEMINI_JSONL[version]
    if prompt_kept:
        # the failed prompt stays in the chat, unanswered, and the file ends: its turn ends ok
        # there, where the stream says error (as in the .json chats, below)
        drops["turn-complete"] = lambda b: b["kind"] == "turn-complete"
    if version in GEMINI_STREAM_WITHOUT_SHELL_OUTPUT:
        drops["command-output"] = lambda b: b["kind"] == "command-output"
    # message ids: stream-json has none (normalize numbers them), the chat keeps its records' ids
    keys = compare(live_runs(live, case), stored, drops, ids=False)
    assert ("turn-start",) in keys
    if not prompt_kept:
        assert keys[-1][0] == "turn-complete"


@pytest.mark.parametrize("version", list(GEMINI_JSONL))
def test_a_jsonl_api_error_ends_its_turn_as_each_side_says(version: str) -> None:
    """0.61 withdraws the failed prompt (interrupt, ``withdrawn``); 0.51 leaves it unanswered (ok)."""
    live = ADAPTERS / f"gemini-stream-json/captures/gemini-cli-{version}/api_error.jsonl"
    stored = ADAPTERS / f"gemini-chat/captures/gemini-cli-{version}/api_error.jsonl"
    (_, out) = converted(live)
    (_, chat) = converted(stored)
    assert [(b["reason"], b.get("stopReason")) for b in out if b["kind"] == "turn-complete"] == [("interrupt", "error")]
    ends = [(b["reason"], b.get("stopReason")) for b in chat if b["kind"] == "turn-complete"]
    assert ends == ([("ok", None)] if GEMINI_JSONL[version] else [("interrupt", "withdrawn")])


def old_cases() -> list[tuple[str, str]]:
    return [(v, c) for v, missing in GEMINI_OLD.items() for c in CASES if c not in missing]


def old_paths(version: str, case: str) -> tuple[list[Path], Path]:
    live = ADAPTERS / f"gemini-stream-json/captures/gemini-cli-{version}"
    return live_runs(live, case), ADAPTERS / f"gemini-chat/captures/gemini-cli-{version}/{case}.json"


@pytest.mark.parametrize(("version", "case"), old_cases())
def test_an_old_json_chat_and_its_stream_give_the_same_session_and_bodies(version: str, case: str) -> None:
    """A ``.json`` chat (before 0.39) reads as its live stream, with the same exceptions as 0.61."""
    live, stored = old_paths(version, case)
    drops = dict(GEMINI_LACKS)
    if case == "api_error":
        # the failed prompt stays in the chat, unanswered, and the file ends: its turn ends ok
        # there, where the stream says error (0.38, 0.20) or, in 0.11, success (next test)
        drops["turn-complete"] = lambda b: b["kind"] == "turn-complete"
    if version in GEMINI_STREAM_WITHOUT_SHELL_OUTPUT:
        drops["command-output"] = lambda b: b["kind"] == "command-output"
    keys = compare(live, stored, drops, ids=False)
    assert ("turn-start",) in keys
    if case != "api_error":
        assert keys[-1][0] == "turn-complete"
    if case in ("shell_allowed", "shell_denied", "file_edit"):
        assert any(k[0] == "tool-call" and k[4] == ("failed" if case == "shell_denied" else "completed") for k in keys)


@pytest.mark.parametrize("version", list(GEMINI_OLD))
def test_an_old_api_error_ends_its_turn_as_each_side_says(version: str) -> None:
    live, stored = old_paths(version, "api_error")
    (_, out) = converted(live[0])
    (_, chat) = converted(stored)
    ends = [(b["reason"], b.get("stopReason")) for b in out if b["kind"] == "turn-complete"]
    # 0.11 writes no error and `result` success (exit code 0): read as it says, not guessed
    assert ends == ([("ok", "success")] if version == "0.11.3" else [("interrupt", "error")])
    assert [b["kind"] for b in chat] == ["turn-start", "user-message", "turn-complete"]
    assert chat[-1]["reason"] == "ok"


def test_gemini_chat_keeps_what_the_stream_lacks() -> None:
    """The listed exceptions are real: the chat has the thoughts and the edit's diff."""
    _, text = converted(GEMINI_STORED / "text_thinking.jsonl")
    assert [b["text"] for b in text if b["kind"] == "reasoning"] == ["**Greeting** the user."]
    _, edit = converted(GEMINI_STORED / "file_edit.jsonl")
    (diff,) = [b for b in edit if b["kind"] == "file-diff"]
    assert "-hello world\n+hello, world" in diff["diff"]
    assert diff["path"] == "/home/user/project/hello.txt"


# ---------------------------------------------------------------- OpenCode

OPENCODE_LACKS: dict[str, Drop] = {
    # `opencode run` never prints the prompt; the database stores it (quoted, as run passed it)
    "user-message": lambda b: b["kind"] == "user-message",
}


def test_opencode_is_compared_on_every_version_recorded_both_ways() -> None:
    versions = {"1.0.185", "1.1.56", "1.2.12", "1.2.27", "1.3.2", "1.14.34", "1.15.4", "1.17.11", "1.18.33"}
    assert versions <= set(OPENCODE_VERSIONS)


@pytest.mark.parametrize("version", OPENCODE_VERSIONS)
@pytest.mark.parametrize("case", CASES)
def test_opencode_json_and_its_database_give_the_same_session_and_bodies(version: str, case: str) -> None:
    # part ids are the same live and stored: compared
    live = ADAPTERS / f"opencode-json/captures/opencode-{version}"
    stored = ADAPTERS / f"opencode-db/captures/opencode-{version}/{case}.db"
    if not stored.exists():  # 1.0 and 1.1 kept their sessions in storage/, as JSON files
        stored = stored.with_suffix("")
    if case == "shell_denied" and version in STREAM_LEAVES_REFUSED_CALL_OUT:
        # the stream of 1.0 and 1.1 leaves the refused call out (and the step that made it):
        # its storage/ files hold it, the permission-auto deny of every later version
        _, out = converted(stored)
        assert [(b["kind"], b.get("decision")) for b in out if b["kind"] == "permission-auto"] == [
            ("permission-auto", "deny")
        ]
        _, streamed = converted(live / f"{case}.jsonl")
        assert not [b for b in streamed if b["kind"] in ("tool-call", "permission-auto")]
        return
    drops = OPENCODE_LACKS
    if version in STREAM_CUT_SHORT:
        compare_cut_short(live_runs(live, case), stored, drops)
        return
    if version in STREAM_WITHOUT_REASONING:  # `run` has no --thinking: the stored reasoning is not printed
        drops = {**drops, "reasoning": lambda b: b["kind"] == "reasoning"}
    keys = compare(live_runs(live, case), stored, drops, ids=True)
    assert ("turn-start",) in keys
    assert keys[-1][0] == "turn-complete"


def compare_cut_short(live: list[Path], stored: Path, drops: dict[str, Drop]) -> None:
    """Each run's stream is its stored turn, or the start of it ended as cut off, never as done."""
    stored_native, stored_out = converted(stored)
    assert stored_native
    turns: list[list[Key]] = []
    for k in project(stored_out, drops, ids=True):
        if k == ("turn-start",):
            turns.append([])
        turns[-1].append(k)
    assert len(turns) == len(live)  # one turn a run
    assert turns[-1][-1][0] == "turn-complete"
    for capture, turn in zip(live, turns, strict=True):
        native, out = converted(capture)
        keys = project(out, drops, ids=True)
        if not keys:  # the run printed nothing
            assert native is None
            continue
        assert native == stored_native
        if keys[-2:] == [("error", "the stream ended during turn:1"), ("turn-complete", "interrupt")]:
            assert keys[:-2] == turn[: len(keys) - 2]
            assert len(keys) - 2 < len(turn)
        else:
            assert keys == turn


def test_opencode_database_keeps_the_prompt() -> None:
    _, out = converted(OPENCODE_STORED / "two_turns.db")
    prompts = [b["text"] for b in out if b["kind"] == "user-message"]
    assert prompts == ['"scenario twoturns: first question"', '"scenario twoturns: second question"']
