"""`make bench`'s fleet section, on the simulated host (testing/simfleet.py): no model, no network.

A lease taken, renewed and given back, in the repository's own refs and on a `file://` remote;
one step integrated (merged, its verify line run again on the merged tree, its receipt, the
merge commit); and a fleet's wall time on 12 steps that may all run side by side, each a fixed
wait of the host's, for 1, 2 and 4 members, with leases in local refs and on a `file://` remote.
The fleet's own cost per step is each member's time less its host's work, summed, per step.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from agentcfg.contract.verify import done
from agentcfg.fleet import drive as fleet_run
from agentcfg.fleet.integrate import integrate
from agentcfg.fleet.leases import TTL, Store
from testing import simfleet

STEPS = 12
MEMBERS = (1, 2, 4)
STEP_SECONDS = float(os.environ.get("BENCH_FLEET_STEP", "10"))  # the host's work on one step
MODES = (("local refs", False), ("file:// remote", True))
SPEEDUP_GOAL = 3.0  # 4 members at least this much faster than one, with 10 s steps
OWN_COST_GOAL = 1.0  # seconds of the fleet's own time per step, 4 members, file:// remote


def lease_cases(folder: Path, runs: int) -> dict[str, dict[str, float]]:
    """Each lease operation's wall time, in process (git runs as it always does, as processes)."""
    results: dict[str, dict[str, float]] = {}
    for label, remote in MODES:
        root = folder / f"leases-{'remote' if remote else 'local'}"
        store = Store.open(root, simfleet.make_project(root, STEPS, os.environ, remote))
        samples: dict[str, list[float]] = {"take": [], "renew": [], "give back": []}
        for n in range(runs + 1):
            started = time.perf_counter()
            lease = store.take(simfleet.SLUG, "1.1", "bench", host="claude", now=time.time())
            taken = time.perf_counter()
            assert lease is not None
            assert store.renew(lease, now=time.time()) is not None
            renewed = time.perf_counter()
            assert store.release(simfleet.SLUG, "1.1", "bench", now=time.time())
            if n:  # the first round warms the caches
                samples["take"].append(taken - started)
                samples["renew"].append(renewed - taken)
                samples["give back"].append(time.perf_counter() - renewed)
        for op, times in samples.items():
            results[f"lease: {op}, {label}"] = spread(times)
    return results


def integrate_case(folder: Path, runs: int) -> dict[str, dict[str, float]]:
    """One member's closed step integrated into the fleet's branch, again and again from the
    same tip: merge, the step's verify line on the merged tree, its receipt, the merge commit."""
    root = folder / "integrate"
    simfleet.make_project(root, STEPS, os.environ, remote=False)
    plan = fleet_run.plan(root, simfleet.SLUG, "claude", None, None, TTL)
    (member,) = fleet_run.prepare_members(plan, 1, os.environ)
    (member.root / "s1.txt").write_text("1.1")
    assert done(member, simfleet.SLUG, "1.1", os.environ).marked
    simfleet.git(member.root, "add", "--all")
    simfleet.git(member.root, "commit", "-qm", "step 1.1")
    tip = simfleet.git(root, "rev-parse", "HEAD")
    samples = []
    for n in range(runs + 1):
        started = time.perf_counter()
        result = integrate(root, plan.branch(1), simfleet.SLUG, "1.1", os.environ, timeout=60)
        elapsed = time.perf_counter() - started
        assert result.outcome == "integrated", result
        simfleet.git(root, "reset", "-q", "--hard", tip)
        if n:
            samples.append(elapsed)
    return {"integrate one step (merge, re-verify, commit)": spread(samples)}


def spread(samples: list[float]) -> dict[str, float]:
    quartiles = statistics.quantiles(samples, n=4)
    return {
        "median_ms": statistics.median(samples) * 1000,
        "p25_ms": quartiles[0] * 1000,
        "p75_ms": quartiles[2] * 1000,
        "runs": len(samples),
    }


def fleet_runs(folder: Path, say: Any = print) -> list[dict[str, Any]]:
    """One fleet per member count and lease store, each on a project of its own."""
    rows = []
    for label, remote in MODES:
        for agents in MEMBERS:
            root = folder / f"fleet-{agents}-{'remote' if remote else 'local'}"
            coordinate = simfleet.make_project(root, STEPS, os.environ, remote)
            load = os.getloadavg()[0]
            cpu = os.times()
            outcome = simfleet.run(root, agents, STEP_SECONDS, os.environ, coordinate)
            after = os.times()
            if outcome.open_left or outcome.integrated != STEPS:
                raise SystemExit(
                    f"fleet of {agents} ({label}): {outcome.integrated} of {STEPS} steps "
                    f"integrated, {outcome.open_left} open; member exits "
                    f"{[m.code for m in outcome.members]}"
                )
            row = {
                "members": agents,
                "leases": label,
                "step_seconds": STEP_SECONDS,
                "wall_s": outcome.wall,
                "ideal_s": STEPS * STEP_SECONDS / agents,
                "own_per_step_s": outcome.own_per_step,
                "steps_per_member": [len(m.work) for m in outcome.members],
                # the members' and their git's CPU time: with 2 cores, where the fleet's own
                # work could be held back by a busy machine rather than by the fleet itself
                "cpu_s": (after.children_user + after.children_system)
                - (cpu.children_user + cpu.children_system),
                "load": load,  # the machine's, as the fleet starts: others' work slows it too
            }
            say(
                f"fleet of {agents}, {label}: {row['wall_s']:.1f} s wall "
                f"(work alone {row['ideal_s']:.1f} s), own {row['own_per_step_s']:.2f} s a step, "
                f"cpu {row['cpu_s']:.1f} s ({row['cpu_s'] / STEPS:.2f} s a step), "
                f"steps per member {row['steps_per_member']}, "
                f"load {load:.1f}"
            )
            rows.append(row)
    return rows


def checks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fleet's goals, each as the other goals of the bench are told."""
    by = {(r["members"], r["leases"]): r for r in rows}
    out = []
    for label, _ in MODES:
        speedup = by[(1, label)]["wall_s"] / by[(4, label)]["wall_s"]
        out.append(_check(f"fleet 4 / 1 members speed-up, {label}", speedup, ">=", SPEEDUP_GOAL,
                          "x"))  # fmt: skip
    own = by[(4, "file:// remote")]["own_per_step_s"]
    out.append(_check("fleet's own cost a step, 4 members, file:// remote", own, "<=",
                      OWN_COST_GOAL, " s"))  # fmt: skip
    if STEP_SECONDS != 10:
        for check in out:
            check["text"] += f" (steps of {STEP_SECONDS:g} s: the goals are set for 10 s)"
    return out


def _check(name: str, value: float, comparison: str, target: float, unit: str) -> dict[str, Any]:
    ok = value >= target if comparison == ">=" else value <= target
    return {
        "check": name,
        "value": value,
        "target": f"{comparison} {target}",
        "text": f"{name:<52} {value:>9.2f}{unit}   target {comparison} {target}{unit} "
        f"{'ok' if ok else 'MISSED'}",
    }


def section(folder: Path, runs: int) -> dict[str, Any]:
    """The whole fleet section, printed as it goes; what results.json keeps of it."""
    cases = {**lease_cases(folder, runs), **integrate_case(folder, runs)}
    print(f"\n{'fleet case':<52} {'median':>9} {'p25-p75':>15}")
    for name, r in cases.items():
        print(f"{name:<52} {r['median_ms']:>7.1f}ms {r['p25_ms']:>6.1f}-{r['p75_ms']:<6.1f}ms")
    print(f"\nfleets of 1, 2 and 4 on {STEPS} steps of {STEP_SECONDS:g} s (one run each, "
          f"{os.cpu_count()} cores; the load is the machine's as each starts):")  # fmt: skip
    rows = fleet_runs(folder)
    found = checks(rows)
    for check in found:
        print(check["text"])
    return {"cases": cases, "fleets": rows, "checks": found}


def git_version() -> str:
    return subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
