"""The base of the built-in line adapters, the ones the compiled build compiles
(docs/performance.md, "The compiled build").

Compiled with mypyc, an adapter keeps the attributes its class declares in the instance
itself; what :class:`~normalize.Adapter` (interpreted) and the Session set on it would go to
a ``__dict__`` made for them alone, a few hundred bytes more per session, and a connection
keeps every session's adapter.  Declared here, they are the compiled adapter's own too.
In the pure-Python build this class adds nothing but the declarations.
"""

from __future__ import annotations

from typing import Any, Final, Generic, TypeVar

import msgspec
from msgspec import Raw

from normalize._contract import Adapter, Emit
from normalize._errors import UsageError
from normalize._lifecycle import Calls
from normalize._model import Body

__all__ = ["BuiltinAdapter", "TextMemo", "on_thread", "version_tuple"]


class BuiltinAdapter(Adapter):
    """An :class:`~normalize.Adapter` declaring what every adapter is given."""

    #: every built-in line adapter decodes each line whole before it returns, or raises
    #: (tests/test_adapter_properties.py holds each one to it)
    decodes_whole = True

    calls: Calls
    _closed: bool
    _evicted: list[Any] | None = None

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


_STR: Final[msgspec.json.Decoder[str | None]] = msgspec.json.Decoder(str | None)

T = TypeVar("T")


class DecodeMemo(Generic[T]):
    """JSON values that recur whole from session to session, each decoded once.

    ``decode(raw)`` is ``decoder.decode(raw)`` (its ``msgspec.DecodeError`` too), or the
    value it gave for the same bytes before: a release's system prompt, written at the
    start of each of its sessions; the answer to a connection's handshake, fed again to
    each session the connection opens.  Values are told apart by their length, then by
    their bytes; up to ``size`` of them are kept (a folder's sessions come from a few
    releases), the oldest forgotten first.  What it gives depends only on the bytes:
    sessions (and threads) may share it, so a value given must not be changed.
    """

    __slots__ = ("_by_length", "_decode", "_size")

    def __init__(self, decoder: msgspec.json.Decoder[T], size: int = 8) -> None:
        self._by_length: dict[int, tuple[Raw, T]] = {}
        self._decode = decoder.decode
        self._size = size

    def decode(self, raw: Raw) -> T:
        length = len(raw)
        known = self._by_length.get(length)
        if known is not None and known[0] == raw:
            return known[1]
        value: T = self._decode(raw)
        by_length = self._by_length
        if known is None and len(by_length) >= self._size:
            by_length.pop(next(iter(by_length)), None)  # (another thread may have taken it out)
        by_length[length] = (raw.copy(), value)  # a copy: not a view keeping the whole line
        return value


class TextMemo(DecodeMemo[str | None]):
    """Long JSON strings that recur whole (:class:`DecodeMemo`), each read as one ``str``.

    ``text(raw)`` decodes the JSON string (or ``null``) ``raw``.  The same object again
    saves decoding it and, for text beyond ASCII, encoding it: the first encode keeps its
    UTF-8 in the ``str``.
    """

    __slots__ = ()

    def __init__(self, size: int = 8) -> None:
        super().__init__(_STR, size)

    def text(self, raw: Raw) -> str | None:
        return self.decode(raw)
