"""What the hook's steps and its chain's concerns hand on to the ones after them: one record."""

from __future__ import annotations

from agentcfg.core.records import Record


class Refusal(Record):
    """The turn end the gate refused in this turn: the reply it refused."""

    turn: str
    reply: str


class Handed(Record):
    """What the hook's steps and the chain's earlier concerns found, for the ones after."""

    adopted: str | None = None  # the roadmap a pending claim of this session was bound to
    lost: str | None = None  # why a pending claim this session showed did not bind
    lease_lost: str | None = None  # the fleet step whose lease passed to another member
    refusal: Refusal | None = None  # the gate's refusal in this turn, from this fire or before
    gate_holds_changes: bool = False  # the gate refuses a changed contract once, in this turn


NOTHING = Handed()
