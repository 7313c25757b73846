"""The smallest ACP host, for the drive core's tests: enough for the core's rules, not a real backend."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any, ClassVar

from normalize import AgentExited, PermissionRequest
from normalize._drive import Backend, ImageData, Wire, option_for
from normalize._model import EventEnvelope

FAKE = Path(__file__).parent / "fakes" / "tiny_acp.py"


class TinyAcp(Backend):
    """A host for tiny_acp.py: initialize, session/new, prompts, permission answers, cancel."""

    name: ClassVar[str] = "tiny"
    protocol: ClassVar[str] = "acp"
    program: ClassVar[str] = sys.executable

    def command(self) -> list[str]:
        return [*(self.options.command or [sys.executable, str(FAKE)]), *self.options.args]

    async def start(self, wire: Wire) -> None:
        await wire.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        self.sid = (await wire.request("session/new", {"cwd": str(wire.cwd), "mcpServers": []}))["sessionId"]

    async def prompt(self, wire: Wire, text: str, images: list[ImageData]) -> None:
        params = {"sessionId": self.sid, "prompt": [{"type": "text", "text": text}]}

        async def run() -> None:
            with contextlib.suppress(AgentExited):
                await wire.request("session/prompt", params)

        wire.start_soon(run)

    async def respond(self, wire: Wire, request: EventEnvelope, decision: Any, answers: Any) -> None:
        assert isinstance(request.body, PermissionRequest)
        option = option_for(request.body, decision)
        assert option is not None
        outcome = {"outcome": "selected", "optionId": option.id}
        await wire.reply(request.native.data["id"], {"outcome": outcome})

    async def cancel(self, wire: Wire) -> None:
        await wire.notify("session/cancel", {"sessionId": self.sid})


class Ghost(TinyAcp):
    """An agent whose program is not installed."""

    name: ClassVar[str] = "ghost"
    program: ClassVar[str] = "no-such-agent-anywhere"

    def command(self) -> list[str]:
        return [self.program]
