"""`agentcfg roadmap`: list, status, next and lint."""

from __future__ import annotations

import os
import shlex
from collections import Counter
from typing import Any

import click

from agentcfg import fleet, loading, verify
from agentcfg.commands import bar, emit_json, json_option, now, say, workspace
from agentcfg.core.lint import lint
from agentcfg.core.roadmap import Step
from agentcfg.core.texts import plural
from agentcfg.errors import RoadmapError
from agentcfg.membership import membership_path
from agentcfg.verify import VerifyResult


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
    ws = workspace()
    slug = ws.canonical(slug)
    data = loading.status(slug, loading.load(ws, slug))
    if as_json:
        emit_json(data)
        return
    say(f"roadmap `{slug}` ({data['mode']})")
    phases = data["phases"]
    width = max((len(p["title"]) for p in phases), default=0)
    for phase in phases:
        say(f"  {phase['title'] or 'Steps':<{width}}  {_progress(phase)}")
    say(f"  {'Total':<{width}}  {_progress(data)}")
    say(_next_lines(data["next"], data["blocked"]))


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
    ws = workspace()
    slug = ws.canonical(slug)
    data = loading.status(slug, loading.load(ws, slug))
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
    return f"{word} {result.step} (exit {result.exit_code}, {result.duration:.1f}s)"


def _verify_json(result: VerifyResult) -> dict[str, Any]:
    return {
        "step": result.step,
        "command": result.command,
        "exit_code": result.exit_code,
        "passed": result.passed,
        "timed_out": result.exit_code is None,
        "duration": round(result.duration, 3),
    }


def _streamed(step: Step) -> verify.Echo:
    say(f"-- {step.name}: {step.verify}")
    return lambda line: say(f"   | {line}")


@roadmap.command("verify")
@click.argument("slug")
@click.argument("steps", nargs=-1)
@json_option
def verify_command(slug: str, steps: tuple[str, ...], as_json: bool) -> None:
    """Run verify lines: of the steps named, or of every open step that has one."""
    ws = workspace()
    slug = ws.canonical(slug)
    echo = (lambda step: None) if as_json else _streamed
    results = verify.verify_steps(ws, slug, steps, os.environ, echo)
    if as_json:
        emit_json([_verify_json(r) for r in results])
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
    if membership_path(ws, slug).exists():  # a fleet member closes its own leased step only
        fleet.require_lease(ws, slug, verify.find_step(loading.load(ws, slug), step_query).id)
    outcome = verify.done(ws, slug, step_query, os.environ, no_verify)
    step, result = outcome.step, outcome.result
    if result is not None and not outcome.marked:
        say(f"verify line of step {step.name} failed: {step.verify}", err=True)
        for line in result.tail:
            say(f"   | {line}", err=True)
        say(_verify_line(result) + "; the box stays open", err=True)
        raise SystemExit(1)
    if result is not None:
        say(_verify_line(result))
    how = "without running its verify line (--no-verify)" if no_verify else "its verify line passed"
    say(f"marked step {step.name} done in roadmaps/{slug}.md: {how}")


@roadmap.command("trust")
@click.argument("slug")
@json_option
def trust_command(slug: str, as_json: bool) -> None:
    """Show a roadmap's verify lines and trust them to run (per user, outside the repository).

    `roadmap verify` and `roadmap done` run only verify lines trusted here; a line that
    changes needs trusting again. Never allowlist this command for an agent.
    """
    ws = workspace()
    slug, steps, store = verify.trust_roadmap(ws, slug, os.environ, now())
    notify = verify.trust_notify(ws, os.environ, now())
    if as_json:
        emit_json({
            "slug": slug, "store": str(store),
            "trusted": [{"step": s.name, "command": s.verify} for s in steps],
            "notify": list(notify) or None,
        })  # fmt: skip
        return
    if notify:
        say(f"notify command of agentcfg.yaml, run at each ending: {shlex.join(notify)}")
    if not steps:
        say(f"roadmap `{slug}` has no verify lines to trust")
        return
    say(f"verify lines of roadmap `{slug}`, each run by `sh` from the workspace root:")
    for step in steps:
        say(f"  {step.name}: {step.verify}")
    say(f"trusted {plural(len(steps), 'verify line')} of `{slug}`; recorded in {store}")
