"""The scripted models' usage limit (tests/e2e/limits.py), which the end-to-end tests put in
front of the real hosts: each API refuses with its provider's 429 while the limit holds, then
answers as before."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.e2e import fake_model, openai_model
from tests.e2e.limits import RATE, Limit

REQUESTS = {
    "claude": ("/v1/messages", {"stream": False, "messages": [{"role": "user", "content": "hi"}]}),
    "gemini": (
        "/v1beta/models/m:streamGenerateContent?alt=sse",
        {"contents": [{"parts": [{"text": "hi"}]}]},
    ),
    "codex": ("/v1/responses", {"input": [{"type": "message", "content": "hi"}]}),
}


def post(port: int, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(), method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            status, headers = response.status, dict(response.headers)
    except urllib.error.HTTPError as refused:
        raw, status, headers = refused.read(), refused.code, dict(refused.headers)
    try:
        return status, {k.lower(): v for k, v in headers.items()}, json.loads(raw)
    except ValueError:
        return status, headers, raw.decode()


@pytest.mark.parametrize("host", sorted(REQUESTS))
def test_the_first_requests_are_refused_then_the_script_answers(host: str) -> None:
    limit = Limit(requests=2, reset_in=600)
    server = fake_model.serve(fake_model.Script("e2e", "agentcfg"), host, limit)
    path, body = REQUESTS[host]
    try:
        answers = [post(server.server_address[1], path, body) for _ in range(3)]
    finally:
        server.shutdown()
    assert [status for status, _, _ in answers] == [429, 429, 200]
    assert len(limit.refused) == 2 and limit.passed == 1
    assert limit.reset_at == pytest.approx(limit.refused[0] + 600, abs=1)
    _, headers, error = answers[0]
    if host == "claude":
        assert error["error"]["type"] == "rate_limit_error"
        assert headers["anthropic-ratelimit-unified-status"] == "rejected"
        assert int(headers["anthropic-ratelimit-unified-reset"]) == limit.reset_at
        assert 590 <= int(headers["retry-after"]) <= 601
    elif host == "gemini":
        assert error["error"]["status"] == "RESOURCE_EXHAUSTED"
        delay = error["error"]["details"][-1]["retryDelay"]
        assert delay.endswith("s") and 590 <= int(delay[:-1]) <= 601
    else:
        assert error["error"]["type"] == "usage_limit_reached"
        assert error["error"]["resets_at"] == limit.reset_at


def test_a_limit_in_seconds_refuses_until_they_pass() -> None:
    limit = Limit(seconds=0.6, reset_in=60, kind=RATE)
    server = openai_model.serve(openai_model.Script("e2e", "agentcfg"), limit)
    body = {"messages": [{"role": "user", "content": "hi"}]}
    port = server.server_address[1]
    try:
        first = post(port, "/v1/chat/completions", body)
        second = post(port, "/v1/chat/completions", body)
        time.sleep(0.7)
        third = post(port, "/v1/chat/completions", body)
    finally:
        server.shutdown()
    assert [first[0], second[0], third[0]] == [429, 429, 200]
    _, headers, error = first
    assert error["error"]["code"] == "rate_limit_exceeded"
    assert headers["retry-after"] == headers["x-ratelimit-reset-requests"].rstrip("s")
    assert 59 <= int(headers["retry-after"]) <= 61


def test_codex_meets_the_api_rate_limit_when_asked() -> None:
    limit = Limit(requests=1, kind=RATE)
    server = fake_model.serve(fake_model.Script("e2e", "agentcfg"), "codex", limit)
    try:
        status, headers, error = post(server.server_address[1], *REQUESTS["codex"])
    finally:
        server.shutdown()
    assert status == 429 and error["error"]["code"] == "rate_limit_exceeded"
    assert "retry-after" in headers
