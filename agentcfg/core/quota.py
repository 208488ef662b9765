"""The person's reserve of each usage window: from the windows a host shows (their share used
and their reset) and the reserve asked for (`--reserve PCT`), whether the run must pause, on
which window and until when. Pure: no clock, no I/O; times are epoch seconds the caller passes.

A window whose reset is not told never pauses the run: nothing would say when to go on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

QUOTA_MARGIN = 120.0  # seconds waited past a window's reset before the host starts again

# how the person reads each window's name; a name not here is shown as the host gave it
TITLES = {
    "five_hour": "5-hour",
    "seven_day": "7-day",
    "seven_day_opus": "7-day Opus",
    "seven_day_sonnet": "7-day Sonnet",
    "primary": "primary",
    "secondary": "secondary",
}


@dataclass(frozen=True)
class Reading:
    """One usage window as the host last showed it."""

    window: str  # the host's name for it: five_hour, seven_day
    utilization: float  # the share used, 0..1
    reset_at: float | None  # when the window starts afresh (epoch seconds); None: not told

    @property
    def percent(self) -> float:
        return self.utilization * 100.0

    def to_json(self) -> dict[str, object]:
        return {
            "window": self.window,
            "utilization": round(self.utilization, 4),
            "reset_at": self.reset_at,
        }


def valid_reserve(value: float) -> bool:
    """A reserve is a share of the window in percent: 0 keeps nothing back, 100 everything."""
    return 0.0 <= value <= 100.0


def limit(reserve: float) -> float:
    """The share used (0..1) at which the run stops for a reserve of `reserve` percent."""
    return (100.0 - reserve) / 100.0


def latest(known: Mapping[str, Reading], seen: Iterable[Reading]) -> dict[str, Reading]:
    """The windows as last shown: each reading in `seen` replaces the one of its window."""
    found = dict(known)
    for reading in seen:
        found[reading.window] = reading
    return found


def spent(readings: Iterable[Reading], reserve: float, now: float, margin: float) -> Reading | None:
    """The window that has eaten into the reserve and not yet started afresh (its reset plus
    `margin` still ahead of `now`); of several, the one that resets last, as the run can go on
    only once every one of them has. None: every window leaves the reserve untouched."""
    over = [
        r
        for r in readings
        if r.reset_at is not None and r.utilization >= limit(reserve) and r.reset_at + margin > now
    ]
    return max(over, key=lambda r: (r.reset_at or 0.0, r.utilization), default=None)


def resume_at(reading: Reading, margin: float) -> float:
    """When the host may start again after a pause on `reading`'s window."""
    assert reading.reset_at is not None  # spent() returns only windows whose reset is told
    return reading.reset_at + margin


def title(window: str) -> str:
    return TITLES.get(window, window)
