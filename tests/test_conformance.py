"""Cross-agent conformance: the same scenario states the same facts, whatever the agent.

Each scenario (a text turn, a shell command allowed, one denied, a file edit, an MCP call,
a sub-agent, an interrupt, an API error, two turns, a resumed session) was recorded from
several agents.  The checks are on meaning (counts, order, decisions, categories, links),
never on bytes: a program that unifies agents relies on exactly these facts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from helpers import ADAPTERS, capture_files, convert_capture
from normalize import (
    AssistantMessage,
    EventEnvelope,
    FileDiff,
    PermissionAuto,
    PermissionRequest,
    RequestResolved,
    SessionCreated,
    SessionEvent,
    SessionRecord,
    SessionResumed,
    Subagent,
    ToolCall,
    ToolCalled,
    ToolFinished,
    TurnComplete,
    TurnStart,
    UserMessage,
)
from normalize import Error as ErrorBody
from normalize._model import _Core


@dataclass
class Facts:
    """What one capture says, read from its normalized events."""

    events: list[_Core]
    envelopes: list[EventEnvelope] = field(default_factory=list)
    records: dict[str, SessionRecord] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.envelopes = [e.event for e in self.events if isinstance(e, SessionEvent)]
        self.records = {e.session_id: e.record for e in self.events if isinstance(e, SessionCreated | SessionResumed)}

    def bodies(self, kind: type, *, main: bool = True) -> list[object]:
        """Bodies of one type (on the main thread only, unless ``main=False``)."""
        return [e.body for e in self.envelopes if type(e.body) is kind and not (main and e.subagent_id)]

    def sessions_of(self, subagent_id: str) -> list[SessionRecord]:
        """The sessions of their own a sub-agent has (a Codex thread): named by its native id."""
        return [r for r in self.records.values() if r.parent_id is not None and r.native_session_id == subagent_id]

    def live(self) -> list[EventEnvelope]:
        return [e for e in self.envelopes if e.origin == "live"]

    def turns(self, *, origin: str | None = None) -> list[TurnComplete]:
        return [
            e.body
            for e in self.envelopes
            if isinstance(e.body, TurnComplete) and (origin is None or e.origin == origin)
        ]

    def calls(self, category: str, phase: str) -> list[ToolCall]:
        return [
            b for b in self.bodies(ToolCall) if isinstance(b, ToolCall) and b.category == category and b.phase == phase
        ]

    def decisions(self) -> list[str | None]:
        return [b.decision for b in self.bodies(RequestResolved) + self.bodies(PermissionAuto, main=False)]  # type: ignore[attr-defined]

    def errors(self) -> list[ErrorBody]:
        return [b for b in self.bodies(ErrorBody, main=False) if isinstance(b, ErrorBody)]


def _facts(rel: str) -> Facts:
    path = ADAPTERS / rel
    if path.is_dir():
        (path,) = sorted(Path(path).glob("*.jsonl"))
    return Facts(convert_capture(path))


# --------------------------------------------------------------------------
# The facts each scenario states


def every_turn_closed_in_order(f: Facts) -> None:
    """Each turn-start has its turn-complete, before the next starts; turn ids count up (per session)."""
    for sid in {e.session_id for e in f.envelopes}:
        open_turn: str | None = None
        seen: list[str] = []
        for e in f.envelopes:
            if e.session_id != sid:
                continue
            if isinstance(e.body, TurnStart):
                assert open_turn is None, f"{e.turn_id} started while {open_turn} was open"
                open_turn = e.turn_id
                assert e.turn_id is not None
                seen.append(e.turn_id)
            elif isinstance(e.body, TurnComplete):
                assert e.turn_id == open_turn
                open_turn = None
        assert seen == [f"turn:{n}" for n in range(1, len(seen) + 1)]


def text_turn(f: Facts) -> None:
    every_turn_closed_in_order(f)
    assert [t.reason for t in f.turns()] == ["ok"]
    answers = [b for b in f.bodies(AssistantMessage) if isinstance(b, AssistantMessage) and b.text.strip()]
    assert answers, "an answer with text"
    assert not f.bodies(ToolCall) and not f.errors()


def shell_allowed(f: Facts) -> None:
    every_turn_closed_in_order(f)
    assert f.calls("execute", "completed"), "the command ran"
    assert "allow" in f.decisions() or "allow-always" in f.decisions()
    assert "deny" not in f.decisions()
    assert all(t.reason == "ok" for t in f.turns())


def denied_calls(f: Facts) -> set[str]:
    """The call ids a decision denied (asked and answered, or decided by a rule)."""
    asked = {b.request_id: b.tool_call.call_id for b in f.bodies(PermissionRequest, main=False)}  # type: ignore[attr-defined]
    out = {b.tool_call.call_id for b in f.bodies(PermissionAuto, main=False) if b.decision == "deny"}  # type: ignore[attr-defined]
    for b in f.bodies(RequestResolved, main=False):
        if isinstance(b, RequestResolved) and b.decision == "deny" and b.request_id in asked:
            out.add(asked[b.request_id])
    return out


def shell_allowed_by_mode(f: Facts) -> None:
    """A mode or flag allowed everything: the stream states no decision, and none is made up."""
    every_turn_closed_in_order(f)
    assert f.calls("execute", "completed"), "the command ran"
    assert "deny" not in f.decisions()
    assert all(t.reason == "ok" for t in f.turns())


def shell_denied(f: Facts) -> None:
    every_turn_closed_in_order(f)
    assert "deny" in f.decisions()
    denied = denied_calls(f)
    assert denied, "the decision names its call"
    ends = {(b.call_id, b.phase) for b in f.bodies(ToolCall, main=False) if isinstance(b, ToolCall)}
    for call_id in denied:
        assert (call_id, "completed") not in ends, "a denied command never completes"


def file_edit(f: Facts) -> None:
    every_turn_closed_in_order(f)
    assert f.calls("edit", "completed")
    assert not f.calls("edit", "failed")


def mcp_call(f: Facts) -> None:
    every_turn_closed_in_order(f)
    (call,) = f.calls("mcp", "completed")
    called = [e for e in f.events if isinstance(e, ToolCalled)]
    assert [c.call_id for c in called] == [call.call_id]
    finished = [e for e in f.events if isinstance(e, ToolFinished)]
    assert [(e.call_id, e.ok) for e in finished] == [(call.call_id, True)]
    assert finished[0].duration_ms >= 0


def subagent(f: Facts) -> None:
    every_turn_closed_in_order(f)
    subs = [e for e in f.envelopes if isinstance(e.body, Subagent)]
    started = [e for e in subs if e.body.phase == "started"]  # type: ignore[union-attr]
    assert started, "a sub-agent started"
    call_ids = {b.call_id for b in f.bodies(ToolCall) if isinstance(b, ToolCall)}
    for e in started:
        body = e.body
        assert isinstance(body, Subagent)
        assert body.call_id in call_ids, "linked to the parent's call that spawned it"
        assert e.turn_id is not None, "inside the parent's turn"
        ends = [s for s in subs if s.body.subagent_id == body.subagent_id and s.body.phase == "completed"]  # type: ignore[union-attr]
        assert ends, f"sub-agent {body.subagent_id} completed"
        inner = [i for i in f.envelopes if i.subagent_id == body.subagent_id and not isinstance(i.body, Subagent)]
        # a sub-agent with a session of its own (a Codex thread) names its parent there
        for own in f.sessions_of(body.subagent_id):
            assert own.parent_id == e.session_id, "a sub-agent's session is linked to its parent"
        if not inner or body.background:
            continue  # its events are elsewhere (antigravity, its own session), or it may outlive the turn
        assert {i.turn_id for i in inner} == {e.turn_id}, "a foreground sub-agent runs inside its parent's turn"
        assert e.seq < min(i.seq for i in inner) and max(i.seq for i in inner) < ends[0].seq, "between start and end"


def interrupted(f: Facts) -> None:
    every_turn_closed_in_order(f)
    reasons = [t.reason for t in f.turns()]
    assert "interrupt" in reasons
    assert not any(e.error_type == "cut-off" for e in f.errors()), "an interrupt is not a cut-off stream"


def api_error(f: Facts) -> None:
    every_turn_closed_in_order(f)
    errors = [e for e in f.envelopes if isinstance(e.body, ErrorBody)]
    assert errors, "the API error is reported"
    assert all(e.turn_id is not None for e in errors), "inside the turn it broke"
    assert not any(e.body.error_type == "cut-off" for e in errors)  # type: ignore[union-attr]


def two_turns(f: Facts) -> None:
    every_turn_closed_in_order(f)
    assert [t.reason for t in f.turns()] == ["ok", "ok"]
    users = f.bodies(UserMessage)
    assert len(users) >= 2
    turn_of_user = [e.turn_id for e in f.envelopes if isinstance(e.body, UserMessage) and not e.subagent_id]
    assert None not in turn_of_user, "every prompt inside its turn"
    assert {"turn:1", "turn:2"} <= set(turn_of_user)


def resumed(f: Facts) -> None:
    every_turn_closed_in_order(f)
    assert any(isinstance(e, SessionResumed) for e in f.events) or f.turns(origin="replay")
    live = list(f.turns(origin="live"))
    assert live and all(t.reason == "ok" for t in live), "the prompt after the resume runs live"


# --------------------------------------------------------------------------
# The scenarios, per agent and transport

SCENARIOS: dict[str, tuple[Callable[[Facts], None], list[str]]] = {
    "text turn": (
        text_turn,
        [
            "claude-stream-json/captures/claude-code-2.1.332/01-print-text.jsonl",
            "claude-transcript/captures/claude-code-2.1.332/01-print-text",
            "codex-app-server/captures/codex-0.171.0/a_simple_text.tap.jsonl",
            "codex-exec-json/captures/codex-0.171.0/text_reasoning.jsonl",
            "codex-rollout/captures/codex-0.171.0/exec-text_reasoning.jsonl",
            "acp/captures/acp-handwritten/a_initialize_new_prompt_streaming.tap.jsonl",
            "antigravity-stream-json/captures/agy-handwritten/01-streamed-answer.jsonl",
            "hm-json/captures/hm-handwritten/01_plain_answer.jsonl",
            "gemini-stream-json/captures/gemini-cli-0.61.0/text_thinking.jsonl",
            "gemini-chat/captures/gemini-cli-0.61.0/text_thinking.jsonl",
            "opencode-json/captures/opencode-1.18.33/text_thinking.jsonl",
        ],
    ),
    "shell allowed": (
        shell_allowed,
        [
            "claude-stream-json/captures/claude-code-2.1.332/16-permission-stdio-allow.tap.jsonl",
            "claude-stream-json/captures/claude-code-2.1.332/05-bash-ls-bypass.jsonl",
            "claude-transcript/captures/claude-code-2.1.332/05-bash-ls-bypass",
            "codex-app-server/captures/codex-0.171.0/b_command_approval_accept.tap.jsonl",
            "acp/captures/claude-agent-acp-0.101.0/claude-b-shell-allow.tap.jsonl",
            "acp/captures/codex-acp-2.6.0/codex-b-shell-allow.tap.jsonl",
            "acp/captures/gemini-cli-0.61.0/gemini-b-shell-allow.tap.jsonl",
        ],
    ),
    "shell allowed by a mode that asks nothing": (
        shell_allowed_by_mode,
        [
            "gemini-stream-json/captures/gemini-cli-0.61.0/shell_allowed.jsonl",  # --yolo
            "opencode-json/captures/opencode-1.18.33/shell_allowed.jsonl",  # permission "*": "allow"
            "codex-exec-json/captures/codex-0.171.0/shell_command.jsonl",  # exec runs what its sandbox allows
        ],
    ),
    "shell denied": (
        shell_denied,
        [
            "claude-stream-json/captures/claude-code-2.1.332/15-permission-stdio-deny.tap.jsonl",
            "claude-stream-json/captures/claude-code-2.1.332/14-permission-denied-print.jsonl",
            "claude-transcript/captures/claude-code-2.1.332/14-permission-denied-print",
            "codex-app-server/captures/codex-0.171.0/c_command_approval_decline.tap.jsonl",
            "acp/captures/claude-agent-acp-0.101.0/claude-c-shell-reject.tap.jsonl",
            "acp/captures/codex-acp-2.6.0/codex-c-shell-reject.tap.jsonl",
            "hm-json/captures/hm-handwritten/03_blocked_and_refused.jsonl",
            "gemini-stream-json/captures/gemini-cli-0.61.0/shell_denied.jsonl",
            "opencode-json/captures/opencode-1.18.33/shell_denied.jsonl",
            "acp/captures/gemini-cli-0.61.0/gemini-c-shell-reject.tap.jsonl",
        ],
    ),
    "file edit": (
        file_edit,
        [
            "claude-stream-json/captures/claude-code-2.1.332/31-write-file.jsonl",
            "claude-transcript/captures/claude-code-2.1.332/31-write-file",
            "codex-app-server/captures/codex-0.171.0/d_file_change_approval.tap.jsonl",
            "codex-exec-json/captures/codex-0.171.0/apply_patch.jsonl",
            "codex-rollout/captures/codex-0.171.0/exec-apply_patch.jsonl",
            "acp/captures/claude-agent-acp-0.101.0/claude-d-edit-diff.tap.jsonl",
            "acp/captures/codex-acp-2.6.0/codex-d-patch-diff.tap.jsonl",
            "gemini-stream-json/captures/gemini-cli-0.61.0/file_edit.jsonl",
            "gemini-chat/captures/gemini-cli-0.61.0/file_edit.jsonl",
            "opencode-json/captures/opencode-1.18.33/file_edit.jsonl",
            "acp/captures/gemini-cli-0.61.0/gemini-d-edit-diff.tap.jsonl",
        ],
    ),
    "MCP call": (
        mcp_call,
        [
            "codex-app-server/captures/codex-0.169.0/d_mcp_tool_call_and_web_search.tap.jsonl",
            "codex-rollout/captures/codex-0.169.0/app-server-d_mcp_tool_call_and_web_search.jsonl",
            "codex-rollout/captures/codex-0.169.0/exec-mixed_items.jsonl",
        ],
    ),
    "sub-agent": (
        subagent,
        [
            "claude-stream-json/captures/claude-code-2.1.332/24-subagent-with-tool.jsonl",
            "claude-transcript/captures/claude-code-2.1.332/24-subagent-with-tool",
            "acp/captures/claude-agent-acp-0.101.0/claude-h-subagent.tap.jsonl",
            "codex-app-server/captures/codex-0.171.0/i_collab_agent.tap.jsonl",
            "codex-rollout/captures/codex-0.171.0/app-server-i_collab_agent.jsonl",
            "antigravity-stream-json/captures/agy-handwritten/03-subagent.jsonl",
            "hm-json/captures/hm-handwritten/05_background_subagent.jsonl",
        ],
    ),
    "interrupt": (
        interrupted,
        [
            "claude-stream-json/captures/claude-code-2.1.332/27-interrupt.tap.jsonl",
            "claude-transcript/captures/claude-code-2.1.332/27-interrupt",
            "codex-app-server/captures/codex-0.171.0/f_interrupt.tap.jsonl",
            "acp/captures/claude-agent-acp-0.101.0/claude-e-cancel-stream.tap.jsonl",
            "acp/captures/codex-acp-2.6.0/codex-e-cancel-stream.tap.jsonl",
            "antigravity-stream-json/captures/agy-handwritten/05-interrupted.jsonl",
            "hm-json/captures/hm-handwritten/12_interrupted.jsonl",
            "acp/captures/gemini-cli-0.61.0/gemini-e-cancel-stream.tap.jsonl",
        ],
    ),
    "API error": (
        api_error,
        [
            "claude-stream-json/captures/claude-code-2.1.332/17-api-error-400.jsonl",
            "claude-transcript/captures/claude-code-2.1.332/17-api-error-400",
            "codex-app-server/captures/codex-0.171.0/h_api_error.tap.jsonl",
            "codex-exec-json/captures/codex-0.171.0/http_500.jsonl",
            "codex-rollout/captures/codex-0.171.0/exec-http_500.jsonl",
            "acp/captures/claude-agent-acp-0.101.0/claude-x-api-error.tap.jsonl",
            "acp/captures/codex-acp-2.6.0/codex-x-api-error.tap.jsonl",
            "gemini-stream-json/captures/gemini-cli-0.61.0/api_error.jsonl",
            "opencode-json/captures/opencode-1.18.33/api_error.jsonl",
            "acp/captures/gemini-cli-0.61.0/gemini-x-api-error.tap.jsonl",
        ],
    ),
    "two turns": (
        two_turns,
        [
            "claude-stream-json/captures/claude-code-2.1.332/10-multiturn-stream-input.tap.jsonl",
            "claude-transcript/captures/claude-code-2.1.332/10-multiturn-stream-input",
            "codex-app-server/captures/codex-0.171.0/e_two_turns.tap.jsonl",
            "acp/captures/claude-agent-acp-0.101.0/claude-a-text-thinking.tap.jsonl",
            "acp/captures/codex-acp-2.6.0/codex-a-text-reasoning.tap.jsonl",
            "acp/captures/gemini-cli-0.61.0/gemini-a-text-thinking.tap.jsonl",
            "antigravity-stream-json/captures/agy-handwritten/06-multiturn-stdin.tap.jsonl",
        ],
    ),
    "resume or load": (
        resumed,
        [
            "codex-app-server/captures/codex-0.171.0/g_resume.tap.jsonl",
            "acp/captures/claude-agent-acp-0.101.0/claude-f-load.tap.jsonl",
            "acp/captures/codex-acp-2.6.0/codex-f-load.tap.jsonl",
            "acp/captures/acp-handwritten/e_session_load_replay_then_live.tap.jsonl",
        ],
    ),
}

CASES = [(name, rel) for name, (_, rels) in SCENARIOS.items() for rel in rels]


@pytest.mark.parametrize(
    ("scenario", "rel"), CASES, ids=[f"{n}:{r.split('/')[0]}:{r.split('/')[-1]}" for n, r in CASES]
)
def test_the_scenario_states_the_same_facts(scenario: str, rel: str) -> None:
    check, _ = SCENARIOS[scenario]
    check(_facts(rel))


def test_every_scenario_covers_several_agents() -> None:
    for name, (_, rels) in SCENARIOS.items():
        protocols = {r.split("/")[0] for r in rels}
        assert len(protocols) >= 2, name
        for rel in rels:
            assert (ADAPTERS / rel).exists(), rel


# A session resumed (or loaded) in a second process is the same session: the same id.
RESUMED = [
    (
        "claude-stream-json/captures/claude-code-2.1.332/28-resume-pre.jsonl",
        "claude-stream-json/captures/claude-code-2.1.332/28-resume.jsonl",
    ),
    (
        "codex-app-server/captures/codex-0.171.0/g_resume_pre.tap.jsonl",
        "codex-app-server/captures/codex-0.171.0/g_resume.tap.jsonl",
    ),
    (
        "claude-stream-json/captures/claude-code-2.1.332/28-resume.jsonl",
        "claude-transcript/captures/claude-code-2.1.332/28-resume",
    ),
]


@pytest.mark.parametrize(
    ("before", "after"), RESUMED, ids=[a.split("/")[0] + ":" + a.split("/")[-1] for _, a in RESUMED]
)
def test_a_resumed_session_keeps_its_id(before: str, after: str) -> None:
    ids_before = {e.session_id for e in _facts(before).events}
    ids_after = {e.session_id for e in _facts(after).events}
    assert ids_before == ids_after and len(ids_before) == 1


#: Captures whose protocol carries a sub-agent's own events (the others keep them elsewhere:
#: antigravity's sub-agent log, hm's background agent): each event says its sub-agent.
SUBAGENT_EVENTS = [
    "claude-stream-json/captures/claude-code-2.1.332/24-subagent-with-tool.jsonl",
    "claude-transcript/captures/claude-code-2.1.332/24-subagent-with-tool",
    "acp/captures/claude-agent-acp-0.101.0/claude-h-subagent.tap.jsonl",
    "codex-app-server/captures/codex-0.171.0/i_collab_agent.tap.jsonl",
    # a subAgentActivity spawn and end, as 0.171, without the sub-agent's model
    "codex-app-server/captures/codex-0.155.0/i_collab_agent.tap.jsonl",
    "codex-app-server/captures/codex-0.142.2/i_collab_agent.tap.jsonl",  # the spawn said only at its end
    # a collabAgentToolCall spawn (as 0.96), the thread speaking before it is named
    "codex-app-server/captures/codex-0.131.0/i_collab_agent.tap.jsonl",
    "codex-app-server/captures/codex-0.125.0/i_collab_agent.tap.jsonl",  # as 0.131
    # the older collab tools: the spawn a collabAgentToolCall, the thread never started
    "codex-app-server/captures/codex-0.96.0/i_collab_agent.tap.jsonl",
    "codex-app-server/captures/codex-0.87.0/i_collab_agent.tap.jsonl",  # as 0.96
    # 0.107's multi_agent tools: as 0.96, the thread speaking before its spawn is named
    "codex-app-server/captures/codex-0.107.0/i_collab_agent.tap.jsonl",
]


@pytest.mark.parametrize("rel", SUBAGENT_EVENTS, ids=[f"{r.split('/')[0]}:{r.split('/')[2]}" for r in SUBAGENT_EVENTS])
def test_a_sub_agents_calls_are_told_apart_whatever_the_agent(rel: str) -> None:
    """Inside the parent's session with its subagentId (Claude), or in its own session linked to
    the parent (a Codex thread): either way a consumer finds the sub-agent's own calls."""
    f = _facts(rel)
    started = {b.subagent_id for b in f.bodies(Subagent) if isinstance(b, Subagent) and b.phase == "started"}
    own = {r.id for sid in started for r in f.sessions_of(sid)}
    calls = [
        e for e in f.envelopes if isinstance(e.body, ToolCall) and (e.subagent_id in started or e.session_id in own)
    ]
    assert calls, "the sub-agent's own tool call is reported, and says whose it is"
    assert {e.body.phase for e in calls if isinstance(e.body, ToolCall)} >= {"started", "completed"}


#: 0.142: the thread speaks before its spawn is said; 0.131: the same, the spawn a
#: collabAgentToolCall as in 0.96; 0.96: the spawn is a collabAgentToolCall
#: (receiverThreadIds), the sub-agent's thread and turns are never started, and its rollout
#: names the parent only in ``source.subagent.thread_spawn`` (0.87's names it nowhere: below);
#: 0.125: as 0.131; 0.107: as 0.96, but the thread speaks before its spawn is said, as 0.131
@pytest.mark.parametrize(
    "version", ["0.171.0", "0.155.0", "0.150.0", "0.149.1", "0.142.2", "0.131.0", "0.125.0", "0.107.0", "0.96.0"]
)
def test_a_codex_sub_agent_thread_is_the_same_session_live_and_stored(version: str) -> None:
    live = _facts(f"codex-app-server/captures/codex-{version}/i_collab_agent.tap.jsonl")
    stored = _facts(f"codex-rollout/captures/codex-{version}/app-server-i_collab_agent-2.jsonl")
    (child,) = [r for r in live.records.values() if r.parent_id is not None]
    (alone,) = stored.records.values()
    assert (alone.id, alone.parent_id) == (child.id, child.parent_id)
    assert child.parent_id in live.records
    # its messages and calls are inside its turn, live and stored
    for facts in (live, stored):
        own = [e for e in facts.envelopes if e.session_id == child.id]
        assert own and all(e.turn_id is not None for e in own if isinstance(e.body, ToolCall))


@pytest.mark.parametrize(
    "version",
    ["0.171.0", "0.155.0", "0.150.0", "0.149.1", "0.142.2", "0.131.0", "0.125.0", "0.107.0", "0.96.0", "0.87.0"],
)
def test_a_codex_sub_agent_ends_once_right_after_its_threads_turn_whatever_the_version(version: str) -> None:
    """The same fact at the same place for every Codex: the sub-agent's thread ends its turn,
    and the parent's stream says right after that the sub-agent completed, once, naming the
    call that spawned it, inside the parent's turn.  Codex says it itself from 0.150 on; before
    (0.96 and 0.107 said it only in a later ``wait``'s result; 0.125 to 0.142 never) the core
    infers it (``native.protocol: "core"``)."""
    f = _facts(f"codex-app-server/captures/codex-{version}/i_collab_agent.tap.jsonl")
    (child,) = [r for r in f.records.values() if r.parent_id is not None]
    said = [
        (i, e)
        for i, e in enumerate(f.envelopes)
        if isinstance(e.body, Subagent) and e.body.subagent_id == child.native_session_id
    ]
    assert [(e.session_id, e.body.phase) for _, e in said if isinstance(e.body, Subagent)] == [
        (child.parent_id, "started"),
        (child.parent_id, "completed"),
    ]
    (_, start), (at, end) = said
    assert isinstance(start.body, Subagent) and isinstance(end.body, Subagent)
    assert end.body.call_id == start.body.call_id is not None and end.turn_id == start.turn_id
    turn_ends = [i for i, e in enumerate(f.envelopes) if isinstance(e.body, TurnComplete)]
    (child_end,) = [i for i in turn_ends if f.envelopes[i].session_id == child.id]
    (parent_end,) = [i for i in turn_ends if f.envelopes[i].session_id == child.parent_id]
    assert child_end < at < parent_end
    assert all(e.session_id == child.id for e in f.envelopes[child_end:at])
    native = tuple(int(n) for n in version.split(".")) >= (0, 150)
    assert end.native.protocol == ("codex-app-server" if native else "core")


def test_a_codex_0_87_sub_agent_rollout_is_the_same_session_but_names_no_parent() -> None:
    """0.87 writes a sub-agent thread's rollout as any thread's (``source: "vscode"``, no
    ``parent_thread_id``, no ``thread_spawn``): read alone it is the live sub-agent's session
    (the same id), unlinked; its parent's rollout names it in the ``spawn_agent`` output."""
    live = _facts("codex-app-server/captures/codex-0.87.0/i_collab_agent.tap.jsonl")
    stored = _facts("codex-rollout/captures/codex-0.87.0/app-server-i_collab_agent-2.jsonl")
    parent = _facts("codex-rollout/captures/codex-0.87.0/app-server-i_collab_agent.jsonl")
    (child,) = [r for r in live.records.values() if r.parent_id is not None]
    (alone,) = stored.records.values()
    assert alone.id == child.id and alone.parent_id is None
    spawned = {b.subagent_id for b in parent.bodies(Subagent) if isinstance(b, Subagent) and b.phase == "started"}
    assert spawned == {alone.native_session_id}


def test_every_phase_of_a_call_names_its_tool_category_and_sub_agent_whatever_the_agent() -> None:
    """The core's table of calls gives a call's later phases what its start said (an update may
    name it better), so a consumer counting ends by tool or category, or by sub-agent, counts
    every agent's the same way."""
    checked = 0
    for capture in capture_files():
        known: dict[tuple[str, str], tuple[str, str | None, str | None]] = {}
        for core in convert_capture(capture):
            if not isinstance(core, SessionEvent) or not isinstance(core.event.body, ToolCall):
                continue
            body, key = core.event.body, (core.session_id, core.event.body.call_id)
            said = (body.tool, body.category, core.event.subagent_id)
            if body.phase == "started":
                known[key] = said
            elif body.phase == "updated" and key in known:  # may name the call better, never worse
                tool, category, sub = known[key]
                known[key] = (body.tool or tool, body.category or category, sub)
            elif body.phase in ("completed", "failed") and key in known:
                assert said == known.pop(key), f"{capture}: {body.call_id} {body.phase}"
                checked += 1
    assert checked > 500


#: docs/events.md, "File changes"
CHANGE_KINDS = {"add", "update", "delete", "move", "write"}


def test_a_file_change_says_its_kind_in_one_vocabulary_whatever_the_agent() -> None:
    """Claude Code's structured patch and Gemini CLI's ``modify`` are an ``update``, as Codex's
    and OpenCode's: a consumer counting created and changed files counts every agent's alike."""
    kinds: dict[str, set[str]] = {}
    for capture in capture_files():
        for core in convert_capture(capture):
            if isinstance(core, SessionEvent) and isinstance(core.event.body, FileDiff):
                kind = core.event.body.change_kind
                if kind is not None:
                    kinds.setdefault(kind, set()).add(str(capture))
    assert set(kinds) <= CHANGE_KINDS, {k: sorted(v)[:3] for k, v in kinds.items() if k not in CHANGE_KINDS}
    assert {"add", "update"} <= set(kinds)
