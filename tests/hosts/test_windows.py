"""Reading the usage windows a host shows while it runs (hosts.windows): Claude Code's
`rate_limit_event` lines in stream-json, and nothing from any other line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcfg.core.quota import Reading
from agentcfg.hosts import windows

RESET = 1_790_030_000


def event(info: object) -> str:
    return json.dumps({"type": "rate_limit_event", "rate_limit_info": info, "session_id": "s"})


# the shape Claude Code 2.1.328 prints after each reply when signed in with a subscription
SHOWN = event(
    {
        "status": "allowed",
        "resetsAt": RESET,
        "rateLimitType": "five_hour",
        "isUsingOverage": False,
        "unifiedWindows": {
            "five_hour": {"utilization": 0.85, "resetsAt": RESET, "status": "allowed"},
            "seven_day": {"utilization": 0.31, "resetsAt": RESET + 86400, "status": "allowed"},
        },
    }
)


def test_each_window_of_a_rate_limit_event_is_read_with_its_use_and_reset() -> None:
    assert windows.claude_windows(SHOWN) == [
        Reading("five_hour", 0.85, float(RESET)),
        Reading("seven_day", 0.31, float(RESET + 86400)),
    ]
    assert windows.claude_windows(SHOWN.encode()) == windows.claude_windows(SHOWN)


def test_an_event_that_tells_only_its_own_window_is_read_too() -> None:
    line = event({"status": "allowed", "rateLimitType": "five_hour", "utilization": 0.5,
                  "resetsAt": RESET})  # fmt: skip
    assert windows.claude_windows(line) == [Reading("five_hour", 0.5, float(RESET))]


def test_the_models_words_about_a_rate_limit_event_show_no_window() -> None:
    said = json.dumps(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": SHOWN}]}}
    )
    result = json.dumps({"type": "result", "result": SHOWN, "is_error": False})
    for line in (said, result, "not json " + SHOWN, SHOWN[:-1]):
        assert windows.claude_windows(line) == []


@pytest.mark.parametrize(
    "window",
    [
        {"utilization": "0.9", "resetsAt": RESET},
        {"utilization": True, "resetsAt": RESET},
        {"utilization": -0.1, "resetsAt": RESET},
        {"utilization": 1e300, "resetsAt": RESET},
        {"resetsAt": RESET},
        "full",
    ],
)
def test_a_window_whose_use_is_not_a_share_is_left_out(window: object) -> None:
    assert windows.claude_windows(event({"unifiedWindows": {"five_hour": window}})) == []


@pytest.mark.parametrize("reset", ["soon", -5, 1e20, None, False])
def test_a_reset_that_is_no_time_is_read_as_not_told(reset: object) -> None:
    line = event({"unifiedWindows": {"five_hour": {"utilization": 0.9, "resetsAt": reset}}})
    assert windows.claude_windows(line) == [Reading("five_hour", 0.9, None)]


def test_a_line_longer_than_any_rate_limit_record_is_not_read() -> None:
    padded = json.dumps({**json.loads(SHOWN), "pad": "x" * windows.LINE_LIMIT})
    assert windows.claude_windows(padded) == []


@given(st.text(max_size=300))
def test_no_line_makes_the_reader_fail(line: str) -> None:
    for reading in windows.claude_windows(line):
        assert 0.0 <= reading.utilization <= 10.0


def token_count(limits: object) -> str:
    return json.dumps(
        {"timestamp": "2026-12-02T14:51:10.356Z", "type": "event_msg",
         "payload": {"type": "token_count", "info": None, "rate_limits": limits}}
    )  # fmt: skip


def test_codex_session_files_show_the_windows_of_each_token_count() -> None:
    line = token_count(
        {"limit_id": "codex",
         "primary": {"used_percent": 72.5, "window_minutes": 300, "resets_at": RESET},
         "secondary": {"used_percent": 20.0, "window_minutes": 10080, "resets_at": RESET + 9},
         "credits": None}
    )  # fmt: skip
    assert windows.codex_windows(line) == [
        Reading("five_hour", 0.725, float(RESET)),
        Reading("seven_day", 0.2, float(RESET + 9)),
    ]
    odd = token_count({"primary": {"used_percent": 50, "window_minutes": 60, "resets_at": RESET}})
    assert windows.codex_windows(odd) == [Reading("primary", 0.5, float(RESET))]
    said = json.dumps({"type": "response_item", "payload": {"type": "message", "text": line}})
    for other in (said, token_count(None), token_count({"primary": "full"}), line[:-2]):
        assert windows.codex_windows(other) == []


def test_a_codex_threads_session_file_is_found_under_its_home(tmp_path: Path) -> None:
    thread = "01a2373c-e676-70f3-b5b3-9f533b8c18c1"
    day = tmp_path / "codex" / "sessions" / "2026" / "12" / "02"
    day.mkdir(parents=True)
    (day / f"rollout-2026-12-02T14-51-07-{thread}.jsonl").write_text("")
    env = {"CODEX_HOME": str(tmp_path / "codex")}
    found = windows.codex_session_file(env, thread)
    assert found == day / f"rollout-2026-12-02T14-51-07-{thread}.jsonl"
    assert windows.codex_session_file(env, "01a2373c-0000") is None
    assert windows.codex_session_file(env, "*") is None  # no pattern of another's making
    assert windows.codex_session_file({"HOME": str(tmp_path)}, thread) is None


def test_claude_code_and_codex_show_their_windows_and_claudes_start_asks_for_them() -> None:
    assert windows.shows("claude") and windows.shows("codex") and not windows.shows("gemini")
    wanted = ("--output-format", "stream-json", "--verbose")
    assert windows.with_windows("claude", ("--allowedTools", "Bash")) == (
        "--allowedTools", "Bash", *wanted
    )  # fmt: skip
    assert windows.with_windows("claude", ("--verbose",)) == ("--verbose", *wanted[:2])
    # the person's own output format stands
    assert windows.with_windows("claude", ("--output-format", "json")) == (
        "--output-format", "json"
    )  # fmt: skip
    assert windows.with_windows("claude", ("--output-format=text",)) == ("--output-format=text",)
    assert windows.with_windows("gemini", ("-y",)) == ("-y",)
