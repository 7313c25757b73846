"""The wire views of the ``codex-exec-json`` adapter, :mod:`normalize.adapters.codex_exec_json`:
the msgspec Structs its lines decode into, and their decoders; a module apart,
interpreted in the compiled build (docs/adapters.md).
"""

from __future__ import annotations

import msgspec
from msgspec import Raw, Struct

from normalize.adapters import _codex_items as ci
from normalize.adapters._codex_rollout_views import Event


class _Usage(Struct, frozen=True, gc=False):
    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_output_tokens: int | None = None


class _ErrorInfo(Struct, frozen=True, gc=False):
    message: str = ""


class _Change(Struct, frozen=True, gc=False):
    path: str
    kind: str | None = None


class _Todo(Struct, frozen=True, gc=False):
    text: str
    completed: bool = False


class _Item(Struct, frozen=True, gc=False):
    """Every item type's fields in one view; each handler reads its own."""

    id: str
    type: str
    text: str | None = None
    command: str | None = None
    aggregated_output: str | None = None
    exit_code: int | None = None
    status: str | None = None
    changes: list[_Change] | None = None
    server: str | None = None
    tool: str | None = None
    arguments: Raw = ci.NULL
    result: Raw = ci.NULL
    error: _ErrorInfo | None = None
    query: str | None = None
    action: Raw = ci.NULL
    items: list[_Todo] | None = None
    message: str | None = None


class _Line(Struct, frozen=True, gc=False):
    type: str
    thread_id: str | None = None
    item: _Item | None = None
    usage: _Usage | None = None
    error: _ErrorInfo | None = None
    message: str | None = None


class _Head(Struct, frozen=True, gc=False):
    type: str


class _OldLine(Struct, frozen=True, gc=False):
    """A line of the older shape: config, prompt, or ``{id, msg}``."""

    type: str | None = None
    id: str | None = None
    msg: Raw = ci.NULL
    prompt: str | None = None
    model: str | None = None
    workdir: str | None = None
    provider: str | None = None


class _OldMsg(Struct, frozen=True, gc=False):
    type: str = ""
    message: str | None = None


class _AnyLine(Struct, frozen=True, gc=False):
    """A line of either shape: the fields of ``_Line`` and ``_OldLine`` in one view.

    A line is decoded once, with this view (``msg`` decoded with it, as the rollout
    event it is).  A line it cannot take, malformed or with a field of another type than
    a view reads, goes through the views it stands for (``_feed_checked``), which give
    the same events or the same error as they always did.
    """

    type: str | None = None
    thread_id: str | None = None
    item: _Item | None = None
    usage: _Usage | None = None
    error: _ErrorInfo | None = None
    message: str | None = None
    # the older shape
    id: str | None = None
    msg: Event | None = None
    prompt: str | None = None
    model: str | None = None
    workdir: str | None = None
    provider: str | None = None


_any_decoder = msgspec.json.Decoder(_AnyLine)
_decoder = msgspec.json.Decoder(_Line)
_head_decoder = msgspec.json.Decoder(_Head)
_old_decoder = msgspec.json.Decoder(_OldLine)
_old_msg_decoder = msgspec.json.Decoder(_OldMsg)
