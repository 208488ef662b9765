"""turn-end-gate: refuse, once per turn, a turn end that looks unfinished.

Config `mode` rules it as it rules the whole hook: `off` silences it, `shadow` records
what it would refuse without blocking. As an advisory concern it only warns, and keeps no
marker: run-continuation must not defer to a refusal that never reached the agent.
A question to the person is never refused, and a run the person paused is left alone.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from agentcfg import state
from agentcfg.config import ChainEntry
from agentcfg.contract import store as contract
from agentcfg.contract.model import Change, passed_since
from agentcfg.core import events, phrases
from agentcfg.core.chain import TURN_END_GATE
from agentcfg.core.roadmap import Step
from agentcfg.core.texts import refusal
from agentcfg.core.times import iso_ms, parse_iso
from agentcfg.errors import StateError
from agentcfg.paths import MARKS
from agentcfg.stop.context import HookContext
from agentcfg.stop.dispatch import ALLOW, Verdict
from agentcfg.stop.handed import Handed, Refusal


class TurnEndGate:
    name = TURN_END_GATE

    def __init__(self, entry: ChainEntry) -> None:
        self.advisory = entry.severity == "advisory"

    def check(self, ctx: HookContext, handed: Handed) -> Verdict:
        if (
            ctx.event.is_subagent
            or ctx.event.interrupted
            or not ctx.turn
            or ctx.config.mode == "off"
            or ctx.stop is not None  # a person stopped the run: nothing may hold the agent
            or ctx.yielding is not None  # `agentcfg run` pauses it at this turn end
        ):
            return ALLOW
        path = ctx.refusal_path()
        # what run-continuation reads of the gate: a refusal it defers to, and whether a
        # changed contract gets its one refusal here before the run halts on it
        hands = handed._replace(
            refusal=None if self.advisory else _refused(state.read_json(path), ctx.turn),
            gate_holds_changes=not self.advisory
            and "contract-change" in ctx.config.detectors
            and ctx.config.mode != "shadow",
        )
        allow = Verdict("allow", hands=hands)
        if ctx.config.gate_scope == "claimed" and not ctx.autonomous:
            return allow
        changed = _changed_steps(ctx)
        if ctx.paused:
            return allow
        try:
            with state.locked(path.with_suffix(".lock")):
                found = self._refuse(ctx, changed, path)
        except (StateError, OSError):
            return allow  # a refusal that cannot be remembered could repeat: let the turn end
        if found is None:
            return allow
        if not self.advisory:
            hands = hands._replace(refusal=Refusal(ctx.turn, ctx.reply_key))
        detector, quote, step = found
        extra: dict[str, object] = {"step": step.id} if step else {}
        fresh = _fresh_changes(ctx) if detector == "contract-change" else ()
        if fresh:
            extra["changes"] = [c.describe() for c in fresh]
        for flag, on in (("shadow", ctx.config.mode == "shadow"), ("advisory", self.advisory)):
            if on:
                extra[flag] = True
        quoted = state.ledger_quote(quote, ctx.config.ledger_quotes)
        ctx.log(events.REFUSED, detector=detector, quote=quoted, **extra)
        if ctx.config.mode == "shadow":
            return Verdict("allow", hands=hands)  # recorded as it would have been refused
        slug = ctx.claim.slug if ctx.claim else ""
        if fresh and not self.advisory:
            with contextlib.suppress(StateError, OSError):  # unremembered: the next end halts
                contract.warn(ctx.ws, ctx.key, slug, tuple(c.key for c in fresh))
        text = refusal(
            detector,
            quote,
            slug=slug,
            step=step.name if step else "",
            command=(step.verify or "") if step else "",
        )
        return Verdict("block", text, self.name, hands)

    def _refuse(
        self, ctx: HookContext, changed: Changed, path: Path
    ) -> tuple[str, str, Step | None] | None:
        """Under the marker's lock: what to refuse this turn, remembered; None for nothing."""
        marker = state.read_json(path)
        if marker is not None and marker.get("refused_turn") == ctx.turn:
            return None  # at most one refusal per turn
        found = self._detect(ctx, changed)
        if found is not None and not self.advisory:
            state.write_json(
                path,
                {
                    "refused_turn": ctx.turn,
                    "refused_reply": ctx.reply_key,
                    "detector": found[0],
                    "refused_at": iso_ms(ctx.now),
                    "counts": _counts(ctx),
                },
            )
        return found

    def _detect(self, ctx: HookContext, changed: Changed) -> tuple[str, str, Step | None] | None:
        message, enabled = ctx.final_message, ctx.config.detectors
        unproven, exited = changed
        if "contract-change" in enabled:
            fresh = _fresh_changes(ctx)
            if fresh:
                return "contract-change", "; ".join(c.describe() for c in fresh), None
        if "unproven-step" in enabled and unproven:
            return "unproven-step", "", unproven[0]
        if "self-exit" in enabled and exited:
            return "self-exit", _how(exited[0]), exited[0]
        if not message.strip() or phrases.question(message):
            return None  # a question to the person hands back: never refused
        if "deference" in enabled and ctx.autonomous:
            quote = phrases.deference(message)
            if quote:
                return "deference", quote, None
        if "promissory-closing" in enabled:
            quote = phrases.promise(message)
            if quote:
                return "promissory-closing", quote, None
        if "unverified-completion" in enabled:
            quote = phrases.completion(message)
            if quote and ctx.transcript.tools_ran is False:
                return "unverified-completion", quote, None
        return None


Changed = tuple[list[Step], list[Step]]  # (unproven, self-exited)


def _fresh_changes(ctx: HookContext) -> tuple[Change, ...]:
    """Changes to the run's contract the gate has not refused yet."""
    found, judged = ctx.contract[0], ctx.judgement
    if found is None or judged is None:
        return ()
    return tuple(c for c in judged.changes if c.key not in found.warned)


def _changed_steps(ctx: HookContext) -> Changed:
    """Steps open at the previous fire that are now done with a verify line no receipt says
    passed since (unproven), or cancelled, deferred or blocked (self-exited: only a person does that).

    Records this fire's open steps for the next one to compare against.
    """
    if not ctx.autonomous or ctx.claim is None or ctx.scan is None or ctx.roadmap is None:
        return [], []
    slug = ctx.claim.slug
    path = ctx.ws.state / MARKS / f"{ctx.key}-{slug}.json"
    before = state.read_json(path, limit=state.RECORD_LIMIT) or {}  # grows with the steps
    listed = before.get("open")
    was_open: list[object] = listed if isinstance(listed, list) else []
    seen_at = parse_iso(before.get("at"))
    now_open = [s.id for s in ctx.roadmap.steps if s.is_open]
    if now_open != was_open:
        # without a record the next fire simply sees nothing newly done
        with contextlib.suppress(OSError):
            state.write_json(path, {"open": now_open, "at": iso_ms(ctx.now)}, compact=True)
    if seen_at is None:
        return [], []
    by_id = {s.id: s for s in ctx.roadmap.steps}
    still = set(now_open)
    left = [by_id[i] for i in was_open if isinstance(i, str) and i in by_id and i not in still]
    if not left:
        return [], []
    exited = [s for s in left if s.mark in ("cancelled", "deferred") or s.blocked]
    if ctx.tampered is not None:  # no receipt is believed: the run halts on this fire, told
        return [], exited
    receipts = ctx.receipts[0]

    def proven(step: Step) -> bool:  # a state folder of an earlier version: its proofs too
        return passed_since(receipts, step.id, seen_at) or contract.proven_before(
            ctx.ws, slug, step.id, seen_at
        )

    return [s for s in left if s.mark == "done" and s.verify and not proven(s)], exited


def _refused(marker: dict[str, object] | None, turn: str) -> Refusal | None:
    """The refusal the gate's marker remembers for this turn, if it refused one."""
    if marker is None or marker.get("refused_turn") != turn:
        return None
    reply = marker.get("refused_reply")
    return Refusal(turn, reply) if isinstance(reply, str) else None


def _how(step: Step) -> str:
    return f"blocked-by: {step.blocked_by}".rstrip(" :") if step.blocked else step.mark


def _counts(ctx: HookContext) -> dict[str, int] | None:
    if ctx.scan is None:
        return None
    counts = ctx.scan.counts
    return {"open": counts.open, "blocked": counts.blocked, "done": counts.done}
