"""A fake ``codex app-server``: a small scripted JSON-RPC server on stdio.

    python fake_codex.py app-server [--scenario NAME] [--no-auth]

It answers the client's requests the way codex-cli 0.171.0 does (no ``jsonrpc``
member, ``emittedAtMs`` on notifications, server request ids counted from 0)
and plays one scripted reply per ``turn/start``, chosen by the prompt's first
word:

* ``hello ...``: an agent message streamed in two deltas;
* ``run ...``: a command approval (``touch made.txt``); accepted, the fake
  creates ``made.txt`` in its working directory, declined it does not; the
  item completes ``completed`` / ``declined``, then a closing message;
* ``ask ...``: a ``item/tool/requestUserInput`` question; the reply quotes the answer;
* ``grant ...``: an ``item/permissions/requestApproval`` for network access; the reply
  quotes the client's answer;
* ``odd ...``: a server request of a method no client knows, then a message
  saying what the client answered;
* ``story ...``: deltas every 50 ms until ``turn/interrupt`` (then the turn
  completes ``interrupted``) or 200 deltas;
* ``die ...``: one delta, a line on stderr, exit 3 in the middle of the turn.

``--no-auth``: ``account/read`` answers that an OpenAI login is needed and none exists.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import sys
import time
from pathlib import Path
from typing import Any

THREAD = "01a2fake-0000-7000-8000-000000000001"
NETWORK = {"network": {"enabled": True}, "fileSystem": None}  # what ``grant`` asks for


class Server:
    def __init__(self, no_auth: bool) -> None:
        self.no_auth = no_auth
        self.thread = THREAD  # or the one thread/resume names
        self.turns = 0
        self.items = 0
        self.server_ids = 0
        self.pending: list[dict[str, Any]] = []  # client lines read while waiting for something else
        self.buf = b""  # stdin bytes read but not yet split into lines

    # ------------------------------------------------------------ wire

    def write(self, msg: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.write({"method": method, "params": params, "emittedAtMs": int(time.time() * 1000)})

    def read(self, timeout: float | None = None) -> dict[str, Any] | None:
        if self.pending:
            return self.pending.pop(0)
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([0], [], [], left)
            if not ready:
                return None
            chunk = os.read(0, 65536)
            if not chunk:
                raise SystemExit(0)  # stdin closed: the client is done
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return dict(json.loads(line))

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A server request; the client's answer (requests of its own seen meanwhile are kept)."""
        rid = self.server_ids
        self.server_ids += 1
        self.write({"method": method, "id": rid, "params": params})
        while True:
            msg = self.read()
            assert msg is not None
            if "method" not in msg and msg.get("id") == rid:
                self.notify("serverRequest/resolved", {"threadId": self.thread, "requestId": rid})
                return msg
            self.pending.append(msg)

    # ------------------------------------------------------------ requests

    def serve(self) -> None:
        while True:
            msg = self.read()
            assert msg is not None
            method = msg.get("method")
            if "id" not in msg:
                continue  # initialized, or an answer to nothing
            rid = msg["id"]
            params = msg.get("params") or {}
            if method == "initialize":
                ua = f"{params['clientInfo']['name']}/0.171.0 (Debian 12.0.0; x86_64) fake"
                self.write({"id": rid, "result": {"userAgent": ua, "platformFamily": "unix", "platformOs": "linux"}})
            elif method == "account/read":
                result = {"account": None, "userId": None, "requiresOpenaiAuth": self.no_auth}
                self.write({"id": rid, "result": result})
            elif method in ("thread/start", "thread/resume"):
                self.thread = params.get("threadId", THREAD)
                thread: dict[str, Any] = {
                    "id": self.thread,
                    "cwd": params.get("cwd"),
                    "model": params.get("model") or "gpt-fake",
                    "modelProvider": "mock",
                    "cliVersion": "0.171.0",
                    "createdAt": int(time.time()),
                    "status": {"type": "idle"},
                    "turns": [],
                }
                self.write({"id": rid, "result": {"thread": thread, "model": thread["model"]}})
                self.notify("thread/started", {"thread": thread})
            elif method == "turn/start":
                self.turn(rid, params)
            elif method == "turn/interrupt":
                self.write({"id": rid, "error": {"code": -32600, "message": "no active turn to interrupt"}})
            else:
                self.write({"id": rid, "error": {"code": -32601, "message": f"fake codex: no {method}"}})

    # ------------------------------------------------------------ turns

    def at(self, turn: str) -> dict[str, Any]:
        return {"threadId": self.thread, "turnId": turn}

    def item_id(self, prefix: str) -> str:
        self.items += 1
        return f"{prefix}_FAKE{self.items:04d}"

    def message(self, turn: str, *parts: str) -> None:
        mid = self.item_id("msg")
        item = {"type": "agentMessage", "id": mid, "text": "", "phase": None}
        self.notify("item/started", {"item": item, "threadId": self.thread, "turnId": turn})
        for part in parts:
            self.notify("item/agentMessage/delta", {**self.at(turn), "itemId": mid, "delta": part})
        done = {**item, "text": "".join(parts)}
        self.notify("item/completed", {"item": done, "threadId": self.thread, "turnId": turn})

    def turn(self, rid: Any, params: dict[str, Any]) -> None:
        self.turns += 1
        turn_id = f"01a2fake-turn-7000-8000-{self.turns:012d}"
        turn: dict[str, Any] = {"id": turn_id, "items": [], "status": "inProgress", "error": None}
        self.write({"id": rid, "result": {"turn": turn}})
        self.notify("turn/started", {"threadId": self.thread, "turn": turn})
        content = params.get("input") or []
        user = {"type": "userMessage", "id": self.item_id("user"), "content": content}
        self.notify("item/completed", {"item": user, "threadId": self.thread, "turnId": turn_id})
        text = next((c.get("text", "") for c in content if c.get("type") == "text"), "")
        word = text.split(" ", 1)[0]
        status = "completed"
        if word == "run":
            self.run(turn_id)
        elif word == "ask":
            self.question(turn_id)
        elif word == "grant":
            ask = {**self.at(turn_id), "itemId": self.item_id("perm"), "cwd": os.getcwd(), "reason": "To fetch."}
            answer = self.ask("item/permissions/requestApproval", {**ask, "permissions": NETWORK})
            self.message(turn_id, "Granted: ", json.dumps(answer.get("result")))
        elif word == "odd":
            answer = self.ask("item/unheardOf/request", {"threadId": self.thread, "turnId": turn_id})
            self.message(turn_id, "The client answered: ", json.dumps(answer.get("error") or answer.get("result")))
        elif word == "story":
            status = self.story(turn_id)
        elif word == "die":
            self.message_start_and_die(turn_id)
        else:
            self.message(turn_id, "Hello ", f"from turn {self.turns}.")
        usage = {"totalTokens": 100 * self.turns, "inputTokens": 90 * self.turns, "outputTokens": 10 * self.turns}
        token_params = {"total": usage, "last": usage, "modelContextWindow": 1000}
        self.notify("thread/tokenUsage/updated", {**self.at(turn_id), "tokenUsage": token_params})
        done = {**turn, "status": status}
        self.notify("turn/completed", {"threadId": self.thread, "turn": done})

    def run(self, turn: str) -> None:
        call = self.item_id("call")
        item: dict[str, Any] = {"type": "commandExecution", "id": call, "command": "/bin/bash -lc 'touch made.txt'"}
        item |= {"cwd": os.getcwd(), "status": "inProgress", "aggregatedOutput": None, "exitCode": None}
        self.notify("item/started", {"item": item, "threadId": self.thread, "turnId": turn})
        ask: dict[str, Any] = {
            "kind": "command",
            "threadId": self.thread,
            "turnId": turn,
            "itemId": call,
            "reason": "May I create made.txt?",
        }
        ask |= {"command": item["command"], "cwd": os.getcwd(), "availableDecisions": ["accept", "cancel"]}
        answer = self.ask("item/commandExecution/requestApproval", ask)
        decision = (answer.get("result") or {}).get("decision")
        if decision in ("accept", "acceptForSession"):
            Path("made.txt").touch()
            done = {**item, "status": "completed", "aggregatedOutput": "", "exitCode": 0}
        else:
            done = {**item, "status": "declined"}
        self.notify("item/completed", {"item": done, "threadId": self.thread, "turnId": turn})
        self.message(turn, f"The decision was {decision}.")

    def question(self, turn: str) -> None:
        q = {"id": "color", "header": "Color", "question": "Which color?", "isOther": True, "options": None}
        ask = {**self.at(turn), "itemId": self.item_id("ask"), "questions": [q], "isBlocking": True}
        answer = self.ask("item/tool/requestUserInput", ask)
        result = answer.get("result") or {}
        picked = ((result.get("answers") or {}).get("color") or {}).get("answers") or ["(none)"]
        self.message(turn, f"You said {picked[0]}.")

    def story(self, turn: str) -> str:
        mid = self.item_id("msg")
        item = {"type": "agentMessage", "id": mid, "text": "", "phase": None}
        self.notify("item/started", {"item": item, "threadId": self.thread, "turnId": turn})
        for i in range(200):
            delta = {"threadId": self.thread, "turnId": turn, "itemId": mid, "delta": f"Sentence {i}. "}
            self.notify("item/agentMessage/delta", delta)
            msg = self.read(0.05)
            if msg is None:
                continue
            if msg.get("method") == "turn/interrupt" and msg.get("params", {}).get("turnId") == turn:
                self.write({"id": msg["id"], "result": {}})
                return "interrupted"  # the message in flight never completes, as in Codex
            self.pending.append(msg)
        self.notify(
            "item/completed", {"item": {**item, "text": "(the whole story)"}, "threadId": self.thread, "turnId": turn}
        )
        return "completed"

    def message_start_and_die(self, turn: str) -> None:
        mid = self.item_id("msg")
        item = {"type": "agentMessage", "id": mid, "text": "", "phase": None}
        self.notify("item/started", {"item": item, "threadId": self.thread, "turnId": turn})
        self.notify("item/agentMessage/delta", {**self.at(turn), "itemId": mid, "delta": "Half"})
        sys.stderr.write("fake codex: crashed in the middle of a turn\n")
        sys.stderr.flush()
        os._exit(3)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("subcommand", choices=["app-server"])
    p.add_argument("--no-auth", action="store_true")
    args = p.parse_args()
    Server(args.no_auth).serve()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
