"""pydantic models of the normalized stream, for pydantic apps (FastAPI): validate, serialize, document.

::

    from fastapi import FastAPI
    from normalize.models import CoreEvent

    app = FastAPI()

    @app.post("/events")
    async def ingest(event: CoreEvent) -> dict[str, str]:   # validated against the normalized schema
        return {"type": event.tag_}

The models are derived from the msgspec definitions of :mod:`normalize` (never kept by
hand; a test checks that both accept and produce the same JSON for every golden
event).  Each field has its wire name as alias: pydantic and FastAPI validate wire
JSON as it is; ``model.model_dump(mode="json", by_alias=True, exclude_unset=True)``
gives it back.  The ``type`` or ``kind`` tag of a model is its ``tag_`` field.

* :data:`CoreEvent`: any CoreEvent, one line of a normalized stream but the header,
  discriminated on ``type`` (and a ``session.event`` on its ``kind``);
* :data:`StreamLine`: any line, the ``stream.header`` included;
* the model of each CoreEvent by its name (``SessionCreated``, ``SessionEvent``, ...),
  of each ``session.event`` flat wire form by its body's name and ``Event``
  (``ToolCallEvent``, ``AssistantDeltaEvent``, ...), and of every other type by its
  name (``ToolCall``, ``SessionRecord``, ``StreamHeader``, ...): ``from normalize.models import ToolCallEvent``;
* :func:`model_of`: the model of a msgspec type;
* :func:`json_schema` and :func:`validate_lines`, as ``normalize schema`` and
  ``normalize validate`` use them.

Importing this module imports pydantic; ``import normalize`` alone does not.
"""

from __future__ import annotations

import typing
from typing import Any, Union

from msgspec import Struct
from pydantic import BaseModel, Field

from . import _model as _types
from ._codec import StreamHeader
from ._schema import (
    ValidationProblem,
    _core_models,
    _event_models,
    _model,
    core_event_adapter,
    json_schema,
    line_adapter,
    validate_lines,
)

__all__ = [
    "CoreEvent",
    "StreamLine",
    "ValidationProblem",
    "core_event_adapter",
    "json_schema",
    "line_adapter",
    "model_of",
    "validate_lines",
]

#: Any CoreEvent (a line of a normalized stream but the header), as a pydantic type.
CoreEvent: Any = typing.Annotated[Union[_core_models()], Field(discriminator="tag_")]

#: Any line of a normalized stream, the ``stream.header`` included, as a pydantic type.
StreamLine: Any = typing.Annotated[Union[(*_core_models(), _model(StreamHeader))], Field(discriminator="tag_")]


def model_of(cls: type[Struct]) -> type[BaseModel]:
    """The pydantic model of a msgspec type of :mod:`normalize` (a CoreEvent, a body, a value type).

    A body's model is the body's own JSON object (``kind`` and its fields); the flat
    ``session.event`` form of a body is ``<Body>Event`` (``ToolCallEvent``).
    """
    if cls is _types.SessionEvent:
        return _by_name()["SessionEvent"]
    return _model(cls)


def _by_name() -> dict[str, type[BaseModel]]:
    out: dict[str, type[BaseModel]] = {}
    for name in _types.__all__:
        value = getattr(_types, name)
        if isinstance(value, type) and issubclass(value, Struct):
            out[name] = _model(value)
    out["StreamHeader"] = _model(StreamHeader)
    out.update({m.__name__: m for m in _event_models()})
    out.update({m.__name__: m for m in _core_models()})  # SessionEvent: the wire form, flat event inside
    return out


def __getattr__(name: str) -> type[BaseModel]:
    models = _by_name()
    if name in models:
        return models[name]
    raise AttributeError(f"module 'normalize.models' has no attribute {name!r}")
