"""The usage windows a host shows while it runs, read from its output one line at a time.

Claude Code (`--output-format stream-json --verbose`, signed in with a subscription's token)
prints after each reply a `rate_limit_event` whose `rate_limit_info.unifiedWindows` holds each
window's `utilization` (0..1) and `resetsAt` (epoch seconds); an API key's runs print none.
Codex writes its windows into its session file (`$CODEX_HOME/sessions/.../rollout-*-<thread
id>.jsonl`): each `token_count` event's `rate_limits.primary|secondary` with `used_percent`,
`window_minutes` and `resets_at`. Only the host's own records are read: a line that is not a
whole JSON record of that type (the model's words inside another record included) shows no
window.

Imported by the driver, never on the stop hook's path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agentcfg.core.quota import Reading
from agentcfg.hosts.limits import LATEST
from agentcfg.hosts.stream import RateLimit, parse_line

LINE_LIMIT = 64 * 1024  # a rate-limit record is small: a longer line is some other record


def claude_windows(line: str | bytes) -> list[Reading]:
    """The windows one line of Claude Code's stream-json shows, read by the one parser of that
    stream (hosts/stream.py); [] for any other line."""
    if len(line) > LINE_LIMIT or b'"rate_limit_event"' not in _bytes(line):
        return []
    found: list[Reading] = []
    for event in parse_line(line):
        if not isinstance(event, RateLimit):
            continue
        shown = [(w.name, w.utilization, w.resets_at) for w in event.windows]
        if not shown and event.kind:  # an event that tells only the window it is about
            shown = [(event.kind, event.utilization, event.resets_at)]
        found += [r for r in (_reading(*each) for each in shown) if r is not None]
    return found


# Codex's windows by their length in minutes, named as Claude Code names the same windows
CODEX_WINDOWS = {300: "five_hour", 10080: "seven_day"}


def codex_windows(line: str | bytes) -> list[Reading]:
    """The windows one line of a Codex session file shows; [] for any other line."""
    if len(line) > LINE_LIMIT or b'"rate_limits"' not in _bytes(line):
        return []
    try:
        record = json.loads(line)
    except ValueError:
        return []
    payload = record.get("payload") if isinstance(record, dict) else None
    if not isinstance(payload, dict) or payload.get("type") != "token_count":
        return []
    limits = payload.get("rate_limits")
    found: list[Reading] = []
    for slot in ("primary", "secondary"):
        window = limits.get(slot) if isinstance(limits, dict) else None
        if not isinstance(window, dict):
            continue
        used, minutes = _number(window.get("used_percent")), window.get("window_minutes")
        name = CODEX_WINDOWS.get(minutes, slot) if isinstance(minutes, int) else slot
        share = None if used is None else used / 100.0
        reading = _reading(name, share, _number(window.get("resets_at")))
        if reading is not None:
            found.append(reading)
    return found


def codex_session_file(env: Mapping[str, str], session: str) -> Path | None:
    """The session file Codex writes for thread `session`, the newest if several; None when
    there is none (yet) or the id is not a thread id."""
    if not session or not all(c in "0123456789abcdef-" for c in session.lower()):
        return None
    root = (
        Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else Path(env.get("HOME", "~")) / ".codex"
    )
    try:
        found = sorted((root / "sessions").glob(f"*/*/*/rollout-*-{session}.jsonl"))
    except OSError:
        return None
    return found[-1] if found else None


def _reading(name: str, used: float | None, reset: float | None) -> Reading | None:
    if used is None or not 0.0 <= used <= 10.0:  # over 1: past the window, as overage is
        return None
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
Locator = Callable[[Mapping[str, str], str], "Path | None"]

# the hosts whose windows a run can see, how to read them (from the start's stdout, or from a
# file of the session), and what their start needs to show them; every other host shows none
# (`agentcfg run --reserve` says so)
READERS: dict[str, Reader] = {"claude": claude_windows, "codex": codex_windows}
FILES: dict[str, Locator] = {"codex": codex_session_file}
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
