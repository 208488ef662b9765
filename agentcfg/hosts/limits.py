"""Reading the reset a host announces when it ends on a provider's usage or rate limit.

Each host module's `limit_reset(output, now)` uses these: the host's own words differ, the ways
they tell a time do not (a clock time, a date with one, seconds to wait, an epoch). A host that
ended on a limit but told no reset gets `now` itself: the caller then backs off on its own. A
number out of range (not finite, too many digits, past year 9999) is no reset told, never an
error: what a host prints may be what the model wrote.

Imported only by `limit_reset`, never on the stop hook's path.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, tzinfo
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

LATEST = 253_402_300_799.0  # 9999-12-31T23:59:59Z: no reset told later is a time at all
LONGEST_WAIT = 366 * 86400.0  # a wait told in seconds longer than a year is not one
MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
# "9am", "8:51am", "9:04 AM"; optionally after "Dec 3, ", "Dec 3rd, ", "Dec 3, 2027, "
CLOCK = re.compile(
    r"(?:(?P<month>[A-Z][a-z]{2}) (?P<day>\d{1,2})(?:st|nd|rd|th)?,? (?:(?P<year>\d{4}),? )?)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))? ?(?P<half>[ap]m)\b",
    re.IGNORECASE,
)


def zone(name: str | None) -> tzinfo | None:
    """The named time zone; None (local time) when there is no name or it is not one."""
    if not name:
        return None
    from zoneinfo import ZoneInfo

    try:
        return ZoneInfo(name.strip())
    except (ValueError, KeyError, OSError):
        return None


def clock_time(text: str, now: float, tz: tzinfo | None = None) -> float | None:
    """The epoch of a clock time a host printed ("9am", "Dec 3rd, 2026 4:32 PM"), in `tz` (None:
    local time): the first such moment not before `now`, minus a minute's grace. A time told
    to the minute is read as the end of that minute, so a resume at it never comes early."""
    found = CLOCK.search(text)
    if found is None:
        return None
    hour, minute = int(found["hour"]), int(found["minute"] or 0)
    if not 1 <= hour <= 12 or minute > 59:
        return None
    hour = hour % 12 + (12 if found["half"].lower() == "pm" else 0)
    base = datetime.fromtimestamp(now, tz)
    candidates: list[datetime] = []
    try:
        if found["month"]:
            month = MONTHS.index(found["month"].lower()) + 1
            years = [int(found["year"])] if found["year"] else [base.year, base.year + 1]
            candidates = [
                base.replace(year=y, month=month, day=int(found["day"]), hour=hour, minute=minute)
                for y in years
            ]
        else:
            today = base.replace(hour=hour, minute=minute)
            candidates = [today, today + timedelta(days=1)]
    except ValueError:  # not a month, or not a day of it
        return None
    stamps = [c.replace(second=0, microsecond=0).timestamp() + 60 for c in candidates]
    return next((s for s in stamps if s >= now - 60), stamps[-1])


def after(now: float, seconds: str, per: float = 1.0) -> float | None:
    """`now` plus a wait a host told in seconds (`per`: in parts of a second, 1000 for
    milliseconds); None when what it told is not such a wait: not a number, not finite,
    negative, or longer than LONGEST_WAIT."""
    try:
        wait = float(seconds) / per
    except (ValueError, OverflowError):
        return None
    return now + wait if 0 <= wait <= LONGEST_WAIT else None  # NaN fails both


def json_records(output: str) -> Iterator[dict[str, Any]]:
    """Every line of `output` that holds a JSON object (a host's JSON or JSON-lines mode)."""
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record


def epoch(value: object) -> float | None:
    """An epoch in seconds (or milliseconds) from a JSON number; None for anything else, or a
    number no clock holds (not finite, not after 1970, after LATEST)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not 0 < value <= LATEST * 1000:  # NaN fails too; a huge int is never divided
        return None
    seconds = float(value / 1000 if value > 10**11 else value)
    return seconds if seconds <= LATEST else None


def epoch_digits(digits: str) -> float | None:
    """`epoch` of a number a host printed in digits; None when it has too many to be one."""
    return epoch(int(digits)) if len(digits) <= 16 else None


def tail(output: str, lines: int = 8) -> str:
    """The last lines a host printed: where it says why it ended."""
    return "\n".join(output.rstrip().splitlines()[-lines:])
