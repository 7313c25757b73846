"""The base of the built-in line adapters, the ones the compiled build compiles
(docs/performance.md, "The compiled build").

Compiled with mypyc, an adapter keeps the attributes its class declares in the instance
itself; what :class:`~normalize.Adapter` (interpreted) and the Session set on it would go to
a ``__dict__`` made for them alone, a few hundred bytes more per session, and a connection
keeps every session's adapter.  Declared here, they are the compiled adapter's own too.
In the pure-Python build this class adds nothing but the declarations.
"""

from __future__ import annotations

from typing import Any

from normalize._contract import Adapter, Emit
from normalize._errors import UsageError
from normalize._lifecycle import Calls
from normalize._model import Body

__all__ = ["BuiltinAdapter", "on_thread", "version_tuple"]


class BuiltinAdapter(Adapter):
    """An :class:`~normalize.Adapter` declaring what every adapter is given."""

    #: every built-in line adapter decodes each line whole before it returns, or raises
    #: (tests/test_adapter_properties.py holds each one to it)
    decodes_whole = True

    calls: Calls
    _closed: bool
    _evicted: list[Any]

    def _check_open(self) -> None:
        # Adapter's, compiled with the adapters that call it at every message
        if self._closed:
            raise UsageError(f"{type(self).__name__}.feed() after close()")


def on_thread(body: Body, subagent_id: str | None) -> Body | Emit:
    """``body`` as an item of the main thread (bare: an Emit would say nothing more, and
    costs more to make and to read) or of the sub-agent ``subagent_id``.

    Here, not beside :class:`~normalize.Emit`, so that the compiled build compiles it with
    the adapters that call it for every item."""
    return body if subagent_id is None else Emit(body=body, subagent_id=subagent_id)


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """``1.10.2`` as ``(1, 10, 2)``; None when it does not start with numbers."""
    parts: list[int] = []
    for part in (version or "").split("."):
        digits = part[: len(part) - len(part.lstrip("0123456789"))]
        if not digits:
            break
        parts.append(int(digits))
        if digits != part:
            break
    return tuple(parts) or None
