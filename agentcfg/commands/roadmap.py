"""`agentcfg roadmap`: list, status, next and lint."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import click

from agentcfg import loading, verify
from agentcfg.commands import bar, emit_json, json_option, workspace
from agentcfg.core.lint import lint
from agentcfg.core.roadmap import Step
from agentcfg.core.texts import plural
from agentcfg.errors import RoadmapError
from agentcfg.verify import VerifyResult
from agentcfg.workspace import normalise_slug


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
        click.echo(f"no roadmaps in {ws.roadmaps}")
        return
    width = max(len(row["slug"]) for row in rows)
    for row in rows:
        if "error" in row:
            click.echo(f"{row['slug']:<{width}}  unreadable: {row['error']}")
            continue
        click.echo(f"{row['slug']:<{width}}  {row['mode']:<17}  {_progress(row)}")


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
    slug = normalise_slug(slug)
    data = loading.status(slug, loading.load(workspace(), slug))
    if as_json:
        emit_json(data)
        return
    click.echo(f"roadmap `{slug}` ({data['mode']})")
    phases = data["phases"]
    width = max((len(p["title"]) for p in phases), default=0)
    for phase in phases:
        click.echo(f"  {phase['title'] or 'Steps':<{width}}  {_progress(phase)}")
    click.echo(f"  {'Total':<{width}}  {_progress(data)}")
    click.echo(_next_lines(data["next"], data["blocked"]))


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
    slug = normalise_slug(slug)
    data = loading.status(slug, loading.load(workspace(), slug))
    if as_json:
        emit_json(data["next"])
        return
    step = data["next"]
    if step is None:
        blocked = data["blocked"]
        click.echo(
            f"roadmap `{slug}` has no open step"
            + (f" ({blocked} blocked-by, waiting on others)" if blocked else ": it is complete")
        )
        return
    name = step["label"] or step["id"]
    click.echo(f"Next step of `{slug}` (line {step['line']}): **{name}** {step['text']}")
    click.echo(f"  verify: {step['verify']}" if step["verify"] else "  verify: (none given)")


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
            click.echo(f"{row['file']}:{row['line']}: {row['level']}: {row['message']}")
        levels = Counter(row["level"] for row in rows)
        notes = f"{plural(levels['note'], 'note')}, " if levels["note"] else ""
        summary = f"{plural(levels['warning'], 'warning')}, {plural(levels['error'], 'error')}"
        click.echo(notes + summary, err=True)
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
    click.echo(f"-- {step.name}: {step.verify}")
    return lambda line: click.echo(f"   | {line}")


@roadmap.command("verify")
@click.argument("slug")
@click.argument("steps", nargs=-1)
@json_option
def verify_command(slug: str, steps: tuple[str, ...], as_json: bool) -> None:
    """Run verify lines: of the steps named, or of every open step that has one."""
    slug = normalise_slug(slug)
    echo = (lambda step: None) if as_json else _streamed
    results = verify.verify_steps(workspace(), slug, steps, os.environ, echo)
    if as_json:
        emit_json([_verify_json(r) for r in results])
    elif not results:
        click.echo(f"no open step of `{slug}` has a verify line")
    else:
        for result in results:
            click.echo(_verify_line(result))
        failed = sum(not r.passed for r in results)
        click.echo(f"{len(results) - failed} passed, {failed} failed")
    if any(not r.passed for r in results):
        raise SystemExit(1)


@roadmap.command("done")
@click.argument("slug")
@click.argument("step_query", metavar="STEP")
@click.option("--no-verify", is_flag=True, help="Mark the step without running its verify line.")
def done_command(slug: str, step_query: str, no_verify: bool) -> None:
    """Run a step's verify line and, when it passes, mark the step's box done."""
    slug = normalise_slug(slug)
    outcome = verify.done(workspace(), slug, step_query, os.environ, no_verify)
    step, result = outcome.step, outcome.result
    if result is not None and not outcome.marked:
        click.echo(f"verify line of step {step.name} failed: {step.verify}", err=True)
        for line in result.tail:
            click.echo(f"   | {line}", err=True)
        click.echo(_verify_line(result) + "; the box stays open", err=True)
        raise SystemExit(1)
    if result is not None:
        click.echo(_verify_line(result))
    how = "without running its verify line (--no-verify)" if no_verify else "its verify line passed"
    click.echo(f"marked step {step.name} done in roadmaps/{slug}.md: {how}")
