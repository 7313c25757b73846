"""The library fits Python habits: plain data, docstrings, datetimes, builtin-safe names, pydantic models."""

from __future__ import annotations

import inspect
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

import normalize
import normalize.models
from helpers import capture_files, compiled, convert_records, golden_path, protocol_of, records_of
from normalize._cli import _parser


def one_capture_per_protocol() -> list[Path]:
    seen: dict[str, Path] = {}
    for cap in capture_files():
        seen.setdefault(protocol_of(cap), cap)
    return sorted(seen.values())


def events_of(capture: Path) -> list[Any]:
    return list(convert_records(records_of([capture]), protocol_of(capture)))


# ------------------------------------------------------------------ plain data


@pytest.mark.parametrize("capture", one_capture_per_protocol(), ids=protocol_of)
def test_every_event_has_a_plain_data_view_equal_to_its_json_line(capture: Path) -> None:
    header = normalize.StreamHeader(
        schema_version="1", library="normalize", library_version="1", input="x", protocol="p"
    )
    assert header.to_dict() == {
        "type": "stream.header",
        "schemaVersion": "1",
        "library": "normalize",
        "libraryVersion": "1",
        "input": "x",
        "protocol": "p",
    }
    for ev in events_of(capture):
        line = json.loads(normalize.encode(ev))
        assert ev.to_dict() == line
        assert normalize.to_builtins(ev) == line
        json.dumps(ev.to_dict())  # plain data: the standard library takes it as it is
        if isinstance(ev, normalize.SessionEvent):
            env = ev.event
            assert env.to_dict() == line["event"]
            assert env.native.data == line["event"]["native"]["payload"]
            body = env.body.to_dict()
            assert {k: line["event"][k] for k in body} == body


def test_tool_input_and_native_payload_decode_on_access() -> None:
    capture = next(c for c in capture_files() if c.name == "05-bash-ls-bypass.jsonl" and "2.1.332" in str(c))
    calls: list[tuple[normalize.EventEnvelope, normalize.ToolCall]] = [
        (ev.event, ev.event.body)
        for ev in events_of(capture)
        if isinstance(ev, normalize.SessionEvent) and isinstance(ev.event.body, normalize.ToolCall)
    ]
    env, started = next((env, call) for env, call in calls if call.phase == "started")
    assert isinstance(started.input, msgspec.Raw)  # the wire value, passed through untouched
    assert started.input_data == {"command": "ls", "description": "List files in current directory"}
    assert isinstance(env.native.data, dict)
    with pytest.raises(TypeError):  # why the plain view exists
        msgspec.to_builtins(env)
    done = next(call for _, call in calls if call.phase == "completed")
    assert done.output_data is not None and not isinstance(done.output_data, msgspec.Raw)
    assert normalize.to_builtins(msgspec.Raw(b'{"a":[1,2]}')) == {"a": [1, 2]}


def test_a_number_beyond_a_floats_range_in_a_native_message_reads_back_unchanged() -> None:
    """JSON puts no bound on a number; msgspec cannot hold ``1e400``.  A native message
    with one converts (the views skip it), and its events read back and encode to the
    same lines: the native message comes back as ``msgspec.Raw``, kept or translated."""
    kept = b'{"type":"brand_new","limit":1e400}'  # no adapter translates it: a session.update
    translated = b'{"type":"system","subtype":"init","session_id":"s1","model":"m","tools":[],"max":-9E07199254740991}'
    s = normalize.Session(normalize.adapter_class("claude-stream-json")(), clock=lambda: 0.0)
    events = s.feed(translated) + s.feed(kept) + s.close()
    assert any(isinstance(e, normalize.SessionUpdate) for e in events)
    assert any(isinstance(e, normalize.SessionEvent) and bytes(e.event.native.payload) == translated for e in events)
    for ev in events:
        line = normalize.encode(ev)
        back = normalize.decode(line)
        assert normalize.encode(back) == line
        if isinstance(back, normalize.SessionUpdate):
            assert isinstance(back.update.payload, msgspec.Raw) and bytes(back.update.payload) == kept


def test_ts_reads_as_a_datetime_and_the_wire_form_is_unchanged() -> None:
    capture = one_capture_per_protocol()[0]
    ev = next(e for e in events_of(capture) if isinstance(e, normalize.SessionEvent))
    env = ev.event
    assert isinstance(env.timestamp, datetime)
    assert env.timestamp.tzinfo is not None
    assert env.timestamp == datetime.fromisoformat(env.ts)
    assert env.timestamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S") == env.ts[:19]
    assert json.loads(normalize.encode(ev))["event"]["ts"] == env.ts


# ------------------------------------------------------------------ names and docs


def test_every_public_class_has_its_own_docstring() -> None:
    missing = [
        name
        for name in normalize.__all__
        if inspect.isclass(obj := getattr(normalize, name))
        and not compiled(sys.modules[obj.__module__])  # mypyc keeps no docstrings
        and not (obj.__dict__.get("__doc__") or "").strip()
    ]
    assert missing == []
    assert "Base of every normalized body" not in (inspect.getdoc(normalize.ToolCall) or "")


def test_warning_and_error_have_names_that_do_not_shadow_builtins() -> None:
    namespace: dict[str, Any] = {}
    exec("from normalize import *", namespace)
    assert namespace["WarningBody"] is normalize.Warning
    assert namespace["ErrorBody"] is normalize.Error
    assert "Warning" not in namespace and "Error" not in namespace
    line = (
        b'{"type":"session.event","sessionId":"s","event":{"sessionId":"s","agent":"a","seq":1,'
        b'"ts":"2026-01-01T00:00:00.000Z","origin":"live","native":{"protocol":"core","payload":null},'
        b'"kind":"warning","message":"m"}}'
    )
    ev = normalize.decode(line)
    assert isinstance(ev, normalize.SessionEvent)
    assert isinstance(ev.event.body, normalize.WarningBody)


def test_the_top_level_help_is_written_for_a_person() -> None:
    text = _parser().format_help()
    assert "``" not in text
    assert "The ``normalize`` command line" not in text
    first = text.split("\n\n")[1]
    assert first.startswith("Read what AI coding agents write")
    for command in ("convert", "tap", "replay", "detect", "validate", "stats", "export", "otel", "doctor"):
        assert f"\n    {command} " in text, command
    assert "examples:" in text and "Exit codes" in text


# ------------------------------------------------------------------ pydantic, for FastAPI apps


def golden_lines() -> list[bytes]:
    out: list[bytes] = []
    for capture in one_capture_per_protocol():
        out.extend(line for line in golden_path(capture).read_bytes().splitlines() if line.strip())
    return out


def test_the_pydantic_models_are_public_and_agree_with_the_wire() -> None:
    from pydantic import BaseModel, TypeAdapter

    from normalize.models import CoreEvent, SessionCreated, StreamLine, ToolCallEvent, model_of

    lines = golden_lines()
    adapter: TypeAdapter[Any] = TypeAdapter(StreamLine)
    for raw in lines:
        model = adapter.validate_json(raw)
        assert json.loads(model.model_dump_json(by_alias=True, exclude_unset=True)) == json.loads(raw)

    class Batch(BaseModel):  # a user's own model holding normalized events
        source: str
        events: list[CoreEvent]

    events = [json.loads(x) for x in lines if b'"stream.header"' not in x]
    batch = Batch.model_validate({"source": "test", "events": events})
    assert type(batch.events[0]).__name__ == "SessionCreated"
    assert any(type(e).__name__ == "SessionEvent" for e in batch.events)
    assert "events" in Batch.model_json_schema()["properties"]
    assert model_of(normalize.SessionCreated) is SessionCreated
    assert "call_id" in ToolCallEvent.model_fields


def test_a_fastapi_app_takes_and_returns_normalized_events() -> None:
    fastapi = pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    app = fastapi.FastAPI()
    seen: list[str] = []

    @app.post("/events")  # type: ignore[untyped-decorator]
    def ingest(event: normalize.models.CoreEvent) -> dict[str, str]:  # resolved as FastAPI resolves a user's
        seen.append(event.tag_)
        return {"type": event.tag_}

    client = TestClient(app)
    good = next(x for x in golden_lines() if b'"kind":"tool-call"' in x)
    r = client.post("/events", content=good, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    assert r.json() == {"type": "session.event"}
    bad = json.loads(good)
    del bad["event"]["callId"]
    r = client.post("/events", json=bad)
    assert r.status_code == 422
    assert any("callId" in [str(p) for p in err["loc"]] for err in r.json()["detail"])
    assert "/events" in client.get("/openapi.json").json()["paths"]
