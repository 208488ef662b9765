"""The termination ladder: a pure function of (run state, fire, caps) to a verdict and a new state.

No I/O, no clock, no environment: the caller passes `now` in the fire and persists the result.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agentcfg.core.times import iso_ms, parse_iso

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any

# the default caps of a run; config and claims may set others
MAX_ITERATIONS = 25
WALL_CLOCK = 4 * 3600.0
STALL_WINDOW = 3
DUPLICATE_WINDOW = 60.0
MAX_REPEATS = 2
HISTORY_LIMIT = 64


@dataclass(frozen=True)
class RunState:
    started_at: float
    iterations: int = 0
    last_turn: str | None = None
    last_reply: str | None = None
    repeats: int = 0
    history: tuple[int, ...] = ()
    last_engaged_at: float | None = None
    halted: str | None = None

    @classmethod
    def fresh(cls, now: float) -> RunState:
        return cls(started_at=now)

    def to_json(self) -> dict[str, Any]:
        return {
            "started_at": iso_ms(self.started_at),
            "iterations": self.iterations,
            "last_turn": self.last_turn,
            "last_reply": self.last_reply,
            "repeats": self.repeats,
            "history": list(self.history),
            "last_engaged_at": None
            if self.last_engaged_at is None
            else iso_ms(self.last_engaged_at),
            "halted": self.halted,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState | None:
        """A run state from its JSON, or None when any field has the wrong shape."""
        if not data.keys() >= _FIELDS:
            return None
        started, engaged = parse_iso(data["started_at"]), parse_iso(data["last_engaged_at"])
        checks = (
            started is not None,
            _count(data.get("iterations")),
            isinstance(data.get("last_turn"), (str, type(None))),
            isinstance(data.get("last_reply"), (str, type(None))),
            _count(data.get("repeats")),
            isinstance(data.get("history"), list) and all(_count(n) for n in data["history"]),
            engaged is not None or data["last_engaged_at"] is None,
            isinstance(data.get("halted"), (str, type(None))),
        )
        if not all(checks) or started is None:
            return None
        return cls(
            started,
            data["iterations"],
            data["last_turn"],
            data["last_reply"],
            data["repeats"],
            tuple(data["history"][-HISTORY_LIMIT:]),
            engaged,
            data["halted"],
        )


_FIELDS = frozenset(RunState.__dataclass_fields__)


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


@dataclass(frozen=True)
class Caps:
    max_iterations: int = MAX_ITERATIONS
    wall_clock: float = WALL_CLOCK
    stall_window: int = STALL_WINDOW


@dataclass(frozen=True)
class Fire:
    """What one stop fire saw, already reduced to facts."""

    turn: str
    reply: str
    open: int
    blocked: int
    now: float
    deferred: bool = False  # the quality gate refused this same reply
    question: bool = False  # the final message asks the person a real question
    background: bool = False  # the host reports background tasks still running
    shadow: bool = False  # config mode: shadow


@dataclass(frozen=True)
class Decision:
    block: bool
    event: str | None  # the ledger event, None for a silent rung
    state: RunState | None  # the run state to persist; None removes it
    changed: bool  # whether `state` differs from what was read
    cut_short: bool = False  # the host ended the turn our last block meant to continue


def decide(run: RunState, fire: Fire, caps: Caps) -> Decision:
    """Walk the ladder, first match wins (DESIGN section 4, rungs 1 to 11).

    A run's `last_reply` names the reply it last blocked until the agent is let go. A new human
    turn arriving while it still does means the host ended that turn despite the block (its own
    block cap, or the person stepping in): the decision says so, once.
    """
    if run.halted is None and run.last_reply is not None and _new_human_turn(run, fire):
        decision = _climb(replace(run, last_reply=None), fire, caps)
        return replace(decision, changed=True, cut_short=True)
    return _climb(run, fire, caps)


def _climb(run: RunState, fire: Fire, caps: Caps) -> Decision:
    def allow(event: str | None) -> Decision:
        return Decision(False, event, run, False)

    def let_go(event: str) -> Decision:
        if run.halted is not None or run.last_reply is None:
            return allow(event)
        return Decision(False, event, replace(run, last_reply=None), True)

    if fire.deferred:
        return allow("deferred-quality-gate")  # the gate blocked: the turn goes on
    if fire.question:
        return let_go("handback-question")
    if fire.background:
        return let_go("handback-background")
    if _duplicate(run, fire):
        return Decision(True, None, replace(run, repeats=run.repeats + 1), True)
    if run.halted is not None:
        return allow(None)
    if fire.open == 0 and fire.blocked > 0:
        return let_go("blocked")
    if fire.open == 0:
        return Decision(False, "complete", None, True)
    history = run.history if not _new_human_turn(run, fire) else ()
    for rung, reached in (
        ("halt-max-iterations", run.iterations >= caps.max_iterations),
        ("halt-wall-clock", fire.now - run.started_at >= caps.wall_clock),
        ("halt-stall", _stalled(history, fire.open, caps.stall_window)),
    ):
        if reached:
            halted = replace(run, halted=rung, last_reply=None, history=history)
            return Decision(False, rung, halted, True)
    if fire.shadow:
        return allow("shadow-engage")
    engaged = replace(
        run,
        iterations=run.iterations + 1,
        last_turn=fire.turn or run.last_turn,
        last_reply=fire.reply,
        repeats=0,
        history=(*history, fire.open)[-HISTORY_LIMIT:],
        last_engaged_at=fire.now,
    )
    return Decision(True, "engage", engaged, True)


def _duplicate(run: RunState, fire: Fire) -> bool:
    return (
        run.halted is None
        and run.last_reply == fire.reply
        and run.last_engaged_at is not None
        and 0 <= fire.now - run.last_engaged_at <= DUPLICATE_WINDOW
        and bool(run.history)
        and run.history[-1] == fire.open
        and run.repeats < MAX_REPEATS
    )


def _new_human_turn(run: RunState, fire: Fire) -> bool:
    return bool(fire.turn) and run.last_turn is not None and fire.turn != run.last_turn


def _stalled(history: tuple[int, ...], open_count: int, window: int) -> bool:
    recent = history[-window:]
    return len(recent) >= window and all(n == open_count for n in recent)
