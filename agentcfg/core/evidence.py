"""Evidence: what a receipt shows about the agent's work, one word each.

- `red-green`: the check failed at the baseline (before the work) and passes now;
- `vacuous`: it already passed at the baseline: the proof shows nothing about this step's work;
- `agent-check`: the check runs files the agent wrote (named by the command, absent at trust);
- `unknown`: no baseline of this check was taken.

Pure: the baseline's exit code and what the check runs in; the word and the summary out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

WORDS = ("red-green", "vacuous", "agent-check", "unknown")
NAMED = 8  # steps named after a weaker word, at most
EXPLAINED = {  # what a person reads about each word
    "red-green": "it failed before the work and passes now",
    "vacuous": "it passed before the work began",
    "agent-check": "it runs files the agent wrote",
    "unknown": "no baseline was taken before the work",
}


def grade(before: int | None, baselined: bool, agent_wrote: bool) -> str:
    """The word for a passing check: `before` is its exit code at the baseline (None: it ran
    out of time there, a failure too)."""
    if agent_wrote:
        return "agent-check"
    if not baselined:
        return "unknown"
    return "vacuous" if before == 0 else "red-green"


def words_of(
    steps: Sequence[tuple[str, str, str, str | None]], receipts: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str]]:
    """(step name, word) for each (name, id, text sha256, verify sha256 or None) step: the
    evidence of its newest passing receipt, `unknown` when that carries none."""
    newest: dict[tuple[object, object, object], str] = {}
    for item in receipts:  # oldest first: a later pass replaces an earlier one
        if item.get("exit_code") == 0 or item.get("command") is None:
            word = item.get("evidence")
            key = (item.get("step"), item.get("text"), item.get("command"))
            newest[key] = word if isinstance(word, str) and word in WORDS else "unknown"
    return [
        (name, newest.get((sid, text, command), "unknown")) for name, sid, text, command in steps
    ]


def summary(graded: Sequence[tuple[str, str]]) -> str:
    """`3 steps, 2 red-green, 1 vacuous (1.2)` for (step name, word) pairs: each word counted,
    the steps of every word weaker than red-green named."""
    parts = [f"{len(graded)} step" + ("" if len(graded) == 1 else "s")]
    for word in WORDS:
        names = [name for name, found in graded if found == word]
        if not names:
            continue
        shown = f"{len(names)} {word}"
        if word != "red-green":
            more = ", ..." if len(names) > NAMED else ""
            shown += f" ({', '.join(names[:NAMED])}{more})"
        parts.append(shown)
    return ", ".join(parts)


def baseline_line(step: str, exit_code: int | None, seconds: float) -> str:
    """One progress line of a baseline: what a step's check did before the work."""
    if exit_code is None:
        return f"baseline {step}: fails (timed out after {seconds:.1f}s)"
    word = "passes already" if exit_code == 0 else "fails"
    return f"baseline {step}: {word} (exit {exit_code}, {seconds:.1f}s)"


def baseline_total(
    slug: str, ran: Sequence[tuple[int | None, float]], untrusted: Sequence[str] = ()
) -> str:
    """The baseline's last line: how many checks, how long, how many failed before the work,
    and the steps whose verify line no person trusted (not run: their evidence is unknown)."""
    passing = sum(code == 0 for code, _ in ran)
    seconds = sum(duration for _, duration in ran)
    checks = f"{len(ran)} check" + ("" if len(ran) == 1 else "s")
    line = (
        f"baseline of `{slug}`: {checks} in {seconds:.1f}s, {len(ran) - passing} failing "
        f"and {passing} passing before the work"
    )
    if untrusted:
        shown = ", ".join(untrusted[:NAMED]) + (", ..." if len(untrusted) > NAMED else "")
        line += (
            f"; not run, no person trusted their verify line: {shown} "
            f"(`agentcfg roadmap trust {slug}`)"
        )
    return line
