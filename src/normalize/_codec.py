"""The wire form of normalized streams: JSONL, one CoreEvent per line.

On the wire a ``session.event``'s ``event`` is one flat object, the envelope's
fields then the body's (``EventEnvelope & NormalizedBody``); in Python the body
is ``event.body``.  This module and the writer of its lines
(:func:`normalize._pipeline.encode_lines`, compiled in the compiled build) are the only
places that know the difference.  The first line of a stream is a :class:`StreamHeader`.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ._errors import MalformedMessage
from ._model import (
    CORE_EVENT_TYPES,
    AnyBody,
    EventEnvelope,
    Native,
    Origin,
    SessionEvent,
    SessionUpdate,
    Subagent,
    _Core,
    _PlainData,
)

__all__ = ["SCHEMA_VERSION", "StreamHeader", "decode", "encode", "encode_header", "to_builtins"]

#: The version of the normalized schema; bumps when a field changes meaning or goes away.
SCHEMA_VERSION = "1"


class StreamHeader(
    _PlainData,
    Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    tag_field="type",
    tag="stream.header",
):
    """The first line of a normalized stream: what wrote it, from what."""

    schema_version: str
    library: str
    library_version: str
    input: str | None = None
    protocol: str | None = None


class _EnvelopeWire(Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    session_id: str
    agent: str
    seq: int
    ts: str
    turn_id: str | None = None
    origin: Origin
    native: Native
    subagent_id: str | None = None


class _EnvelopeOut(Struct, frozen=True, gc=False, rename="camel", omit_defaults=True):
    """:class:`_EnvelopeWire` as the writer makes it: positional, in the wire's order (a
    struct made from keywords matches each name to its field).  ``origin`` and ``native``
    are always given; their ``UNSET`` default only lets them follow ``turn_id``."""

    session_id: str
    agent: str
    seq: int
    ts: str
    turn_id: str | None = None
    origin: Origin | UnsetType = UNSET
    native: Native | UnsetType = UNSET
    subagent_id: str | None = None


class _NativeWire(Struct, frozen=True, gc=False, kw_only=True):
    protocol: str
    payload: Raw
    method: str | None = None


class _EnvelopeIn(Struct, frozen=True, gc=False, kw_only=True, rename="camel"):
    session_id: str
    agent: str
    seq: int
    ts: str
    origin: Origin
    native: _NativeWire
    turn_id: str | None = None
    subagent_id: str | None = None


class _SessionEventIn(
    Struct, frozen=True, gc=False, kw_only=True, rename="camel", tag_field="type", tag="session.event"
):
    session_id: str
    event: Raw


class _SessionUpdateIn(
    Struct, frozen=True, gc=False, kw_only=True, rename="camel", tag_field="type", tag="session.update"
):
    session_id: str
    update: _NativeWire


_IN_TYPES: tuple[Any, ...] = (
    *(t for t in CORE_EVENT_TYPES if t is not SessionEvent and t is not SessionUpdate),
    _SessionEventIn,
    _SessionUpdateIn,
    StreamHeader,
)
_encoder = msgspec.json.Encoder()
_line_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(Union[_IN_TYPES])
_envelope_decoder = msgspec.json.Decoder(_EnvelopeIn)
_body_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(AnyBody)


def _encode_event(ev: SessionEvent) -> bytes:
    # the one writer of an event's line, _pipeline.encode_lines (bound below: it imports this module)
    buf = _encode_lines((ev,))
    del buf[-1]  # its newline
    return bytes(buf)


_EVENT_HEAD = b'{"type":"session.event","sessionId":'


def encode(event: _Core | StreamHeader) -> bytes:
    """One CoreEvent (or the header) as a JSON line, without the newline."""
    if isinstance(event, SessionEvent):
        return _encode_event(event)
    return _encoder.encode(event)


def encode_header(*, library_version: str, input: str | None, protocol: str | None) -> bytes:
    return _encoder.encode(
        StreamHeader(
            schema_version=SCHEMA_VERSION,
            library="normalize",
            library_version=library_version,
            input=input,
            protocol=protocol,
        )
    )


def decode(line: bytes | str) -> _Core | StreamHeader:
    """Read one line of a normalized stream back into its CoreEvent (or header).

    Native payloads come back as ``msgspec.Raw``, so re-encoding gives the same bytes.
    Raises :class:`~normalize.MalformedMessage` when the line is not a CoreEvent.
    """
    try:
        obj = _line_decoder.decode(line)
        if type(obj) is _SessionUpdateIn:
            # the untranslated message as it was written, like an event's native message: a
            # value msgspec cannot hold (a number beyond a float's range) is kept, not refused
            up = obj.update
            return SessionUpdate(
                session_id=obj.session_id,
                update=Native(protocol=up.protocol, method=up.method, payload=up.payload),
            )
        if not isinstance(obj, _SessionEventIn):
            return obj  # type: ignore[no-any-return]
        env = _envelope_decoder.decode(obj.event)
        body = _body_decoder.decode(obj.event)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise MalformedMessage(f"not a normalized event: {exc}") from exc
    native = Native(protocol=env.native.protocol, method=env.native.method, payload=env.native.payload)
    return SessionEvent(
        session_id=obj.session_id,
        event=EventEnvelope(
            session_id=env.session_id,
            agent=env.agent,
            seq=env.seq,
            ts=env.ts,
            origin=env.origin,
            native=native,
            body=body,
            turn_id=env.turn_id,
            # on a subagent body the one subagentId key is the body's (docs/events.md)
            subagent_id=None if isinstance(body, Subagent) else env.subagent_id,
        ),
    )


def to_builtins(obj: Any) -> Any:
    """Any normalized object as plain data: dicts, lists, strings, numbers, booleans, None.

    The shape is the JSON wire form: a CoreEvent as its line (a ``session.event``'s
    ``event`` one flat object, envelope and body fields together), an
    :class:`~normalize.EventEnvelope` as that flat object, a body or value type as its
    JSON object, keys by their wire names (``callId``).  Native payloads and tool
    inputs and outputs (``msgspec.Raw`` when read from the wire) are decoded, so
    the result goes to ``json.dumps``, a DataFrame or a template as it is.
    ``msgspec.Raw`` itself is decoded; anything else msgspec can encode is accepted.
    """
    if isinstance(obj, Raw):
        return msgspec.json.decode(obj)
    if isinstance(obj, EventEnvelope):
        return msgspec.json.decode(_encode_event(SessionEvent(session_id=obj.session_id, event=obj)))["event"]
    if isinstance(obj, _Core | StreamHeader):
        return msgspec.json.decode(encode(obj))
    return msgspec.json.decode(_encoder.encode(obj))


# the writer of the lines (_pipeline imports the wire structs above; compiled, in that build)
from ._pipeline import encode_lines as _encode_lines  # noqa: E402
