"""What a person reads about checkpoints and rollbacks: the listing, the question a rollback
asks first, and what it did. Pure: values in, lines out."""

from __future__ import annotations

from agentcfg.core.texts import plural
from agentcfg.core.times import iso

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# one checkpoint as the listing shows it: step, n, taken at, files changed since (None: unknown)
Row = tuple[str, int, float, "int | None"]


def listing(slug: str, rows: Sequence[Row]) -> list[str]:
    """`agentcfg checkpoints <slug>`: one line a checkpoint, oldest first."""
    if not rows:
        return [
            f"roadmap `{slug}` has no checkpoints: one is taken before each step's work, "
            "in a git repository"
        ]
    lines = [f"checkpoints of roadmap `{slug}` (the workspace before each step's work):"]
    width = max(len(step) for step, *_ in rows)
    for step, n, at, changed in rows:
        since = "changes unknown" if changed is None else f"{plural(changed, 'file')} changed since"
        lines.append(f"  step {step:<{width}}  #{n}  {iso(at)}  {since}")
    lines.append(f"roll back to one with `agentcfg rollback {slug} <step>`")
    return lines


def plan(
    slug: str, step: str, ref: str, at: float, changed: int | None, holders: Sequence[str] = ()
) -> list[str]:
    """What `agentcfg rollback` is about to do, shown before it asks; `holders`: the sessions
    whose claims hold the roadmap (an agent may still be at work in the tree)."""
    since = "" if changed is None else f"; {plural(changed, 'file')} changed since"
    lines = [
        f"roll roadmap `{slug}` back to before step {step}: {ref}, taken {iso(at)}{since}",
        "  the branch and the working tree go back to it (ignored files stay as they are);",
        "  what is there now is kept first under refs/agentcfg/attempts/, and the steps closed "
        "since open again",
    ]
    if holders:
        lines.append(
            f"  claimed by session {', '.join(holders)}: if an agent still works there, "
            f"`agentcfg stop {slug}` first"
        )
    return lines


def rolled_back(slug: str, step: str, ref: str, attempt: str, reopened: Sequence[str]) -> list[str]:
    """What a rollback did, and where the state it left is kept."""
    lines = [
        f"rolled roadmap `{slug}` back to before step {step} ({ref})",
        f"  what was there is kept at {attempt} (`git checkout {attempt} -- .` brings its files back)",
    ]
    if reopened:
        lines.append(f"  open again, their receipts no longer counting: {', '.join(reopened)}")
    return lines
