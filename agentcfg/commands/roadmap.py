"""`agentcfg roadmap`: list, status, next and lint."""

from __future__ import annotations

import os
import shlex
import sys
from collections import Counter
from typing import Any

import click

from agentcfg import loading
from agentcfg.agents import agent_session, require_person
from agentcfg.commands import bar, clock, emit_json, json_option, now, say, workspace
from agentcfg.contract import audit, finals, reprove, verify
from agentcfg.contract.verify import VerifyResult
from agentcfg.core.evidence import baseline_line, baseline_total, summary
from agentcfg.core.lint import lint
from agentcfg.core.order import order_lines
from agentcfg.core.roadmap import Roadmap, Step
from agentcfg.core.texts import plural
from agentcfg.errors import RoadmapError
from agentcfg.fleet import steps as fleet
from agentcfg.fleet.membership import membership_path
from agentcfg.workspace import Workspace


@click.group()
def roadmap() -> None:
    """Read the roadmaps under roadmaps/."""


@roadmap.command("list")
@json_option
def list_command(as_json: bool) -> None:
    """Every roadmap with its mode and progress."""
    ws = workspace()
    rows = loading.summaries(ws)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        say(f"no roadmaps in {ws.roadmaps}")
        return
    width = max(len(row["slug"]) for row in rows)
    for row in rows:
        if "error" in row:
            say(f"{row['slug']:<{width}}  unreadable: {row['error']}")
            continue
        say(f"{row['slug']:<{width}}  {row['mode']:<17}  {_progress(row)}")


def _progress(counts: dict[str, Any]) -> str:
    total = counts["open"] + counts["blocked"] + counts["done"] + counts["deferred"]
    extra = [f"{counts[k]} {k}" for k in ("blocked", "deferred", "cancelled") if counts[k]]
    tail = f" ({', '.join(extra)})" if extra else ""
    return (
        f"{bar(counts['done'], total)} {counts['done']}/{total} done, {counts['open']} open{tail}"
    )


@roadmap.command("status")
@click.argument("slug")
@json_option
def status_command(slug: str, as_json: bool) -> None:
    """Per-phase progress, counts and the next step."""
    slug, parsed, data = _status(slug)
    if as_json:
        emit_json(data)
        return
    say(f"roadmap `{slug}` ({data['mode']})")
    phases = data["phases"]
    width = max((len(p["title"]) for p in phases), default=0)
    for phase in phases:
        say(f"  {phase['title'] or 'Steps':<{width}}  {_progress(phase)}")
    say(f"  {'Total':<{width}}  {_progress(data)}")
    for line in order_lines(parsed):
        say(line)
    say(_next_lines(data["next"], data["blocked"]))


def _status(slug: str) -> tuple[str, Roadmap, dict[str, Any]]:
    """The roadmap a slug names, its canonical slug and its status."""
    ws = workspace()
    slug = ws.canonical(slug)
    parsed = loading.load(ws, slug)
    return slug, parsed, loading.status(slug, parsed)


def _next_lines(step: dict[str, Any] | None, blocked: int) -> str:
    if step is None:
        return "next: nothing open" + (f" ({blocked} blocked-by)" if blocked else "")
    verify = step["verify"] or "(no verify line)"
    return f"next: **{step['label'] or step['id']}** {step['text']}\n  verify: {verify}"


@roadmap.command("next")
@click.argument("slug")
@json_option
def next_command(slug: str, as_json: bool) -> None:
    """The next open step and its verify line."""
    slug, _, data = _status(slug)
    if as_json:
        emit_json(data["next"])
        return
    step = data["next"]
    if step is None:
        blocked = data["blocked"]
        say(
            f"roadmap `{slug}` has no open step"
            + (f" ({blocked} blocked-by, waiting on others)" if blocked else ": it is complete")
        )
        return
    name = step["label"] or step["id"]
    say(f"Next step of `{slug}` (line {step['line']}): **{name}** {step['text']}")
    say(f"  verify: {step['verify']}" if step["verify"] else "  verify: (none given)")


@roadmap.command("lint")
@click.argument("slugs", nargs=-1)
@json_option
def lint_command(slugs: tuple[str, ...], as_json: bool) -> None:
    """Check roadmaps; errors exit 1, warnings exit 0."""
    ws = workspace()
    rows: list[dict[str, Any]] = []
    for slug in slugs or tuple(ws.slugs()):
        shown = f"roadmaps/{slug.removesuffix('.md')}.md"
        try:
            parsed = loading.load(ws, slug)
        except RoadmapError as exc:
            rows.append({"file": shown, "line": 0, "level": "error", "message": str(exc)})
            continue
        rows.extend(
            {"file": shown, "line": p.line, "level": p.level, "message": p.message}
            for p in lint(parsed)
        )
    if as_json:
        emit_json(rows)
    else:
        for row in rows:
            say(f"{row['file']}:{row['line']}: {row['level']}: {row['message']}")
        levels = Counter(row["level"] for row in rows)
        notes = f"{plural(levels['note'], 'note')}, " if levels["note"] else ""
        summary = f"{plural(levels['warning'], 'warning')}, {plural(levels['error'], 'error')}"
        say(notes + summary, err=True)
    if any(row["level"] == "error" for row in rows):
        raise SystemExit(1)


def _verify_line(result: VerifyResult) -> str:
    if result.exit_code is None:
        return f"FAIL {result.step} (timed out after {result.duration:.1f}s)"
    word = "PASS" if result.passed else "FAIL"
    shown = f"{word} {result.step} (exit {result.exit_code}, {result.duration:.1f}s)"
    return shown + (f", evidence: {result.evidence}" if result.evidence else "")


def _baseline_line(step: Step, result: VerifyResult) -> None:
    say(baseline_line(step.name, result.exit_code, result.duration))


def _streamed(step: Step) -> verify.Echo:
    say(f"-- {step.name}: {step.verify}")
    return lambda line: say(f"   | {line}")


@roadmap.command("verify")
@click.argument("slug")
@click.argument("steps", nargs=-1)
@click.option(
    "--baseline",
    is_flag=True,
    help="Run every open step's verify line once before the work, to grade its evidence.",
)
@click.option(
    "--final",
    is_flag=True,
    help="Re-prove every contracted step on the tree as it is (reopening any that fails) and "
    "record the final proof a run ends `complete` on.",
)
@json_option
def verify_command(
    slug: str, steps: tuple[str, ...], baseline: bool, final: bool, as_json: bool
) -> None:
    """Run verify lines: of the steps named, or of every open step that has one."""
    ws = workspace()
    slug = ws.canonical(slug)
    if final:
        if steps or baseline:
            raise click.UsageError("--final re-proves every contracted step: name none")
        found = reprove.reprove(
            ws, slug, os.environ, now=now(), changed=reprove.guarded(ws, slug, os.environ)
        )
        if as_json:
            emit_json(found.to_json())
        else:
            _show_reproof(found)
        if not found.ok:
            raise SystemExit(1)
        return
    if baseline:
        if steps:
            raise click.UsageError("--baseline runs every open step's verify line: name none")
        taken, untrusted = verify.take_baseline(
            ws, slug, os.environ, every=True,
            echo=(lambda step, result: None) if as_json else _baseline_line, clock=clock().now,
        )  # fmt: skip
        if as_json:
            emit_json([r.to_json() for r in taken])
        else:
            say(baseline_total(slug, [(r.exit_code, r.duration) for r in taken], untrusted))
        if untrusted:
            raise SystemExit(1)
        return
    echo = (lambda step: None) if as_json else _streamed
    results = verify.verify_steps(ws, slug, steps, os.environ, echo, clock().now)
    if as_json:
        emit_json([r.to_json() for r in results])
    elif not results:
        say(f"no open step of `{slug}` has a verify line")
    else:
        for result in results:
            say(_verify_line(result))
        failed = sum(not r.passed for r in results)
        say(f"{len(results) - failed} passed, {failed} failed")
    if any(not r.passed for r in results):
        raise SystemExit(1)


@roadmap.command("done")
@click.argument("slug")
@click.argument("step_query", metavar="STEP")
@click.option("--no-verify", is_flag=True, help="Mark the step without running its verify line.")
def done_command(slug: str, step_query: str, no_verify: bool) -> None:
    """Run a step's verify line and, when it passes, mark the step's box done."""
    ws = workspace()
    slug = ws.canonical(slug)
    # a fleet member closes its own leased step only, and no one a step another member leases
    step_id = verify.find_step(loading.load(ws, slug), step_query).id
    fleet.require_lease(ws, slug, step_id, os.environ, now())
    outcome = verify.done(ws, slug, step_query, os.environ, no_verify, clock().now)
    step, result = outcome.step, outcome.result
    if result is not None and not result.passed:
        say(f"verify line of step {step.name} failed: {step.verify}", err=True)
        for line in result.tail:
            say(f"   | {line}", err=True)
        say(_verify_line(result) + "; the box stays open", err=True)
        raise SystemExit(1)
    if result is not None:
        say(_verify_line(result))
    if outcome.already:
        say(f"step {step.name} was ticked already; its receipt is recorded now: it is proven")
        _final_after_last(ws, slug)
        return
    how = "its verify line passed"
    if no_verify:
        how = "without running its verify line (--no-verify)" + (
            "; it has none, so its receipt says so" if outcome.proven else "; it stays unproven"
        )
    say(f"marked step {step.name} done in roadmaps/{slug}.md: {how}")
    _final_after_last(ws, slug)


def _final_after_last(ws: Workspace, slug: str) -> None:
    """The `done` that closes a run's last open step re-proves every contracted step, as the run
    can end `complete` only on that proof (a fleet member's workspace leaves it to the fleet)."""
    member = membership_path(ws, slug).exists() or os.environ.get(fleet.MEMBER_ENV) == slug
    if member or not reprove.closed_out(ws, slug, now()):
        return
    say("that was the last open step: every contracted step is re-proven on the tree as it is")
    found = reprove.reprove(
        ws, slug, os.environ, now=now(), changed=reprove.guarded(ws, slug, os.environ)
    )
    _show_reproof(found)
    if not found.ok:
        raise SystemExit(1)


def _show_reproof(found: reprove.Reproof) -> None:
    say(f"{found.summary()} ({plural(found.commands, 'verify line')} run)")
    for step, why in found.failed:
        again = "; reopened" if step in found.reopened else ""
        say(f"  FAIL {step} ({why}){again}", err=True)
    if found.ok:
        say(f"the run's end is proven: {finals.shown(found.slug)}")
    else:
        say(
            f"the run's end is not proven: {plural(len(found.failed), 'step')} failed; close "
            f"{'them' if len(found.failed) > 1 else 'it'} again, then run "
            f"`agentcfg roadmap verify {found.slug} --final`",
            err=True,
        )


@roadmap.command("audit")
@click.argument("slug")
@click.option("--rerun", is_flag=True, help="Run the trusted verify lines of proven steps again.")
@json_option
def audit_command(slug: str, rerun: bool, as_json: bool) -> None:
    """Which ticked steps a receipt proves: proven, unproven, stale or open.

    Exits 0 only when every ticked contracted step is proven (and, with --rerun, its verify
    line still passes on the tree as it is) and no receipt or contract record fails its seal.
    """
    found = audit.audit(workspace(), slug, os.environ, rerun)
    if as_json:
        emit_json(found.to_json())
    else:
        _show_audit(found)
    if not found.ok:
        raise SystemExit(1)


def _show_audit(found: audit.Audit) -> None:
    counts = ", ".join(
        f"{sum(r.status == s for r in found.rows)} {s}"
        for s in ("proven", "unproven", "stale", "open")
    )
    scope = (
        "every step counts: no run contract is recorded"
        if not found.contracts
        else (f"{plural(sum(r.contracted for r in found.rows), 'contracted step')}")
    )
    say(f"audit of roadmap `{found.slug}`: {counts} ({scope})")
    graded = [(r.step.name, r.evidence) for r in found.rows if r.evidence is not None]
    if graded:
        say(f"evidence of the proven steps: {summary(graded)}")
    width = max((len(r.step.name) for r in found.rows), default=0)
    for row in found.rows:
        say(f"  {row.step.name:<{width}}  {row.status:<9} {_audit_note(row)}".rstrip())
    for record in found.tampered:
        say(f"  refused: {record} failed its seal: agentcfg did not write it so")
    if found.history:
        say(
            f"{plural(found.history, 'receipt')} read as the branch's history holds them: "
            "sealed with another person's key, which cannot be checked here; "
            f"`agentcfg roadmap audit {found.slug} --rerun` runs their checks again"
        )
    say("ok: every ticked contracted step is proven" if found.ok else "NOT OK: see the steps above")


def _audit_note(row: audit.Row) -> str:
    receipt = row.receipt or {}
    notes = []
    if row.refuted is not None:
        notes.append(f"failed the re-proof at the run's end ({row.refuted})")
    elif row.status == "unproven":
        notes.append("ticked without a receipt")
    elif row.elsewhere:
        notes.append("its receipt was taken on a commit outside this branch's history")
    elif row.status == "stale":
        notes.append("its receipt is for a verify line it no longer has")
    if row.evidence is not None:
        notes.append(f"evidence: {row.evidence}")
    if receipt:
        head = receipt.get("head")
        where = f"HEAD {head[:12]}" if isinstance(head, str) else "no git HEAD"
        dirty = " (dirty tree)" if receipt.get("dirty") else ""
        notes.append(f"receipt {receipt.get('at')}, {where}{dirty}")
    if row.rerun is not None:
        notes.append(
            "rerun: "
            + _verify_line(row.rerun).split(" ", 2)[0]
            + ("" if row.rerun.passed else " — it no longer passes")
        )
    if not row.contracted and row.step.mark == "done":
        notes.append("not contracted")
    return "; ".join(notes)


@roadmap.command("trust")
@click.argument("slug")
@click.option("--yes", is_flag=True, help="Do not ask on a terminal: trust and accept.")
@json_option
def trust_command(slug: str, yes: bool, as_json: bool) -> None:
    """Show a roadmap's verify lines and the changes to its runs' contract; trust the lines
    (per user, outside the repository) and accept the roadmap as the contract.

    `roadmap verify` and `roadmap done` run only verify lines trusted here, each for its own
    step; a line that changes or moves needs trusting again. Refused inside any agent's
    session (a host's variables in the shell, a host's process among this command's parents,
    or a live claim of the session the shell names), whatever --yes or --json say. Never
    allowlist this command for an agent.
    """
    ws = workspace()
    require_person("agentcfg roadmap trust", agent_session(os.environ, ws=ws))
    plan = verify.plan_trust(ws, slug, os.environ, now())
    asks = not yes and sys.stdin.isatty()  # --json on a terminal asks too, on stderr
    if not as_json or asks:
        _show_plan(plan, err=as_json)
    if asks and not click.confirm("Trust and accept?", err=as_json):
        raise RoadmapError(f"nothing trusted or accepted for `{plan.slug}`")
    store, runs = verify.trust_roadmap(ws, plan, os.environ, now())
    notify = verify.trust_notify(ws, os.environ, now())
    if as_json:
        emit_json({
            "slug": plan.slug, "store": str(store),
            "trusted": [{"step": s.name, "command": s.verify} for s in plan.steps],
            "notify": list(notify) or None, "accepted": plan.changes, "runs": runs,
            "checks": {step: list(files) for step, files in plan.checks.items()},
        })  # fmt: skip
        return
    if notify:
        say(f"notify command of agentcfg.yaml, run at each ending: {shlex.join(notify)}")
    say(f"trusted {plural(len(plan.steps), 'verify line')} of `{plan.slug}`; recorded in {store}")
    if runs:
        say(f"the contract of {plural(runs, 'run')} on `{plan.slug}` now starts from the roadmap")


def _show_plan(plan: verify.TrustPlan, err: bool = False) -> None:
    if not plan.steps:
        say(f"roadmap `{plan.slug}` has no verify lines to trust", err)
    else:
        say(
            f"verify lines of roadmap `{plan.slug}`, each run by `sh` from the workspace root:", err
        )
        for step in plan.steps:
            say(f"  {step.name}: {step.verify}", err)
    if plan.changes:
        say("changes to the contract since its runs began (accepting them makes them yours):", err)
        for change in plan.changes:
            say(f"  {change}", err)
    if plan.checks:
        say(
            "files the checks read, changed since they were trusted (trusting makes them yours):",
            err,
        )
        for name, files in plan.checks.items():
            say(f"  {name}: {', '.join(files)}", err)
