"""A progress bar for the folder commands, drawn on stderr only when it is a terminal."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

__all__ = ["Progress"]

_WIDTH = 24
#: Seconds between two redraws: a folder of small files would otherwise spend its time drawing.
_EVERY = 0.1


class Progress:
    """``with Progress("converting", total) as bar: bar.step(name)``; draws nothing off a terminal.

    The bar is one line rewritten in place and erased at the end, so what the
    command prints on stderr (skipped files, the summary) is never mixed into it.
    """

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = total > 1 and self.stream.isatty()
        self._drawn = 0.0

    def update(self, done: int, total: int) -> None:
        """Set where the run is (when the total is known only once the work started)."""
        self.total = total
        self.enabled = total > 1 and self.stream.isatty()
        self.done = done - 1
        self.step()

    def step(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._drawn < _EVERY and self.done < self.total:
            return
        self._drawn = now
        filled = _WIDTH * self.done // max(self.total, 1)
        bar = "#" * filled + "-" * (_WIDTH - filled)
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total}")
        self.stream.flush()

    def clear(self) -> None:
        """Erase the bar (before printing a message while it is shown)."""
        if self.enabled and self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = 0.0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.clear()
