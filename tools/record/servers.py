"""Scripted fake model servers on 127.0.0.1, for recording real agent CLIs offline.

Two wire APIs, each streamed as server-sent events:

* the Anthropic Messages API, ``POST /v1/messages`` with ``stream: true``
  (``message_start``, ``content_block_start`` / ``_delta`` / ``_stop``,
  ``message_delta``, ``message_stop``), as Claude Code calls it;
* the OpenAI Responses API, ``POST /v1/responses`` (``response.created``,
  ``response.output_item.added`` / ``.done``, ``response.output_text.delta``,
  ``response.completed``), as Codex calls it with a custom ``model_provider``.

What the model says is a :class:`Script`: per conversation (recognised by a
marker in its first user message) a list of :class:`Step` answers, one per
request in order; the last step can repeat (an API that fails every time).
Requests of no scripted conversation (titles, summaries the CLI asks for on
the side) get a short default answer and consume nothing.  Every request is
appended to ``requests.jsonl`` so a scenario can be debugged.

Ids are deterministic (``msg_01FAKE…``, ``toolu_01FAKE…``, ``call_FAKE…``) so a
re-recording differs from the last one only where the agent changed.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# ---------------------------------------------------------------- the script


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Thinking:
    text: str
    signature: str = "RkFLRV9TSUdOQVRVUkU="  # "FAKE_SIGNATURE"


@dataclass(frozen=True)
class Tool:
    """A tool call; ``name`` is the agent's tool name, ``input`` its arguments."""

    name: str
    input: dict[str, Any]
    custom: bool = False  # Codex freeform tools (apply_patch): ``input`` is {"input": "<text>"}
    namespace: str | None = None  # a Codex tool offered inside a namespace (``collaboration``)


@dataclass(frozen=True)
class Step:
    """One model answer: blocks streamed in order, or an HTTP error."""

    blocks: tuple[Text | Thinking | Tool, ...] = ()
    status: int = 200  # an HTTP error status answers with an error body instead
    error_type: str = "api_error"
    error_message: str = "fake server: scripted error"
    fail_after: int | None = None  # break the stream after this many SSE events
    delay: float = 0.0  # seconds between deltas (a slow reply to interrupt)
    repeat: bool = False  # keep answering with this step once reached


@dataclass
class Script:
    conversations: dict[str, list[Step]]
    default: Step = field(default_factory=lambda: Step(blocks=(Text("OK."),)))
    _pos: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_step(self, first_user_text: str) -> Step:
        with self._lock:
            for marker, steps in self.conversations.items():
                if marker in first_user_text:
                    i = self._pos.get(marker, 0)
                    if i >= len(steps):
                        return steps[-1] if steps[-1].repeat else self.default
                    if not steps[i].repeat:
                        self._pos[marker] = i + 1
                    return steps[i]
            return self.default


def chunks(text: str, n: int = 3) -> list[str]:
    """Text split into about ``n`` deltas on word boundaries."""
    words = text.split(" ")
    size = max(1, -(-len(words) // n))
    parts = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
    return [p + (" " if i < len(parts) - 1 else "") for i, p in enumerate(parts)]


# ---------------------------------------------------------------- the server


class _Counter:
    def __init__(self) -> None:
        self._n = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._n += 1
            return self._n

    def skip(self, n: int) -> None:
        """Continue after ``n`` (the ids a previous run of the same session used)."""
        with self._lock:
            self._n = max(self._n, n)

    @property
    def last(self) -> int:
        return self._n


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Script, log: Path, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.script = script
        self.log = log
        self.ids = _Counter()
        self._thread: threading.Thread | None = None
        self.first_turn_answered = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> FakeServer:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()

    def record(self, path: str, body: Any) -> None:
        with self.log.open("a") as f:
            f.write(json.dumps({"path": path, "body": body}) + "\n")


class _Handler(BaseHTTPRequestHandler):
    server: FakeServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _body(self) -> Any:
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"null")
        except ValueError:
            return None

    def _json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("request-id", f"req_01FAKE{self.server.ids.next():06d}")
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: Iterator[tuple[str, dict[str, Any]]], step: Step) -> None:
        self.send_response(200)
        self.send_header("request-id", f"req_01FAKE{self.server.ids.next():06d}")
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        for i, (name, data) in enumerate(events):
            if step.fail_after is not None and i >= step.fail_after:
                return  # the connection drops mid-stream
            try:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return  # the client went away (an interrupt)
            if step.delay and name.endswith("delta"):
                time.sleep(step.delay)

    def do_GET(self) -> None:
        self.server.record(self.path, None)
        self._json(404, {"error": {"type": "not_found_error", "message": f"fake server: no {self.path}"}})


def _inter_agent_message(item: dict[str, Any]) -> bool:
    """An assistant message whose text is a message between agents, ``{"author", "recipient",
    "content", ...}`` (how Codex 0.131 gives a sub-agent its task)."""
    if item.get("role") != "assistant":
        return False
    try:
        message = json.loads(_user_text(item.get("content")))
    except ValueError:
        return False
    return isinstance(message, dict) and {"author", "recipient", "content"} <= message.keys()


def _user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _user_text(c.get("text", c.get("content", c.get("encrypted_content", ""))))
            for c in content
            if isinstance(c, dict)
        )
    return ""


# ---------------------------------------------------------------- Anthropic

#: Tools renamed between Claude Code versions: the script's name, then the older one.
_RENAMED = {"Agent": "Task"}

#: Inputs a bridge's tool requires that the scripts leave out, and the value a model would give:
#: claude-code-acp 0.16's ``mcp__acp__Bash`` requires ``timeout`` (its description says
#: "Optional timeout in milliseconds (max 120000)") and refuses a call without one.
_REQUIRED_INPUTS = {"timeout": 120000}


def _offered_names(step: Step, tools: Any) -> Step:
    """The step with a tool the agent does not offer renamed to the name it does offer.

    Claude Code called its sub-agent tool ``Task`` before 2.1.2xx and ``Agent`` since; the scripts say
    ``Agent``, and an older agent answers a call of a tool it does not know with an error.  The older
    ACP bridge (``@zed-industries/claude-code-acp``) turns the built-in ``Read``, ``Edit``, ``Bash``
    off and offers its own MCP tools instead (``mcp__acp__read`` taking ``abs_path``, later
    ``mcp__acp__Read`` taking ``file_path``): a call goes to that tool, its input fitted to the
    tool's schema (a required input the script leaves out gets the value of ``_REQUIRED_INPUTS``).
    """
    schemas = {t.get("name"): t.get("input_schema") or {} for t in tools or () if isinstance(t, dict)}
    blocks = tuple(_offered(b, schemas) if isinstance(b, Tool) and b.name not in schemas else b for b in step.blocks)
    return step if blocks == step.blocks else replace(step, blocks=blocks)


def _offered(b: Tool, schemas: dict[Any, Any]) -> Tool:
    if _RENAMED.get(b.name) in schemas:
        return replace(b, name=_RENAMED[b.name])
    for name in (f"mcp__acp__{b.name}", f"mcp__acp__{b.name.lower()}"):
        if name in schemas:
            props = schemas[name].get("properties") or {}
            args = dict(b.input)
            if "file_path" in args and "file_path" not in props and "abs_path" in props:
                args["abs_path"] = args.pop("file_path")
            if props and schemas[name].get("additionalProperties") is False:
                args = {k: v for k, v in args.items() if k in props}
            for key in schemas[name].get("required") or ():
                if key not in args and key in _REQUIRED_INPUTS:
                    args[key] = _REQUIRED_INPUTS[key]
            return replace(b, name=name, input=args)
    return b


class AnthropicHandler(_Handler):
    def do_POST(self) -> None:
        body = self._body()
        self.server.record(self.path, body)
        if not self.path.startswith("/v1/messages") or not isinstance(body, dict):
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "fake server"}})
            return
        if self.path.startswith("/v1/messages/count_tokens"):
            self._json(200, {"input_tokens": 42})
            return
        msgs = body.get("messages") or []
        first = _user_text(msgs[0].get("content")) if msgs else ""
        # A request offering no tools is a side request (a session title the agent asks for,
        # quoting the prompt): it gets the default answer and consumes no scripted step.
        step = self.server.script.next_step(first) if body.get("tools") else self.server.script.default
        step = _offered_names(step, body.get("tools"))
        if step.status != 200:
            err = {"type": "error", "error": {"type": step.error_type, "message": step.error_message}}
            self._json(step.status, err)
            return
        model = body.get("model", "claude-fake")
        n = self.server.ids.next()
        if body.get("stream"):
            self._sse(self._events(step, model, n), step)
        else:
            self._json(200, self._message(step, model, n))

    def _stop_reason(self, step: Step) -> str:
        return "tool_use" if any(isinstance(b, Tool) for b in step.blocks) else "end_turn"

    def _message(self, step: Step, model: str, n: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        for k, b in enumerate(step.blocks):
            if isinstance(b, Text):
                content.append({"type": "text", "text": b.text})
            elif isinstance(b, Thinking):
                content.append({"type": "thinking", "thinking": b.text, "signature": b.signature})
            else:
                content.append(
                    {"type": "tool_use", "id": f"toolu_01FAKE{n:04d}{k:02d}", "name": b.name, "input": b.input}
                )
        return {
            "id": f"msg_01FAKE{n:06d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": self._stop_reason(step),
            "stop_sequence": None,
            "usage": {"input_tokens": 120, "output_tokens": 24},
        }

    def _events(self, step: Step, model: str, n: int) -> Iterator[tuple[str, dict[str, Any]]]:
        usage = {
            "input_tokens": 120,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 1,
            "service_tier": "standard",
        }
        message = {
            "id": f"msg_01FAKE{n:06d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        yield "message_start", {"type": "message_start", "message": message}
        yield "ping", {"type": "ping"}
        for k, b in enumerate(step.blocks):
            if isinstance(b, Text):
                yield (
                    "content_block_start",
                    {"type": "content_block_start", "index": k, "content_block": {"type": "text", "text": ""}},
                )
                for part in chunks(b.text):
                    delta = {"type": "text_delta", "text": part}
                    yield "content_block_delta", {"type": "content_block_delta", "index": k, "delta": delta}
            elif isinstance(b, Thinking):
                start = {"type": "thinking", "thinking": "", "signature": ""}
                yield "content_block_start", {"type": "content_block_start", "index": k, "content_block": start}
                for part in chunks(b.text):
                    delta = {"type": "thinking_delta", "thinking": part}
                    yield "content_block_delta", {"type": "content_block_delta", "index": k, "delta": delta}
                sig = {"type": "signature_delta", "signature": b.signature}
                yield "content_block_delta", {"type": "content_block_delta", "index": k, "delta": sig}
            else:
                start = {"type": "tool_use", "id": f"toolu_01FAKE{n:04d}{k:02d}", "name": b.name, "input": {}}
                yield "content_block_start", {"type": "content_block_start", "index": k, "content_block": start}
                args = json.dumps(b.input)
                for part in ("", args[: len(args) // 2], args[len(args) // 2 :]):
                    delta = {"type": "input_json_delta", "partial_json": part}
                    yield "content_block_delta", {"type": "content_block_delta", "index": k, "delta": delta}
            yield "content_block_stop", {"type": "content_block_stop", "index": k}
        delta = {"stop_reason": self._stop_reason(step), "stop_sequence": None}
        yield "message_delta", {"type": "message_delta", "delta": delta, "usage": {"output_tokens": 24}}
        yield "message_stop", {"type": "message_stop"}


# ---------------------------------------------------------------- OpenAI Responses


def _spawned_agent_ids(items: Any) -> list[str]:
    """The ids of the agents the request's spawn_agent outputs name (``{"agent_id": ...}``)."""
    ids: list[str] = []
    for i in items or ():
        if isinstance(i, dict) and i.get("type") == "function_call_output" and isinstance(i.get("output"), str):
            try:
                out = json.loads(i["output"])
            except ValueError:
                continue
            if isinstance(out, dict) and isinstance(out.get("agent_id"), str):
                ids.append(out["agent_id"])
    return ids


def _offered_codex_tools(step: Step, tools: Any, items: Any = None) -> Step:
    """The step's tool calls in the shape of the tools an older Codex offers.

    The scripts call ``exec_command {cmd, workdir}`` and a freeform ``apply_patch``, as
    current Codex offers them.  Older versions offer ``shell {command: argv, workdir}``
    and ``apply_patch`` as a function with ``{input}``, or no ``apply_patch`` at all (the
    patch then goes through ``shell`` as ``["apply_patch", patch]``, or, to a Codex that
    offers only ``exec_command`` (0.96, 0.120), as an ``apply_patch`` heredoc, which Codex
    runs itself, as its instructions tell the model to).
    A tool the scripts call inside a namespace (``collaboration``, as 0.171 offers it) goes
    without one to a Codex that offers it as a plain function (0.142's ``spawn_agent``): a
    namespaced call it does not know is refused ("unsupported call"); its input keeps the
    parameters the function has.  The older sub-agent tools (0.96's ``collab``) wait with
    ``wait {ids}``, not ``wait_agent``: the ids are those the request's spawn outputs gave.
    """
    offered = {(t.get("type"), t.get("name")) for t in tools or () if isinstance(t, dict)}
    names = {name for _, name in offered}
    params = {
        t.get("name"): (t.get("parameters") or {}).get("properties") or {}
        for t in tools or ()
        if isinstance(t, dict) and t.get("type") == "function"
    }
    if not step.blocks or not any(isinstance(b, Tool) for b in step.blocks):
        return step
    blocks: list[Text | Thinking | Tool] = []
    for b in step.blocks:
        if isinstance(b, Tool) and b.name == "exec_command" and "exec_command" not in names and "shell" in names:
            args: dict[str, Any] = {"command": ["bash", "-lc", b.input.get("cmd", "")]}
            if "workdir" in b.input:
                args["workdir"] = b.input["workdir"]
            b = Tool("shell", args)
        elif (
            isinstance(b, Tool)
            and b.namespace is not None
            and ("namespace", b.namespace) not in offered
            and ("function", b.name) in offered
        ):
            props = params.get(b.name) or {}
            b = replace(b, namespace=None, input={k: v for k, v in b.input.items() if not props or k in props})
        elif (
            isinstance(b, Tool)
            and b.name == "wait_agent"
            and "wait_agent" not in names
            and ("function", "wait") in offered
        ):
            args = {"ids": _spawned_agent_ids(items)}
            if "timeout_ms" in b.input:
                args["timeout_ms"] = b.input["timeout_ms"]
            b = Tool("wait", args)
        elif isinstance(b, Tool) and b.name == "apply_patch" and b.custom and ("custom", "apply_patch") not in offered:
            if "apply_patch" in names:
                b = Tool("apply_patch", {"input": b.input["input"]})
            elif "shell" in names:
                b = Tool("shell", {"command": ["apply_patch", b.input["input"]]})
            elif "exec_command" in names:
                b = Tool("exec_command", {"cmd": f"apply_patch <<'PATCH'\n{b.input['input']}\nPATCH"})
        blocks.append(b)
    return replace(step, blocks=tuple(blocks))


class ResponsesHandler(_Handler):
    def do_POST(self) -> None:
        body = self._body()
        self.server.record(self.path, body)
        if not self.path.rstrip("/").endswith("/responses") or not isinstance(body, dict):
            self._json(404, {"error": {"type": "not_found", "message": "fake server"}})
            return
        items = body.get("input") or []
        # a sub-agent's task comes as an ``agent_message`` from its parent (multi_agent_v2), its
        # text in ``encrypted_content`` parts (plain text: nothing encrypts it on the way here);
        # 0.131 sends it as an assistant message whose text is the JSON of the message
        users = [
            i
            for i in items
            if isinstance(i, dict)
            and (i.get("role") == "user" or i.get("type") == "agent_message" or _inter_agent_message(i))
        ]
        # Codex puts its environment context in a user message first; the prompt is the last user text
        # of the first turn, so look at every user message for the marker.
        text = "\n".join(_user_text(u.get("content")) for u in users)
        # No tools offered: a side request (the thread title), as for Anthropic above.
        step = self.server.script.next_step(text) if body.get("tools") else self.server.script.default
        step = _offered_codex_tools(step, body.get("tools"), items)
        if step.status != 200:
            self._json(step.status, {"error": {"type": step.error_type, "message": step.error_message}})
            return
        n = self.server.ids.next()
        self._sse(self._events(step, body.get("model", "gpt-fake"), n), step)

    def _events(self, step: Step, model: str, n: int) -> Iterator[tuple[str, dict[str, Any]]]:
        rid = f"resp_FAKE{n:06d}"
        yield "response.created", {"type": "response.created", "response": {"id": rid, "model": model}}
        for k, b in enumerate(step.blocks):
            if isinstance(b, Text):
                item_id = f"msg_FAKE{n:04d}{k:02d}"
                added = {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}
                yield (
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": k, "item": added},
                )
                for part in chunks(b.text):
                    delta = {
                        "type": "response.output_text.delta",
                        "item_id": item_id,
                        "output_index": k,
                        "content_index": 0,
                        "delta": part,
                    }
                    yield "response.output_text.delta", delta
                content = [{"type": "output_text", "text": b.text, "annotations": []}]
                done = {**added, "status": "completed", "content": content}
                yield (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": k, "item": done},
                )
            elif isinstance(b, Thinking):
                item_id = f"rs_FAKE{n:04d}{k:02d}"
                added = {"type": "reasoning", "id": item_id, "summary": []}
                yield (
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": k, "item": added},
                )
                part = {"type": "summary_text", "text": ""}
                yield (
                    "response.reasoning_summary_part.added",
                    {
                        "type": "response.reasoning_summary_part.added",
                        "item_id": item_id,
                        "output_index": k,
                        "summary_index": 0,
                        "part": part,
                    },
                )
                for piece in chunks(b.text):
                    delta = {
                        "type": "response.reasoning_summary_text.delta",
                        "item_id": item_id,
                        "output_index": k,
                        "summary_index": 0,
                        "delta": piece,
                    }
                    yield "response.reasoning_summary_text.delta", delta
                done = {
                    "type": "reasoning",
                    "id": item_id,
                    "summary": [{"type": "summary_text", "text": b.text}],
                    "encrypted_content": "gAAAAABmockEncryptedReasoning==",
                }
                yield (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": k, "item": done},
                )
            else:
                call_id = f"call_FAKE{n:04d}{k:02d}"
                item: dict[str, Any]
                if b.custom:
                    item = {
                        "type": "custom_tool_call",
                        "id": f"ctc_FAKE{n:04d}{k:02d}",
                        "status": "completed",
                        "call_id": call_id,
                        "name": b.name,
                        "input": b.input["input"],
                    }
                else:
                    item = {
                        "type": "function_call",
                        "id": f"fc_FAKE{n:04d}{k:02d}",
                        "status": "completed",
                        "call_id": call_id,
                        "name": b.name,
                        "arguments": json.dumps(b.input),
                    }
                    if b.namespace is not None:
                        item["namespace"] = b.namespace
                yield (
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": k, "item": item},
                )
                yield (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": k, "item": item},
                )
        usage = {
            "input_tokens": 1200,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 40,
            "output_tokens_details": {"reasoning_tokens": 8},
            "total_tokens": 1240,
        }
        done_resp = {"id": rid, "model": model, "status": "completed", "usage": usage}
        yield "response.completed", {"type": "response.completed", "response": done_resp}


# ---------------------------------------------------------------- Gemini


class GeminiHandler(_Handler):
    """The Gemini API as Gemini CLI calls it with ``GOOGLE_GEMINI_BASE_URL``.

    ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` (the turn: ``data:`` lines,
    each a GenerateContentResponse) and ``:generateContent`` (side queries: routing, the next
    speaker check), ``:countTokens``.  Thinking is a part with ``thought: true``; a tool call a
    ``functionCall`` part; ``usageMetadata`` comes with the last chunk.
    """

    def do_POST(self) -> None:
        body = self._body()
        self.server.record(self.path, body)
        path = self.path.split("?", 1)[0]
        if not isinstance(body, dict) or ":" not in path:
            self._json(404, {"error": {"code": 404, "message": "fake server", "status": "NOT_FOUND"}})
            return
        model = path.rsplit("/", 1)[-1].split(":", 1)[0]
        method = path.rsplit(":", 1)[-1]
        if method == "countTokens":
            self._json(200, {"totalTokens": 42})
            return
        contents = body.get("contents") or []
        text = "\n".join(
            str(p.get("text", ""))
            for c in contents
            if isinstance(c, dict) and c.get("role") == "user"
            for p in c.get("parts") or []
            if isinstance(p, dict)
        )
        # Only the turn's own requests offer tools; routing and checks on the side get the default.
        step = self.server.script.next_step(text) if body.get("tools") else self.server.script.default
        if body.get("tools") and not self.server.first_turn_answered:
            self.server.first_turn_answered = True
            # Gemini CLI 0.11 and 0.20 load their shell parser in the background: a call made before
            # it is ready is refused as "could not be parsed safely", so the first answer waits
            time.sleep(float(os.environ.get("NREC_GEMINI_FIRST_DELAY", "0")))
        if step.status != 200:
            status = {400: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
            err = {"code": step.status, "message": step.error_message, "status": status.get(step.status, "UNKNOWN")}
            self._json(step.status, {"error": err})
            return
        n = self.server.ids.next()
        if method == "streamGenerateContent":
            self._sse_data(self._chunks(step, model, n), step)
        else:
            self._json(200, self._side_answer(body, model, n))

    def _sse_data(self, chunks: Iterator[dict[str, Any]], step: Step) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        for i, data in enumerate(chunks):
            if step.fail_after is not None and i >= step.fail_after:
                return
            try:
                self.wfile.write(f"data: {json.dumps(data)}\r\n\r\n".encode())
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            if step.delay:
                time.sleep(step.delay)

    @staticmethod
    def _usage(out: int) -> dict[str, Any]:
        return {
            "promptTokenCount": 1200,
            "candidatesTokenCount": out,
            "totalTokenCount": 1200 + out + 8,
            "thoughtsTokenCount": 8,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 1200}],
        }

    def _side_answer(self, body: dict[str, Any], model: str, n: int) -> dict[str, Any]:
        config = body.get("generationConfig") or {}
        # a JSON answer is asked for by the router and the next-speaker check
        text = json.dumps(
            {
                "reasoning": "fake",
                "model_choice": "flash",
                "complexity_reasoning": "fake",
                "complexity_score": 10,
                "next_speaker": "user",
            }
        )
        if config.get("responseMimeType") != "application/json":
            text = self.server.script.default.blocks[0].text  # type: ignore[union-attr]
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": self._usage(4),
            "modelVersion": model,
            "responseId": f"fakeResp{n:06d}",
        }

    def _chunks(self, step: Step, model: str, n: int) -> Iterator[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        for k, b in enumerate(step.blocks):
            if isinstance(b, Text):
                parts.extend({"text": piece} for piece in chunks(b.text))
            elif isinstance(b, Thinking):
                parts.extend({"text": piece, "thought": True} for piece in chunks(b.text))
            else:
                parts.append({"functionCall": {"name": b.name, "args": b.input}, "thoughtSignature": f"c2ln{n}{k}"})
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            chunk: dict[str, Any] = {
                "candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}],
                "modelVersion": model,
                "responseId": f"fakeResp{n:06d}",
            }
            if last:
                chunk["candidates"][0]["finishReason"] = "STOP"
                chunk["usageMetadata"] = self._usage(40)
            yield chunk
