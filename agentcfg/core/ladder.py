"""The termination ladder: a pure function of (run state, fire, caps) to a verdict and a new state.

No I/O, no clock, no environment: the caller passes `now` in the fire and persists the result.
Each outcome of a run (complete, blocked, a halt) is decided once; later fires are silent.
"""

from __future__ import annotations

from agentcfg.core import events
from agentcfg.core.digest import sha256_hex
from agentcfg.core.records import Record
from agentcfg.core.times import format_duration, iso_ms, parse_iso

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from collections.abc import Callable
    from typing import Any

# the default caps of a run; config and claims may set others
MAX_ITERATIONS = 25
WALL_CLOCK = 4 * 3600.0
STALL_WINDOW = 3
DUPLICATE_WINDOW = 60.0
MAX_REPEATS = 2
HISTORY_LIMIT = 64
# the largest budgets a config, the environment or a claim may set
LIMITS = {"max_iterations": 1000, "wall_clock": 7 * 86400.0}
TAMPERED = events.HALT_STATE_TAMPERED  # a record deciding the run's ending failed its seal


class RunState(Record):
    started_at: float
    iterations: int = 0
    last_turn: str | None = None
    last_reply: str | None = None
    repeats: int = 0
    history: tuple[str, ...] = ()  # fingerprints of the open steps each engagement saw
    last_engaged_at: float | None = None
    halted: str | None = None  # the halt that ended the run: silent until a re-claim
    ended: str | None = None  # "complete" or "blocked": silent until open work appears
    paused: bool = False  # the person asked to pause: silent until they say go on
    tokens: int | None = None  # tokens recorded on the run's events; None while none is known
    mark: tuple[str, int] | None = None  # (transcript, offset) where the last recorded fire read to

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
            "ended": self.ended,
            "paused": self.paused,
            "tokens": self.tokens,
            "mark": None if self.mark is None else list(self.mark),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState | None:
        """A run state from its JSON, or None when any field has the wrong shape."""
        if not data.keys() >= _FIELDS:
            return None
        started, engaged = parse_iso(data["started_at"]), parse_iso(data["last_engaged_at"])
        history = data["history"]
        checks = (
            started is not None,
            _count(data.get("iterations")),
            isinstance(data.get("last_turn"), (str, type(None))),
            isinstance(data.get("last_reply"), (str, type(None))),
            _count(data.get("repeats")),
            isinstance(history, list) and all(isinstance(h, str) or _count(h) for h in history),
            engaged is not None or data["last_engaged_at"] is None,
            isinstance(data.get("halted"), (str, type(None))),
            isinstance(data.get("ended"), (str, type(None))),
            isinstance(data.get("paused", False), bool),
            data.get("tokens") is None or _count(data["tokens"]),
            data.get("mark") is None or _mark(data["mark"]),
        )
        if not all(checks) or started is None:
            return None
        mark = data.get("mark")
        return cls(
            started,
            data["iterations"],
            data["last_turn"],
            data["last_reply"],
            data["repeats"],
            tuple(str(h) for h in history[-HISTORY_LIMIT:]),  # counts of older runs never match
            engaged,
            data["halted"],
            data.get("ended"),
            data.get("paused", False),
            data.get("tokens"),
            None if mark is None else (mark[0], mark[1]),
        )


# fields a run state written before they existed may lack
_FIELDS = frozenset(RunState._fields) - {"ended", "paused", "tokens", "mark"}


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


def _mark(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], str)
        and _count(value[1])
    )


class Caps(Record):
    max_iterations: int = MAX_ITERATIONS
    wall_clock: float = WALL_CLOCK
    stall_window: int = STALL_WINDOW
    max_tokens: int | None = None


def clamp(name: str, value: float) -> tuple[float, str | None]:
    """A budget cut to its limit, with a line saying so when it was cut."""
    limit = LIMITS[name]
    if value <= limit:
        return value, None
    shown = (
        (format_duration(value), format_duration(limit))
        if name == "wall_clock"
        else (f"{value:g}", f"{limit:g}")
    )
    return limit, f"{shown[0]} is above the limit of {shown[1]}; using {shown[1]}"


class Fire(Record):
    """What one stop fire saw, already reduced to facts."""

    turn: str
    reply: str
    open_ids: frozenset[str] | None  # the open steps' ids; None: the roadmap is gone or unreadable
    blocked: int
    now: float
    deferred: bool = False  # the quality gate refused this same reply
    question: bool = False  # the final message asks the person a question or for a decision
    background: bool = False  # the host reports background tasks still running
    person: str | None = None  # the person's latest prompt asks to "pause" or to "resume"
    shadow: bool = False  # config mode: shadow
    tokens: int | None = None  # the run's recorded tokens with this fire's; None: none known
    changed: bool = False  # the run's contract was changed, and the gate has refused it once
    checks: tuple[str, ...] = ()  # checks `roadmap done` refused: changed since trust
    tampered: bool = False  # a record deciding the run's ending failed its seal
    unfinal: bool = False  # nothing open, but no final re-proof covers the contract and roadmap

    @property
    def open(self) -> int:
        return len(self.open_ids or ())


class Decision(Record):
    block: bool
    event: str | None  # the ledger event, None for a silent rung
    state: RunState  # the run state to persist
    changed: bool  # whether `state` differs from what was read
    cut_short: bool = False  # the host ended the turn our last block meant to continue


# rungs 8-11: the halts, in order; each reads the run (stall history already reset on a new
# human turn), this fire and the caps. A new budget is a line here.
HALTS: tuple[tuple[str, Callable[[RunState, Fire, Caps], bool]], ...] = (
    (events.HALT_MAX_ITERATIONS, lambda run, fire, caps: run.iterations >= caps.max_iterations),
    (events.HALT_TOKEN_BUDGET, lambda run, fire, caps: _over(fire.tokens, caps.max_tokens)),
    (events.HALT_WALL_CLOCK, lambda run, fire, caps: fire.now - run.started_at >= caps.wall_clock),
    (
        events.HALT_STALL,
        lambda run, fire, caps: _stalled(run.history, fingerprint(fire), caps.stall_window),
    ),
)


def decide(run: RunState, fire: Fire, caps: Caps) -> Decision:
    """Walk the ladder, first match wins (docs/architecture.md, section 3: rungs 1 to 13, 5a, 5b).

    A run's `last_reply` names the reply it last blocked until the agent is let go. A new human
    turn arriving while it still does means the host ended that turn despite the block (its own
    block cap, or the person stepping in): the decision says so, once.
    """
    if run.halted is None and run.last_reply is not None and _new_human_turn(run, fire):
        decision = _climb(run._replace(last_reply=None), fire, caps)
        return decision._replace(changed=True, cut_short=True)
    return _climb(run, fire, caps)


def _climb(read: RunState, fire: Fire, caps: Caps) -> Decision:
    run = read

    def settle(block: bool, event: str | None, state: RunState) -> Decision:
        return Decision(block, event, state, state != read)

    done = events.BLOCKED if fire.blocked else events.COMPLETE
    ending = None if fire.open_ids is None or fire.open else done
    if ending == events.COMPLETE and fire.unfinal:
        ending = None  # rung 7 needs the final re-proof: until it is recorded, work remains
    pausing = fire.person == "pause" or (run.paused and fire.person != "resume")
    if run.halted is not None or (run.ended is not None and run.ended == ending):
        # rung 4, first: a finished run says nothing more (a pause is kept for new work)
        return settle(False, None, run if run.halted else run._replace(paused=pausing))
    let_go = run._replace(last_reply=None)  # the agent may end its turn: no block holds it
    if pausing:  # rung 2c, before the hand-backs: the person's word outranks the agent's
        return settle(False, None if run.paused else events.PAUSED, let_go._replace(paused=True))
    if fire.deferred:
        return settle(
            False, events.DEFERRED_QUALITY_GATE, run
        )  # the gate blocked: the turn goes on
    if fire.question:
        return settle(False, events.HANDBACK_QUESTION, let_go)
    if fire.background:
        return settle(False, events.HANDBACK_BACKGROUND, let_go)
    run = run._replace(paused=False)  # the person said go on, or never paused
    if _duplicate(run, fire):
        return settle(True, None, run._replace(repeats=run.repeats + 1))
    if fire.open_ids is None:
        absent = events.HALT_ROADMAP_ABSENT
        return settle(False, absent, run._replace(halted=absent))
    if fire.tampered:  # rung 5a: what decides the ending cannot be believed
        return settle(False, TAMPERED, run._replace(halted=TAMPERED, ended=None, last_reply=None))
    if fire.changed:  # rung 5b: never complete, never blocked, never silent
        halt = events.HALT_CONTRACT_CHANGED
        return settle(False, halt, run._replace(halted=halt, ended=None, last_reply=None))
    if fire.checks:  # rung 5c: a check changed under the run, refused once by `roadmap done`
        halt = events.HALT_CHECK_CHANGED
        return settle(False, halt, run._replace(halted=halt, ended=None, last_reply=None))
    if ending is not None:
        return settle(False, ending, run._replace(ended=ending, last_reply=None))
    # open work (again, after an ending: the same run goes on); a new human turn clears stalls
    run = run._replace(ended=None, history=() if _new_human_turn(run, fire) else run.history)
    for rung, reached in HALTS:
        if reached(run, fire, caps):
            return settle(False, rung, run._replace(halted=rung, last_reply=None))
    if fire.shadow:
        return settle(False, events.SHADOW_ENGAGE, run)
    engaged = run._replace(
        iterations=run.iterations + 1,
        last_turn=fire.turn or run.last_turn,
        last_reply=fire.reply,
        repeats=0,
        history=(*run.history, fingerprint(fire))[-HISTORY_LIMIT:],
        last_engaged_at=fire.now,
    )
    return settle(True, events.ENGAGE, engaged)


def fingerprint(fire: Fire) -> str:
    """A short name for the set of open steps: equal sets, equal names, in any order."""
    ids = "\n".join(sorted(fire.open_ids or ()))
    return f"{fire.open}:{sha256_hex(ids.encode('utf-8', 'surrogatepass'))[:16]}"


def _over(tokens: int | None, budget: int | None) -> bool:
    return tokens is not None and budget is not None and tokens >= budget


def _duplicate(run: RunState, fire: Fire) -> bool:
    return (
        run.halted is None
        and run.last_reply == fire.reply
        and run.last_engaged_at is not None
        and 0 <= fire.now - run.last_engaged_at <= DUPLICATE_WINDOW
        and bool(run.history)
        and run.history[-1] == fingerprint(fire)
        and run.repeats < MAX_REPEATS
    )


def _new_human_turn(run: RunState, fire: Fire) -> bool:
    return bool(fire.turn) and run.last_turn is not None and fire.turn != run.last_turn


def _stalled(history: tuple[str, ...], now: str, window: int) -> bool:
    recent = history[-window:]
    return len(recent) >= window and all(seen == now for seen in recent)
