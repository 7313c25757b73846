"""The pydantic boundary, derived from the msgspec definitions (never kept by hand).

* :func:`json_schema`: the JSON Schema of a normalized stream line (``normalize schema``);
* :func:`core_event_adapter`: a pydantic ``TypeAdapter`` validating wire-form CoreEvents
  (FastAPI and other pydantic apps can use the same models);
* :func:`validate_lines`: schema *and* envelope rules over an untrusted JSONL stream.

Each msgspec Struct becomes one pydantic model with the same fields, wire names
(aliases), tags and optionality; ``session.event`` gets one flat model per body
kind (envelope fields, then ``kind``, then the body's fields), discriminated on
``kind``, as on the wire.
"""

from __future__ import annotations

import functools
import re
import types
import typing
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, BinaryIO, Literal, Union

import msgspec
from msgspec import Struct
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from ._codec import StreamHeader, _EnvelopeWire
from ._lines import DEFAULT_MAX_LINE, LineProblem, LineSplitter
from ._model import BODY_TYPES, CORE_EVENT_TYPES, SessionEvent

__all__ = [
    "ValidationProblem",
    "core_event_adapter",
    "json_schema",
    "line_adapter",
    "validate_lines",
    "validate_stream",
]

#: Unknown members are allowed and kept: a stream written by a newer normalize (or an extension
#: of a third-party adapter) stays valid for an older reader (docs/events.md, "Forward compatibility").
_CONFIG = ConfigDict(extra="allow", frozen=True, populate_by_name=True)
_models: dict[type, type[BaseModel]] = {}


def _tag(cls: type[Struct]) -> tuple[str, str] | None:
    cfg = cls.__struct_config__
    if cfg.tag_field is None or not isinstance(cfg.tag, str):
        return None
    return cfg.tag_field, cfg.tag


def _ptype(tp: Any) -> Any:
    """A msgspec-side annotation as a pydantic-side one."""
    if tp is msgspec.Raw or tp is Any:
        return Any
    if isinstance(tp, type) and issubclass(tp, Struct):
        return _model(tp)
    origin = typing.get_origin(tp)
    if origin is Literal:
        return tp
    if origin in (Union, types.UnionType):
        return Union[tuple(_ptype(a) for a in typing.get_args(tp))]
    if origin is list:
        (arg,) = typing.get_args(tp)
        return list[_ptype(arg)]  # type: ignore[misc]
    if origin is dict:
        k, v = typing.get_args(tp)
        return dict[_ptype(k), _ptype(v)]  # type: ignore[misc]
    return tp


def _literal(value: str) -> Any:
    return Literal[value]


def _fields(cls: type[Struct]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in msgspec.structs.fields(cls):
        default = ... if f.required else f.default
        out[f.name] = (_ptype(f.type), Field(default, alias=f.encode_name))
    return out


def _model(cls: type[Struct]) -> type[BaseModel]:
    if cls in _models:
        return _models[cls]
    fields: dict[str, Any] = {}
    tag = _tag(cls)
    if tag is not None:
        fields["tag_"] = (_literal(tag[1]), Field(alias=tag[0]))
    fields.update(_fields(cls))
    model: type[BaseModel] = create_model(cls.__name__, __config__=_CONFIG, **fields)
    _models[cls] = model
    return model


@functools.cache
def _event_models() -> list[type[BaseModel]]:
    envelope = _fields(_EnvelopeWire)
    out = []
    for body in BODY_TYPES:
        prefix = dict(envelope)
        if "subagent_id" in {f.name for f in msgspec.structs.fields(body)}:
            del prefix["subagent_id"]
        # wire order: envelope fields, then kind, then the body's own fields
        tag = _tag(body)
        assert tag is not None
        fields: dict[str, Any] = dict(prefix)
        fields["tag_"] = (_literal(tag[1]), Field(alias=tag[0]))
        fields.update(_fields(body))
        out.append(create_model(f"{body.__name__}Event", __config__=_CONFIG, **fields))
    return out


@functools.cache
def _core_models() -> tuple[type[BaseModel], ...]:
    events = _event_models()
    event_union: Any = typing.Annotated[Union[tuple(events)], Field(discriminator="tag_")]
    models = []
    for cls in CORE_EVENT_TYPES:
        if cls is SessionEvent:
            models.append(
                create_model(
                    "SessionEvent",
                    __config__=_CONFIG,
                    tag_=(_literal("session.event"), Field(alias="type")),
                    session_id=(str, Field(alias="sessionId")),
                    event=(event_union, Field(alias="event")),
                )
            )
        else:
            models.append(_model(cls))
    return tuple(models)


@functools.cache
def core_event_adapter() -> TypeAdapter[Any]:
    """Validates one wire-form CoreEvent (JSON) into its pydantic model."""
    union: Any = typing.Annotated[Union[_core_models()], Field(discriminator="tag_")]
    return TypeAdapter(union)


@functools.cache
def line_adapter() -> TypeAdapter[Any]:
    """Validates any line of a normalized stream: the header or a CoreEvent."""
    union: Any = typing.Annotated[Union[(*_core_models(), _model(StreamHeader))], Field(discriminator="tag_")]
    return TypeAdapter(union)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one line of a normalized stream."""
    schema = line_adapter().json_schema(by_alias=True, mode="serialization")
    schema["title"] = "normalize stream line"
    schema["$comment"] = "Generated by `normalize schema` from the msgspec definitions; do not edit."
    return schema


def dump(model: BaseModel) -> bytes:
    """A validated model back to wire JSON (the fields the input had, by wire name)."""
    return model.model_dump_json(by_alias=True, exclude_unset=True).encode()


class ValidationProblem(msgspec.Struct, frozen=True):
    """One problem found by :func:`validate_lines`."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        if not self.line:
            return self.message
        where = f"line {self.line}" + (f": {self.field}" if self.field else "")
        return f"{where}: {self.message}"


_TAGGED: tuple[type[Struct], ...] = (*BODY_TYPES, *CORE_EVENT_TYPES, StreamHeader)
_TAGS = {tag[1] for c in _TAGGED if (tag := _tag(c)) is not None}


def _loc(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a wire path (``event.callId``), union tags left out."""
    return ".".join(str(p) for p in loc if p not in _TAGS)


class _Rules:
    """The envelope rules, checked across a stream (per sessionId).

    seq and turn ids are per Session object (docs/events.md).  Two Session objects may
    carry the same sessionId in one file: ``convert FOLDER`` writes one stream per input
    (a ``stream.header`` each), and a session resumed in a later recording, or on a new
    connection of the same input, is announced again (``session.created`` or
    ``session.resumed``) by a Session of its own, its seq from 1.  So a header starts
    everything afresh, and a session's record line lets its next event start at 1."""

    def __init__(self) -> None:
        self.seq: dict[str, int] = {}
        self.turns: dict[str, int] = {}
        self.open: dict[str, str | None] = {}
        #: sessions whose record line came last: their next event may start a new seq from 1
        self.announced: set[str] = set()

    def check(self, lineno: int, ev: dict[str, Any]) -> Iterator[ValidationProblem]:
        line_type = ev.get("type")
        if line_type == "stream.header":  # a stream of its own: nothing carries over
            self.seq, self.turns, self.open, self.announced = {}, {}, {}, set()
            return
        if line_type in ("session.created", "session.resumed"):
            self.announced.add(ev["sessionId"])
            return
        if line_type != "session.event":
            return
        e = ev["event"]
        sid = e["sessionId"]
        if sid != ev["sessionId"]:
            yield ValidationProblem(
                lineno, "event.sessionId", f"{sid!r} differs from the CoreEvent's {ev['sessionId']!r}"
            )
        if not is_rfc3339(e["ts"]):
            yield ValidationProblem(lineno, "event.ts", f"{e['ts']!r} is not an RFC 3339 date-time")
        if sid in self.announced:
            self.announced.discard(sid)
            if e["seq"] == 1:  # a new Session object for this session: its own seq and turns
                self.seq.pop(sid, None)
                self.turns.pop(sid, None)
                self.open.pop(sid, None)
        want = self.seq.get(sid, 0) + 1
        if e["seq"] != want:
            yield ValidationProblem(lineno, "event.seq", f"expected {want}, got {e['seq']} (seq is contiguous from 1)")
        self.seq[sid] = e["seq"]
        kind, turn, open_ = e["kind"], e.get("turnId"), self.open.get(sid)
        if kind == "turn-start":
            if open_ is not None:
                yield ValidationProblem(lineno, "event.kind", f"turn-start while {open_} is open")
            n = self.turns.get(sid, 0) + 1
            self.turns[sid] = n
            open_ = f"turn:{n}"
            self.open[sid] = open_
        if turn != open_:
            want_turn = "no turnId" if open_ is None else f"turnId {open_!r}"
            yield ValidationProblem(lineno, "event.turnId", f"expected {want_turn}, got {turn!r}")
        if kind == "turn-complete":
            self.open[sid] = None


_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def is_rfc3339(value: object) -> bool:
    """Whether ``value`` is an RFC 3339 date-time (``2025-09-24T19:22:20.123Z``), a real one."""
    if not isinstance(value, str) or _RFC3339.fullmatch(value) is None:
        return False
    try:
        datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
    except ValueError:  # matches the form but is no date: month 13, 25:00
        return False
    return True


def _message(err: Any) -> str:
    """A pydantic error as a person reads it: wire names only, never the model's internal ones."""
    kind = err.get("type")
    ctx = err.get("ctx") or {}
    if kind in ("union_tag_not_found", "union_tag_invalid"):
        disc = str(ctx.get("discriminator", ""))
        wire = disc.split("|")[-1].strip().strip("'\"") or "type"
        if kind == "union_tag_not_found":
            return f'no "{wire}" member (or not a JSON object)'
        return f'unknown "{wire}" {ctx.get("tag")!r}; expected one of {ctx.get("expected_tags")}'
    return str(err["msg"])


def validate_lines(lines: Iterable[bytes | ValidationProblem]) -> Iterator[ValidationProblem]:
    """Check a normalized JSONL stream: the header, each line's schema, the envelope rules.

    For untrusted input: every problem is reported as a :class:`ValidationProblem`,
    never raised.  Types are checked strictly, as JSON has them (``"seq": "1"``,
    ``true`` or ``1.0`` are not the integer 1).  A line is one element of
    ``lines``; :func:`validate_stream` reads a file with a bound on line length.
    """
    adapter = line_adapter()
    rules = _Rules()
    decoder = msgspec.json.Decoder()
    first = True
    for lineno, raw in enumerate(lines, 1):
        if isinstance(raw, ValidationProblem):
            yield raw
            first = False
            continue
        if not raw.strip():
            continue
        try:
            obj = decoder.decode(raw)
        except msgspec.DecodeError as exc:
            yield ValidationProblem(lineno, "", f"not JSON: {exc}")
            first = False
            continue
        except RecursionError:
            yield ValidationProblem(lineno, "", "JSON nested too deeply to read")
            first = False
            continue
        try:
            adapter.validate_python(obj, by_alias=True, by_name=False, strict=True)
        except ValidationError as exc:
            for err in exc.errors():
                yield ValidationProblem(lineno, _loc(err["loc"]), _message(err))
            first = False
            continue
        except RecursionError:
            yield ValidationProblem(lineno, "", "JSON nested too deeply to check")
            first = False
            continue
        if first and obj.get("type") != "stream.header":
            yield ValidationProblem(lineno, "type", "the first line must be the stream.header")
        first = False
        yield from rules.check(lineno, obj)
    if first:
        yield ValidationProblem(0, "", "empty input: a normalized stream starts with a stream.header line")


def validate_stream(stream: BinaryIO, *, max_line: int = DEFAULT_MAX_LINE) -> Iterator[ValidationProblem]:
    """:func:`validate_lines` over a binary file, read in chunks with lines bounded by ``max_line``.

    A longer line is reported (``line N is longer than ...``) and skipped as it
    arrives, so memory stays bounded whatever the input.
    """
    return validate_lines(_bounded_lines(stream, max_line))


def _bounded_lines(stream: BinaryIO, max_line: int) -> Iterator[bytes | ValidationProblem]:
    splitter = LineSplitter(max_line)
    done = 0  # lines given so far: blank lines the splitter skips still count in the numbering
    while True:
        chunk = stream.read(1 << 16)
        items = splitter.feed(chunk) if chunk else splitter.close()
        for item in items:
            lineno = item.line if isinstance(item, LineProblem) else item[0]
            while done < lineno - 1:
                done += 1
                yield b""
            done += 1
            if isinstance(item, LineProblem):
                yield ValidationProblem(lineno, "", f"longer than {max_line} bytes: not read (the line bound)")
            else:
                yield item[1]
        if not chunk:
            return
