"""Each host's `limit_reset` on what its real binary printed when the scripted model refused with
the provider's usage or rate limit (tests/fixtures/<host-version>/usage-limits.json lists each
capture: when the process ended, the reset the model announced, the exit code), and on output
that did not end on a limit."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from agentcfg.hosts.limits import clock_time
from agentcfg.hosts.registry import HOSTS, adapter

FIXTURES = Path(__file__).parents[1] / "fixtures"
FOLDERS = {
    "claude": "claude-code-2.1.328", "codex": "codex-0.169.0", "gemini": "gemini-cli-0.61.0",
    "copilot": "copilot-cli-1.0.102", "qwen": "qwen-code-0.24.4", "opencode": "opencode-1.18.33",
}  # fmt: skip
# how precisely each capture tells the reset: the exact epoch, the clock minute (read as that
# minute's end), seconds to wait (the process ends a moment after the refusal), or not at all
READS = {"exact": (0, 0), "minute": (0, 60), "seconds": (-10, 10)}


def captures() -> list[tuple[str, dict[str, object]]]:
    found = []
    for host, folder in FOLDERS.items():
        manifest = FIXTURES / folder / "usage-limits.json"
        if manifest.exists():
            found += [(host, entry) for entry in json.loads(manifest.read_text())]
    return found


@pytest.mark.parametrize(
    ("host", "capture"), captures(), ids=lambda v: v if isinstance(v, str) else v["file"]
)
def test_the_reset_the_host_announced_is_read(
    host: str, capture: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")  # the captures ran in UTC: Codex tells local clock times
    output = (FIXTURES / FOLDERS[host] / str(capture["file"])).read_text()
    ended, announced = float(capture["ended"]), capture["announced"]  # type: ignore[arg-type]
    spec = adapter(host)
    reset = (
        spec.limit_reset("", ended, messages=output)  # type: ignore[call-arg]
        if host == "opencode"
        else spec.limit_reset(output, ended)
    )
    assert capture["exit"] != 0 or host == "opencode"  # OpenCode's attached run exits 0 anyway
    if capture["reads"] == "untold":
        assert reset == ended
        return
    assert isinstance(announced, float) and reset is not None
    low, high = READS[str(capture["reads"])]
    assert announced + low <= reset <= announced + high


@pytest.mark.parametrize("host", HOSTS)
def test_a_run_that_did_not_end_on_a_limit_reads_none(host: str) -> None:
    outputs = [
        "",
        "Done with that step.\n",
        '{"type":"result","subtype":"success","is_error":false,"result":"Done."}\n',
        "The docs say: You've hit your 5-hour limit · resets 9am (UTC)\nand then it went on.\n"
        "Done with that step.\nAll good.\nNothing else.\n",
    ]
    assert [adapter(host).limit_reset(text, 1_800_000_000.0) for text in outputs] == [None] * 4


def test_qwen_still_retrying_is_not_an_ending() -> None:
    (retrying,) = [
        line
        for line in (FIXTURES / "qwen-code-0.24.4" / "rate-limit-retries.txt")
        .read_text()
        .splitlines()
        if line.startswith("Retrying in 60s")
    ]
    assert adapter("qwen").limit_reset(retrying + "\n", 1.0) is None
    assert adapter("qwen").limit_reset("[API Error: 429 Rate limit reached.]\n", 5.0) == 5.0


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize(
    ("told", "now", "reset"),
    [
        ("9:04 AM", "2026-12-01T08:58:00", "2026-12-01T09:05:00"),  # the end of that minute
        ("9am", "2026-12-01T08:58:00", "2026-12-01T09:01:00"),
        ("9am", "2026-12-01T09:00:30", "2026-12-01T09:01:00"),  # within the minute's grace
        ("8:51am", "2026-12-01T22:00:00", "2026-12-02T08:52:00"),  # tomorrow's
        ("12am", "2026-12-01T22:00:00", "2026-12-02T00:01:00"),
        ("12:30pm", "2026-12-01T10:00:00", "2026-12-01T12:31:00"),
        ("Dec 2, 11:26am", "2026-12-01T08:00:00", "2026-12-02T11:27:00"),
        ("Jan 2, 9am", "2026-12-31T08:00:00", "2027-01-02T09:01:00"),  # next year's
        ("Dec 3rd, 2026 4:32 PM", "2026-12-01T08:00:00", "2026-12-03T16:33:00"),
        ("Jan 5, 2027, 9am", "2026-12-31T08:00:00", "2027-01-05T09:01:00"),
    ],
)
def test_clock_times_as_hosts_print_them(told: str, now: str, reset: str) -> None:
    assert clock_time(told, at(now), timezone.utc) == at(reset)


@pytest.mark.parametrize("told", ["soon", "25:00pm", "Feb 30, 9am", "Foo 3, 9am", "13:61am"])
def test_what_is_not_a_clock_time(told: str) -> None:
    assert clock_time(told, at("2026-12-01T08:00:00"), timezone.utc) is None


HUGE = "9" * 5000
REJECTED = (
    '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":RESET}}\n'
    '{"type":"result","is_error":true,"api_error_status":429,"result":"x"}'
)
OUT_OF_RANGE = {
    "claude": [
        f"Claude AI usage limit reached|{HUGE}",
        f"Claude AI usage limit reached|{HUGE[:400]}",
        *(
            REJECTED.replace("RESET", number)
            for number in ("1e400", "1e20", "Infinity", "-Infinity", "NaN")
        ),
    ],
    "gemini": [
        f"TerminalQuotaError: retryDelayMs: {HUGE}",
        f"TerminalQuotaError: Suggested retry after {HUGE}.5s.",
        f"TerminalQuotaError: Suggested retry after {HUGE[:400]}s.",
    ],
    "codex": ["You’ve hit your usage limit. try again at Dec 99th, 9999 99:99 PM."],
}


@pytest.mark.parametrize(
    ("host", "output"), [(h, o) for h, outs in OUT_OF_RANGE.items() for o in outs]
)
def test_a_reset_out_of_range_is_a_limit_with_no_reset_told(host: str, output: str) -> None:
    """A number no clock holds is ignored, never an error: the limit is one with no reset."""
    assert adapter(host).limit_reset(output, 1_800_000_000.0) == 1_800_000_000.0


@pytest.mark.parametrize("wait", ["inf", "nan", "1e400", "-5", HUGE, [1], None])
def test_opencode_retry_after_out_of_range_is_no_reset_told(wait: object) -> None:
    error = {
        "name": "APIError",
        "data": {"statusCode": 429, "responseHeaders": {"retry-after": wait}},
    }
    messages = json.dumps([{"info": {"role": "assistant", "error": error}}])
    assert adapter("opencode").limit_reset("", 5.0, messages=messages) == 5.0  # type: ignore[call-arg]


def test_a_stream_json_reply_that_did_not_fail_is_never_a_limit() -> None:
    """A `result` that is not an error is the model's reply, whatever it says; only the host's
    own records tell a limit."""
    said = json.dumps({"type": "result", "is_error": False,
                       "result": "Claude AI usage limit reached|1800003600"})  # fmt: skip
    forged = '{"type":"assistant","rate_limit_info":{"status":"rejected","resetsAt":1800003600}}'
    assert adapter("claude").limit_reset(said, 1_800_000_000.0) is None
    assert adapter("claude").limit_reset(forged + "\n" + said, 1_800_000_000.0) is None
