"""run-continuation: while contracted work remains, block the stop with the next step.

Hand-backs, pauses and halts allow the stop with a line for the person (texts.note), which
each host shows through its own channel.
"""

from __future__ import annotations

from pathlib import Path

from agentcfg import claims, controls, state
from agentcfg.claims import Claim
from agentcfg.config import ChainEntry
from agentcfg.contract import store as contract
from agentcfg.core import events, phrases
from agentcfg.core.chain import RUN_CONTINUATION
from agentcfg.core.ladder import TAMPERED, Fire, RunState, decide
from agentcfg.core.texts import (
    claim_lost,
    continuation,
    final_needed,
    lease_lost,
    note,
    stopped,
)
from agentcfg.errors import StateError
from agentcfg.paths import CHECKPOINTS, CHECKS, FINALS, RUN_HOST_ENV
from agentcfg.stop.context import HookContext
from agentcfg.stop.dispatch import ALLOW, Verdict
from agentcfg.stop.handed import Handed


class RunContinuation:
    name = RUN_CONTINUATION

    def __init__(self, entry: ChainEntry) -> None:
        self.entry = entry

    def check(self, ctx: HookContext, handed: Handed) -> Verdict:
        claim = ctx.held_claim
        if self._silent(ctx):
            return ALLOW
        if claim is None:
            return ALLOW if handed.lost is None else self._lost(ctx, handed.lost)
        if ctx.stop is not None:  # a person stopped the run: before any rung of the ladder
            return self._stopped(ctx, ctx.stop)
        if ctx.yielding is not None:  # the driver ends the start here and carries the run on
            ctx.log(events.YIELDED, reason=ctx.yielding)
            return ALLOW
        scanned = ctx.scan  # None: the claimed roadmap is gone or unreadable
        roadmap = ctx.roadmap
        if roadmap is not None and not ctx.autonomous:
            return ALLOW
        member = ctx.member  # a fleet member works its leased step alone
        if handed.lease_lost is not None:
            ctx.log(events.LEASE_LOST, step=handed.lease_lost)
            return Verdict("warn", lease_lost(claim.slug, handed.lease_lost), self.name)
        refusal = handed.refusal if handed.refusal and handed.refusal.turn == ctx.turn else None
        refused = refusal.reply if refusal is not None and ctx.turn else None
        message = ctx.final_message
        judged = ctx.judgement
        if roadmap is None:
            open_ids = None
        elif judged is not None:
            open_ids = judged.open_ids
        else:
            open_ids = frozenset(s.id for s in roadmap.steps if s.is_open)
        if open_ids is not None and member is not None:
            open_ids = frozenset(i for i in open_ids if i == member.step)
        blocked = _blocked(ctx, scanned.counts.blocked if scanned else 0)
        fire = Fire(
            turn=ctx.turn,
            reply=ctx.reply_key,
            open_ids=open_ids,
            changed=roadmap is not None and _halts_on_change(ctx, handed),
            checks=_refused_checks(ctx, claim.slug) if roadmap is not None else (),
            tampered=ctx.tampered is not None,
            blocked=blocked,
            now=ctx.now,
            deferred=refused == ctx.reply_key,
            # asking leave again after a refusal in this turn is a question: it hands back
            question=phrases.question(message) is not None
            or (refused is not None and phrases.deference(message) is not None),
            background=ctx.event.background_tasks > 0,
            person=ctx.person,
            shadow=ctx.config.mode == "shadow",
            unfinal=open_ids == frozenset() and not blocked and member is None and _unfinal(ctx),
        )
        path = claims.run_path(ctx.ws, ctx.key, claim.slug)
        try:
            with state.locked(path.with_suffix(".lock")):
                return self._step(ctx, fire, path, claim)
        except (StateError, OSError) as exc:
            ctx.log(events.ERROR, reason=f"run state: {exc}")
            return ALLOW

    def _step(self, ctx: HookContext, fire: Fire, path: Path, claim: Claim) -> Verdict:
        judged = ctx.judgement
        if judged is not None and judged.joining and not fire.changed:
            contract.join(ctx.ws, ctx.key, claim.slug, judged.joining)  # OSError: allow, above
        run = RunState.fresh(ctx.now)
        found, problem = claims.load_run(path)
        if problem in ("unreadable", contract.TAMPERED):  # told once: replaced by a halted state
            halt = TAMPERED if problem == contract.TAMPERED else events.HALT_STATE_UNREADABLE
            halted = run._replace(halted=halt)
            claims.write_run(path, halted)  # OSError: allow, above
            record = f"this session's run state {claims.run_file_shown(ctx.key, claim.slug)}"
            return self._told(ctx, claim, halt, halted, record=record)
        run = found or run
        spent = ctx.spent_since(run.mark)
        tokens = run.tokens
        if spent.usage is not None:
            tokens = (tokens or 0) + spent.usage.total
        decision = decide(run, fire._replace(tokens=tokens), ctx.caps)
        after = decision.state
        if decision.event is not None and spent.end is not None:
            # a recorded fire's tokens count once: the next segment starts where this one ends
            after = after._replace(tokens=tokens, mark=(ctx.event.transcript_path, spent.end))
        if after != run:
            claims.write_run(path, after)  # OSError: allow, above
        if decision.cut_short:
            ctx.log(events.CUT_SHORT, iterations=run.iterations, reply=run.last_reply)
        if decision.event is None and not decision.block:
            return ALLOW
        usage = spent.usage.to_json() if spent.usage is not None else None
        if not decision.block:
            return self._told(ctx, claim, decision.event or "", after, usage)
        scanned = ctx.scan
        unproven = judged.unproven if judged else ()
        upcoming = scanned.next if scanned and scanned.next else next(iter(unproven), None)
        if ctx.member is not None and ctx.roadmap is not None:  # the leased step, never another
            unproven = tuple(s for s in unproven if s.id == ctx.member.step)
            upcoming = next((s for s in ctx.roadmap.steps if s.id == ctx.member.step), None)
        if decision.event is not None:
            step = {"step": upcoming.id} if upcoming else {}
            fields = {"iterations": after.iterations, "reply": ctx.reply_key, "tokens": usage}
            ctx.log(events.ENGAGE, **fields, **step, **_proven(ctx))
            if upcoming is not None:
                _checkpoint(ctx, claim.slug, upcoming.id)
        counts = scanned.counts if scanned else None
        if fire.unfinal and not fire.open:
            text = final_needed(claim.slug, after.iterations, ctx.caps.max_iterations)
            return Verdict("block", text, self.name)
        blocked = counts.blocked if counts else 0
        text = continuation(
            claim.slug,
            fire.open,
            blocked,
            upcoming,
            after.iterations,
            ctx.caps.max_iterations,
            unproven,
            _reopened(ctx),
        )
        return Verdict("block", text, self.name)

    def _lost(self, ctx: HookContext, reason: str) -> Verdict:
        """Tell the agent once (its pending claim is spent) that its claim did not bind."""
        ctx.log(events.CLAIM_LOST, reason=reason, reply=ctx.reply_key)
        from agentcfg.core.visible import visible  # rare: loaded only then

        kind = "warn" if ctx.config.mode == "shadow" else "block"
        return Verdict(kind, claim_lost(visible(reason)), self.name)

    def _stopped(self, ctx: HookContext, found: controls.Stop) -> Verdict:
        """Allow, and tell the agent once per session that the person stopped the run."""
        try:
            first = controls.tell(ctx.ws, found, ctx.key)
        except (StateError, OSError):
            first = True  # telling twice beats never telling
        if not first:
            return ALLOW
        ctx.log(events.STOPPED, by=found.by, reply=ctx.reply_key)
        return Verdict("warn", stopped(found.slug, found.by), self.name)

    def _told(
        self,
        ctx: HookContext,
        claim: Claim,
        event: str,
        run: RunState,
        tokens: dict[str, int] | None = None,
        record: str | None = None,
    ) -> Verdict:
        """Record an allowing event with the fire's tokens; the verdict carries the line the
        person is told, if any. `record`: the record whose seal failed, for a tampered one."""
        if event == events.HALT_CONTRACT_CHANGED:
            changes: list[str] | None = _changes(ctx)
        elif event == events.HALT_CHECK_CHANGED:
            changes = list(_refused_checks(ctx, claim.slug))
        else:
            changes = None
        extra: dict[str, object] = {} if changes is None else {"changes": changes}
        if event == TAMPERED:
            record = record or ctx.tampered or "a record"
            extra["record"] = record
        if event == events.COMPLETE:  # what the proofs show, one word a step (core/evidence.py)
            record, words = _evidence(ctx, claim.slug)
            extra["evidence"], extra["words"] = record, words
        fields = {"iterations": run.iterations, "reply": ctx.reply_key, "tokens": tokens}
        ctx.log(event, **fields, **_proven(ctx), **extra)
        judged = ctx.judgement
        open_count = len(judged.open_ids) if judged else ctx.scan.counts.open if ctx.scan else 0
        problem = "; ".join(changes) if changes else record or ctx.problem or ""
        host = ctx.env.get(RUN_HOST_ENV, "")  # set by `agentcfg run`: nobody is in the session
        shown = host if host.isascii() and host.isalpha() else ""
        line = note(event, claim.slug, open_count, ctx.caps, problem, shown)
        return Verdict("allow", line, self.name)

    @staticmethod
    def _silent(ctx: HookContext) -> bool:
        """Rung 0: nothing to do and nothing to record."""
        return (
            ctx.config.no_run_continuation
            or ctx.config.replay
            or ctx.event.is_subagent
            or ctx.event.interrupted
            or ctx.config.mode == "off"
        )


def _checkpoint(ctx: HookContext, slug: str, step: str) -> None:
    """Before the agent starts on a step: the workspace kept as a checkpoint, once per step.
    An explicit step of the fire, bounded and failing open (checkpoints.before_step); a fire
    that engages the step the last checkpoint was for reads one small file and nothing more."""
    found = state.read_json(ctx.ws.state / CHECKPOINTS / f"{slug}.json")
    if found is not None and found.get("step") == step:
        return
    from agentcfg import checkpoints  # rare: the step engaged changed

    checkpoints.before_step(ctx.ws, slug, step, ctx.key, ctx.now, ctx.env)


def _blocked(ctx: HookContext, count: int) -> int:
    """Blocked steps the run answers for: a fleet member's, only its leased step."""
    if ctx.member is None or ctx.roadmap is None:
        return count
    return sum(1 for s in ctx.roadmap.steps if s.id == ctx.member.step and s.blocked)


def _reopened(ctx: HookContext) -> tuple[str, ...]:
    """The open steps the last re-proof at the end failed (none for a fleet member, whose
    fleet re-proves its branch)."""
    if ctx.member is not None or ctx.roadmap is None or ctx.claim is None:
        return ()
    if not (ctx.ws.state / FINALS).is_dir():
        return ()  # no re-proof ever ran here: nothing more is read
    from agentcfg.contract import finals  # rare: loaded only where a re-proof ran

    return finals.reopened(ctx.ws, ctx.claim.slug, ctx.roadmap)


def _unfinal(ctx: HookContext) -> bool:
    """No final record covers the run's contract and the roadmap as they are: `complete` waits
    for `roadmap verify --final` (the hook runs no check itself: it reads one small file)."""
    from agentcfg.contract import finals  # rare: only the fire that would end a run reads it

    found, roadmap, claim = ctx.contract[0], ctx.roadmap, ctx.claim
    if found is None or roadmap is None or claim is None:
        return False  # no contract: its own rung halts the run
    return not finals.covers(finals.read_final(ctx.ws, claim.slug), found, roadmap)


def _halts_on_change(ctx: HookContext, handed: Handed) -> bool:
    """The contract changed and stays so after the gate's one refusal (or the gate handed on
    that it will not refuse it), or the run's contract record itself is missing, unreadable
    or edited."""
    found, _problem = ctx.contract
    if found is None:
        return True
    judged = ctx.judgement
    if judged is None or not judged.changes:
        return False
    if all(c.key in found.warned for c in judged.changes):
        return True
    return not handed.gate_holds_changes


def _changes(ctx: HookContext) -> list[str]:
    """What changed in the contract, each with how to undo it; or what is wrong with its record."""
    found, problem = ctx.contract
    if found is None and ctx.claim is not None:
        shown = contract.shown(ctx.ws, ctx.key, ctx.claim.slug)
        return [f"the run's contract record {shown} is {problem}"]
    judged = ctx.judgement
    return [c.describe() for c in judged.changes] if judged else []


def _refused_checks(ctx: HookContext, slug: str) -> tuple[str, ...]:
    """`step: files` for each step `roadmap done` refused because its check changed since a
    person trusted it (state/checks/<slug>.json); a fleet member answers for its own step."""
    found = state.read_json(ctx.ws.state / CHECKS / f"{slug}.json")
    steps = found.get("steps") if found is not None else None
    if not isinstance(steps, dict):
        return ()
    member = ctx.member
    told = []
    for step, refused in steps.items():
        files = refused.get("files") if isinstance(refused, dict) else None
        if member is not None and step != member.step:
            continue
        if isinstance(files, list):
            told.append(f"step {step}: {', '.join(str(f) for f in files)}")
    return tuple(told)


def _evidence(ctx: HookContext, slug: str) -> tuple[str, dict[str, int]]:
    """`3 steps, 2 red-green, 1 vacuous (1.2)`: the evidence of the contracted steps' proofs,
    and how many steps each word has."""
    from collections import Counter

    from agentcfg.contract.model import command_hash, matched, text_hash
    from agentcfg.core.evidence import summary, words_of

    found, _problem = ctx.contract
    roadmap = ctx.roadmap
    if roadmap is None:
        return "", {}
    steps = [s for _term, s in matched(found, roadmap) if s] if found else list(roadmap.steps)
    shown = [(s.name, s.id, text_hash(s.text), command_hash(s.verify)) for s in steps]
    graded = words_of(shown, contract.sealed_receipts(ctx.ws, slug)[0])
    return summary(graded), dict(Counter(word for _name, word in graded))


def _proven(ctx: HookContext) -> dict[str, int]:
    """The run's proven/contract counts, for the ledger; none without a contract."""
    judged = ctx.judgement
    return {} if judged is None else {"proven": judged.proven, "contract": judged.total}
