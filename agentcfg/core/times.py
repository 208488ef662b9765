"""Times and durations as people and files write them: ISO-8601 UTC, and "90s", "4h", "1h30m";
and the one read of the wall clock, `wall_clock`, which the shell makes at its edges and passes
in (CONTRIBUTING.md): every other function here is pure."""

from __future__ import annotations

import functools
import re
import time

_DURATION = r"([0-9]+(?:\.[0-9]+)?)([dhms])"  # compiled when first used
MAX_DURATION = 3650 * 86400.0  # ten years: anything longer is a typo or an attack
_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}

# `datetime` is loaded only for a time written in another form than ours: the stop hook writes
# and reads times on every fire, and need not pay for loading it


def wall_clock() -> float:
    """Seconds since the epoch, now: the hook's fire, a command's moment, a driver's loop read
    it here and hand the value (or this function, as a `clock`) to what they call. Nothing of
    the core's or a wing model's decisions calls it (tests/test_architecture.py)."""
    return time.time()


def iso(epoch: float, timespec: str = "seconds") -> str:
    """ISO-8601 UTC, `2026-11-30T15:45:35Z`; state files keep milliseconds ("milliseconds").
    As `datetime` writes it: the time is rounded to the microsecond, then cut."""
    whole = int(epoch)
    micros = round((epoch - whole) * 1_000_000)  # the fraction is exact; halves round to even
    whole, micros = whole + micros // 1_000_000, micros % 1_000_000
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
    if timespec == "milliseconds":
        text += f".{micros // 1000:03d}"
    return text + "Z"


def iso_ms(epoch: float) -> str:
    return iso(epoch, "milliseconds")


def parse_iso(text: object) -> float | None:
    """Seconds since the epoch of an ISO-8601 time (UTC when it names no offset); None when
    it is not one."""
    return _parse_iso(text) if isinstance(text, str) else None


@functools.lru_cache(maxsize=1024)  # a contract's steps mostly share the time they joined it
def _parse_iso(text: str) -> float | None:
    ours = _our_form(text)
    if ours is not None:
        fields, millis = ours[:6], ours[6]
        year, month, day, hour, minute, second = fields
        seconds = _days(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
        if year > 0 and time.gmtime(seconds)[:6] == fields:  # a real date and time of day
            return (seconds * 1000 + millis) / 1000
    return _parse_other(text)


def _our_form(text: str) -> tuple[int, ...] | None:
    """Year, month, day, hour, minute, second and millisecond of a time in the form `iso`
    writes, `2026-11-30T15:45:35Z` or `2026-11-30T15:45:35.123Z`; None for any other text."""
    if len(text) not in (20, 24) or not text.isascii() or text[-1] != "Z":
        return None
    stops = text[4] + text[7] + text[10] + text[13] + text[16] + text[19]
    if stops != ("--T::." if len(text) == 24 else "--T::Z"):
        return None
    millis = text[20:23] if len(text) == 24 else "0"
    parts = (text[0:4], text[5:7], text[8:10], text[11:13], text[14:16], text[17:19], millis)
    return tuple(map(int, parts)) if all(part.isdigit() for part in parts) else None


def _days(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a date of the proleptic Gregorian calendar, counted in 400-year
    eras of years that begin in March (so that a leap day ends its year)."""
    year -= month <= 2
    era, year_of_era = divmod(year, 400)
    day_of_year = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _parse_other(text: str) -> float | None:
    from datetime import datetime, timezone

    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def parse_duration(value: object) -> float | None:
    """Seconds from 90, "90s", "30m", "4h", "1h30m", "2d" (ASCII digits); None unless a
    positive duration of at most ten years."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = float(value) if abs(value) <= MAX_DURATION else 0.0  # NaN: compares False
    elif not isinstance(value, str) or len(value) > 64:
        return None
    elif re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", text := value.strip().lower()):
        seconds = float(text)
    elif re.fullmatch(r"(?:[0-9]+(?:\.[0-9]+)?[dhms])+", text):
        seconds = sum(float(n) * _UNITS[u] for n, u in re.findall(_DURATION, text))
    else:
        return None
    return seconds if 0 < seconds <= MAX_DURATION else None


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        hours, minutes = divmod(seconds // 60, 60)
        return f"{hours}h{minutes:02d}m" if minutes else f"{hours}h"
    return f"{seconds // 86400}d{(seconds % 86400) // 3600}h"
