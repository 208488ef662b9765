"""The usage windows a host shows while it runs, read from its output one line at a time.

Claude Code (`--output-format stream-json --verbose`, signed in with a subscription's token)
prints after each reply a `rate_limit_event` whose `rate_limit_info.unifiedWindows` holds each
window's `utilization` (0..1) and `resetsAt` (epoch seconds); an API key's runs print none.
Only the host's own records are read: a line that is not a whole JSON record of that type
(the model's words inside another record included) shows no window.

Imported by the driver, never on the stop hook's path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence

from agentcfg.core.quota import Reading
from agentcfg.hosts.limits import LATEST

LINE_LIMIT = 64 * 1024  # a rate-limit record is small: a longer line is some other record


def claude_windows(line: str | bytes) -> list[Reading]:
    """The windows one line of Claude Code's stream-json shows; [] for any other line."""
    if len(line) > LINE_LIMIT or b'"rate_limit_event"' not in _bytes(line):
        return []
    try:
        record = json.loads(line)
    except ValueError:
        return []
    if not isinstance(record, dict) or record.get("type") != "rate_limit_event":
        return []
    info = record.get("rate_limit_info")
    if not isinstance(info, dict):
        return []
    found: list[Reading] = []
    windows = info.get("unifiedWindows")
    if isinstance(windows, dict):
        for name, window in windows.items():
            reading = _reading(str(name), window)
            if reading is not None:
                found.append(reading)
    kind = info.get("rateLimitType")
    if not found and isinstance(kind, str) and "utilization" in info:
        reading = _reading(kind, info)  # an event that tells only the window it is about
        if reading is not None:
            found.append(reading)
    return found


def _reading(name: str, window: object) -> Reading | None:
    if not isinstance(window, dict):
        return None
    used = _number(window.get("utilization"))
    if used is None or not 0.0 <= used <= 10.0:  # over 1: past the window, as overage is
        return None
    reset = _number(window.get("resetsAt"))
    if reset is not None and not 0.0 < reset <= LATEST:
        reset = None
    return Reading(name[:40], used, reset)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _bytes(line: str | bytes) -> bytes:
    return line if isinstance(line, bytes) else line.encode("utf-8", "replace")


Reader = Callable[[bytes], list[Reading]]

# the hosts whose windows a run can see, how to read them, and what their start needs to show
# them; every other host shows none (`agentcfg run --reserve` says so)
READERS: dict[str, Reader] = {"claude": claude_windows}
SHOWN_BY = {"claude": ("--output-format", "stream-json", "--verbose")}


def shows(host: str) -> bool:
    return host in READERS


def with_windows(host: str, extra: Sequence[str]) -> tuple[str, ...]:
    """The host's arguments with what makes it show its windows, unless the person chose the
    output format already (then theirs stands)."""
    needed = SHOWN_BY.get(host, ())
    if not needed or needed[0] in extra or any(a.startswith(f"{needed[0]}=") for a in extra):
        return tuple(extra)
    return (*extra, *(a for a in needed if a not in extra))


def final_reply(stdout: str) -> str:
    """The final reply of a start whose output is stream-json (its `result` record's text,
    empty when it never got one); the output itself when it is not."""
    reply, stream = "", False
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("type"), str):
            stream = True
            found = record.get("result") if record["type"] == "result" else None
            reply = found if isinstance(found, str) else reply
    return reply if stream else stdout
