"""The ``agy`` backend: Google Antigravity CLI, ``--input-format stream-json --output-format stream-json``.

What agy's headless stream-json allows (protocols/antigravity.md; the adapter is
``normalize.adapters.antigravity_stream_json``):

* Prompts go on stdin, one ``{"event":"user","message":{"role":"user","content":TEXT}}``
  line per turn; one process serves the whole conversation, running the lines in order,
  each turn ending with its own ``result``.  A prompt written while a turn runs waits for
  it: ``queues_prompts`` is True.
* ``content`` takes text blocks only (agy refuses other block types): images raise
  :class:`~normalize.drive.NotSupported`.
* Whether ``init`` comes before the first stdin line is not known, so :meth:`AgyBackend.start`
  waits for nothing: the first prompt is what makes agy start its conversation.
* There is no control message: no permission reply, no interrupt, no mode or model change.
  Headless agy never asks: a tool its permissions do not allow is soft-denied (listed in
  ``result.denied_actions``, normalized as ``permission-auto`` deny), so no
  ``permission-request`` ever reaches :meth:`~normalize.drive.DriveSession.respond`.
  What may run is decided by agy's settings and flags (``--dangerously-skip-permissions``
  through ``args``).  ``set_mode`` / ``set_model`` raise ``NotSupported``: ``mode`` and
  ``model`` are the ``--mode`` and ``--model`` flags at start.
* Cancel is a signal: SIGINT ends the running turn with ``result`` ``status: "ERROR"``,
  ``error: "interrupted"``, and agy exits; :meth:`AgyBackend.cancel` returns once it did,
  so no prompt can be written to an agy on its way out.  The conversation stays resumable
  with ``drive("agy", resume=session.backend.conversation_id)`` (``--conversation``).
"""

from __future__ import annotations

import contextlib
import signal
from collections import deque
from collections.abc import Hashable
from typing import Any, ClassVar

import anyio
import msgspec

from ._core import (
    AgentExited,
    AgentRequestFailed,
    AuthenticationRequired,
    Backend,
    DriveError,
    DriveOptions,
    ImageData,
    NotSupported,
    Wire,
)

__all__ = ["AgyBackend"]

#: agy's own --print-timeout (default 5m) cuts a long turn short and reports it as a
#: success (1.2.17): a driven session's turns are bounded by the host, not by agy.
PRINT_TIMEOUT = "24h"
#: Seconds cancel() waits for agy to exit after SIGINT (it writes the turn's result first).
EXIT_WAIT = 10.0


class AgyBackend(Backend):
    """Drives ``agy`` headless stream-json.  See the module's rules."""

    name: ClassVar[str] = "agy"
    protocol: ClassVar[str] = "antigravity-stream-json"
    program: ClassVar[str] = "agy"
    queues_prompts: ClassVar[bool] = True

    def flags(self) -> list[str]:
        o = self.options
        fixed = ["--input-format", "stream-json", "--output-format", "stream-json"]
        if not any(a == "--print-timeout" or a.startswith("--print-timeout=") for a in o.args):
            fixed += ["--print-timeout", PRINT_TIMEOUT]
        if o.model:
            fixed += ["--model", o.model]
        if o.mode:
            fixed += ["--mode", o.mode]
        if o.resume:
            fixed += ["--conversation", o.resume]
        return fixed

    def __init__(self, options: DriveOptions) -> None:
        super().__init__(options)
        #: agy's ``conversation_id`` once it said it (``init``, ``result``): what ``resume=`` takes
        self.conversation_id: str | None = options.resume
        self._sent = 0  # prompts written
        self._taken = 0  # prompts agy took (user_input steps), or refused with a result
        self._results = 0  # results: one per prompt, in order
        self._waiting: deque[Hashable] = deque()  # the prompts not taken yet, oldest first

    async def start(self, wire: Wire) -> None:
        return None  # agy may write init only once it has read the first prompt

    async def prompt(self, wire: Wire, text: str, images: list[ImageData]) -> None:
        if images:
            raise NotSupported("agy's stream-json input takes text only, not images")
        key = ("agy", "prompt", self._sent + 1)
        waiter = wire.expect(key)
        self._waiting.append(key)
        try:
            await wire.send({"event": "user", "message": {"role": "user", "content": text}})
        except BaseException:
            self._waiting.remove(key)
            wire.resolve(key, None)
            raise
        self._sent += 1
        # taken (its user_input step), which for a queued prompt is when the turn before ended;
        # a result instead of it is a failure before the turn (login, model, input)
        await waiter.wait()

    async def cancel(self, wire: Wire) -> None:
        if self._results >= self._sent:
            return  # no turn runs or waits: nothing to interrupt (SIGINT would end an idle agy)
        # never resolved: it fails with AgentExited when agy exits, which is what is awaited
        key = ("agy", "exit")
        waiter = wire.expect(key)
        wire.signal(signal.SIGINT)
        with anyio.move_on_after(EXIT_WAIT), contextlib.suppress(AgentExited):
            await waiter.wait()
        wire.resolve(key, None)  # still running after EXIT_WAIT: it kept the session; stop waiting

    async def on_message(self, wire: Wire, msg: Any) -> None:
        try:
            view = msgspec.convert(msg, _Line)
        except msgspec.ValidationError:
            return  # not an agy line of the documented shape: the adapter reports it
        if view.event == "init":
            self._conversation(view.conversation_id)
        elif view.step_update is not None and view.step_update.step_type == "user_input":
            self._taken += 1
            if self._waiting:
                wire.resolve(self._waiting.popleft(), None)
        elif view.result is not None:
            self._conversation(view.result.conversation_id)
            self._results += 1
            if self._results > self._taken:
                # no turn was running: agy refused the oldest prompt before taking it
                self._taken += 1
                if self._waiting:
                    wire.fail(self._waiting.popleft(), _refusal(view.result))

    def _conversation(self, cid: str | None) -> None:
        if cid:
            self.conversation_id = cid


class _Step(msgspec.Struct):
    step_type: str | None = None


class _Result(msgspec.Struct):
    conversation_id: str | None = None
    status: str | None = None
    error: str | None = None


class _Line(msgspec.Struct):
    """The fields of an agy line the backend reads (the adapter reads the rest)."""

    event: str | None = None
    conversation_id: str | None = None
    step_update: _Step | None = None
    result: _Result | None = None


def _refusal(result: _Result) -> DriveError:
    """What a result for a prompt agy never took means to the host."""
    error = result.error or f"agy ended the turn with status {result.status}"
    if "authentication" in error.lower():
        return AuthenticationRequired(f"agy: {error} (sign in with agy first)")
    return AgentRequestFailed("prompt", None, error)
