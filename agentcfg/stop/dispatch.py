"""The dispatcher: run a chain of concerns, each bounded in time, and reduce their verdicts.

Every concern runs (so each can record what it saw); the first block wins. A concern that
crashes or runs out of time allows, unless it is declared fail_closed; an advisory concern
can only warn. Each concern is built with its chain entry, so it knows what its block will
become (an advisory concern leaves no trace of a refusal that never happens).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from agentcfg import _speed
from agentcfg.config import ChainEntry
from agentcfg.core.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any, Protocol

    from agentcfg.stop.handed import Handed

    class Concern(Protocol):
        name: str

        def check(self, ctx: Any, handed: Handed) -> Verdict: ...

    Factory = Callable[[ChainEntry], Concern]  # a concern class, built with its chain entry


# The whole chain's time: hosts wait on the hook, and a stop decision that takes longer than
# this is not worth waiting for.
CHAIN_BUDGET = 3.0


class Verdict(Record):
    """What a concern (and then the chain) decided about one stop."""

    kind: str  # "allow" | "warn" | "block"
    message: str = ""  # block: the text for the agent; allow or warn: a line for the person
    source: str = ""  # the concern that gave it
    hands: Handed | None = None  # what the concerns after this one read of it; None: nothing new

    @property
    def blocks(self) -> bool:
        return self.kind == "block"


ALLOW = Verdict("allow")


class ConcernTimeout(Exception):
    pass


class Outcome(Record):
    entry: ChainEntry
    verdict: Verdict
    error: str | None = None


def run_chain(
    ctx: object,
    entries: Sequence[ChainEntry],
    registry: Mapping[str, Factory],
    budget: float = CHAIN_BUDGET,
    handed: Handed | None = None,
) -> tuple[Verdict, list[Outcome]]:
    """Run every concern, each within its own limit and all within the chain's `budget`.

    Each concern is handed what the hook's steps and the concerns before it found (`handed`,
    then each verdict's `hands`); a concern that fails hands on nothing new."""
    if handed is None:
        from agentcfg.stop.handed import NOTHING

        handed = NOTHING
    deadline = time.monotonic() + budget
    outcomes = []
    for entry in entries:
        limit = min(entry.timeout, deadline - time.monotonic())
        outcome = _run_one(ctx, entry, registry, limit, handed)
        outcomes.append(outcome)
        handed = outcome.verdict.hands or handed
    return reduce([o.verdict for o in outcomes]), outcomes


def reduce(verdicts: Sequence[Verdict]) -> Verdict:
    """First block wins; else the first warning; else the first allow with a line to tell."""
    for kind in ("block", "warn"):
        for verdict in verdicts:
            if verdict.kind == kind:
                return verdict
    return next((v for v in verdicts if v.message), ALLOW)


def _run_one(
    ctx: object, entry: ChainEntry, registry: Mapping[str, Factory], limit: float, handed: Handed
) -> Outcome:
    try:
        if limit <= 0:
            raise ConcernTimeout("the chain's time budget is spent")
        with time_limit(limit):
            verdict = registry[entry.name](entry).check(ctx, handed)
        if not isinstance(verdict, Verdict):
            raise TypeError(f"{entry.name} returned {type(verdict).__name__}, not a Verdict")
    except Exception as exc:
        reason = (
            "ran out of time"
            if isinstance(exc, ConcernTimeout)
            else f"failed: {type(exc).__name__}"
        )
        verdict = (
            Verdict(
                "block",
                f"{entry.name} {reason}; it is declared fail_closed, so this stop is held. "
                "Run `agentcfg doctor` to see why.",
                entry.name,
            )
            if entry.fail_closed
            else ALLOW
        )
        return Outcome(entry, _ceiling(entry, verdict), f"{reason}: {exc}"[:500])
    return Outcome(entry, _ceiling(entry, verdict))


def _ceiling(entry: ChainEntry, verdict: Verdict) -> Verdict:
    if entry.severity == "advisory" and verdict.kind == "block":
        return Verdict("warn", verdict.message, verdict.source, verdict.hands)
    return verdict


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ConcernTimeout in the main thread after `seconds` (at once when none are left)."""
    if seconds <= 0:
        raise ConcernTimeout("the time budget is spent")

    def expire(signum: int, frame: object) -> None:
        raise ConcernTimeout(f"over {seconds:g}s")

    _signal = _speed.signals()
    try:
        previous = _signal.signal(_signal.SIGALRM, expire)
    except ValueError:  # not the main thread: no alarm available, run unbounded
        yield
        return
    _signal.setitimer(_signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _signal.signal(_signal.SIGALRM, previous)
