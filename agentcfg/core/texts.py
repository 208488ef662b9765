"""The texts an agent reads: the continuation and the quality gate's refusals. Pure."""

from __future__ import annotations

from agentcfg.core.roadmap import DETAIL_LINES, Step, clip


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def continuation(
    slug: str, open_count: int, blocked: int, step: Step | None, iteration: int, cap: int
) -> str:
    blocked_note = f" (+{blocked} blocked-by, not yours this run)" if blocked else ""
    lines = [
        f"run-continuation: roadmap `{slug}` has {plural(open_count, 'open step')}{blocked_note}"
        f" — iteration {iteration}/{cap}."
    ]
    if step is not None:
        lead = "Resume step" if step.started else "Next step"
        tags = "".join(f" {tag}" for tag in step.tags)
        lines.append(f"{lead}: **{step.name}**{tags} {clip(step.text)}".rstrip())
        lines[-1] += f"   (roadmaps/{slug}.md:{step.line})"
        lines += (f"  {line}" for line in step.detail[:DETAIL_LINES])
    if step is not None and step.verify:
        lines.append(f"  verify: {step.verify}")
    lines.append(
        "Do this step now, and end the turn once it is closed. "
        "Hand back instead only for a decision the roadmap reserves for a person."
    )
    command = close_command(slug, step) if step else f"agentcfg roadmap done {slug} <step>"
    lines.append(
        f"Close the step with `{command}`: "
        + (
            "it runs the verify line and marks the box only when it passes."
            if step is not None and step.verify
            else "this step has no verify line, so nothing runs before its box is ticked."
        )
    )
    return "\n".join(lines)


def close_command(slug: str, step: Step) -> str:
    """`agentcfg roadmap done` for this step, runnable in `sh` exactly as printed."""
    return _command("done", slug, step.name, *([] if step.verify else ["--no-verify"]))


def _command(verb: str, slug: str, step: str, *options: str) -> str:
    """An `agentcfg roadmap` command line for `sh`: quoted where needed, `--` before a dash."""
    import shlex

    guard = ["--"] if step.startswith("-") else []
    return shlex.join(["agentcfg", "roadmap", verb, *options, slug, *guard, step])


REFUSALS = {
    "promissory-closing": (
        "turn-end-gate: your last message promises work ({quote}) but the turn is ending "
        "without it. Do that work now, or say plainly that it is not going to happen and why."
    ),
    "unverified-completion": (
        "turn-end-gate: your last message claims the work is done or passing ({quote}), "
        "but no command ran in this turn. Run the check that proves it, then end the turn "
        "with what it printed."
    ),
    "deference": (
        "turn-end-gate: you asked for permission ({quote}), but this session runs roadmap "
        "`{slug}` autonomously: the contract already answers that question. Carry on with the "
        "next open step; hand back only for a decision the roadmap reserves for a person."
    ),
    "unproven-step": (
        "turn-end-gate: step **{step}** of roadmap `{slug}` was marked done this turn, but its "
        "verify line has not passed since. Run `{verify}` (or "
        "`{command}`) and keep the box only if it passes."
    ),
}


def refusal(detector: str, quote: str, slug: str = "", step: str = "", command: str = "") -> str:
    short = clip(quote, 120).replace("\n", " ")
    verify = _command("verify", slug, step)
    return REFUSALS[detector].format(
        quote=f'"{short}"', slug=slug, step=step, command=command, verify=verify
    )


def stopped(slug: str, by: str) -> str:
    """The one line an agent gets when a person has stopped its run (`agentcfg stop`)."""
    return (
        f"run-continuation: the person stopped the run on roadmap `{slug}` ({by}); stop working "
        f"on it and hand back. It carries on only after `agentcfg resume {slug}`."
    )
