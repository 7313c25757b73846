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

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from normalize import UsageError

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
        ("normalize.usage.price_source", row.get("price_source")),
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
) -> int:
    """Send each session's spans to ``exporter``; returns the number of spans."""
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
            count += _session_spans(rows, tracer, ids)
    finally:
        provider.shutdown()
    return count


def _session_spans(rows: SessionRows, tracer: Any, ids: Any) -> int:
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.trace import SpanKind, Status, StatusCode

    sessions = _dicts(rows, "sessions")
    root, subs = sessions[0], sessions[1:]
    turns = _dicts(rows, "turns")
    calls = _dicts(rows, "tool_calls")
    times = [
        t
        for r in (*sessions, *turns, *calls)
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

    def start(name: str, key: str, parent: Any, attrs: dict[str, Any], begin: int | None, kind: Any) -> Any:
        ids.span_id = int(key_of(key, "span"), 16) or 1
        ctx = trace.set_span_in_context(parent) if parent is not None else Context()
        return tracer.start_span(name, context=ctx, kind=kind, attributes=_clean(attrs), start_time=begin or first)

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
        name = s["title"] or s["subagent_id"]
        span = start(
            f"invoke_agent {name}",
            s["session_key"],
            parent,
            {
                "gen_ai.operation.name": "invoke_agent",
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

    for _span, end, parent_at in reversed(ended):
        if parent_at is not None and ended[parent_at][1] < end:
            ended[parent_at][1] = end
    for span, end, _ in reversed(ended):
        span.end(end_time=end)
    return len(ended)
