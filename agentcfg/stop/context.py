"""What one stop fire sees: the host's event, the workspace, config, and what they lead to.

Each derived value (claim, roadmap, scan, transcript, turn) is read at most once, and only
when a concern asks for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path

from agentcfg import claims, controls, loading, state
from agentcfg.config import Config
from agentcfg.contract import store as contract
from agentcfg.contract.model import Contract, Judgement, Receipt, judge
from agentcfg.core import phrases
from agentcfg.core.digest import sha256_hex
from agentcfg.core.ladder import Caps
from agentcfg.core.roadmap import Roadmap, Scan, scan
from agentcfg.errors import AgentcfgError
from agentcfg.fleet import membership
from agentcfg.hosts.base import StopEvent
from agentcfg.paths import REFUSALS, session_key
from agentcfg.transcript import Spent, TurnInfo, read_turn
from agentcfg.workspace import Workspace

_NONE = Contract(None, 0.0, ())


class HookContext:
    """Everything the concerns of one fire may ask, each read at most once and only if asked.

    Facts only: reading a property never writes a file, runs a process or sets another field,
    so any order of reading sees the same values. What a fire changes is done by the hook's
    steps (stop/steps.py) and its concerns."""

    def __init__(
        self,
        event: StopEvent,
        ws: Workspace,
        config: Config,
        env: Mapping[str, str],
        now: float,
    ) -> None:
        self.event = event
        self.ws = ws
        self.config = config
        self.env = env
        self.now = now
        self.key = session_key(event.session_id)

    @cached_property
    def held_claim(self) -> claims.Claim | None:
        """This session's claim, live or stale (a pending one is bound to it by the hook's
        adopt_pending step, before any concern asks)."""
        if not self.event.session_id:
            return None
        return claims.read_claim(self.ws, self.key)

    @cached_property
    def claim(self) -> claims.Claim | None:
        """This session's live claim; None when absent or stale."""
        found = self.held_claim
        return None if found is None or claims.is_stale(self.ws, found) else found

    @cached_property
    def stop(self) -> controls.Stop | None:
        """A person's stop on the claimed roadmap (`agentcfg stop`); None when it runs."""
        return controls.read_stop(self.ws, self.claim.slug) if self.claim else None

    @cached_property
    def yielding(self) -> str | None:
        """Why `agentcfg run` asked this run to end its turn (a usage window reached the
        person's reserve); None when it did not."""
        return controls.read_yield(self.ws, self.key) if self.claim else None

    @cached_property
    def recorded_member(self) -> membership.Membership | None:
        """This workspace's step lease in a fleet on the claimed roadmap, as recorded (the
        hook's renew_lease step renews it once due); None outside a fleet."""
        return membership.read_membership(self.ws, self.claim.slug) if self.claim else None

    @cached_property
    def member(self) -> membership.Membership | None:
        """The fleet membership, when its lease is on a step the claimed roadmap has (a
        roadmap that cannot be read has no step: its own rung tells); None otherwise."""
        found = self.recorded_member
        roadmap = self.roadmap
        if found is None or roadmap is None or self.claim is None:
            return None
        if found.slug != self.claim.slug or not any(s.id == found.step for s in roadmap.steps):
            return None
        return found

    @cached_property
    def loaded(self) -> tuple[Roadmap | None, str | None]:
        """The claimed roadmap, or None and why it could not be read (None without a claim)."""
        if self.claim is None:
            return None, None
        try:
            return loading.load(self.ws, self.claim.slug), None
        except AgentcfgError as exc:
            return None, str(exc)

    @property
    def roadmap(self) -> Roadmap | None:
        return self.loaded[0]

    @property
    def problem(self) -> str | None:
        """Why the claimed roadmap could not be read, once the fire has read it; None before."""
        loaded = self.__dict__.get("loaded")
        return None if loaded is None else loaded[1]

    @cached_property
    def scan(self) -> Scan | None:
        return scan(self.roadmap) if self.roadmap is not None else None

    @cached_property
    def contract(self) -> tuple[Contract | None, str]:
        """This run's contract, or None and why not ("missing", "unreadable", ...)."""
        if self.claim is None:
            return None, "missing"
        return contract.read(self.ws, self.key, self.claim.slug)

    @cached_property
    def receipts(self) -> tuple[tuple[Receipt, ...], tuple[object, ...]]:
        """The claimed roadmap's receipts whose seal holds, and the lines whose seal fails."""
        if self.claim is None:
            return (), ()
        return contract.load_receipts(self.ws, self.claim.slug)

    @cached_property
    def judgement(self) -> Judgement | None:
        """How the claimed roadmap stands against the run's contract; None without both."""
        found = self.contract[0]
        if found is None or self.roadmap is None or self.claim is None:
            return None
        return judge(found, self.roadmap, self.receipts[0], self.now)

    @cached_property
    def tampered(self) -> str | None:
        """The record deciding this run's ending (besides its run state) whose seal fails, as
        the person reads it; None when every one holds."""
        claim = self.claim
        if claim is None:
            return None
        if self.contract[1] == contract.TAMPERED:
            return f"the run's contract record {contract.shown(self.ws, self.key, claim.slug)}"
        if self.receipts[1]:
            return contract.refused(claim.slug, self.receipts[1])
        if membership.tampered(self.ws, claim.slug):
            return f"the fleet membership record {membership.shown(claim.slug)}"
        return None

    @property
    def autonomous(self) -> bool:
        """This session holds a live claim on a roadmap that is autonomous, or whose run's
        contract is: switching the mode away during the run does not end the judging."""
        if self.roadmap is None:
            return False
        return self.roadmap.autonomous or (self.contract[0] or _NONE).autonomous

    @cached_property
    def transcript(self) -> TurnInfo:
        return read_turn(self.event.transcript_path)

    @cached_property
    def turn(self) -> str:
        return self.event.turn_id or self.transcript.turn

    @cached_property
    def final_message(self) -> str:
        if self.event.last_assistant_message is not None:
            return self.event.last_assistant_message
        return self.transcript.final_message or ""

    @cached_property
    def prompt(self) -> str | None:
        """The person's latest prompt: from the payload (Gemini) or the transcript's tail."""
        if self.event.prompt is not None:
            return self.event.prompt
        return self.transcript.prompt

    @cached_property
    def person(self) -> str | None:
        """What the person's latest prompt asks of the run: "pause", "resume" or None."""
        return phrases.intent(self.prompt)

    @property
    def paused(self) -> bool:
        """The person paused this session's run and has not said to go on."""
        if self.person is not None or self.claim is None:
            return self.person == "pause"
        run = claims.read_run(self.ws, self.claim)
        return run is not None and run.paused

    @cached_property
    def reply_key(self) -> str:
        try:
            size = os.stat(self.event.transcript_path).st_size if self.event.transcript_path else 0
        except (OSError, ValueError):
            size = 0
        digest = sha256_hex(self.final_message.encode("utf-8", "replace"))[:16]
        fire = f"|{self.event.fire_id}" if self.event.fire_id else ""
        return f"{self.turn}|{digest}|{size}{fire}"

    @property
    def caps(self) -> Caps:
        claim = self.claim
        return Caps(
            claim.max_iterations if claim and claim.max_iterations else self.config.max_iterations,
            claim.wall_clock if claim and claim.wall_clock else self.config.wall_clock,
            self.config.stall_window,
            claim.max_tokens if claim and claim.max_tokens else self.config.max_tokens,
        )

    def spent_since(self, mark: tuple[str, int] | None) -> Spent:
        """What this fire's segment of the transcript cost: from `mark`, where the run's last
        recorded fire read to, or from the start of the human turn when the mark is elsewhere."""
        from agentcfg.hosts.registry import adapter

        path = self.event.transcript_path
        start = mark[1] if mark is not None and mark[0] == path else None
        # waiting at most `ledger.reply_wait` for a reply the host has yet to write
        return adapter(self.event.host).usage_since(path, start, self.config.reply_wait)

    def refusal_path(self) -> Path:
        return self.ws.state / REFUSALS / f"{self.key}.json"

    def log(self, event: str, **fields: object) -> None:
        """Append one ledger event with the standard fields; never fails the fire.

        The turn and the roadmap's counts are those the fire has read so far: logging never
        starts a read of the transcript or a parse of the roadmap."""
        known: Scan | None = self.__dict__.get("scan")
        record = state.event(
            event,
            self.now,
            self.key,
            self.claim.slug if self.claim else None,
            turn=self.__dict__.get("turn", self.event.turn_id),
            open=known.counts.open if known else None,
            blocked=known.counts.blocked if known else None,
            host=self.event.host,
            **fields,
        )
        state.append_ledger(self.ws.state, record)
        if self.config.notify:  # only then is the notifier (and subprocess) loaded
            from agentcfg import notify

            notify.on_event(self.config.notify, record, self.ws)
