"""The model: every kind round-trips through JSON, and msgspec and pydantic agree on it."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings

import normalize
from normalize._model import BODY_TYPES, CORE_EVENT_TYPES, kind_of
from normalize._schema import core_event_adapter, dump
from strategies import core_events, struct

SPEC_KINDS = {
    "turn-start", "turn-complete", "assistant-delta", "assistant-message", "reasoning-delta", "reasoning",
    "tool-call", "command-output", "file-diff", "web-search", "mcp-tool", "plan", "task", "user-question",
    "permission-request", "request-resolved", "permission-auto", "permissions-update", "commands-update",
    "mode-update", "session-info", "usage", "compaction", "subagent", "warning", "error",
    "conversation-reset",
}  # fmt: skip
SPEC_TYPES = {
    "session.created", "session.resumed", "session.stateChanged", "session.update", "session.event",
    "session.failed", "message.accepted", "message.started", "message.completed", "account.switched",
    "account.refreshed", "account.exhausted", "account.unavailable", "account.available",
    "context.degraded", "context.updated", "tool.called", "tool.finished",
}  # fmt: skip


def test_every_spec_kind_and_type_exists_and_nothing_else_but_documented_extensions() -> None:
    kinds = {b.__struct_config__.tag for b in BODY_TYPES}
    assert kinds - SPEC_KINDS == {"user-message"}  # the one documented extension kind
    assert kinds >= SPEC_KINDS
    assert {c.__struct_config__.tag for c in CORE_EVENT_TYPES} == SPEC_TYPES


def test_wire_names_are_the_specs() -> None:
    ev = normalize.ToolCall(call_id="c1", tool="Bash", phase="completed", exit_code=0)
    assert msgspec.json.decode(msgspec.json.encode(ev)) == {
        "kind": "tool-call", "callId": "c1", "tool": "Bash", "phase": "completed", "exitCode": 0,
    }  # fmt: skip
    sw = normalize.AccountSwitched(session_id="s", from_="a", to="b", reason="limit")
    assert msgspec.json.decode(normalize.encode(sw)) == {
        "type": "account.switched", "sessionId": "s", "from": "a", "to": "b", "reason": "limit",
    }  # fmt: skip
    entry = normalize.CommandEntry(name="clear", argument_hint="[x]", aliases=["reset"], builtin=True)
    assert msgspec.json.decode(msgspec.json.encode(entry)) == {
        "name": "clear", "argumentHint": "[x]", "aliases": ["reset"], "builtin": True,
    }  # fmt: skip


def test_session_event_is_flat_on_the_wire() -> None:
    env = normalize.EventEnvelope(
        session_id="s1", agent="hm", seq=3, ts="2026-01-01T00:00:00.000Z", origin="live",
        native=normalize.Native(protocol="hm-json", method="text_delta", payload=msgspec.Raw(b'{"a": 1}')),
        body=normalize.AssistantDelta(message_id="m1", text="hi"), turn_id="turn:1",
    )  # fmt: skip
    line = normalize.encode(normalize.SessionEvent(session_id="s1", event=env))
    assert line == (
        b'{"type":"session.event","sessionId":"s1","event":{"sessionId":"s1","agent":"hm","seq":3,'
        b'"ts":"2026-01-01T00:00:00.000Z","turnId":"turn:1","origin":"live","native":{"protocol":"hm-json",'
        b'"payload":{"a": 1},"method":"text_delta"},"kind":"assistant-delta","messageId":"m1","text":"hi"}}'
    )
    back = normalize.decode(line)
    assert isinstance(back, normalize.SessionEvent)
    assert back.event.body == env.body
    assert normalize.encode(back) == line  # the native payload's bytes are kept as they were


@pytest.mark.parametrize("cls", BODY_TYPES, ids=kind_of)
def test_every_body_kind_round_trips(cls: type[normalize.Body]) -> None:
    @settings(max_examples=25, deadline=None)
    @given(struct(cls))
    def check(body: normalize.Body) -> None:
        data = msgspec.json.encode(body)
        assert msgspec.json.decode(data, type=cls) == body

    check()


@settings(max_examples=300, deadline=None)
@given(core_events)
def test_every_core_event_round_trips_and_pydantic_agrees(event: Any) -> None:
    line = normalize.encode(event)
    back = normalize.decode(line)
    assert normalize.encode(back) == line
    model = core_event_adapter().validate_json(line)
    assert json.loads(dump(model)) == json.loads(line)


def test_pydantic_rejects_what_msgspec_would_not_write() -> None:
    bad = b'{"type":"message.accepted","sessionId":"s"}'
    with pytest.raises(ValueError, match="messageId"):
        core_event_adapter().validate_json(bad)
    with pytest.raises(normalize.MalformedMessage):
        normalize.decode(bad)
