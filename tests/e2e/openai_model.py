"""A scripted model on loopback that speaks the OpenAI-compatible `/v1/chat/completions` API
(streamed), as OpenCode, Qwen Code and Copilot CLI call it.

The script plays an agent that claims a roadmap through its shell tool and then closes each
step a continuation names (with `no_verify`, without running its verify line); in the `idle`
script it answers every continuation with words only.
Every answer reports fixed token usage, so a run's totals are known in advance.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.e2e import limits
from tests.e2e.fake_model import refuse

NEXT = re.compile(r"Next step: \*\*([^*]+)\*\*")
SHELL_TOOLS = ("run_shell_command", "bash")  # Qwen's, then Copilot's and OpenCode's
USAGE = {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}
DONE, IDLE = "That step is done.", "Still thinking about it."


class Script:
    def __init__(
        self,
        slug: str,
        agentcfg: str,
        idle: bool = False,
        no_verify: bool = False,
        unlisted: str | None = None,
    ) -> None:
        self.slug, self.agentcfg, self.idle = slug, agentcfg, idle
        self.no_verify = no_verify  # close each step without running its verify line
        self.unlisted = unlisted  # a shell tool the agent calls even where its host offers none
        self.requests: list[dict[str, Any]] = []
        self.answers = 0  # answers to the agent's own turn, each reporting USAGE
        self.lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> tuple[str, str]:
        """("text", words) or (tool name, shell command) for the next assistant message."""
        tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        with self.lock:
            self.requests.append(body)
            if tools:
                self.answers += 1
        if not tools:
            return "text", "Roadmap work"  # a side request (a title): not the agent's turn
        shell = next((name for name in SHELL_TOOLS if name in tools), self.unlisted)
        if shell is None:
            raise LookupError(f"no shell tool among the host's tools: {tools}")
        last = (body.get("messages") or [{}])[-1]
        if last.get("role") == "tool":
            return "text", IDLE if self.idle else DONE
        text = content_text(last.get("content"))
        if "run-continuation:" in text:
            step = NEXT.search(text)
            if step and not self.idle:
                skip = " --no-verify" if self.no_verify else ""
                return shell, f"{self.agentcfg} roadmap done {self.slug} {step.group(1)}{skip}"
            return "text", IDLE
        if any("sessions claim" in json.dumps(m.get("tool_calls")) for m in body["messages"]):
            return "text", IDLE  # a later prompt of the same session: the hook says what to do
        return shell, f"{self.agentcfg} sessions claim {self.slug}"

    def continuations(self) -> list[str]:
        """Every continuation the agent received, in order (a host may repeat a message)."""
        seen: list[str] = []
        for body in self.requests:
            for message in body.get("messages") or []:
                text = content_text(message.get("content"))
                if message.get("role") == "user" and "run-continuation:" in text:
                    seen.append(text[text.index("run-continuation:") :])
        return list(dict.fromkeys(seen))


def content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            content_text(b.get("text")) for b in content if isinstance(b, dict) and "text" in b
        )
    return ""


def _chunks(kind: str, value: str, n: int) -> list[dict[str, Any]]:
    base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    if kind == "text":
        delta: dict[str, Any] = {"role": "assistant", "content": value}
        finish = "stop"
    else:
        arguments = json.dumps({"command": value, "description": "run agentcfg"})
        call = {"index": 0, "id": f"call_{n}", "type": "function",
                "function": {"name": kind, "arguments": arguments}}  # fmt: skip
        delta, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": USAGE},
    ]


def serve(script: Script, limit: limits.Limit | None = None) -> ThreadingHTTPServer:
    """Serve the script on a free loopback port; with a `limit`, chat requests meet the API's
    rate limit first."""
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
            if not self.path.endswith("/chat/completions"):
                self._json({})
                return
            if limit is not None and limit.refuses():
                refuse(self, limits.chat(limit))
                return
            kind, value = script.reply(body)
            chunks = _chunks(kind, value, next(counter))
            if not body.get("stream"):
                message = {**chunks[0]["choices"][0]["delta"]}
                self._json({**chunks[0], "object": "chat.completion", "usage": USAGE,
                            "choices": [{"index": 0, "message": message,
                                         "finish_reason": chunks[1]["choices"][0]["finish_reason"]}]})  # fmt: skip
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def do_GET(self) -> None:
            self._json({"object": "list", "data": [{"id": "m", "object": "model"}]})

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
