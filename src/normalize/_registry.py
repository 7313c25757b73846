"""Finding adapters: the entry-point group ``normalize.adapters``, and detection.

The core never imports an adapter by name.  Built-in adapters are registered
in normalize's own ``pyproject.toml`` exactly as a third party registers one::

    [project.entry-points."normalize.adapters"]
    my-agent = "my_package.adapter:MyAgentAdapter"

:func:`register` adds one in-process (tests, notebooks).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ._contract import Adapter, Sample
from ._errors import DetectionError, NotASession, UsageError

__all__ = [
    "ENTRY_POINT_GROUP",
    "adapter_class",
    "available",
    "detect_protocol",
    "is_stream_header",
    "register",
    "unregister",
]

ENTRY_POINT_GROUP = "normalize.adapters"

_loaded: dict[str, type[Adapter]] | None = None
_extra: dict[str, type[Adapter]] = {}


def _entry_points() -> dict[str, type[Adapter]]:
    global _loaded
    if _loaded is None:
        # here, not at the top: importlib.metadata takes about a quarter of ``import normalize``
        # (it brings the email package), and a program that only reads events never needs it
        from importlib.metadata import entry_points

        found: dict[str, type[Adapter]] = {}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            cls = ep.load()
            if not (isinstance(cls, type) and issubclass(cls, Adapter)):
                raise UsageError(f"entry point {ep.name!r} ({ep.value}) is not a normalize Adapter subclass")
            found[ep.name] = cls
        _loaded = found
    return _loaded


def available() -> dict[str, type[Adapter]]:
    """Every registered adapter class by protocol name."""
    return {**_entry_points(), **_extra}


def register(cls: type[Adapter], name: str | None = None) -> None:
    """Register an adapter class in this process (entry points are the durable way)."""
    _extra[name or cls.protocol] = cls


def unregister(name: str) -> None:
    _extra.pop(name, None)


def adapter_class(protocol: str) -> type[Adapter]:
    """The adapter class for a protocol name; :class:`UsageError` if none is registered."""
    adapters = available()
    try:
        return adapters[protocol]
    except KeyError:
        names = ", ".join(sorted(adapters)) or "none"
        raise UsageError(f"no adapter for protocol {protocol!r} (registered: {names})") from None


_depth_check = msgspec.json.Decoder(msgspec.Raw)


def _is_json(message: bytes) -> bool:
    """Whether a message is one JSON value msgspec can decode (not nested too deeply)."""
    try:
        _depth_check.decode(message)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


class _HeaderView(msgspec.Struct, frozen=True, rename="camel"):
    type: str
    schema_version: str
    library: str


_header = msgspec.json.Decoder(_HeaderView)


def is_stream_header(message: bytes) -> bool:
    """Whether a message is the first line of a normalized stream (normalize's own output)."""
    if b'"stream.header"' not in message:
        return False
    try:
        return _header.decode(message).type == "stream.header"
    except (msgspec.DecodeError, RecursionError):
        return False


def _score(cls: type[Adapter], sample: Sequence[Sample]) -> float:
    try:
        return cls.detect(sample)
    except RecursionError:  # a detector that still met one: not recognisably this protocol
        return 0.0


def detect_protocol(sample: Sequence[Sample]) -> str:
    """The protocol of an input from its first messages.

    Every registered adapter scores the sample; the best score above zero wins.
    No score, or two best adapters tied, is a :class:`DetectionError`: a wrong
    guess would mis-translate silently, an error does not.

    Lines that are not JSON (a banner an agent prints before its stream, a
    warning, a line nested too deeply to read) are left out of the sample, so
    one of them never hides the protocol; the adapters score what they
    recognise among the rest.  A sample starting with a ``stream.header`` is
    normalize's own output: :class:`NotASession`.
    """
    if not sample:
        raise DetectionError("empty input: no message to detect a protocol from")
    json_sample = [s for s in sample if _is_json(s[0])]
    if json_sample and is_stream_header(json_sample[0][0]):
        raise NotASession("a normalized stream (normalize's own output), not a native session")
    sample = json_sample or list(sample)
    scores = sorted(((_score(cls, sample), name) for name, cls in available().items()), reverse=True)
    if not scores or scores[0][0] <= 0:
        head = sample[0][0][:120].decode("utf-8", errors="replace")
        raise DetectionError(f"unknown format: no adapter recognises a stream starting {head!r}")
    if len(scores) > 1 and scores[1][0] == scores[0][0]:
        raise DetectionError(f"ambiguous format: {scores[0][1]} and {scores[1][1]} both match; pass --protocol")
    return scores[0][1]
