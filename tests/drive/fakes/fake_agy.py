#!/usr/bin/env python3
"""A fake ``agy``: headless stream-json in and out, with a scripted model.

    fake_agy.py --input-format stream-json --output-format stream-json [--print-timeout D]
                [--model M] [--mode M] [--conversation ID] [--dangerously-skip-permissions]

It follows protocols/antigravity.md: stdin lines ``{"event":"user","message":{...}}`` run one
turn each, in order (a line written during a turn waits for it); ``init`` is written once,
after the first stdin line is read (the order the recorded 1.2.x sessions show); each turn
is a ``user_input`` step, ``step_update`` lines with a conversation-wide ``step_index``, and a
``result`` with the conversation's cumulative usage.  A line without ``event`` ends the run
with a ``result`` ERROR and exit 1; an unknown ``event`` is ignored with a warning on stderr;
stdin EOF exits 0.  SIGINT during a turn writes ``result`` ERROR ``interrupted`` and exits 130.
Without a login (``$FAKE_AGY_NO_LOGIN`` set) or with a ``--model`` not starting with
``gemini-``, the first prompt gets a lone ``result`` ERROR (no ``init``) and exit 1.
``--input-format stream-json`` without ``--output-format stream-json``, or an unknown flag,
exits 2 with no output.

The "model" is chosen by the prompt's text:

* ``run: touch NAME``: a ``run_command`` step; with ``--dangerously-skip-permissions`` it
  runs (NAME is created in the working directory), else it is soft-denied
  (``denied_actions``), as headless agy does with shell commands by default;
* ``slow``: a reply that streams, then waits (up to 30 s) for SIGINT;
* ``pause``: one reply after a second (time to send another prompt during the turn);
* ``crash``: starts a reply, then exits 1 in the middle of the turn;
* anything else: one reply, ``You said: TEXT``.

Standard library only, so it starts fast.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

OUT = sys.stdout


class Fake:
    def __init__(self, conversation: str, model: str | None, skip: bool) -> None:
        self.conversation = conversation
        self.model = model
        self.skip = skip
        self.step = 0
        self.turns = 0
        self.total = {"input_tokens": 0, "output_tokens": 0, "thinking_tokens": 0, "cache_read_tokens": 0}
        self.started = False
        self.in_turn = False
        self.interrupted = False

    def on_sigint(self, signum: int, frame: object) -> None:
        """SIGINT: the running turn ends with result ERROR "interrupted", then agy exits 130."""
        if not self.in_turn:
            os._exit(130)
        self.interrupted = True

    def preflight(self) -> str | None:
        """Why agy cannot start a turn: no login ($FAKE_AGY_NO_LOGIN), a model it does not know."""
        if os.environ.get("FAKE_AGY_NO_LOGIN"):
            return "authentication required"
        if self.model is not None and not self.model.startswith("gemini-"):
            return f'invalid model selection (--model "{self.model}" --effort ""): unknown model'
        return None

    def write(self, line: dict[str, Any]) -> None:
        OUT.write(json.dumps(line, separators=(",", ":")) + "\n")
        OUT.flush()

    def init(self) -> None:
        init: dict[str, Any] = {
            "cwd": os.getcwd(),
            "tools": ["list_dir", "run_command", "view_file", "write_to_file"],
            "permission_mode": "always-proceed" if self.skip else "request-review",
        }
        if self.model:
            init["model"] = self.model
        self.write({"event": "init", "conversation_id": self.conversation, "init": init})

    def update(self, state: str, step_type: str, index: int | None = None, **fields: Any) -> None:
        if index is None:
            index = self.step
            self.step += 1
        body = {"conversation_id": self.conversation, "step_index": index, "state": state, "step_type": step_type}
        self.write({"event": "step_update", "step_update": {**body, **fields}})

    def usage(self, input_: int, output: int) -> dict[str, int]:
        self.total["input_tokens"] += input_
        self.total["output_tokens"] += output
        return {
            "input_tokens": input_,
            "output_tokens": output,
            "thinking_tokens": 0,
            "cache_read_tokens": 0,
            "total_tokens": input_ + output,
        }

    def result(self, status: str, response: str, **fields: Any) -> None:
        usage = {**self.total, "total_tokens": self.total["input_tokens"] + self.total["output_tokens"]}
        result = {
            "conversation_id": self.conversation,
            "status": status,
            "response": response,
            "duration_seconds": 0.01,
            "num_turns": self.turns,
            "usage": usage,
            **fields,
        }
        self.write({"event": "result", "result": result})

    def reply(self, text: str) -> None:
        index = self.step
        self.step += 1
        half = len(text) // 2
        self.update("ACTIVE", "agent_response", index, text_delta=text[:half])
        self.update(
            "DONE",
            "agent_response",
            index,
            text_delta=text[half:],
            duration_seconds=0.01,
            usage=self.usage(100, len(text.split())),
        )

    def turn(self, text: str) -> None:
        self.turns += 1
        self.update("DONE", "user_input")
        if text.startswith("run: "):
            command = text[len("run: ") :]
            self.update("DONE", "agent_response", duration_seconds=0.01, usage=self.usage(100, 12))
            index = self.step
            self.step += 1
            info = {"name": "run_command", "parameters": {"CommandLine": command, "Cwd": os.getcwd()}}
            self.update("ACTIVE", "tool", index, tool_name="run_command", tool_info=info)
            denied: list[dict[str, str]] = []
            if self.skip:
                if command.startswith("touch "):
                    Path(command.split()[-1]).touch()
                self.update(
                    "DONE",
                    "tool",
                    index,
                    tool_name="run_command",
                    duration_seconds=0.01,
                    tool_info={**info, "output": ""},
                )
                answer = "Done."
            else:
                self.update("DONE", "tool", index, tool_name="run_command", duration_seconds=0.01, tool_info=info)
                denied.append({"action": "command", "display_name": "RunCommand"})
                answer = ""
            if answer:
                self.reply(answer)
            self.result("SUCCESS", answer + "\n" if answer else "", **({"denied_actions": denied} if denied else {}))
        elif text == "slow":
            index = self.step
            self.step += 1
            self.update("ACTIVE", "agent_response", index, text_delta="Working")
            deadline = time.monotonic() + 30
            while not self.interrupted and time.monotonic() < deadline:
                time.sleep(0.02)
            if self.interrupted:
                self.usage(100, 1)
                self.result("ERROR", "", error="interrupted")
                return
            self.update("DONE", "agent_response", index, text_delta=" done.", usage=self.usage(100, 2))
            self.result("SUCCESS", "Working done.\n")
        elif text == "pause":
            time.sleep(1.0)
            self.reply("Paused.")
            self.result("SUCCESS", "Paused.\n")
        elif text == "crash":
            self.update("ACTIVE", "agent_response", text_delta="Start")
            sys.stderr.write("error: the model connection broke\n")
            sys.stderr.flush()
            sys.exit(1)
        else:
            answer = f"You said: {text}"
            self.reply(answer)
            self.result("SUCCESS", answer + "\n")

    def run(self) -> int:
        for raw in sys.stdin.buffer:
            if not raw.strip():
                continue
            if not self.started:
                self.started = True
                failure = self.preflight()
                if failure:
                    # before the turn: a lone result (no init), exit 1
                    self.conversation = ""
                    self.result("ERROR", "", error=failure)
                    return 1
                self.init()
            try:
                line = json.loads(raw)
            except ValueError:
                line = None
            if not isinstance(line, dict) or "event" not in line:
                self.result("ERROR", "", error='stream input message is missing the "event" field')
                return 1
            if line["event"] != "user":
                sys.stderr.write(f"warning: ignoring stream input event {line['event']!r}\n")
                continue
            content = (line.get("message") or {}).get("content")
            if isinstance(content, list):
                content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
            self.in_turn = True
            self.turn(str(content or ""))
            self.in_turn = False
            if self.interrupted:
                return 130
        return 0


def main() -> int:
    argv = sys.argv[1:]
    opts: dict[str, str] = {}
    valued = {"--input-format", "--output-format", "--print-timeout", "--model", "--mode", "--conversation"}
    i = 0
    while i < len(argv):
        flag = argv[i]
        if flag in valued and i + 1 < len(argv):
            opts[flag] = argv[i + 1]
            i += 2
        elif flag == "--dangerously-skip-permissions":
            opts[flag] = ""
            i += 1
        else:
            sys.stderr.write(f"error: unknown flag: {flag}\n")
            return 2
    if opts.get("--input-format") != "stream-json" or opts.get("--output-format") != "stream-json":
        sys.stderr.write("--input-format stream-json requires --output-format stream-json\n")
        return 2
    conversation = opts.get("--conversation", "5f0c7a2e-0000-4000-8000-00000000fa4e")
    fake = Fake(conversation, opts.get("--model"), "--dangerously-skip-permissions" in opts)
    signal.signal(signal.SIGINT, fake.on_sigint)
    return fake.run()


if __name__ == "__main__":
    sys.exit(main())
