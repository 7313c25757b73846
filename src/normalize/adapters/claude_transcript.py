"""The `claude-transcript` adapter (not written yet: every message is kept untranslated)."""

from __future__ import annotations

from normalize import Adapter, Direction, Item, Passthrough


class ClaudeTranscriptAdapter(Adapter):
    protocol = "claude-transcript"
    agent = "claude-code"

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        return [Passthrough()]

    def close(self) -> list[Item]:
        self._closed = True
        return []
