"""Hypothesis strategies for the model, built from msgspec's own type information."""

from __future__ import annotations

from typing import Any

import msgspec
import msgspec.inspect as mi
from hypothesis import strategies as st

import normalize
from normalize._model import BODY_TYPES, CORE_EVENT_TYPES, SessionEvent

_text = st.text(max_size=12)
_json_leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | _text
json_values = st.recursive(
    _json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)


def _for(info: mi.Type) -> st.SearchStrategy[Any]:
    if isinstance(info, mi.StrType):
        return _text
    if isinstance(info, mi.IntType):
        return st.integers(0, 2**31)
    if isinstance(info, mi.FloatType):
        return st.floats(allow_nan=False, allow_infinity=False, width=32)
    if isinstance(info, mi.BoolType):
        return st.booleans()
    if isinstance(info, mi.NoneType):
        return st.none()
    if isinstance(info, mi.LiteralType):
        return st.sampled_from(info.values)
    if isinstance(info, mi.AnyType | mi.RawType):
        return json_values
    if isinstance(info, mi.ListType):
        return st.lists(_for(info.item_type), max_size=2)
    if isinstance(info, mi.UnionType):
        return st.one_of([_for(t) for t in info.types])
    if isinstance(info, mi.StructType):
        return struct(info.cls)
    raise TypeError(f"no strategy for {info!r}")


def struct(cls: type[msgspec.Struct]) -> st.SearchStrategy[Any]:
    """Instances of a Struct: required fields always, optional ones sometimes."""
    if cls is normalize.EventEnvelope:
        return envelopes()
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    required = {f.name: _for(f.type) for f in info.fields if f.required}
    optional = {f.name: _for(f.type) for f in info.fields if not f.required}
    return st.fixed_dictionaries(required, optional=optional).map(lambda kw: cls(**kw))


bodies = st.one_of([struct(b) for b in BODY_TYPES])


@st.composite
def envelopes(draw: st.DrawFn) -> normalize.EventEnvelope:
    body = draw(bodies)
    sub = None if isinstance(body, normalize.Subagent) else draw(st.none() | _text)
    return normalize.EventEnvelope(
        session_id=draw(_text),
        agent=draw(_text),
        seq=draw(st.integers(1, 10**6)),
        ts=draw(_text),
        origin=draw(st.sampled_from(["live", "replay"])),
        native=normalize.Native(
            protocol=draw(_text),
            method=draw(st.none() | _text),
            payload=msgspec.Raw(msgspec.json.encode(draw(json_values))),
        ),
        body=body,
        turn_id=draw(st.none() | _text),
        subagent_id=sub,
    )


core_events = st.one_of(
    [
        struct(c) if c is not SessionEvent else st.builds(SessionEvent, session_id=_text, event=envelopes())
        for c in CORE_EVENT_TYPES
    ]
)
