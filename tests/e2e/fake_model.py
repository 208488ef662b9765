"""Scripted stand-ins for three model APIs on loopback, each streaming server-sent events the way
its host reads them: Anthropic messages (Claude Code), Gemini streamGenerateContent (Gemini CLI)
and the OpenAI responses API (Codex).

One script plays the agent on all three: it claims a roadmap through the host's own shell tool,
then closes each step a continuation names; or, in the `idle` script, never does anything.
Every response reports known token usage: USAGE for side requests, and for the n-th reply to the
agent's turn USAGE with n added to each part (kept in `Script.reported`), so a reply counted
twice or missed shows in the totals.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.e2e import limits

NEXT = re.compile(r"Next step: \*\*([^*]+)\*\*")
# per response: fresh input, output, input read from the cache, input written to the cache
USAGE = {"input": 100, "output": 20, "cache_read": 30, "cache_write": 10}
SUMMARY = "Summary: the roadmap is claimed and its steps are open."  # a compaction's summary
IDS = itertools.count(1)  # hosts merge streamed messages that share an id: every one is new


class Script:
    """The agent's side of the conversation, whatever the host."""

    def __init__(self, slug: str, agentcfg: str, idle: bool = False) -> None:
        self.slug, self.agentcfg, self.idle = slug, agentcfg, idle
        self.prompts: list[str] = []  # the text of every agent-turn request's last message
        self.reported: list[int] = []  # the tokens every agent-turn reply reported
        self.summaries: list[str] = []  # the last message of every request for a summary
        self.lock = threading.Lock()

    def reply(self, text: str, after_tool: bool) -> tuple[str, str]:
        """("text", words) or ("tool", shell command) for the next assistant message."""
        with self.lock:
            self.prompts.append(text)
        if after_tool:
            return "text", "Still thinking." if self.idle else "Done with that step."
        steps = NEXT.findall(text)
        if steps:
            if self.idle:
                return "text", "Still thinking about it."
            return "tool", f"{self.agentcfg} roadmap done {self.slug} {steps[-1]}"
        if "No step is open" in text:  # told so after a compaction: the agent ends its turn
            return "text", "Nothing is left to do."
        return "tool", f"{self.agentcfg} sessions claim {self.slug}"

    def spend(self, parts: tuple[str, ...]) -> dict[str, int]:
        """The usage of the latest agent-turn reply, in the parts the host's API reports."""
        with self.lock:
            usage = {part: USAGE[part] + len(self.prompts) for part in parts}
            self.reported.append(sum(usage.values()))
        return usage

    def continuations(self) -> list[str]:
        return [t for t in self.prompts if "run-continuation:" in t]


def _text(content: object) -> str:
    """The words of an Anthropic or responses-API content list, or a plain string."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text(b.get("text") or b.get("content")) for b in content if isinstance(b, dict)
        )
    return ""


# --- Claude Code: POST /v1/messages, Anthropic events ---


def claude(script: Script, path: str, body: dict[str, Any]) -> Iterator[str] | dict[str, Any]:
    if not path.startswith("/v1/messages") or "count_tokens" in path:
        return {"input_tokens": USAGE["input"]}
    spent = USAGE
    if not body.get("tools"):
        kind, value = "text", "ok"  # a side request (titles, summaries): not the agent's turn
    else:
        last = body.get("messages", [{}])[-1].get("content")
        tool_result = isinstance(last, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in last
        )
        kind, value = script.reply(_text(last), tool_result)
        spent = script.spend(tuple(USAGE))
    n = next(IDS)
    usage = {
        "input_tokens": spent["input"],
        "output_tokens": spent["output"],
        "cache_read_input_tokens": spent["cache_read"],
        "cache_creation_input_tokens": spent["cache_write"],
    }
    if kind == "tool":
        block: dict[str, Any] = {
            "type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {},
        }  # fmt: skip
        arguments = {"command": value, "description": "run agentcfg"}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": value}
        stop = "end_turn"
    message = {
        "id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }  # fmt: skip
    if not body.get("stream"):
        content = (
            {"type": "text", "text": value} if kind == "text" else {**block, "input": arguments}
        )
        return {**message, "content": [content], "stop_reason": stop, "usage": usage}
    events = [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": spent["output"]}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return (f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


# --- Gemini CLI: POST /v1beta/models/<model>:streamGenerateContent?alt=sse ---


def gemini(script: Script, path: str, body: dict[str, Any]) -> Iterator[str] | dict[str, Any]:
    spent = USAGE
    if ":countTokens" in path:
        return {"totalTokens": USAGE["input"]}
    if not body.get("tools"):
        # a side request (next speaker, routing): hand the turn back to the person
        part: dict[str, Any] = {"text": json.dumps({"reasoning": "done", "next_speaker": "user"})}
    else:
        parts = (body.get("contents") or [{}])[-1].get("parts") or []
        after_tool = any("functionResponse" in p for p in parts if isinstance(p, dict))
        words = "\n".join(p["text"] for p in parts if isinstance(p, dict) and "text" in p)
        kind, value = script.reply(words, after_tool)
        spent = script.spend(("input", "cache_read", "output"))  # the API tells no cache writes
        part = (
            {"functionCall": {"name": "run_shell_command", "args": {"command": value}}}
            if kind == "tool"
            else {"text": value}
        )
    chunk = {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": spent["input"] + spent["cache_read"],
            "cachedContentTokenCount": spent["cache_read"],
            "candidatesTokenCount": spent["output"],
            "totalTokenCount": spent["input"] + spent["cache_read"] + spent["output"],
        },
        "modelVersion": "gemini-2.5-pro",
    }
    if "streamGenerateContent" not in path:
        return chunk
    return iter([f"data: {json.dumps(chunk)}\r\n\r\n"])


# --- Codex: POST /v1/responses, responses-API events ---


def codex(script: Script, path: str, body: dict[str, Any]) -> Iterator[str] | dict[str, Any]:
    if not path.endswith("/responses"):
        return {"data": []}
    items = body.get("input") or [{}]
    last = items[-1] if isinstance(items[-1], dict) else {}
    spent = USAGE
    if not body.get("tools"):
        # a side request: Codex asks for its compaction's summary offering no tools
        kind, value = "text", SUMMARY
        with script.lock:
            script.summaries.append(_text(last.get("content")))
    else:
        kind, value = script.reply(
            _text(last.get("content")), last.get("type") == "function_call_output"
        )
        spent = script.spend(("input", "cache_read", "output"))  # the API tells no cache writes
    tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    n = next(IDS)
    if kind == "tool":
        arguments = (
            {"cmd": value} if "exec_command" in tools else {"command": ["bash", "-lc", value]}
        )
        item: dict[str, Any] = {
            "type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
            "name": "exec_command" if "exec_command" in tools else "shell",
            "arguments": json.dumps(arguments), "status": "completed",
        }  # fmt: skip
    else:
        item = {
            "type": "message", "id": f"msg_{n}", "role": "assistant",
            "status": "completed", "content": [{"type": "output_text", "text": value, "annotations": []}],
        }  # fmt: skip
    usage = {
        "input_tokens": spent["input"] + spent["cache_read"],
        "input_tokens_details": {"cached_tokens": spent["cache_read"]},
        "output_tokens": spent["output"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": spent["input"] + spent["cache_read"] + spent["output"],
    }
    response = {"id": f"resp_{n}", "object": "response", "status": "in_progress"}
    events = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "usage": usage},
        },
    ]
    return (f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


Wire = Callable[[Script, str, dict[str, Any]], "Iterator[str] | dict[str, Any]"]
WIRES: dict[str, Wire] = {"claude": claude, "gemini": gemini, "codex": codex}


MODEL_PATHS = {
    "claude": ("/v1/messages",),
    "gemini": ("generatecontent",),
    "codex": ("/responses",),
}


def serve(
    script: Script,
    host: str = "claude",
    limit: limits.Limit | None = None,
    windows: limits.Windows | None = None,
) -> ThreadingHTTPServer:
    """Serve the script on a free loopback port, speaking `host`'s model API; with a `limit`,
    model requests meet the provider's usage limit first; with `windows` (Anthropic, OpenAI
    responses), each model answer reports the subscriber's usage windows in its headers."""
    wire = WIRES[host]

    def limited(path: str) -> bool:
        model = any(p in path.lower() for p in MODEL_PATHS[host]) and "count_tokens" not in path
        return limit is not None and model and limit.refuses()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(size) or b"{}")
            except ValueError:
                body = {}
            if limited(self.path):
                assert limit is not None
                refuse(self, limits.ANSWERS[host](limit))
                return
            model = any(p in self.path.lower() for p in MODEL_PATHS[host]) and (
                "count_tokens" not in self.path
            )
            shown = windows.headers(host) if windows is not None and model else {}
            answer = wire(script, self.path, body if isinstance(body, dict) else {})
            if isinstance(answer, dict):
                self._json(answer)
                return
            raw = "".join(answer).encode()
            self.send_response(200)
            for name, value in shown.items():
                self.send_header(name, value)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            self._json({"data": [], "models": []})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def _json(self, data: object) -> None:
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def refuse(handler: BaseHTTPRequestHandler, refusal: limits.Refusal) -> None:
    """Send a limit's refusal: its status, headers and JSON body."""
    status, headers, raw = refusal
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.send_header("content-length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)
