"""Which open steps are ready to start, and what each of the others waits for. Pure.

The readiness itself is computed in core/roadmap.py, beside `scan`, which names the first
ready step as the next one; this module adds what fleets, lint and the commands tell of it.

A roadmap's order (`execution.fleet.order`) says what a step waits for:

- `steps` (the default): the step before it. A step tagged `[P]` runs beside the step
  before it, so a step and the `[P]` steps right after it form a group that waits for the
  group before it, all of it.
- `phases`: every step of the phases before its own; the steps of a phase run side by side.
- `free`: nothing.

A step with `needs:` waits for exactly the steps it names (ids or labels), whatever the order.
A step waits only for steps that are still open: done, deferred and cancelled ones hold
nothing back. The order passes over deferred, cancelled and blocked steps (a blocked step
waits for a person, and the next step is not held behind it); a `needs:` naming a blocked
step waits for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentcfg.core.roadmap import (
    Problem,
    Readiness,
    Roadmap,
    Step,
    first_ready,
    readiness,
    step_names,
    waits_of,
)

__all__ = [
    "Readiness", "first_ready", "order_lines", "problems", "readiness", "side_by_side",
    "waits_json", "waits_line",
]  # fmt: skip

SIDE_BY_SIDE_LIMIT = 500  # past this many open steps, a roadmap is not simulated step by step


def side_by_side(roadmap: Roadmap) -> bool:
    """Whether two steps can ever be ready at once, the open steps done in the order given.

    While only one step is ready at a time, the order the steps are done in is forced, so
    doing each in turn finds every moment the roadmap has."""
    workable = [step for step in roadmap.steps if step.is_open]
    if not any(step.needs or step.parallel for step in roadmap.steps):  # by the order alone
        if roadmap.order == "steps":  # a step done makes the next one ready, no more
            return len(readiness(roadmap).ready) > 1
        if roadmap.order == "phases":
            phases = [step.phase for step in workable]
            return len(phases) > len(set(phases))
        return len(workable) > 1
    if len(workable) > SIDE_BY_SIDE_LIMIT:
        return True
    current = roadmap
    while True:
        ready = readiness(current).ready
        if len(ready) > 1:
            return True
        if not ready:
            return False
        done = ready[0].id
        current = current._replace(
            steps=tuple(s._replace(mark="done") if s.id == done else s for s in current.steps)
        )


def problems(roadmap: Roadmap) -> list[Problem]:
    """`needs:` naming no step or the step itself, and steps that wait for each other (by
    `needs:` and the order together), whatever is done: none of those could ever start."""
    found: list[Problem] = []
    known = step_names(roadmap)
    for step in roadmap.steps:
        for name in step.needs:
            other = known.get(name.casefold())
            if other is None:
                found.append(Problem(step.line, "error", (
                    f"step `{step.name}` needs `{name}`, which names no step of this roadmap"
                )))  # fmt: skip
            elif other.id == step.id:
                found.append(Problem(step.line, "error", f"step `{step.name}` needs itself"))
    waits = waits_of(roadmap, lambda step: step.mark in ("open", "done"))
    for cycle in _cycles(roadmap.steps, waits):
        shown = ", ".join(f"`{step.name}`" for step in cycle[:8])
        more = f" and {len(cycle) - 8} more" if len(cycle) > 8 else ""
        found.append(Problem(cycle[0].line, "error", (
            f"steps {shown}{more} wait for each other (by `needs:` and the roadmap's order): "
            "none of them can start; change a `needs:` or mark a step `[P]`"
        )))  # fmt: skip
    return found


def waits_line(
    waiting: Iterable[tuple[Step, tuple[Step, ...]]],
    held: frozenset[str] = frozenset(),
    limit: int = 3,
) -> str:
    """`1.2 waits for 1.1 (in progress); 2.1 waits for 1.2, 1.3; and 2 more`."""
    waiting = list(waiting)
    parts = []
    for step, on in waiting[:limit]:
        shown = ", ".join(
            f"{other.name}{' (in progress)' if other.id in held else ''}" for other in on[:4]
        )
        more = f" and {len(on) - 4} more" if len(on) > 4 else ""
        parts.append(f"{step.name} waits for {shown}{more}")
    if len(waiting) > limit:
        parts.append(f"and {len(waiting) - limit} more")
    return "; ".join(parts)


def order_lines(roadmap: Roadmap, held: frozenset[str] = frozenset()) -> list[str]:
    """What `roadmap status` and `leases` show: the steps ready by the roadmap's order, and
    what the others wait for; nothing when no step is open."""
    found = readiness(roadmap)
    if not found.ready and not found.waiting:
        return []
    ready = ", ".join(
        f"{step.name}{' (in progress)' if step.id in held else ''}" for step in found.ready[:8]
    )
    more = f" and {len(found.ready) - 8} more" if len(found.ready) > 8 else ""
    lines = [f"  ready: {ready or 'none'}{more} (order: {roadmap.order})"]
    if found.waiting:
        lines.append(f"  waiting: {waits_line(found.waiting, held)}")
    return lines


def waits_json(waiting: Iterable[tuple[Step, tuple[Step, ...]]]) -> dict[str, list[str]]:
    """What each waiting step waits for, by id, as the ledger and `--json` keep it."""
    return {step.id: [other.id for other in on] for step, on in waiting}


def _cycles(steps: tuple[Step, ...], waits: dict[str, tuple[Step, ...]]) -> list[list[Step]]:
    """The strongly connected sets of more than one step in the waits-for graph (Tarjan's
    algorithm, without recursion: a roadmap may hold a great many steps), in roadmap order."""
    by_id = {step.id: step for step in steps}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[Step]] = []
    for root in by_id:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, edge = work.pop()
            if edge == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = [s.id for s in waits.get(node, ())]
            if edge < len(targets):
                work.append((node, edge + 1))
                target = targets[edge]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                members: list[str] = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    members.append(top)
                    if top == node:
                        break
                if len(members) > 1:
                    found.append(sorted((by_id[m] for m in members), key=lambda s: s.line))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(found, key=lambda cycle: cycle[0].line)
