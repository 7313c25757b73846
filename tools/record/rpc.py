"""A small JSON-RPC client over a recording wire, and the ACP client's own services.

:class:`Rpc` numbers the client's requests, waits for their answers (matched by
id *and* direction: the agent's own request ids are a separate counter) and
answers the agent's requests through a table of handlers keyed on the method.
Codex's app-server speaks JSON-RPC "lite" (no ``jsonrpc`` member); ACP speaks
JSON-RPC 2.0.

:class:`AcpClientServices` is what an ACP editor offers the agent when it
advertises ``fs`` and ``terminal``: files read and written for real, commands
really run, all inside the scratch working directory.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol


class Wire(Protocol):
    """What a drive function gets: write a client line, wait for an agent line."""

    state: dict[str, Any]
    cwd: Path

    def send(self, obj: dict[str, Any]) -> None: ...
    def wait(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 60.0) -> dict[str, Any]: ...


Handler = Callable[[dict[str, Any]], Any]


class RpcError(Exception):
    """Raised by a handler: the request is answered with this JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def is_request(m: dict[str, Any]) -> bool:
    return "method" in m and "id" in m


def is_response(rid: int) -> Callable[[dict[str, Any]], bool]:
    return lambda m: "method" not in m and m.get("id") == rid and ("result" in m or "error" in m)


def is_method(method: str, **params: Any) -> Callable[[dict[str, Any]], bool]:
    """An agent message of this method whose params hold these values (dotted keys reach inside)."""

    def pred(m: dict[str, Any]) -> bool:
        if m.get("method") != method:
            return False
        for key, want in params.items():
            node: Any = m.get("params") or {}
            for part in key.split("__"):
                node = node.get(part) if isinstance(node, dict) else None
            if node != want:
                return False
        return True

    return pred


class Rpc:
    """The client side of one JSON-RPC connection."""

    def __init__(self, wire: Wire, *, jsonrpc: bool) -> None:
        self.wire = wire
        self.jsonrpc = jsonrpc
        self.handlers: dict[str, Handler] = {}
        self._next = 0
        wire.on_request = self.answer  # type: ignore[attr-defined]

    def _head(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0"} if self.jsonrpc else {}

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        rid = self._next
        self._next += 1
        if self.jsonrpc:
            msg = {**self._head(), "id": rid, "method": method}
        else:
            msg = {"method": method, "id": rid}
        if params is not None:
            msg["params"] = params
        self.wire.send(msg)
        return rid

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 120.0) -> dict[str, Any]:
        """Send a request and wait for its answer (the whole response message)."""
        return self.wire.wait(is_response(self.request(method, params)), timeout)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {**self._head(), "method": method}
        if params is not None:
            msg["params"] = params
        self.wire.send(msg)

    def respond(self, rid: Any, result: Any) -> None:
        self.wire.send({**self._head(), "id": rid, "result": result})

    def fail(self, rid: Any, code: int, message: str) -> None:
        self.wire.send({**self._head(), "id": rid, "error": {"code": code, "message": message}})

    def answer(self, msg: dict[str, Any]) -> None:
        """Answer an agent request nobody waited for; -32601 when no handler knows the method."""
        if not is_request(msg):
            return
        handler = self.handlers.get(msg["method"])
        if handler is None:
            self.fail(msg["id"], -32601, f"Method not found: {msg['method']}")
            return
        try:
            result = handler(msg.get("params") or {})
        except RpcError as e:
            self.fail(msg["id"], e.code, e.message)
            return
        self.respond(msg["id"], result)


# ---------------------------------------------------------------- ACP client services


class _Terminal:
    def __init__(self, argv: list[str], cwd: str, env: dict[str, str], limit: int | None) -> None:
        self.limit = limit
        self.output = b""
        self.truncated = False
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for chunk in iter(lambda: self.proc.stdout.read1(4096), b""):  # type: ignore[union-attr]
            self.output += chunk
            if self.limit is not None and len(self.output) > self.limit:
                self.output = self.output[-self.limit :]
                self.truncated = True

    def status(self) -> dict[str, Any] | None:
        rc = self.proc.poll()
        if rc is None:
            return None
        return {"exitCode": rc, "signal": None} if rc >= 0 else {"exitCode": None, "signal": f"SIG{-rc}"}

    def wait(self, timeout: float) -> dict[str, Any]:
        self.proc.wait(timeout)
        self._reader.join(timeout)
        status = self.status()
        assert status is not None
        return status

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class AcpClientServices:
    """``fs/*`` and ``terminal/*`` answered for real inside ``root`` (paths outside it are refused)."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root.resolve()
        self.env = env
        self.terminals: dict[str, _Terminal] = {}

    def handlers(self) -> dict[str, Handler]:
        return {
            "fs/read_text_file": self.read_text_file,
            "fs/write_text_file": self.write_text_file,
            "terminal/create": self.create,
            "terminal/output": self.output,
            "terminal/wait_for_exit": self.wait_for_exit,
            "terminal/kill": self.kill,
            "terminal/release": self.release,
        }

    def _path(self, p: str) -> Path:
        path = Path(p).resolve()
        if path != self.root and self.root not in path.parents:
            raise RpcError(-32602, f"{p} is outside the session's working directory")
        return path

    def read_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        path = self._path(params["path"])
        try:
            lines = path.read_text().splitlines(keepends=True)
        except FileNotFoundError as e:
            raise RpcError(-32002, f"Resource not found: {params['path']}") from e
        start = max(int(params.get("line") or 1) - 1, 0)
        limit = params.get("limit")
        end = start + int(limit) if limit is not None else None
        return {"content": "".join(lines[start:end])}

    def write_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        path = self._path(params["path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(params["content"])
        return {}

    def _terminal(self, params: dict[str, Any]) -> _Terminal:
        term = self.terminals.get(params.get("terminalId", ""))
        if term is None:
            raise RpcError(-32602, f"unknown terminal {params.get('terminalId')!r}")
        return term

    def create(self, params: dict[str, Any]) -> dict[str, Any]:
        cwd = str(self._path(params.get("cwd") or str(self.root)))
        env = {**self.env, **{v["name"]: v["value"] for v in params.get("env") or []}}
        argv = [params["command"], *(params.get("args") or [])]
        if not params.get("args") and " " in params["command"]:
            argv = ["/bin/sh", "-c", params["command"]]
        tid = f"term_{len(self.terminals) + 1}"
        self.terminals[tid] = _Terminal(argv, cwd, env, params.get("outputByteLimit"))
        return {"terminalId": tid}

    def output(self, params: dict[str, Any]) -> dict[str, Any]:
        term = self._terminal(params)
        out: dict[str, Any] = {
            "output": term.output.decode(errors="replace"),
            "truncated": term.truncated,
        }
        status = term.status()
        if status is not None:
            out["exitStatus"] = status
        return out

    def wait_for_exit(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._terminal(params).wait(120)

    def kill(self, params: dict[str, Any]) -> dict[str, Any]:
        self._terminal(params).kill()
        return {}

    def release(self, params: dict[str, Any]) -> dict[str, Any]:
        term = self._terminal(params)
        term.kill()
        del self.terminals[params["terminalId"]]
        return {}

    def close(self) -> None:
        for term in self.terminals.values():
            term.kill()
        self.terminals.clear()
