"""A fake Claude Code CLI: ``claude -p`` with stream-json on stdin and stdout and the control protocol.

    python fake_claude.py -p --input-format stream-json --output-format stream-json --verbose
        --permission-prompt-tool stdio [--model M] [--permission-mode MODE] [--resume ID]
        [--fake-logged-out] [--fake-version V]

It refuses to start (exit 1, a message on stderr, as the real CLI does) without the flags that
make it speak stream-json both ways and ask permissions over stdio.  Lines it writes have the
shapes Claude Code 2.1.332 writes (``system/init``, ``assistant``, ``user`` tool results,
``result``, ``control_request can_use_tool``, ``control_response``).  What the model "does"
depends on the prompt's first word:

* ``bash NAME``: a Bash call ``touch NAME``, asked with ``can_use_tool`` (with permission
  suggestions); allowed, the file is created in the working directory; denied or refused (an
  error response), it is not.
* ``ask``: an ``AskUserQuestion`` call asked with ``can_use_tool``; the answer is read from
  ``updatedInput.answers``.
* ``slow``: a reply that takes 30 s unless an ``interrupt`` control request ends it (then the
  interrupted shape: the partial ``assistant`` line, ``[Request interrupted by user]``,
  ``result/error_during_execution``).
* ``crash``: the turn starts, then the process exits 3 with a message on stderr.
* anything else: a text reply ``Echo: <prompt>``.

A prompt written while a turn runs is queued and answered once that turn's ``result`` is out,
as the real CLI does.  Control requests: ``initialize`` (``--fake-logged-out``: the account
of a CLI without credentials), ``interrupt``, ``set_permission_mode`` (an unknown mode is an
error response), ``set_model``; any other subtype gets an error response.  Standard library
only, so it starts fast.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

MODES = ("acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan")
REQUIRED = [
    ["-p"],
    ["--input-format", "stream-json"],
    ["--output-format", "stream-json"],
    ["--verbose"],
    ["--permission-prompt-tool", "stdio"],
]
EOF = object()


def _has(argv: list[str], flags: list[str]) -> bool:
    return any(argv[i : i + len(flags)] == flags for i in range(len(argv)))


def _value(argv: list[str], flag: str) -> str | None:
    if flag in argv[:-1]:
        return argv[argv.index(flag) + 1]
    return None


class Fake:
    def __init__(self, argv: list[str]) -> None:
        self.model = _value(argv, "--model") or "claude-fake-1"
        self.mode = _value(argv, "--permission-mode") or "default"
        self.session = _value(argv, "--resume") or str(uuid.uuid4())
        self.logged_out = "--fake-logged-out" in argv
        self.version = _value(argv, "--fake-version") or "2.1.332"
        self.lines: queue.Queue[Any] = queue.Queue()
        self.pending: list[dict[str, Any]] = []  # prompts queued while a turn runs
        self.responses: dict[str, dict[str, Any]] = {}  # control responses of the client, by request id
        self.interrupted = False
        self.closed = False
        self.messages = 0
        self.cost = 0.0

    # ---------------------------------------------------------------- io

    def read_stdin(self) -> None:
        for raw in sys.stdin.buffer:
            if raw.strip():
                self.lines.put(json.loads(raw))
        self.lines.put(EOF)

    def out(self, msg: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def pump(self, timeout: float) -> None:
        """Handle what the client wrote within ``timeout`` seconds (during a turn)."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return
        self.handle(line, in_turn=True)

    def handle(self, line: Any, *, in_turn: bool) -> None:
        if line is EOF:
            self.closed = True
        elif line.get("type") == "user":
            self.pending.append(line)
        elif line.get("type") == "control_request":
            self.control(line["request_id"], line.get("request") or {}, in_turn)
        elif line.get("type") == "control_response":
            resp = line.get("response") or {}
            self.responses[resp.get("request_id", "")] = resp

    # ---------------------------------------------------------------- control

    def reply(self, request_id: str, response: dict[str, Any] | None = None, error: str | None = None) -> None:
        if error is not None:
            self.out(
                {"type": "control_response", "response": {"subtype": "error", "request_id": request_id, "error": error}}
            )
            return
        body = {"subtype": "success", "request_id": request_id, "response": response or {}}
        self.out({"type": "control_response", "response": body})

    def control(self, request_id: str, req: dict[str, Any], in_turn: bool) -> None:
        subtype = req.get("subtype")
        if subtype == "initialize":
            account = (
                {"tokenSource": "none", "apiProvider": "firstParty"}
                if self.logged_out
                else {"tokenSource": "none", "apiKeySource": "ANTHROPIC_API_KEY", "apiProvider": "firstParty"}
            )
            commands = [{"name": "compact", "description": "Compact the conversation", "argumentHint": ""}]
            response = {
                "commands": commands,
                "agents": [],
                "account": account,
                "claude_code_version": self.version,
                "current_permission_mode": self.mode,
                "session_state": "idle",
            }
            self.reply(request_id, response)
        elif subtype == "interrupt":
            self.interrupted = in_turn
            self.reply(request_id, {"still_queued": []})
        elif subtype == "set_permission_mode":
            mode = req.get("mode")
            if mode not in MODES:
                self.reply(request_id, error=f"Cannot set permission mode: must be one of {', '.join(MODES)}")
                return
            self.mode = mode
            self.reply(request_id, {"mode": mode})
            self.out(self.system("status", status=None, permissionMode=mode))
        elif subtype == "set_model":
            self.model = req.get("model") or self.model
            self.reply(request_id, {"model": self.model})
        else:
            self.reply(request_id, error=f"Unsupported control request subtype: {subtype}")

    # ---------------------------------------------------------------- lines

    def system(self, subtype: str, **fields: Any) -> dict[str, Any]:
        return {"type": "system", "subtype": subtype, **fields, "session_id": self.session, "uuid": str(uuid.uuid4())}

    def init(self, cwd: str) -> dict[str, Any]:
        return self.system(
            "init",
            cwd=cwd,
            tools=["AskUserQuestion", "Bash", "Read"],
            mcp_servers=[],
            model=self.model,
            permissionMode=self.mode,
            slash_commands=["compact"],
            apiKeySource="ANTHROPIC_API_KEY",
            claude_code_version=self.version,
            output_style="default",
            agents=[],
            skills=[],
            plugins=[],
        )

    def assistant(self, block: dict[str, Any], msg_id: str, **extra: Any) -> dict[str, Any]:
        message = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [block],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 10},
        }
        return {
            "type": "assistant",
            "message": message,
            "parent_tool_use_id": None,
            "session_id": self.session,
            "uuid": str(uuid.uuid4()),
            **extra,
        }

    def user(self, content: Any, **extra: Any) -> dict[str, Any]:
        return {
            "type": "user",
            "message": {"role": "user", "content": content},
            "parent_tool_use_id": None,
            "session_id": self.session,
            "uuid": str(uuid.uuid4()),
            **extra,
        }

    def result(self, text: str | None, *, interrupted: bool = False, started: float) -> dict[str, Any]:
        self.cost += 0.001
        usage = {"input_tokens": 100, "output_tokens": 10}
        line: dict[str, Any] = {
            "type": "result",
            "subtype": "error_during_execution" if interrupted else "success",
            "is_error": interrupted,
            "duration_ms": int((time.monotonic() - started) * 1000),
            "duration_api_ms": 5,
            "num_turns": 1,
            "stop_reason": None if interrupted else "end_turn",
            "terminal_reason": "aborted_streaming" if interrupted else "completed",
            "session_id": self.session,
            "total_cost_usd": round(self.cost, 6),
            "usage": usage,
            "modelUsage": {
                self.model: {"inputTokens": 100, "outputTokens": 10, "costUSD": 0.001, "contextWindow": 200000}
            },
            "permission_denials": [],
            "uuid": str(uuid.uuid4()),
        }
        if interrupted:
            line["errors"] = []
        else:
            line["result"] = text
        return line

    def next_msg_id(self) -> str:
        self.messages += 1
        return f"msg_FAKE{self.messages:04d}"

    # ---------------------------------------------------------------- turns

    def turn(self, prompt: dict[str, Any]) -> None:
        content = prompt.get("message", {}).get("content")
        text = content if isinstance(content, str) else " ".join(b.get("text", "") for b in content or [])
        word, _, rest = text.strip().partition(" ")
        started = time.monotonic()
        self.interrupted = False
        self.out(self.init(str(Path.cwd())))
        if word == "bash":
            self.bash(rest.strip() or "made.txt", started)
        elif word == "ask":
            self.ask(started)
        elif word == "slow":
            self.slow(started)
        elif word == "crash":
            self.out(self.assistant({"type": "text", "text": "Starting."}, self.next_msg_id()))
            sys.stderr.write("fake claude: crashed in the middle of a turn\n")
            sys.stderr.flush()
            os._exit(3)  # at once, as a crash: no clean-up (the stdin reader thread is still running)
        else:
            reply = f"Echo: {text}"
            self.out(self.assistant({"type": "text", "text": reply}, self.next_msg_id()))
            self.out(self.result(reply, started=started))

    def ask_permission(self, tool: str, call_id: str, inp: dict[str, Any], **extra: Any) -> dict[str, Any] | None:
        """A ``can_use_tool`` request; the client's response, or None when stdin closed first."""
        request_id = str(uuid.uuid4())
        request = {"subtype": "can_use_tool", "tool_name": tool, "input": inp, "tool_use_id": call_id, **extra}
        self.out({"type": "control_request", "request_id": request_id, "request": request})
        while request_id not in self.responses:
            if self.closed:
                return None
            self.pump(0.05)
        return self.responses.pop(request_id)

    def bash(self, name: str, started: float) -> None:
        call_id = f"toolu_FAKE{self.messages + 1:04d}"
        inp = {"command": f"touch {name}", "description": f"Create {name}"}
        self.out(self.assistant({"type": "tool_use", "id": call_id, "name": "Bash", "input": inp}, self.next_msg_id()))
        cwd = str(Path.cwd())
        suggestions = [
            {
                "type": "addRules",
                "rules": [{"toolName": "Bash", "ruleContent": inp["command"]}],
                "behavior": "allow",
                "destination": "localSettings",
            },
            {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
        ]
        resp = self.ask_permission(
            "Bash",
            call_id,
            inp,
            display_name="Bash",
            description=inp["description"],
            permission_suggestions=suggestions,
            blocked_path=f"{cwd}/{name}",
        )
        if resp is None:
            raise SystemExit(1)
        answer = resp.get("response") or {}
        if resp.get("subtype") == "success" and answer.get("behavior") == "allow":
            command = (answer.get("updatedInput") or inp).get("command", "")
            Path(command.removeprefix("touch ").strip()).touch()
            result = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": True}
            content = "(Bash completed with no output)"
            block = {"tool_use_id": call_id, "type": "tool_result", "content": content, "is_error": False}
            self.out(self.user([block], tool_use_result=result))
            reply = f"Created {name}."
        else:
            why = answer.get("message") if resp.get("subtype") == "success" else f"Error: {resp.get('error')}"
            block = {"type": "tool_result", "content": why, "is_error": True, "tool_use_id": call_id}
            self.out(self.user([block], tool_use_result=f"Error: {why}"))
            reply = f"I did not create {name}."
        self.out(self.assistant({"type": "text", "text": reply}, self.next_msg_id()))
        self.out(self.result(reply, started=started))

    def ask(self, started: float) -> None:
        call_id = f"toolu_FAKE{self.messages + 1:04d}"
        question = {
            "question": "Which color?",
            "header": "Color",
            "options": [{"label": "red", "description": "warm"}, {"label": "blue", "description": "cold"}],
            "multiSelect": False,
        }
        inp = {"questions": [question]}
        block = {"type": "tool_use", "id": call_id, "name": "AskUserQuestion", "input": inp}
        self.out(self.assistant(block, self.next_msg_id()))
        resp = self.ask_permission("AskUserQuestion", call_id, inp, requires_user_interaction=True)
        if resp is None:
            raise SystemExit(1)
        answer = resp.get("response") or {}
        answers = (answer.get("updatedInput") or {}).get("answers") or {}
        picked = answers.get("Which color?", "nothing")
        text = f'Your questions have been answered: "Which color?"="{picked}".'
        self.out(self.user([{"type": "tool_result", "content": text, "tool_use_id": call_id}]))
        reply = f"You chose {picked}."
        self.out(self.assistant({"type": "text", "text": reply}, self.next_msg_id()))
        self.out(self.result(reply, started=started))

    def slow(self, started: float) -> None:
        msg_id = self.next_msg_id()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not self.interrupted and not self.closed:
            self.pump(0.05)
        if not self.interrupted:
            reply = "A long story, told to its end."
            self.out(self.assistant({"type": "text", "text": reply}, msg_id))
            self.out(self.result(reply, started=started))
            return
        self.out(self.assistant({"type": "text", "text": "Once upon a "}, msg_id, aborted=True))
        self.out(self.user([{"type": "text", "text": "[Request interrupted by user]"}]))
        self.out(self.result(None, interrupted=True, started=started))

    # ---------------------------------------------------------------- main

    def run(self) -> int:
        threading.Thread(target=self.read_stdin, daemon=True).start()
        while True:
            if self.pending:
                self.turn(self.pending.pop(0))
                continue
            if self.closed:
                return 0
            self.handle(self.lines.get(), in_turn=False)


def main() -> int:
    argv = sys.argv[1:]
    for flags in REQUIRED:
        if not _has(argv, flags):
            sys.stderr.write(f"fake claude: missing {' '.join(flags)}\n")
            return 1
    return Fake(argv).run()


if __name__ == "__main__":
    sys.exit(main())
