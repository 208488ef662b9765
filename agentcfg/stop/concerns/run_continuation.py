"""run-continuation: while contracted work remains, block the stop with the next step."""

from __future__ import annotations

from pathlib import Path

from agentcfg import claims, controls, state
from agentcfg.claims import Claim
from agentcfg.core import phrases
from agentcfg.core.ladder import Fire, RunState, decide
from agentcfg.core.roadmap import Scan
from agentcfg.core.texts import continuation, stopped
from agentcfg.errors import StateError
from agentcfg.stop.context import HookContext
from agentcfg.stop.dispatch import ALLOW, Verdict


class RunContinuation:
    name = "run-continuation"

    def check(self, ctx: HookContext) -> Verdict:
        claim, scanned = ctx.claim, ctx.scan
        if self._silent(ctx) or claim is None or scanned is None:
            return ALLOW
        if ctx.stop is not None:  # a person stopped the run: before any rung of the ladder
            return self._stopped(ctx, ctx.stop)
        counts = scanned.counts
        fire = Fire(
            turn=ctx.turn,
            reply=ctx.reply_key,
            open=counts.open,
            blocked=counts.blocked,
            now=ctx.now,
            deferred=self._deferred(ctx),
            question=phrases.question(ctx.final_message) is not None,
            background=ctx.event.background_tasks > 0,
            shadow=ctx.config.mode == "shadow",
        )
        path = claims.run_path(ctx.ws, ctx.key, claim.slug)
        try:
            with state.locked(path.with_suffix(".lock")):
                return self._step(ctx, fire, path, claim, scanned)
        except (StateError, OSError) as exc:
            ctx.log("error", reason=f"run state: {exc}")
            return ALLOW

    def _step(
        self, ctx: HookContext, fire: Fire, path: Path, claim: Claim, scanned: Scan
    ) -> Verdict:
        run = RunState.fresh(ctx.now)
        if path.exists() or path.is_symlink():
            data = state.read_json(path)
            found = RunState.from_json(data) if data is not None else None
            if found is None:
                ctx.log("error", reason="run state is unreadable; re-claim to start a fresh run")
                return ALLOW
            run = found
        decision = decide(run, fire, ctx.caps)
        if decision.changed:
            if decision.state is None:
                state.remove(path)
            else:
                state.write_json(path, decision.state.to_json())  # OSError: allow, above
        after = decision.state or run
        if decision.cut_short:
            ctx.log("cut-short", iterations=run.iterations, reply=run.last_reply)
        if decision.event is not None:
            extra: dict[str, object] = {}
            if decision.event == "engage" and scanned.next:
                extra = {"step": scanned.next.id}
            ctx.log(decision.event, iterations=after.iterations, reply=ctx.reply_key, **extra)
        if not decision.block:
            return ALLOW
        counts = scanned.counts
        text = continuation(
            claim.slug, counts.open, counts.blocked, scanned.next, after.iterations,
            ctx.caps.max_iterations,
        )  # fmt: skip
        return Verdict("block", text, self.name)

    def _stopped(self, ctx: HookContext, found: controls.Stop) -> Verdict:
        """Allow, and tell the agent once per session that the person stopped the run."""
        try:
            first = controls.tell(ctx.ws, found, ctx.key)
        except (StateError, OSError):
            first = True  # telling twice beats never telling
        if not first:
            return ALLOW
        ctx.log("stopped", by=found.by, reply=ctx.reply_key)
        return Verdict("warn", stopped(found.slug, found.by), self.name)

    @staticmethod
    def _silent(ctx: HookContext) -> bool:
        """Rung 0: nothing to do and nothing to record."""
        return (
            ctx.env.get("AGENTCFG_NO_RUN_CONTINUATION") == "1"
            or ctx.env.get("AGENTCFG_REPLAY") == "1"
            or ctx.event.is_subagent
            or ctx.event.interrupted
            or ctx.config.mode == "off"
            or not ctx.autonomous
        )

    @staticmethod
    def _deferred(ctx: HookContext) -> bool:
        marker = state.read_json(ctx.refusal_path())
        return (
            marker is not None
            and marker.get("refused_turn") == ctx.turn
            and marker.get("refused_reply") == ctx.reply_key
        )
