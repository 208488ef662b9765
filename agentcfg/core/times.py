"""Times and durations as people and files write them: ISO-8601 UTC, and "90s", "4h", "1h30m". Pure."""

from __future__ import annotations

import re
from datetime import datetime, timezone

_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)([dhms])")
MAX_DURATION = 3650 * 86400.0  # ten years: anything longer is a typo or an attack
_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def iso(epoch: float, timespec: str = "seconds") -> str:
    """ISO-8601 UTC, `2026-11-30T15:45:35Z`; state files keep milliseconds ("milliseconds")."""
    return (
        datetime.fromtimestamp(epoch, timezone.utc)
        .isoformat(timespec=timespec)
        .replace("+00:00", "Z")
    )


def iso_ms(epoch: float) -> str:
    return iso(epoch, "milliseconds")


def parse_iso(text: object) -> float | None:
    if not isinstance(text, str):
        return None
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
        seconds = sum(float(n) * _UNITS[u] for n, u in _DURATION.findall(text))
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
