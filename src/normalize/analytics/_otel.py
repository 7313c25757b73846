"""Sessions as OpenTelemetry traces, after the GenAI semantic conventions.

One trace per top-level session:

* the session: an ``invoke_agent {agent}`` span (``gen_ai.operation.name``
  ``invoke_agent``, ``gen_ai.agent.name``, ``gen_ai.conversation.id`` the native
  session id, ``gen_ai.request.model``, ``gen_ai.usage.*`` the session totals);
* each turn: a ``turn {n}`` span under it, with the turn's ``gen_ai.usage.*``;
* each tool call: an ``execute_tool {tool}`` span under its turn
  (``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``), status
  ERROR when it failed;
* each sub-agent: an ``invoke_agent {name}`` span under the tool call that
  spawned it, its own tool calls under it.

Span times are the events' times.  Trace and span ids are derived from the
tables' keys, so exporting the same session twice gives the same ids.  The
OpenTelemetry SDK (the ``otel`` extra) is imported lazily.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from normalize import UsageError

from ._prices import provider_of
from ._schema import column_names
from ._tables import SessionRows, key_of

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["OTLP_HINT", "emit_spans", "otlp_exporter"]

OTLP_HINT = "OTLP export needs the exporter: pip install 'agent-normalize[otlp]'"


def _ns(ts: Any) -> int | None:
    if ts is None:
        return None
    try:
        parsed = datetime.fromisoformat(str(ts))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return int(parsed.timestamp() * 1_000_000) * 1000


def _dicts(rows: SessionRows, table: str) -> list[dict[str, Any]]:
    names = column_names(table)
    return [dict(zip(names, r, strict=True)) for r in rows.tables[table]]


def _usage_attrs(row: dict[str, Any]) -> dict[str, Any]:
    pairs = (
        ("gen_ai.usage.input_tokens", row.get("input_tokens")),
        ("gen_ai.usage.output_tokens", row.get("output_tokens")),
        ("gen_ai.usage.cache_read.input_tokens", row.get("cache_read_tokens")),
        ("gen_ai.usage.cache_creation.input_tokens", row.get("cache_write_tokens")),
        ("gen_ai.usage.reasoning.output_tokens", row.get("reasoning_tokens")),
        ("normalize.usage.cost", row.get("cost")),
        ("normalize.usage.currency", row.get("currency")),
        ("normalize.usage.cost_source", row.get("cost_source")),
    )
    return {k: v for k, v in pairs if v is not None}


def _clean(attrs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attrs.items() if v is not None}


def otlp_exporter(endpoint: str) -> SpanExporter:
    """An OTLP/HTTP span exporter to ``endpoint`` (e.g. ``http://localhost:4318/v1/traces``)."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found, unused-ignore]
            OTLPSpanExporter,
        )
    except ImportError:
        raise UsageError(OTLP_HINT) from None
    exporter: SpanExporter = OTLPSpanExporter(endpoint=endpoint)
    return exporter


def emit_spans(
    sessions: Iterable[SessionRows],
    exporter: SpanExporter,
    *,
    batch: bool = False,
    service_name: str = "normalize",
    content: bool = False,
) -> int:
    """Send each session's spans to ``exporter``; returns the number of spans.

    With ``content``, the turns' messages (``SessionRows.messages``, loaded with the
    ``messages`` table asked for) go on the turn and model-call spans: they hold what
    the user and the agent wrote, so they are sent only when asked for.
    """
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
        from opentelemetry.sdk.trace.id_generator import IdGenerator
    except ImportError:
        raise UsageError("this needs the OpenTelemetry SDK: pip install 'agent-normalize[otel]'") from None

    class KeyedIds(IdGenerator):
        """Ids derived from the tables' keys, set before each span starts."""

        def __init__(self) -> None:
            self.trace_id = 1
            self.span_id = 1

        def generate_span_id(self) -> int:
            return self.span_id

        def generate_trace_id(self) -> int:
            return self.trace_id

    ids = KeyedIds()
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}), id_generator=ids)
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("normalize.analytics")
    count = 0
    try:
        for rows in sessions:
            count += _session_spans(rows, tracer, ids, content)
    finally:
        provider.shutdown()
    return count


def _messages(rows: SessionRows, turn: int | None, role: str) -> list[str]:
    return [text for t, r, text in rows.messages if t == turn and r == role]


def _as_messages(role: str, texts: list[str]) -> str:
    """Messages in the GenAI conventions' JSON shape (``gen_ai.input.messages`` / ``gen_ai.output.messages``)."""
    parts = [{"type": "text", "content": t} for t in texts]
    out: dict[str, Any] = {"role": role, "parts": parts}
    if role == "assistant":
        out["finish_reason"] = "stop"
    return json.dumps([out], ensure_ascii=False)


def _turn_content(rows: SessionRows, turn: int | None, *, input: bool = True, output: bool = True) -> dict[str, Any]:
    """A turn's prompt and reply as span attributes (GenAI conventions, and OpenInference's for Phoenix)."""
    out: dict[str, Any] = {}
    asked, said = _messages(rows, turn, "user"), _messages(rows, turn, "assistant")
    if input and asked:
        out["gen_ai.input.messages"] = _as_messages("user", asked)
        out["input.value"] = "\n\n".join(asked)
    if output and said:
        out["gen_ai.output.messages"] = _as_messages("assistant", said)
        out["output.value"] = "\n\n".join(said)
    return out


def _ordinal(turns: list[dict[str, Any]], turn_key: str | None) -> int | None:
    return next((int(t["ordinal"]) for t in turns if t["turn_key"] == turn_key), None)


def _lane(u: dict[str, Any]) -> tuple[str | None, str | None]:
    return (u["turn_key"], u["subagent_id"])


def _session_spans(rows: SessionRows, tracer: Any, ids: Any, content: bool = False) -> int:
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.trace import SpanKind, Status, StatusCode

    sessions = _dicts(rows, "sessions")
    root, subs = sessions[0], _dicts(rows, "subagents")
    turns = _dicts(rows, "turns")
    calls = _dicts(rows, "tool_calls")
    times = [
        t
        for r in (*sessions, *subs, *turns, *calls)
        for t in (_ns(r.get("started_at")), _ns(r.get("ended_at")))
        if t is not None
    ]
    first = min(times, default=0)
    last = max(times, default=first)
    conversation = root["native_session_id"] or root["session_key"]
    agent = root["agent"]
    ids.trace_id = int(key_of(root["session_key"], "trace") + key_of(root["session_key"], "trace", 2), 16)
    ended: list[list[Any]] = []  # [span, end, parent index]: a parent ends no earlier than its children
    index: dict[int, int] = {}

    spans_by_key: dict[str, Any] = {}

    def start(name: str, key: str, parent: Any, attrs: dict[str, Any], begin: int | None, kind: Any) -> Any:
        ids.span_id = int(key_of(key, "span"), 16) or 1
        ctx = trace.set_span_in_context(parent) if parent is not None else Context()
        span = tracer.start_span(name, context=ctx, kind=kind, attributes=_clean(attrs), start_time=begin or first)
        spans_by_key[key] = span
        return span

    def finish(span: Any, begin: int | None, end: int | None, parent: Any) -> None:
        index[id(span)] = len(ended)
        ended.append([span, max(end or begin or first, begin or first), index.get(id(parent))])

    session_begin = _ns(root["started_at"]) or first
    session_span = start(
        f"invoke_agent {agent}",
        root["session_key"],
        None,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": conversation,
            "gen_ai.request.model": root["model"],
            "gen_ai.provider.name": provider_of(root["model"]),
            "openinference.span.kind": "AGENT",
            "session.id": conversation,
            "normalize.session.key": root["session_key"],
            "normalize.session.status": root["status"],
            "normalize.agent.version": root["agent_version"],
            "normalize.protocol": root["protocol"],
            "normalize.session.turns": root["turns"],
            **_usage_attrs(root),
        },
        session_begin,
        SpanKind.INTERNAL,
    )
    if root["status"] == "failed":
        session_span.set_status(Status(StatusCode.ERROR))
    finish(session_span, session_begin, _ns(root["ended_at"]) or last, None)

    turn_spans: dict[str, Any] = {}
    for t in turns:
        begin = _ns(t["started_at"])
        span = start(
            f"turn {t['ordinal']}",
            t["turn_key"],
            session_span,
            {
                "gen_ai.conversation.id": conversation,
                "gen_ai.agent.name": agent,
                "normalize.turn.ordinal": t["ordinal"],
                "normalize.turn.end_reason": t["end_reason"],
                "normalize.turn.stop_reason": t["stop_reason"],
                "normalize.turn.native_id": t["native_turn_id"],
                **_usage_attrs(t),
                **(_turn_content(rows, t["ordinal"]) if content else {}),
            },
            begin,
            SpanKind.INTERNAL,
        )
        if t["end_reason"] == "interrupt":
            span.set_status(Status(StatusCode.ERROR, "interrupted"))
        turn_spans[t["turn_key"]] = span
        finish(span, begin, _ns(t["ended_at"]), session_span)

    calls_by_id = {c["call_id"]: c for c in calls}
    call_spans: dict[str, Any] = {}

    def call_span(c: dict[str, Any], parent: Any) -> Any:
        begin = _ns(c["started_at"]) or _ns(c["ended_at"])
        span = start(
            f"execute_tool {c['tool']}",
            c["call_key"],
            parent,
            {
                "gen_ai.operation.name": "execute_tool",
                "openinference.span.kind": "TOOL",
                "gen_ai.conversation.id": conversation,
                "gen_ai.tool.name": c["tool"],
                "gen_ai.tool.call.id": c["call_id"],
                "gen_ai.tool.type": "extension" if c["kind"] == "mcp-tool" else "function",
                "normalize.tool.category": c["category"],
                "normalize.tool.status": c["status"],
                "normalize.tool.exit_code": c["exit_code"],
                "normalize.tool.permission": c["permission"],
                "normalize.tool.decision": c["decision"],
                "error.type": "tool_failed" if c["status"] == "failed" else None,
            },
            begin,
            SpanKind.INTERNAL,
        )
        if c["status"] == "failed":
            span.set_status(Status(StatusCode.ERROR))
        finish(span, begin, _ns(c["ended_at"]), parent)
        return span

    for c in calls:
        if c["subagent_id"] is None:
            call_spans[c["call_id"]] = call_span(c, turn_spans.get(c["turn_key"] or "", session_span))

    for s in subs:
        spawn = s["spawn_call_id"]
        own_calls = [c for c in calls if c["subagent_id"] == s["subagent_id"]]
        parent = call_spans.get(spawn or "")
        if parent is None:
            turn_key = (calls_by_id.get(spawn or "") or (own_calls[0] if own_calls else {})).get("turn_key")
            parent = turn_spans.get(turn_key or "", session_span)
        begin = _ns(s["started_at"])
        name = s["name"] or s["subagent_id"]
        span = start(
            f"invoke_agent {name}",
            s["session_key"],
            parent,
            {
                "gen_ai.operation.name": "invoke_agent",
                "openinference.span.kind": "AGENT",
                "gen_ai.agent.name": name,
                "gen_ai.agent.id": s["subagent_id"],
                "gen_ai.conversation.id": conversation,
                "gen_ai.request.model": s["model"],
                "normalize.session.key": s["session_key"],
                "normalize.subagent.status": s["status"],
                **_usage_attrs(s),
            },
            begin,
            SpanKind.INTERNAL,
        )
        if s["status"] in ("failed", "cancelled"):
            span.set_status(Status(StatusCode.ERROR, str(s["status"])))
        finish(span, begin, _ns(s["ended_at"]), parent)
        for c in own_calls:
            call_spans[c["call_id"]] = call_span(c, span)

    # one ``chat {model}`` span per model call the agent reported (its usage rows), under its turn or sub-agent
    sub_spans = {s["subagent_id"]: spans_by_key[s["session_key"]] for s in subs if s["session_key"] in spans_by_key}
    usage = [u for u in _dicts(rows, "usage") if u["basis"] == "reported"]
    turn_begin = {t["turn_key"]: _ns(t["started_at"]) for t in turns}
    sub_begin = {s["subagent_id"]: _ns(s["started_at"]) for s in subs}
    previous: dict[tuple[str | None, str | None], int | None] = {}
    ordered = sorted(usage, key=lambda u: (_ns(u["ts"]) or 0, u["usage_key"]))
    firsts: dict[tuple[str | None, str | None], int] = {}
    lasts: dict[tuple[str | None, str | None], int] = {}
    for n, u in enumerate(ordered):
        firsts.setdefault(_lane(u), n)
        lasts[_lane(u)] = n
    for n, u in enumerate(ordered):
        parent = sub_spans.get(u["subagent_id"]) or turn_spans.get(u["turn_key"] or "", session_span)
        end = _ns(u["ts"])
        lane = _lane(u)
        # a call ran from the end of the one before it in the same turn (or the turn's start) to its reply
        begin = previous.get(lane) or sub_begin.get(u["subagent_id"]) or turn_begin.get(u["turn_key"]) or end
        previous[lane] = end or begin
        model = u["model"]
        texts: dict[str, Any] = {}
        if content and u["subagent_id"] is None:
            turn_no = _ordinal(turns, u["turn_key"])
            if n == firsts[lane]:
                texts.update(_turn_content(rows, turn_no, output=False))
            if n == lasts[lane]:
                texts.update(_turn_content(rows, turn_no, input=False))
        span = start(
            f"chat {model}" if model else "chat",
            u["usage_key"],
            parent,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider_of(model),
                "gen_ai.request.model": model,
                "gen_ai.response.model": model,
                "gen_ai.conversation.id": conversation,
                "gen_ai.agent.name": agent,
                "openinference.span.kind": "LLM",
                "llm.model_name": model,
                "llm.provider": provider_of(model),
                "llm.token_count.prompt": u["input_tokens"],
                "llm.token_count.completion": u["output_tokens"],
                "llm.token_count.total": u["total_tokens"],
                "llm.token_count.prompt_details.cache_read": u["cache_read_tokens"],
                "llm.token_count.prompt_details.cache_write": u["cache_write_tokens"],
                "normalize.usage.scope": u["scope"],
                **_usage_attrs(u),
                **texts,
            },
            begin,
            SpanKind.CLIENT,
        )
        finish(span, begin, end, parent)

    for _span, end, parent_at in reversed(ended):
        if parent_at is not None and ended[parent_at][1] < end:
            ended[parent_at][1] = end
    for span, end, _ in reversed(ended):
        span.end(end_time=end)
    return len(ended)
