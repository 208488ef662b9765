"""turn-end-gate: refuse, once per turn, a turn end that looks unfinished."""

from __future__ import annotations

from agentcfg import phrases, state
from agentcfg.continuation import refusal
from agentcfg.hosts.base import ALLOW, Verdict
from agentcfg.stop import HookContext


class TurnEndGate:
    name = "turn-end-gate"

    def check(self, ctx: HookContext) -> Verdict:
        if ctx.event.is_subagent or not ctx.turn:
            return ALLOW
        if ctx.config.gate_scope == "claimed" and not ctx.autonomous:
            return ALLOW
        marker = state.read_json(ctx.refusal_path())
        if marker is not None and marker.get("refused_turn") == ctx.turn:
            return ALLOW  # at most one refusal per turn
        found = self._detect(ctx)
        if found is None:
            return ALLOW
        detector, quote = found
        record = {
            "refused_turn": ctx.turn,
            "refused_reply": ctx.reply_key,
            "detector": detector,
            "refused_at": state.iso(ctx.now),
            "counts": _counts(ctx),
        }
        try:
            state.write_json(ctx.refusal_path(), record)
        except OSError:
            return ALLOW  # a refusal that cannot be remembered could repeat: let the turn end
        ctx.log("refused", detector=detector, quote=quote[:240])
        slug = ctx.claim.slug if ctx.claim else ""
        return Verdict("block", refusal(detector, quote, slug=slug), self.name)

    def _detect(self, ctx: HookContext) -> tuple[str, str] | None:
        message, enabled = ctx.final_message, ctx.config.detectors
        if not message.strip():
            return None
        if "deference" in enabled and ctx.autonomous:
            quote = phrases.deference(message)
            if quote:
                return "deference", quote
        if "promissory-closing" in enabled:
            quote = phrases.promise(message)
            if quote:
                return "promissory-closing", quote
        if "unverified-completion" in enabled:
            quote = phrases.completion(message)
            if quote and ctx.transcript.tools_ran is False:
                return "unverified-completion", quote
        return None


def _counts(ctx: HookContext) -> dict[str, int] | None:
    if ctx.scan is None:
        return None
    counts = ctx.scan.counts
    return {"open": counts.open, "blocked": counts.blocked, "done": counts.done}
