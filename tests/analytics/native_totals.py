"""What each capture itself says the session cost, read straight from the native JSON.

Independent of normalize on purpose: plain ``json`` over the capture files, one
small reader per protocol, each reading the figure the agent reports for the
whole session (or adding up its per-turn figures when it reports no total).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Totals = dict[str, float]  # input, output (and cost when the agent reports one)


def messages(path: Path) -> Iterator[dict[str, Any]]:
    """The agent's messages of a capture (tap files unwrapped, client lines left out)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        if set(obj) >= {"t", "from", "msg"}:
            if obj["from"] != "agent" or not isinstance(obj["msg"], dict):
                continue
            obj = obj["msg"]
        yield obj


def _model_input(models: Any) -> int:
    """All input of ``modelUsage``: uncached, cache reads and cache writes (normalized ``input``)."""
    keys = ("inputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")
    return sum(int(u.get(k, 0)) for u in models for k in keys)


def claude_stream_json(path: Path) -> Totals | None:
    """The last ``result`` line: ``modelUsage`` is cumulative over the session, sub-agents included."""
    last = None
    for m in messages(path):
        if m.get("type") == "result" and isinstance(m.get("modelUsage"), dict):
            last = m
    if last is None:
        return None
    models = last["modelUsage"].values()
    return {
        "input": _model_input(models),
        "output": sum(u.get("outputTokens", 0) for u in models),
        "cost": last["total_cost_usd"],
    }


def claude_transcript(path: Path) -> Totals | None:
    """The last ``cost-state`` line (cumulative, sub-agents included), else the model calls added up.

    The tokens are the calls' when those add up to more: Claude Code 2.1.290 leaves a reply cut
    by an interrupt out of ``cost-state`` (and out of its stdout's ``modelUsage``), though the
    file holds that call with its usage (``27-interrupt``: 120 in, 1 out). The cost stays the CLI's.
    """
    last = None
    for m in messages(path):
        if m.get("type") == "cost-state" and isinstance(m.get("modelUsage"), dict):
            last = m
    calls = claude_transcript_calls(path)
    if last is not None:
        models = last["modelUsage"].values()
        own = {"input": _model_input(models), "output": sum(u.get("outputTokens", 0) for u in models)}
        if calls is not None and calls["input"] >= own["input"] and calls["output"] >= own["output"]:
            own = {"input": calls["input"], "output": calls["output"]}
        return {**own, "cost": last["totalCostUSD"]}
    return calls


def claude_subagent_files(path: Path) -> list[Path]:
    """A session's sub-agent files: ``<session>/subagents/`` (2.1.x), ``agent-*.jsonl`` beside it naming it (2.0.x)."""
    files = sorted((path.parent / path.name.removesuffix(".jsonl") / "subagents").glob("*.jsonl"))
    for f in sorted(path.parent.glob("agent-*.jsonl")):
        first = next(messages(f), {})
        if f != path and first.get("sessionId") == path.name.removesuffix(".jsonl"):
            files.append(f)
    return files


def claude_transcript_calls(path: Path) -> Totals | None:
    """Every model call of the session and its sub-agents: assistant lines, once per message id.

    Input is all input (uncached, cache reads, cache writes).  Before 2.1 each line of a
    message carries the usage known when its block ended: the message's figure is the
    largest any of its lines gives.
    """
    seen: dict[str, tuple[int, int]] = {}
    for f in [path, *claude_subagent_files(path)]:
        for m in messages(f):
            msg = m.get("message")
            if m.get("type") != "assistant" or not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
                continue
            if msg.get("model") == "<synthetic>":
                continue
            u = msg["usage"]
            inp = (
                u.get("input_tokens", 0) + u.get("cache_read_input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
            )
            key = str(msg.get("id") or m.get("uuid"))
            old = seen.get(key, (0, 0))
            seen[key] = (max(old[0], inp), max(old[1], u.get("output_tokens", 0)))
    if not seen:
        return None
    return {"input": sum(i for i, _ in seen.values()), "output": sum(o for _, o in seen.values())}


def codex_rollout(path: Path) -> Totals | None:
    """The last ``token_count``'s running total."""
    last = None
    for m in messages(path):
        p = m.get("payload")
        if m.get("type") == "event_msg" and isinstance(p, dict) and p.get("type") == "token_count":
            info = p.get("info")
            if isinstance(info, dict) and info.get("total_token_usage"):
                last = info["total_token_usage"]
    if last is None:
        return None
    return {"input": last["input_tokens"], "output": last["output_tokens"]}


def codex_app_server_threads(path: Path) -> dict[str, Totals]:
    """Per thread (a sub-agent runs on a thread of its own): its last ``thread/tokenUsage/updated``'s running total."""
    last: dict[str, Any] = {}
    for m in messages(path):
        if m.get("method") == "thread/tokenUsage/updated":
            last[m["params"]["threadId"]] = m["params"]["tokenUsage"]["total"]
    return {t: {"input": u["inputTokens"], "output": u["outputTokens"]} for t, u in last.items()}


def codex_app_server(path: Path) -> Totals | None:
    """Every thread's last running total, added up."""
    threads = codex_app_server_threads(path)
    if not threads:
        return None
    return {"input": sum(t["input"] for t in threads.values()), "output": sum(t["output"] for t in threads.values())}


def codex_exec_json(path: Path) -> Totals | None:
    """``turn.completed`` usage, per turn: added up."""
    turns = [m["usage"] for m in messages(path) if m.get("type") == "turn.completed" and "usage" in m]
    if not turns:
        return None
    return {"input": sum(u["input_tokens"] for u in turns), "output": sum(u["output_tokens"] for u in turns)}


def hm_json(path: Path) -> Totals | None:
    """``session_end.usage`` (the whole process), else the ``usage`` lines added up."""
    end = None
    calls = []
    for m in messages(path):
        if m.get("type") == "session_end" and isinstance(m.get("usage"), dict):
            end = m["usage"]
        elif m.get("type") == "usage" and isinstance(m.get("input"), int):
            calls.append(m)
    if end is not None:
        return {"input": end["input"], "output": end["output"], "cost": end["cost"]}
    if not calls:
        return None
    return {
        "input": sum(c["input"] for c in calls),
        "output": sum(c["output"] for c in calls),
        "cost": sum(c.get("cost", 0.0) for c in calls),
    }


def antigravity(path: Path) -> Totals | None:
    """The last ``result``'s usage: cumulative over the conversation."""
    last = None
    for m in messages(path):
        r = m.get("result")
        if m.get("event") == "result" and isinstance(r, dict) and isinstance(r.get("usage"), dict):
            last = r["usage"]
    if last is None:
        return None
    return {"input": last["input_tokens"], "output": last["output_tokens"]}


def acp(path: Path) -> Totals | None:
    """``session/prompt`` responses' usage, per turn: added up (only when every prompt answered with one)."""
    prompts: set[Any] = set()
    usages: dict[Any, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        msg = obj.get("msg", obj)
        if obj.get("from") == "client" and msg.get("method") == "session/prompt":
            prompts.add(msg.get("id"))
        elif obj.get("from") == "agent" and "result" in msg and msg.get("id") in prompts:
            result = msg["result"]
            if isinstance(result, dict) and isinstance(result.get("usage"), dict):
                usages[msg["id"]] = result["usage"]
    if not usages:
        return None
    return {
        "input": sum(u.get("inputTokens", 0) for u in usages.values()),
        "output": sum(u.get("outputTokens", 0) for u in usages.values()),
    }


def gemini_stream_json(path: Path) -> Totals | None:
    """``result.stats`` per process (one turn): added up; output = total - input (thoughts included)."""
    stats = [m["stats"] for m in messages(path) if m.get("type") == "result" and "stats" in m]
    if not stats:
        return None
    return {
        "input": sum(s["input_tokens"] for s in stats),
        "output": sum(s["total_tokens"] - s["input_tokens"] for s in stats),
    }


def gemini_chat(path: Path) -> Totals | None:
    """Each model message's ``tokens`` (a message is written again when its calls ran): once per id."""
    tokens = {m["id"]: m["tokens"] for m in messages(path) if m.get("type") == "gemini" and "tokens" in m}
    if not tokens:
        return None
    return {
        "input": sum(t["input"] for t in tokens.values()),
        "output": sum(t["output"] + t.get("thoughts", 0) for t in tokens.values()),
    }


def _opencode_steps(steps: list[tuple[dict[str, Any], float]]) -> Totals | None:
    """OpenCode's step counts added up, cache counted back into input.  Output, reasoning
    included: the provider's total less the input where OpenCode wrote a total (its output
    holds the reasoning up to 1.3, not from 1.14); else (1.0, 1.1) output as written."""
    inputs = [t["input"] + t["cache"]["read"] + t["cache"]["write"] for t, _ in steps]
    outputs = [t["total"] - i if "total" in t else t["output"] for (t, _), i in zip(steps, inputs, strict=True)]
    if not (sum(inputs) or sum(outputs)):
        return None
    return {"input": sum(inputs), "output": sum(outputs), "cost": sum(cost for _, cost in steps)}


def opencode_json(path: Path) -> Totals | None:
    """``step_finish`` parts (one a model request), added up."""
    parts = [m["part"] for m in messages(path) if m.get("type") == "step_finish"]
    return _opencode_steps([(p["tokens"], p["cost"]) for p in parts])


def opencode_db(path: Path) -> Totals | None:
    """The ``session`` row's running totals (the database holds one session per capture);
    a session table without them (OpenCode up to 1.14): its assistant messages', added up;
    a storage/ folder (1.0, 1.1): its message files', added up."""
    if path.is_dir():
        data = [json.loads(f.read_bytes()) for f in sorted(path.glob("message/*/*.json"))]
        return _opencode_steps([(d["tokens"], d["cost"]) for d in data if "tokens" in d])
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        if "tokens_input" not in {info[1] for info in db.execute("pragma table_info(session)")}:
            data = [json.loads(d) for (d,) in db.execute("select data from message")]
            return _opencode_steps([(d["tokens"], d["cost"]) for d in data if "tokens" in d])
        row = db.execute(
            "select tokens_input + tokens_cache_read + tokens_cache_write, tokens_output + tokens_reasoning, cost"
            " from session"
        ).fetchone()
    if row is None or not (row[0] or row[1]):
        return None
    return {"input": row[0], "output": row[1], "cost": row[2]}


READERS: dict[str, Callable[[Path], Totals | None]] = {
    "claude-stream-json": claude_stream_json,
    "claude-transcript": claude_transcript,
    "codex-rollout": codex_rollout,
    "codex-app-server": codex_app_server,
    "codex-exec-json": codex_exec_json,
    "hm-json": hm_json,
    "antigravity-stream-json": antigravity,
    "acp": acp,
    "gemini-stream-json": gemini_stream_json,
    "gemini-chat": gemini_chat,
    "opencode-json": opencode_json,
    "opencode-db": opencode_db,
}


# --------------------------------------------------------------------------
# Tool calls: the ids the agent gave its calls


def _claude_tool_ids(files: list[Path]) -> set[str]:
    ids: set[str] = set()
    for f in files:
        for m in messages(f):
            msg = m.get("message")
            if m.get("type") == "assistant" and isinstance(msg, dict) and isinstance(msg.get("content"), list):
                ids.update(b["id"] for b in msg["content"] if isinstance(b, dict) and b.get("type") == "tool_use")
    return ids


def claude_transcript_tools(path: Path) -> set[str]:
    return _claude_tool_ids([path, *sorted((path.parent / path.name.removesuffix(".jsonl")).rglob("*.jsonl"))])


def claude_stream_json_tools(path: Path) -> set[str]:
    return _claude_tool_ids([path])


def hm_json_tools(path: Path) -> set[str]:
    return {str(m["call_id"]) for m in messages(path) if m.get("type") == "tool_call" and "call_id" in m}


TOOL_READERS: dict[str, Callable[[Path], set[str]]] = {
    "claude-transcript": claude_transcript_tools,
    "claude-stream-json": claude_stream_json_tools,
    "hm-json": hm_json_tools,
}


# --------------------------------------------------------------------------
# Turns: how many the agent ran


#: prompts Claude Code writes itself: an interrupt, what a local command printed
_CLAUDE_NOT_PROMPTS = ("[Request interrupted by user", "<local-command-stdout>", "<local-command-stderr>")


def claude_transcript_prompts(path: Path) -> int:
    """Real prompts of the main thread: user text (a slash command too), no tool result, no meta line."""
    n = 0
    for m in messages(path):
        msg = m.get("message")
        if m.get("type") != "user" or m.get("isSidechain") or m.get("isMeta") or not isinstance(msg, dict):
            continue
        if m.get("isCompactSummary"):
            continue
        content = msg.get("content")
        if isinstance(content, list):
            if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
                continue
            content = "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
        if isinstance(content, str) and not content.startswith(_CLAUDE_NOT_PROMPTS):
            n += 1
    return n


#: user messages Codex writes itself (context, not the user's words)
_CODEX_INJECTED = ("<environment_context>", "<turn_aborted>", "<user_instructions>", "# AGENTS.md instructions")


def codex_rollout_turns(path: Path) -> int:
    """``task_started`` lines (one per turn, completed or aborted); files without them: one per prompt."""
    started = prompts = bare = 0
    for m in messages(path):
        payload = m.get("payload")
        p: dict[str, Any] = payload if isinstance(payload, dict) else {}
        if m.get("type") == "event_msg" and p.get("type") == "task_started":
            started += 1
        elif m.get("type") == "event_msg" and p.get("type") == "user_message":
            prompts += 1
        elif m.get("type") == "message" and m.get("role") == "user":  # files without envelope
            text = "".join(c.get("text", "") for c in m.get("content") or [] if isinstance(c, dict))
            bare += not text.startswith(_CODEX_INJECTED)
    return started or prompts or bare


def codex_exec_json_turns(path: Path) -> int:
    """``turn.started`` lines; the older shape: one ``prompt`` line per run."""
    ms = list(messages(path))
    return sum(1 for m in ms if m.get("type") == "turn.started") or sum(1 for m in ms if "prompt" in m)


TURN_READERS: dict[str, Callable[[Path], int]] = {
    # one ``result`` line closes each prompt's run
    "claude-stream-json": lambda p: sum(1 for m in messages(p) if m.get("type") == "result"),
    "claude-transcript": claude_transcript_prompts,
    "codex-rollout": codex_rollout_turns,
    "codex-exec-json": codex_exec_json_turns,
}
