"""The texts an agent or a person reads: the continuation, the quality gate's refusals, and
the lines told to the person when a run hands back, pauses or halts. Pure."""

from __future__ import annotations

import re

from agentcfg.core import events
from agentcfg.core.ladder import Caps
from agentcfg.core.roadmap import DETAIL_LINES, Step, clip
from agentcfg.core.times import format_duration

UNPROVEN_NAMED = 3  # ticked but unproven steps named in one continuation


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def continuation(
    slug: str,
    open_count: int,
    blocked: int,
    step: Step | None,
    iteration: int,
    cap: int,
    unproven: tuple[Step, ...] = (),
    reopened: tuple[str, ...] = (),
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
    lines += (
        f"{s.name} is ticked but unproven: close it with `{close_command(slug, s)}`."
        for s in unproven[:UNPROVEN_NAMED]
    )
    if len(unproven) > UNPROVEN_NAMED:
        lines.append(f"(+{len(unproven) - UNPROVEN_NAMED} more ticked but unproven)")
    if reopened:
        shown = ", ".join(reopened[:UNPROVEN_NAMED])
        more = (
            f" (+{len(reopened) - UNPROVEN_NAMED} more)" if len(reopened) > UNPROVEN_NAMED else ""
        )
        lines.append(
            f"The re-proof at the run's end reopened {shown}{more}: "
            f"{'its verify line fails' if len(reopened) == 1 else 'their verify lines fail'} "
            "on the tree as it is. Close each again."
        )
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


def final_needed(slug: str, iteration: int, cap: int) -> str:
    """The continuation when every contracted step is closed but no final re-proof covers them."""
    command = " ".join(map(sh_quote, ["agentcfg", "roadmap", "verify", slug, "--final"]))
    return "\n".join(
        (
            f"run-continuation: every contracted step of roadmap `{slug}` is closed, but the run's "
            f"end is not proven yet — iteration {iteration}/{cap}.",
            f"Run `{command}`: it runs every contracted step's verify line again on the tree as "
            "it is, reopens any step that fails, and records the final proof the run ends on.",
            "Then close whatever it reopened, and end the turn.",
        )
    )


def close_command(slug: str, step: Step) -> str:
    """`agentcfg roadmap done` for this step, runnable in `sh` exactly as printed."""
    return _command("done", slug, step.name, *([] if step.verify else ["--no-verify"]))


def _command(verb: str, slug: str, step: str, *options: str) -> str:
    """An `agentcfg roadmap` command line for `sh`: quoted where needed, `--` before a dash."""
    guard = ["--"] if step.startswith("-") else []
    return " ".join(map(sh_quote, ["agentcfg", "roadmap", verb, *options, slug, *guard, step]))


def sh_quote(word: str) -> str:
    """`word` as one word for `sh`."""
    from shlex import quote  # loaded by the fires that name a command: under 1 % of one

    return quote(word)


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
    "contract-change": (
        "turn-end-gate: the contract of this autonomous run on roadmap `{slug}` changed: "
        "{changes}. Only a person changes the contract. Undo it now; if it is still so at "
        "the next turn end, the run halts and the person decides."
    ),
    "self-exit": (
        "turn-end-gate: step **{step}** of roadmap `{slug}` became {quote} during this "
        "autonomous run. Only a person narrows the contract: restore the step and work on it, "
        "or hand back and ask the person whether to drop it."
    ),
}


def refusal(detector: str, quote: str, slug: str = "", step: str = "", command: str = "") -> str:
    short = clip(quote, 120).replace("\n", " ")
    verify = _command("verify", slug, step)
    return REFUSALS[detector].format(
        quote=f'"{short}"', slug=slug, step=step, command=command, verify=verify, changes=quote
    )


def stopped(slug: str, by: str) -> str:
    """The one line an agent gets when a person has stopped its run (`agentcfg stop`)."""
    return (
        f"run-continuation: the person stopped the run on roadmap `{slug}` ({by}); stop working "
        f"on it and hand back. It carries on only after `agentcfg resume {slug}`."
    )


def claim_lost(reason: str) -> str:
    """What an agent gets at the turn end after its pending claim could not bind."""
    return (
        f"run-continuation: the claim this session made did not bind: {reason.rstrip('.')}. "
        "No run goes on for this session; do not work on the roadmap as if it did."
    )


def lease_lost(slug: str, step: str) -> str:
    """What a fleet member's agent gets when its step's lease expired and passed on."""
    return (
        f"run-continuation: the lease on step {step} of roadmap `{slug}` ran out and passed to "
        "another member of the fleet; stop working on that step and end the turn."
    )


# What the person reads, through the host's own channel, when a run hands back, pauses or
# halts: what stopped and how to go on. An event with no line here is not told.
NOTES = {
    events.COMPLETE: "agentcfg: roadmap `{slug}` complete: {problem}.",
    events.HANDBACK_QUESTION: (
        "agentcfg: roadmap `{slug}` waits for your answer ({open}); "
        "the run carries on after your reply."
    ),
    events.PAUSED: (
        'agentcfg: roadmap `{slug}` is paused, as you asked ({open}). Say "go on" to resume '
        "it, or have the agent claim it again for a fresh run: `agentcfg sessions claim {slug}`."
    ),
    events.HALT_MAX_ITERATIONS: (
        "agentcfg: roadmap `{slug}` stopped at its cap of {max_iterations} ({open}). "
        "To go on, have the agent claim it again: `agentcfg sessions claim {slug}` "
        "(`--max-iterations N` sets a larger cap)."
    ),
    events.HALT_TOKEN_BUDGET: (
        "agentcfg: roadmap `{slug}` stopped: it has spent its budget of {max_tokens} tokens "
        "({open}). To go on, have the agent claim it again: `agentcfg sessions claim {slug}` "
        "(`--max-tokens N` sets a larger budget)."
    ),
    events.HALT_WALL_CLOCK: (
        "agentcfg: roadmap `{slug}` stopped: its wall clock of {wall_clock} is spent ({open}). "
        "To go on, have the agent claim it again: `agentcfg sessions claim {slug}` "
        "(`--wall-clock 8h` sets a longer one)."
    ),
    events.HALT_STALL: (
        "agentcfg: roadmap `{slug}` stopped: the last {stall_window} continuations left its "
        "open steps as they were ({open}). See `agentcfg roadmap next {slug}`, then have the "
        "agent claim it again to go on: `agentcfg sessions claim {slug}`."
    ),
    events.HALT_ROADMAP_ABSENT: (
        "agentcfg: roadmap `{slug}` stopped: the claimed roadmap is gone or unreadable "
        "({problem}). Restore roadmaps/{slug}.md, then have the agent claim it again: "
        "`agentcfg sessions claim {slug}`."
    ),
    events.HALT_CONTRACT_CHANGED: (
        "agentcfg: roadmap `{slug}` stopped: its contract changed during the run ({open}): "
        "{problem}. Undo that, or accept it as yours with `agentcfg roadmap trust {slug}`; "
        "then have the agent claim it again: `agentcfg sessions claim {slug}`."
    ),
    events.HALT_CHECK_CHANGED: (
        "agentcfg: roadmap `{slug}` stopped: the check of a step changed since a person "
        "trusted it ({open}): {problem}. Undo that or keep it, then review the checks "
        "with `agentcfg roadmap trust {slug}`, and have the agent claim it again: "
        "`agentcfg sessions claim {slug}`."
    ),
    events.HALT_STATE_TAMPERED: (
        "agentcfg: roadmap `{slug}` stopped: {problem} failed its seal (agentcfg did not "
        "write it so). Remove it and verify again (`agentcfg roadmap verify {slug}`), then "
        "have the agent claim it again: `agentcfg sessions claim {slug}`."
    ),
    events.HALT_UNPROVEN: (
        "agentcfg: roadmap `{slug}` stopped: its steps are ticked but the re-proof at the end "
        "failed again ({problem}). See `agentcfg roadmap audit {slug}`, fix what fails, then "
        "run it again: `agentcfg roadmap verify {slug} --final`."
    ),
    events.HALT_STATE_UNREADABLE: (
        "agentcfg: roadmap `{slug}` stopped: this session's run state could not be read. "
        "Have the agent claim it again for a fresh run: `agentcfg sessions claim {slug}`."
    ),
}

STORE_OPEN = (
    "open — an agent that edits agentcfg's own store can forge its evidence; "
    "the final re-proof still runs every check"
)


def store_reach(title: str, sealed: bool, why: str) -> str:
    """Whether the host's sandbox keeps the agent from writing the person's own store (the key
    its records are sealed with): `sealed`, and what says so; or `open`, and what that means."""
    if not sealed:
        return STORE_OPEN
    return f"sealed — {title}'s sandbox keeps the agent out of agentcfg's own store ({why})"


# each change is named: more room than one error
PROBLEM_LIMIT = {
    events.HALT_CONTRACT_CHANGED: 600,
    events.HALT_CHECK_CHANGED: 600,
    events.HALT_STATE_TAMPERED: 300,
    events.COMPLETE: 400,  # each word's steps are named
}


# In an unattended run nobody is in the session to tell the agent anything: the line says
# what the person runs instead.
_AGAIN = re.compile(
    r"(?:[Hh]ave the agent claim it again(?: for a fresh run| to go on)?"
    r"|claim it again(?: to go on)?): `agentcfg sessions claim \{slug\}`"
)
_OPTION = re.compile(r"`--(max-iterations|max-tokens|wall-clock) [^`]+` sets")
_TO_GO_ON = re.compile(
    r"have the agent claim it again to go on: `agentcfg sessions claim \{slug\}`"
)


def note(
    event: str, slug: str, open_count: int, caps: Caps, problem: str = "", host: str = ""
) -> str:
    """The line the person reads for a ladder event; "" for an event that is not told.
    `host`: the run is `agentcfg run`'s on that host, and the line names that command."""
    template = NOTES.get(event)
    if template is None:
        return ""
    if host:
        again = f"run `agentcfg run {{slug}} --host {host}`"
        template = _TO_GO_ON.sub(f"{again} to go on", template)
        template = _OPTION.sub(
            lambda found: f"ladder.{found[1].replace('-', '_')} in agentcfg.yaml sets", template
        )
        template = _AGAIN.sub(
            lambda found: again[0].upper() + again[1:] if found[0][0] == "H" else again, template
        )
    return template.format(
        slug=slug,
        open=plural(open_count, "open step"),
        max_iterations=plural(caps.max_iterations, "iteration"),
        wall_clock=format_duration(caps.wall_clock),
        max_tokens=f"{caps.max_tokens:,}" if caps.max_tokens else "no",
        stall_window=caps.stall_window,
        problem=clip(problem or "it is not there", PROBLEM_LIMIT.get(event, 160)).replace(
            "\n", " "
        ),
    )
