"""A provider's usage or rate limit, as the scripted models answer it: HTTP 429 with the
provider's own error body and reset headers, for the first `requests` model requests and for
every request in the first `seconds` after the first one, announcing a reset `reset_in` seconds
after the first refusal. Once the limit has passed, requests go to the script as before.

    limit = Limit(seconds=5, reset_in=120)
    serve(script, "claude", limit=limit)      # fake_model: Anthropic, Gemini, OpenAI responses
    serve(script, limit=limit)                # openai_model: chat completions

`limit.refused` holds when each refusal went out, `limit.reset_at` the announced reset (epoch).
The bodies follow what each provider sends (facts from their public API references):

- Anthropic: `{"type": "error", "error": {"type": "rate_limit_error", "message"}}` with
  `retry-after` (seconds) and the subscription headers `anthropic-ratelimit-unified-status:
  rejected`, `anthropic-ratelimit-unified-reset: <epoch>`.
- Gemini: `{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message", "details":
  [ErrorInfo, QuotaFailure, RetryInfo{"retryDelay": "<n>s"}]}}`.
- OpenAI responses (Codex): `{"error": {"type": "usage_limit_reached", "message", "plan_type",
  "resets_at": <epoch>, "resets_in_seconds"}}` (kind USAGE), or the chat API's rate limit (RATE).
- OpenAI chat completions: `{"error": {"message", "type": "requests", "param": null, "code":
  "rate_limit_exceeded"}}` with `retry-after` and `x-ratelimit-reset-requests: <n>s`.
"""

from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import dataclass, field

RATE, USAGE = "rate", "usage"  # a per-minute rate limit, or a plan's usage limit (hours)


@dataclass
class Limit:
    requests: int = 0  # refuse this many model requests first
    seconds: float = 0.0  # and every request in this many seconds after the first one
    reset_in: float = 120.0  # the reset it announces, seconds after the first refusal
    kind: str = USAGE  # for Codex: a plan's USAGE limit or the API's RATE limit
    refused: list[float] = field(default_factory=list)  # when each refusal went out (epoch)
    passed: int = 0  # requests let through to the script
    start: float | None = None  # the first request (epoch)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def refuses(self) -> bool:
        """Whether the model refuses the request arriving now (and counts it)."""
        with self.lock:
            now = time.time()
            if self.start is None:
                self.start = now
            if len(self.refused) + self.passed < self.requests or now < self.start + self.seconds:
                self.refused.append(now)
                return True
            self.passed += 1
            return False

    @property
    def reset_at(self) -> float:
        """The announced reset, in whole epoch seconds as the providers send it."""
        first = self.refused[0] if self.refused else (self.start or time.time())
        return float(math.ceil(first + self.reset_in))

    def wait(self) -> int:
        """Whole seconds from now to the announced reset (at least 1)."""
        return max(1, math.ceil(self.reset_at - time.time()))


Refusal = tuple[int, dict[str, str], bytes]


def anthropic(limit: Limit) -> Refusal:
    wait, reset = limit.wait(), int(limit.reset_at)
    body = {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "This request would exceed your usage limit."},
        "request_id": "req_local",
    }  # fmt: skip
    headers = {
        "retry-after": str(wait),
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": str(reset),
        "anthropic-ratelimit-unified-representative-claim": "five_hour",
        "anthropic-ratelimit-unified-5h-status": "rejected",
        "anthropic-ratelimit-unified-5h-reset": str(reset),
        "request-id": "req_local",
    }
    return 429, headers, json.dumps(body).encode()


def gemini(limit: Limit) -> Refusal:
    wait = limit.wait()
    body = {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED",
                 "domain": "googleapis.com",
                 "metadata": {"quota_metric": "generativelanguage.googleapis.com/generate_content_requests",
                              "quota_limit": "GenerateContentRequestsPerMinutePerProjectPerModel"}},
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                 "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                                 "quotaId": "GenerateContentRequestsPerMinutePerProjectPerModel"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{wait}s"},
            ],
        }
    }  # fmt: skip
    return 429, {}, json.dumps(body).encode()


def responses(limit: Limit) -> Refusal:
    """The OpenAI responses API as Codex reads it: a plan's usage limit, or the API's rate one."""
    if limit.kind == RATE:
        return chat(limit)
    wait, reset = limit.wait(), int(limit.reset_at)
    body = {
        "error": {
            "type": "usage_limit_reached",
            "message": "The usage limit has been reached",
            "plan_type": "plus",
            "resets_at": reset,
            "resets_in_seconds": wait,
        }
    }
    headers = {
        "x-codex-primary-used-percent": "100.0",
        "x-codex-primary-window-minutes": "300",
        "x-codex-primary-reset-at": str(reset),
        "x-codex-primary-reset-after-seconds": str(wait),
    }
    return 429, headers, json.dumps(body).encode()


def chat(limit: Limit) -> Refusal:
    """The OpenAI chat completions API (and the servers that copy it): its rate limit, the one
    429 of that API that announces a reset."""
    wait = limit.wait()
    error = {
        "message": "Rate limit reached for requests. Please try again later.",
        "type": "requests", "param": None, "code": "rate_limit_exceeded",
    }  # fmt: skip
    headers = {
        "retry-after": str(wait),
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": f"{wait}s",
        "x-ratelimit-reset-tokens": f"{wait}s",
    }
    return 429, headers, json.dumps({"error": error}).encode()


ANSWERS = {"claude": anthropic, "gemini": gemini, "codex": responses, "chat": chat}


@dataclass
class Windows:
    """A subscriber's usage windows as the API reports them on every reply. Anthropic: headers
    `anthropic-ratelimit-unified-5h-utilization` (0..1) and `-5h-reset` (epoch), the same for
    `-7d-`, with the overall `-status`, `-reset` and `-representative-claim`. OpenAI (Codex):
    `x-codex-primary-used-percent` (0..100), `-window-minutes`, `-reset-at` (epoch) and
    `-reset-after-seconds`, the same for `secondary`.

    The 5-hour window is `start` used at the first model request and each request adds `step`;
    it resets `reset_in` seconds after the first request, then counts from 0 again. The 7-day
    window stays at `week`. `requests` holds when each model request came (epoch)."""

    start: float = 0.5
    step: float = 0.05
    reset_in: float = 30.0
    week: float = 0.2
    requests: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def reset_at(self) -> float:
        """The 5-hour window's reset, in whole epoch seconds as the API sends it."""
        return float(
            math.ceil((self.requests[0] if self.requests else time.time()) + self.reset_in)
        )

    def used(self, at: float) -> float:
        """The 5-hour window's use the request arriving at `at` reports (it counts itself)."""
        before = [t for t in self.requests if t <= at]
        if at < self.reset_at:
            return self.start + self.step * len(before)
        return self.step * sum(1 for t in before if t >= self.reset_at)

    def headers(self, host: str = "claude") -> dict[str, str]:
        """Count the model request arriving now; the headers its answer carries."""
        with self.lock:
            now = time.time()
            self.requests.append(now)
            used, reset = self.used(now), int(self.reset_at)
            week_reset = reset + 3 * 86400
        if host == "codex":
            five = reset if now < reset else reset + 18000
            return {
                "x-codex-primary-used-percent": f"{used * 100:.2f}",
                "x-codex-primary-window-minutes": "300",
                "x-codex-primary-reset-at": str(five),
                "x-codex-primary-reset-after-seconds": str(max(0, math.ceil(five - now))),
                "x-codex-secondary-used-percent": f"{self.week * 100:.2f}",
                "x-codex-secondary-window-minutes": "10080",
                "x-codex-secondary-reset-at": str(week_reset),
                "x-codex-secondary-reset-after-seconds": str(math.ceil(week_reset - now)),
            }
        return {
            "anthropic-ratelimit-unified-status": "allowed",
            "anthropic-ratelimit-unified-reset": str(reset),
            "anthropic-ratelimit-unified-representative-claim": "five_hour",
            "anthropic-ratelimit-unified-5h-utilization": f"{used:.4f}",
            "anthropic-ratelimit-unified-5h-reset": str(reset if now < reset else reset + 18000),
            "anthropic-ratelimit-unified-5h-status": "allowed",
            "anthropic-ratelimit-unified-7d-utilization": f"{self.week:.4f}",
            "anthropic-ratelimit-unified-7d-reset": str(week_reset),
            "anthropic-ratelimit-unified-7d-status": "allowed",
        }
