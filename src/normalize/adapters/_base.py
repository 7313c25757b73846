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

from normalize._contract import Adapter
from normalize._errors import UsageError
from normalize._lifecycle import Calls

__all__ = ["BuiltinAdapter"]


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
