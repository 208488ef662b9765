"""A scripted stand-in for the model API on loopback: server-sent events, as Claude Code reads them.

The script plays an agent that claims a roadmap and then closes, through its Bash tool, each step
a continuation names; or, in the `idle` script, one that never does anything.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NEXT = re.compile(r"Next step: \*\*([^*]+)\*\*")


class Script:
    def __init__(self, slug: str, agentcfg: str, idle: bool = False) -> None:
        self.slug, self.agentcfg, self.idle = slug, agentcfg, idle
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> tuple[str, Any]:
        """("text", words) or ("tool", command) for the next assistant message."""
        with self.lock:
            self.requests.append(body)
        if not body.get("tools"):
            return "text", "ok"  # a side request (titles, summaries): not the agent's turn
        last = body.get("messages", [{}])[-1]
        text = _text(last.get("content"))
        if _has_tool_result(last.get("content")):
            return "text", "Done with that step." if not self.idle else "Still thinking."
        if "Stop hook feedback" in text:
            step = NEXT.search(text)
            if step and not self.idle:
                return "tool", f"{self.agentcfg} roadmap done {self.slug} {step.group(1)}"
            return "text", "Still thinking about it."
        return "tool", f"{self.agentcfg} sessions claim {self.slug}"

    def texts(self) -> list[str]:
        """The last message of every request the agent's turn made, as text."""
        return [_text(r["messages"][-1].get("content")) for r in self.requests if r.get("tools")]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text(b.get("text") or b.get("content")) for b in content if isinstance(b, dict)
        )
    return ""


def _has_tool_result(content: object) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _events(kind: str, value: str, n: int) -> list[tuple[str, dict[str, Any]]]:
    message = {
        "id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 1},
    }  # fmt: skip
    if kind == "tool":
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": f"toolu_{n}",
            "name": "Bash",
            "input": {},
        }
        delta = {
            "type": "input_json_delta",
            "partial_json": json.dumps({"command": value, "description": "run agentcfg"}),
        }
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": value}
        stop = "end_turn"
    return [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 8}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip


def serve(script: Script) -> ThreadingHTTPServer:
    counter = iter(range(1, 1_000_000))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(size) or b"{}")
            except ValueError:
                body = {}
            if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                self._json({"input_tokens": 12})
                return
            kind, value = script.reply(body)
            events = _events(kind, value, next(counter))
            if not body.get("stream"):
                content = events[1][1]["content_block"]
                content = (
                    {"type": "text", "text": value}
                    if kind == "text"
                    else {**content, "input": {"command": value}}
                )
                self._json(
                    {
                        **events[0][1]["message"],
                        "content": [content],
                        "stop_reason": events[4][1]["delta"]["stop_reason"],
                    }
                )
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            for name, data in events:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        def do_GET(self) -> None:
            self._json({})

        def do_HEAD(self) -> None:
            self.send_response(200)
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
