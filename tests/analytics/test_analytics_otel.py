"""Sessions as OpenTelemetry traces (GenAI semantic conventions), through the SDK's in-memory exporter."""

from __future__ import annotations

import argparse
import importlib.util
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from helpers import ADAPTERS
from normalize import UsageError
from normalize.analytics import column_names, load, to_otel
from normalize.analytics._cli import add_commands

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

CLAUDE_SUBAGENT = ADAPTERS / "claude-transcript" / "captures" / "claude-code-2.1.332" / "24-subagent-with-tool"
HM_SUBAGENT = ADAPTERS / "hm-json" / "captures" / "hm-handwritten" / "05_background_subagent.jsonl"


def _spans(*paths: Path) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    to_otel(load(list(paths)), exporter)
    return list(exporter.get_finished_spans())


def _children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def _one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    (span,) = [s for s in spans if s.name == name]
    return span


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _ns(ts: str) -> int:
    return int(datetime.fromisoformat(ts).timestamp() * 1_000_000) * 1000


def _native_ts(path: Path, call_id: str, block: str) -> str:
    """When the transcript line holding ``call_id`` (a tool_use or its tool_result) was written."""
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        content = (obj.get("message") or {}).get("content")
        if isinstance(content, list):
            for b in content:
                if b.get("type") == block and call_id in (b.get("id"), b.get("tool_use_id")):
                    return str(obj["timestamp"])
    raise AssertionError(f"{call_id} not in {path}")


def test_a_session_with_tools_and_a_subagent_is_one_span_tree() -> None:
    if not CLAUDE_SUBAGENT.exists():
        pytest.skip("capture absent")
    spans = _spans(CLAUDE_SUBAGENT)
    root = _one(spans, "invoke_agent claude-code")
    assert root.parent is None
    a = _attrs(root)
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.agent.name"] == "claude-code"
    assert a["gen_ai.conversation.id"] == "a57e99f9-3205-4623-879d-9df0ceb88c41"
    assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}

    (turn,) = _children(spans, root)
    assert turn.name == "turn 1"
    (agent_call,) = [s for s in _children(spans, turn) if not s.name.startswith("chat ")]
    assert agent_call.name == "execute_tool Agent"
    assert _attrs(agent_call)["gen_ai.operation.name"] == "execute_tool"
    assert _attrs(agent_call)["gen_ai.tool.name"] == "Agent"
    (sub,) = _children(spans, agent_call)
    assert sub.name == "invoke_agent general-purpose"
    assert _attrs(sub)["gen_ai.agent.id"] == _attrs(agent_call)["gen_ai.tool.call.id"]
    (bash,) = [s for s in _children(spans, sub) if not s.name.startswith("chat ")]
    assert bash.name == "execute_tool Bash"
    assert _attrs(bash)["normalize.tool.category"] == "execute"
    assert _attrs(bash)["gen_ai.conversation.id"] == a["gen_ai.conversation.id"]

    # times are the events' times: the call starts when the agent asked for it, ends with its result
    sub_file = next(CLAUDE_SUBAGENT.rglob("subagents/*.jsonl"))
    call_id = _attrs(bash)["gen_ai.tool.call.id"]
    assert bash.start_time == _ns(_native_ts(sub_file, call_id, "tool_use"))
    assert bash.end_time == _ns(_native_ts(sub_file, call_id, "tool_result"))
    for child in spans:
        if child.parent is not None:
            (parent,) = [s for s in spans if s.context.span_id == child.parent.span_id]
            assert parent.end_time is not None and child.end_time is not None
            assert child.end_time <= parent.end_time


def test_a_background_subagent_hangs_under_the_call_that_spawned_it() -> None:
    spans = _spans(HM_SUBAGENT)
    root = _one(spans, "invoke_agent hm")
    assert _attrs(root)["gen_ai.usage.input_tokens"] == 74132  # session_end.usage.input
    turns = sorted(_children(spans, root), key=lambda s: s.name)
    assert [t.name for t in turns] == ["turn 1", "turn 2"]
    spawn = _one(spans, "execute_tool agent")
    (sub,) = _children(spans, spawn)
    assert _attrs(sub)["gen_ai.operation.name"] == "invoke_agent"
    tools = [s for s in _children(spans, sub) if not s.name.startswith("chat ")]
    assert len(tools) == 5
    assert all(_attrs(t)["gen_ai.operation.name"] == "execute_tool" for t in tools)
    assert sum(_attrs(t).get("gen_ai.usage.input_tokens", 0) for t in turns) == 74132


def test_failed_calls_are_error_spans() -> None:
    capture = ADAPTERS / "codex-app-server" / "captures" / "codex-0.169.0" / "b_command_approval.tap.jsonl"
    if not capture.exists():
        pytest.skip("capture absent")
    spans = _spans(capture)
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    failed = [s for s in tools if _attrs(s)["normalize.tool.status"] == "failed"]
    assert failed
    assert all(s.status.status_code is StatusCode.ERROR for s in failed)
    assert {_attrs(s)["normalize.tool.decision"] for s in failed} == {"deny"}


def test_the_same_session_gives_the_same_ids() -> None:
    a = _spans(HM_SUBAGENT)
    b = _spans(HM_SUBAGENT)
    assert [(s.name, s.context.trace_id, s.context.span_id) for s in a] == [
        (s.name, s.context.trace_id, s.context.span_id) for s in b
    ]
    assert len({s.context.span_id for s in a}) == len(a)


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="normalize")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_otel_command_prints_the_span_tree(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["otel", str(HM_SUBAGENT), "-j", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("invoke_agent hm")
    assert any(line.startswith("      invoke_agent ") for line in out)  # session > turn > call > sub-agent


def test_otlp_without_its_exporter_is_a_clear_error() -> None:
    try:
        installed = importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http") is not None
    except ModuleNotFoundError:
        installed = False
    if installed:
        pytest.skip("the OTLP exporter is installed")
    with pytest.raises(UsageError, match="pip install"):
        _run(["otel", str(HM_SUBAGENT), "--endpoint", "http://127.0.0.1:4318/v1/traces", "-j", "1"])


# --------------------------------------------------------------------------
# Model calls: what Langfuse and Phoenix show as generations


def test_each_reported_model_call_is_a_chat_span_with_model_provider_and_tokens() -> None:
    loaded = load([CLAUDE_SUBAGENT])
    (rows,) = loaded.sessions.values()
    names = column_names("usage")
    reported = [dict(zip(names, r, strict=True)) for r in rows.tables["usage"]]
    reported = [u for u in reported if u["basis"] == "reported"]
    exporter = InMemorySpanExporter()
    to_otel(loaded, exporter)
    spans = list(exporter.get_finished_spans())
    chats = [s for s in spans if _attrs(s).get("gen_ai.operation.name") == "chat"]
    assert len(chats) == len(reported) > 0
    for span in chats:
        a = _attrs(span)
        assert span.name == f"chat {a['gen_ai.request.model']}"
        assert a["gen_ai.request.model"].startswith("claude-")
        assert a["gen_ai.provider.name"] == "anthropic"
        assert a["gen_ai.usage.input_tokens"] >= 0 and a["gen_ai.usage.output_tokens"] >= 0
        assert a["openinference.span.kind"] == "LLM"
        assert "gen_ai.input.messages" not in a and "input.value" not in a  # content only when asked for
    assert sum(_attrs(s)["gen_ai.usage.output_tokens"] for s in chats) == sum(u["output_tokens"] for u in reported)
    # a sub-agent's calls hang under the sub-agent, the main agent's under the turn
    sub = next(s for s in spans if s.name == "invoke_agent general-purpose")
    assert any(c.parent is not None and c.parent.span_id == sub.context.span_id for c in chats)
    root = next(s for s in spans if s.parent is None)
    assert _attrs(root)["gen_ai.request.model"].startswith("claude-")  # the session's model, from its calls
    assert _attrs(root)["gen_ai.provider.name"] == "anthropic"


def test_message_content_goes_on_the_spans_only_when_asked_for() -> None:
    loaded = load([CLAUDE_SUBAGENT], tables=["sessions", "subagents", "turns", "tool_calls", "usage", "messages"])
    exporter = InMemorySpanExporter()
    to_otel(loaded, exporter, content=True)
    spans = list(exporter.get_finished_spans())
    turn = next(s for s in spans if s.name == "turn 1")
    sent = json.loads(_attrs(turn)["gen_ai.input.messages"])
    assert sent[0]["role"] == "user" and sent[0]["parts"][0]["type"] == "text"
    prompt = next(
        json.loads(line)["message"]["content"]
        for line in next(CLAUDE_SUBAGENT.glob("*.jsonl")).read_text().splitlines()
        if json.loads(line).get("type") == "user"
    )
    text = prompt if isinstance(prompt, str) else prompt[0]["text"]
    assert sent[0]["parts"][0]["content"] == text
    chats = sorted(
        (
            s
            for s in spans
            if s.name.startswith("chat ") and s.parent is not None and s.parent.span_id == turn.context.span_id
        ),
        key=lambda s: (s.start_time or 0, s.end_time or 0),
    )
    assert "gen_ai.input.messages" in _attrs(chats[0])
    assert "gen_ai.output.messages" in _attrs(chats[-1])
    assert json.loads(_attrs(chats[-1])["gen_ai.output.messages"])[0]["role"] == "assistant"
