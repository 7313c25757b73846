"""The ``hm`` backend: ``hm agent --rpc``, JSON commands on stdin, events and responses on stdout.

Rules of the protocol this backend relies on (hm's RPC document; the adapter is
``normalize.adapters.hm_json``, whose Facts block holds the rest):

* hm writes ``session_start`` first, then waits for commands: :meth:`HmBackend.start`
  returns once it came.
* Every command is sent with an ``id`` of its own (``"1"``, ``"2"``, ...); hm's
  ``response`` carries it back, and may land between the events of a running turn, so
  responses are matched by id (``wire.expect(("hm", id))``), never by position.
  ``ok: false`` raises :class:`~normalize.drive.AgentRequestFailed` with hm's ``error``.
* ``prompt`` is answered when its turn starts and refused while another runs: hm does not
  queue a second ``prompt`` (its ``follow_up`` does, see below), so ``queues_prompts`` is
  False and :class:`~normalize.drive.DriveSession` raises ``TurnRunning`` before sending.
* ``approve`` / ``answer`` fail unless the call waits for them: that ``ok: false`` is an
  :class:`~normalize.drive.UnknownRequest` (already resolved, or never asked).
* ``abort`` stops the turn: calls waiting for approval are refused, questions go
  unanswered, queued messages are dropped; the turn ends with ``turn_end`` ``error:
  "aborted"``.
* Closing stdin makes hm wait for the running turn, write ``session_end`` and exit 0; to
  stop at once, ``abort`` first (what :meth:`HmBackend.stop` does when a turn runs).

Not exposed: ``steer`` and ``follow_up`` (the drive API has one way to send a message,
``prompt``), ``compact``, ``fork``, ``export``, ``get_state``, ``list_sessions``.  A host that
needs them can send the command itself with ``wire.send``; the adapter translates hm's
answers to all of them.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .._errors import UsageError
from .._model import Decision, EventEnvelope, PermissionRequest, UserQuestion
from ._core import AgentRequestFailed, Backend, DriveOptions, ImageData, UnknownRequest, Wire

__all__ = ["HmBackend"]

#: Seconds a command waits for its response.  ``prompt`` is answered when its turn starts,
#: the others at once: none of them waits for a model.
RESPONSE_TIMEOUT = 60.0

#: respond() decisions -> ``approve`` fields.  hm has no lasting refusal: ``deny-always``
#: refuses this call, as ``deny``.
APPROVALS: dict[Decision, dict[str, bool]] = {
    "allow": {"allow": True},
    "allow-always": {"allow": True, "for_session": True},
    "deny": {"allow": False},
    "deny-always": {"allow": False},
}


class HmBackend(Backend):
    """Drives ``hm agent --rpc``.  See the module's rules."""

    name: ClassVar[str] = "hm"
    protocol: ClassVar[str] = "hm-json"
    program: ClassVar[str] = "hm"
    queues_prompts: ClassVar[bool] = False

    def __init__(self, options: DriveOptions) -> None:
        super().__init__(options)
        self._ids = 0
        self._session: dict[str, Any] | None = None  # the latest session_start line
        self._prompts: set[str] = set()  # ids of the prompt commands not yet answered
        self._running = False  # a prompt was accepted and its turn_end has not come

    # ------------------------------------------------------------ command line

    def flags(self) -> list[str]:
        o = self.options
        fixed = ["agent", "--rpc", "--cwd", str(o.cwd)]
        if o.mode:
            fixed += ["--mode", o.mode]
        if o.model:
            fixed += ["--model", o.model]
        if o.resume:
            fixed += ["--session", o.resume]
        return fixed

    # ------------------------------------------------------------ commands

    async def _command(self, wire: Wire, type_: str, **fields: Any) -> dict[str, Any]:
        """Sends one command and returns hm's ``ok`` response; ``ok: false`` raises AgentRequestFailed."""
        self._ids += 1
        cid = str(self._ids)
        if type_ == "prompt":
            self._prompts.add(cid)
        waiter = wire.expect(("hm", cid))
        await wire.send({"id": cid, "type": type_, **fields})
        response: dict[str, Any] = await waiter.wait(RESPONSE_TIMEOUT)
        if response.get("ok") is not True:
            error = response.get("error") or "no reason given"
            raise AgentRequestFailed(type_, None, str(error), response)
        return response

    async def start(self, wire: Wire) -> None:
        if self._session is None:
            waiter = wire.expect(("hm", "session_start"))
            await waiter.wait()  # the session's start_timeout bounds it

    async def prompt(self, wire: Wire, text: str, images: list[ImageData]) -> None:
        fields: dict[str, Any] = {"text": text}
        if images:
            # hm tells the formats apart by their bytes: the MIME type is not sent
            fields["images"] = [{"data": image.data} for image in images]
        await self._command(wire, "prompt", **fields)

    async def respond(
        self,
        wire: Wire,
        request: EventEnvelope,
        decision: Decision | None,
        answers: dict[str, str] | None,
    ) -> None:
        body = request.body
        if isinstance(body, UserQuestion):
            await self._answer(wire, body, decision, answers)
            return
        if not isinstance(body, PermissionRequest):
            raise UnknownRequest(f"{request.kind} is not a request hm waits for")
        if decision == "cancel":
            # hm withdraws a request only by aborting the turn
            await self.cancel(wire)
            return
        if decision is None or decision not in APPROVALS:
            raise UsageError(f"hm approvals take allow, allow-always, deny, deny-always or cancel, not {decision!r}")
        await self._settle(wire, "approve", body.request_id, call_id=body.request_id, **APPROVALS[decision])

    async def _answer(
        self, wire: Wire, body: UserQuestion, decision: Decision | None, answers: dict[str, str] | None
    ) -> None:
        if decision == "cancel" and not answers:
            await self.cancel(wire)  # hm ends a question's wait only by aborting the turn
            return
        if not answers:
            raise UsageError("an hm question takes answers={question: text}")
        # hm asks one free-text question, whose id is the call id (DriveSession keys answers by id)
        text = answers.get(body.request_id)
        if text is None:
            raise UsageError(f"no answer for the question of call {body.request_id}")
        await self._settle(wire, "answer", body.request_id, call_id=body.request_id, text=text)

    async def _settle(self, wire: Wire, type_: str, request_id: str, **fields: Any) -> None:
        try:
            await self._command(wire, type_, **fields)
        except AgentRequestFailed as exc:
            # hm refuses approve/answer for a call that does not wait for it (any more)
            raise UnknownRequest(f"hm has no call {request_id!r} waiting: {exc.error_message}") from exc

    async def cancel(self, wire: Wire) -> None:
        await self._command(wire, "abort")

    async def set_mode(self, wire: Wire, mode: str) -> None:
        await self._command(wire, "set_mode", mode=mode)

    async def set_model(self, wire: Wire, model: str) -> None:
        # an empty provider keeps the current one; effort is kept when left out
        await self._command(wire, "set_model", model=model)

    async def stop(self, wire: Wire) -> None:
        if self._running and not wire.exited:
            # hm would wait for the running turn once stdin closes: stop it at once
            await self._command(wire, "abort")

    # ------------------------------------------------------------ agent lines

    async def on_message(self, wire: Wire, msg: Any) -> None:
        if not isinstance(msg, dict):
            return
        kind = msg.get("type")
        if kind == "response":
            cid = msg.get("id")
            if isinstance(cid, str):
                if cid in self._prompts:
                    self._prompts.discard(cid)
                    self._running = self._running or msg.get("ok") is True
                wire.resolve(("hm", cid), msg)
        elif kind == "session_start":
            self._session = msg
            wire.resolve(("hm", "session_start"), msg)
        elif kind == "turn_end" and msg.get("session") == (self._session or {}).get("session"):
            self._running = False
