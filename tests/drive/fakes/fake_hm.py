#!/usr/bin/env python3
"""A fake ``hm``: speaks ``hm agent --rpc`` (JSON lines on stdio) with a scripted model.

    fake_hm.py agent --rpc [--cwd DIR] [--mode M] [--provider P] [--model ID]
                           [--session ID | --continue | --no-session] [--max-steps N] [--approve ask|edits|all]

It follows hm's RPC document: ``session_start`` first, then one command per stdin line,
each answered with a ``response`` carrying its ``id`` back; a ``prompt`` is answered when
its turn starts and refused while another runs; ``approve`` / ``answer`` fail unless that
call is waiting; ``abort`` ends the turn (``turn_end`` with ``error: "aborted"``); closing
stdin ends the session with ``session_end`` and exit 0.  Bad flags exit 2 with no output.

The "model" is a script chosen by the prompt's text:

* ``run: touch NAME``: a ``shell`` call needing approval; allowed, it creates NAME in the
  workspace (so a test sees whether the command ran);
* ``ask: QUESTION``: an ``ask_user`` question; the answer is the call's result;
* ``slow``: a reply that streams, then waits (up to 30 s) for an ``abort``;
* ``crash``: starts a reply, then exits 1 in the middle of the turn;
* anything else: one reply, ``You said: TEXT``.

Standard library only, so it starts fast.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import signal
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

OUT = sys.stdout


class Aborted(Exception):
    """The client sent ``abort`` during the turn."""


class Interrupted(Exception):
    """SIGINT or SIGTERM: hm aborts and exits 130."""


def _interrupted(signum: int, frame: object) -> None:
    raise Interrupted


def _is_picture(data: str) -> bool:
    """PNG, JPEG, GIF or WebP, told apart by their bytes."""
    try:
        head = base64.b64decode(data, validate=True)[:12]
    except ValueError:
        return False
    return head.startswith((b"\x89PNG", b"\xff\xd8\xff", b"GIF8")) or (head[:4] == b"RIFF" and head[8:] == b"WEBP")


class Fake:
    def __init__(self, session: str, root: Path, mode: str, model: str, approve: str) -> None:
        self.session = session
        self.root = root
        self.mode = mode
        self.model = model
        self.approve = approve
        self.commands: queue.Queue[tuple[bytes | None]] = queue.Queue()
        self.running = False
        self.waiting: tuple[str, str] | None = None  # ("approve" | "answer", call_id)
        self.calls = 0
        self.usage = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "cost": 0.0}
        self.answer = ""
        self.eof = False

    # ------------------------------------------------------------ output

    def write(self, type_: str, **fields: Any) -> None:
        now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        line = {"v": 1, "type": type_, "session": self.session, "time": now, **fields}
        OUT.write(json.dumps(line, separators=(",", ":")) + "\n")
        OUT.flush()

    def respond(self, cmd: dict[str, Any] | None, command: str, ok: bool, error: str = "", data: Any = None) -> None:
        fields: dict[str, Any] = {}
        if cmd is None:
            fields["id"] = None
        elif "id" in cmd:
            fields["id"] = cmd["id"]
        fields.update(command=command, ok=ok)
        if error:
            fields["error"] = error
        if data is not None:
            fields["data"] = data
        self.write("response", **fields)

    def usage_line(self, input_: int, output: int, cost: float) -> None:
        self.usage["input"] += input_
        self.usage["output"] += output
        self.usage["cost"] = round(self.usage["cost"] + cost, 6)
        self.write("usage", input=input_, output=output, cache_read=0, cache_write=0, cost=cost)

    # ------------------------------------------------------------ input

    def reader(self) -> None:
        for raw in sys.stdin.buffer:
            if raw.strip():
                self.commands.put((raw,))
        self.commands.put((None,))

    def next_command(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next command, answered here unless the turn must act on it; None at EOF."""
        while True:
            try:
                (raw,) = self.commands.get(timeout=timeout)
            except queue.Empty:
                raise TimeoutError from None
            if raw is None:
                self.eof = True
                return None
            try:
                cmd = json.loads(raw)
            except ValueError:
                self.respond(None, "", False, "not JSON")
                continue
            if not isinstance(cmd, dict):
                self.respond(None, "", False, "not a command")
                continue
            if self.handle(cmd):
                return cmd

    def handle(self, cmd: dict[str, Any]) -> bool:
        """Answers what needs no turn; True when the caller must act on the command."""
        kind = cmd.get("type")
        if kind == "prompt":
            if self.running:
                self.respond(cmd, "prompt", False, "a turn is running; steer it or queue a follow-up")
                return False
            for n, image in enumerate(cmd.get("images") or [], 1):
                if not _is_picture(str(image.get("data", ""))):
                    self.respond(cmd, "prompt", False, f"image {n} is not a PNG, JPEG, GIF or WebP picture")
                    return False
            return True
        if kind in ("approve", "answer"):
            if self.waiting != (kind, cmd.get("call_id")):
                what = "approval" if kind == "approve" else "an answer"
                self.respond(cmd, kind, False, f"call {cmd.get('call_id')} is not waiting for {what}")
                return False
            return True
        if kind == "abort":
            self.respond(cmd, "abort", True)
            return self.running
        if kind == "set_mode":
            self.mode = str(cmd.get("mode") or self.mode)
            self.respond(cmd, "set_mode", True)
            return False
        if kind == "set_model":
            if "model" in cmd:
                self.model = str(cmd["model"])
            self.respond(cmd, "set_model", True)
            return False
        if kind == "get_state":
            state = {"session": self.state(), "running": self.running, "pending_approvals": [], "pending_questions": []}
            self.respond(cmd, "get_state", True, data=state)
            return False
        if kind in ("steer", "follow_up", "compact", "list_sessions", "fork", "export"):
            self.respond(cmd, str(kind), False, f"{kind} is not scripted in the fake hm")
            return False
        self.respond(cmd, str(kind or ""), False, f"unknown command {kind!r}")
        return False

    def state(self) -> dict[str, Any]:
        return {
            "id": self.session,
            "title": "",
            "root": str(self.root),
            "mode": self.mode,
            "provider": "fake",
            "model": self.model,
            "status": "idle",
            "running": self.running,
            "saved": True,
            "usage": self.usage,
        }

    def wait_for(self, kind: str, call_id: str) -> dict[str, Any]:
        """Waits for the approve/answer of a call; Aborted on abort, EOF keeps waiting like hm."""
        self.waiting = (kind, call_id)
        try:
            while True:
                cmd = self.next_command()
                if cmd is None:
                    continue  # stdin closed: hm waits for the running turn; only abort ends it
                if cmd.get("type") == "abort":
                    raise Aborted
                self.respond(cmd, kind, True)
                return cmd
        finally:
            self.waiting = None

    def aborted_within(self, seconds: float) -> bool:
        """Whether an ``abort`` came within ``seconds`` (other commands are answered meanwhile)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                cmd = self.next_command(timeout=left)
            except TimeoutError:
                return False
            if cmd is not None and cmd.get("type") == "abort":
                return True
        return False

    # ------------------------------------------------------------ the model

    def reply(self, text: str) -> None:
        self.write("message_start", role="assistant")
        half = len(text) // 2
        for part in (text[:half], text[half:]):
            if part:
                self.write("text_delta", text=part)
        self.usage_line(100, len(text.split()), 0.001)
        self.write("message_end", role="assistant", text=text)
        self.answer = text

    def call(self, tool: str, summary: str, input_: dict[str, Any]) -> str:
        self.calls += 1
        call_id = f"call_{self.calls:02d}"
        self.write("message_start", role="assistant")
        self.write("tool_start", tool=tool)
        self.usage_line(100, 12, 0.001)
        self.write("message_end", role="assistant", text="")
        self.write("tool_call", tool=tool, call_id=call_id, summary=summary, input=input_)
        return call_id

    def turn(self, cmd: dict[str, Any]) -> None:
        text = str(cmd.get("text") or "")
        self.running = True
        self.respond(cmd, "prompt", True)
        user: dict[str, Any] = {"role": "user", "text": text}
        if cmd.get("images"):
            user["images"] = [{"media_type": "image/png", "data": i.get("data")} for i in cmd["images"]]
        self.write("message_end", **user)
        try:
            self.script(text)
        except Aborted:
            self.write("turn_end", error="aborted")
        except Interrupted:
            self.write("turn_end", error="aborted")
            self.write("session_end", answer="", exit_code=130, refused=[], usage=self.usage)
            os._exit(130)
        else:
            self.write("turn_end")
        finally:
            self.running = False

    def script(self, text: str) -> None:
        if text.startswith("run: "):
            command = text[len("run: ") :]
            call_id = self.call("shell", command, {"command": command})
            self.write(
                "approval_needed",
                call_id=call_id,
                tool="shell",
                category="shell",
                summary=command,
                command=command,
                paths=[str(self.root)],
            )
            try:
                cmd = self.wait_for("approve", call_id)
            except Aborted:
                self.write("approval", call_id=call_id, tool="shell", allow=False)
                self.write("tool_result", tool="shell", call_id=call_id, text="aborted", is_error=True)
                self.write("message_end", role="tool", text="")
                raise
            allow = bool(cmd.get("allow"))
            fields: dict[str, Any] = {"call_id": call_id, "tool": "shell", "allow": allow}
            if cmd.get("note"):
                fields["note"] = cmd["note"]
            self.write("approval", **fields)
            if allow:
                name = command.split()[-1]
                if command.startswith("touch "):
                    (self.root / name).touch()
                self.write("tool_result", tool="shell", call_id=call_id, text="", is_error=False)
            else:
                self.write("tool_result", tool="shell", call_id=call_id, text="refused by the user", is_error=True)
            self.write("message_end", role="tool", text="")
            self.reply("Done." if allow else "The command was refused.")
        elif text.startswith("ask: "):
            question = text[len("ask: ") :]
            call_id = self.call("ask_user", question, {"question": question})
            self.write("question", call_id=call_id, text=question)
            try:
                cmd = self.wait_for("answer", call_id)
            except Aborted:
                self.write("tool_result", tool="ask_user", call_id=call_id, text="no answer", is_error=True)
                self.write("message_end", role="tool", text="")
                raise
            answer = str(cmd.get("text") or "")
            self.write("tool_result", tool="ask_user", call_id=call_id, text=answer, is_error=False)
            self.write("message_end", role="tool", text="")
            self.reply(f"You answered: {answer}")
        elif text == "slow":
            self.write("message_start", role="assistant")
            self.write("text_delta", text="Working")
            if self.aborted_within(30.0):
                self.usage_line(100, 1, 0.001)
                self.write("message_end", role="assistant", text="Working")
                raise Aborted
            self.write("text_delta", text=" done.")
            self.usage_line(100, 2, 0.001)
            self.write("message_end", role="assistant", text="Working done.")
        elif text == "crash":
            self.write("message_start", role="assistant")
            self.write("text_delta", text="Start")
            sys.stderr.write("fake hm: the model connection broke\n")
            sys.stderr.flush()
            os._exit(1)  # at once: the stdin reader thread would hold up an orderly exit
        else:
            self.reply(f"You said: {text}")

    def run(self) -> int:
        signal.signal(signal.SIGTERM, _interrupted)
        signal.signal(signal.SIGINT, _interrupted)
        threading.Thread(target=self.reader, daemon=True).start()
        try:
            while not self.eof:
                cmd = self.next_command()
                if cmd is None:
                    break
                if cmd.get("type") == "prompt":
                    self.turn(cmd)
        except Interrupted:
            self.write("session_end", answer=self.answer, exit_code=130, refused=[], usage=self.usage)
            os._exit(130)
        self.write("session_end", answer=self.answer, exit_code=0, refused=[], usage=self.usage)
        return 0


def parse(argv: list[str]) -> dict[str, str] | None:
    """hm agent --rpc's flags; None for bad usage."""
    if argv[:2] != ["agent", "--rpc"]:
        return None
    opts: dict[str, str] = {}
    valued = {"--cwd", "--mode", "--provider", "--model", "--session", "--max-steps", "--approve"}
    rest = argv[2:]
    i = 0
    while i < len(rest):
        flag = rest[i]
        if flag in valued and i + 1 < len(rest):
            opts[flag] = rest[i + 1]
            i += 2
        elif flag in ("--continue", "--no-session"):
            opts[flag] = ""
            i += 1
        else:
            return None
    return opts


def main() -> int:
    opts = parse(sys.argv[1:])
    if opts is None:
        sys.stderr.write(f"hm: bad usage: {' '.join(sys.argv[1:])}\n")
        return 2
    root = Path(opts.get("--cwd", ".")).resolve()
    session = opts.get("--session", "20261202-fakehm")
    fake = Fake(session, root, opts.get("--mode", "auto"), opts.get("--model", ""), opts.get("--approve", "ask"))
    fake.write(
        "session_start",
        root=str(root),
        mode=fake.mode,
        provider="fake",
        model=fake.model,
        resumed="--session" in opts,
        prompt="",
    )
    return fake.run()


if __name__ == "__main__":
    sys.exit(main())
