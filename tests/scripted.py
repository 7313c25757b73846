"""A scripted adapter for testing the Session: each native message says what to emit.

A message is ``{"do": [<body JSON with "kind">, ...], "ts": ..., "method": ..., "sub": ...,
"origin": ..., "pass": true, "bad": true}``; anything else that is JSON is passed through,
and what is not JSON is malformed.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

import normalize
from normalize import Adapter, Direction, Emit, Item, MalformedMessage, Passthrough, Problem, ProtocolViolation
from normalize._model import AnyBody


class _Script(msgspec.Struct, frozen=True):
    do: list[msgspec.Raw] = []
    ts: str | None = None
    method: str | None = None
    sub: str | None = None
    origin: str | None = None
    bad: bool = False


_decoder = msgspec.json.Decoder(_Script)
_body = msgspec.json.Decoder(AnyBody)


class ScriptedAdapter(Adapter):
    protocol = "scripted"
    agent = "scripted-agent"
    stored: ClassVar[bool] = False

    @classmethod
    def detect(cls, sample: Any) -> float:
        return 1.0 if sample and sample[0][0].startswith(b'{"do"') else 0.0

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        try:
            script = _decoder.decode(message)
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"not a script: {exc}") from exc
        out: list[Item] = [normalize.Source(method=script.method, ts=script.ts)]
        if script.bad:
            out.append(Problem(error=ProtocolViolation("scripted problem")))
        if not script.do and not script.bad:
            out.append(Passthrough(method=script.method))
        for raw in script.do:
            body = _body.decode(raw)
            out.append(Emit(body=body, subagent_id=script.sub, origin=script.origin))  # type: ignore[arg-type]
        return out

    def close(self) -> list[Item]:
        self._closed = True
        return []


def msg(*bodies: normalize.Body, **kw: Any) -> bytes:
    return msgspec.json.encode({"do": [msgspec.Raw(msgspec.json.encode(b)) for b in bodies], **kw})
