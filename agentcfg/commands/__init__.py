"""Click commands: parse options, call one function, render its result as text or JSON."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from agentcfg.core.visible import visible
from agentcfg.workspace import Workspace, find_root


def workspace() -> Workspace:
    return find_root(os.getcwd(), os.environ)


@dataclass(frozen=True)
class Clock:
    """The time commands act at and how they wait: the system's, unless the CLI is invoked
    with another as its context object (`cli.main(obj=Clock(...))`, as tests pin the time)."""

    now: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep


def clock() -> Clock:
    context = click.get_current_context(silent=True)
    found = context.find_object(Clock) if context is not None else None
    return found if found is not None else Clock()


def now() -> float:
    return clock().now()


def say(text: str, err: bool = False) -> None:
    """Print a line for a person: roadmap text, verify lines and ledger fields reach the
    terminal with their control characters shown, never obeyed."""
    click.echo(visible(text), err=err)


def emit_json(data: Any) -> None:
    """JSON for a program; the same escapes keep a terminal safe and decode to the same value."""
    say(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False))


def duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """A click callback: seconds from a duration like 90s, 30m, 2h, 1h30m or 7d."""
    from agentcfg.core.times import parse_duration

    if value is None:
        return None
    seconds = parse_duration(value)
    if seconds is None:
        raise click.BadParameter(f"{value!r} is not a duration like 90s, 30m, 2h, 1h30m or 7d")
    return seconds


def count(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """A click callback: a whole number from 1 to a billion, in ASCII digits."""
    from agentcfg.config import INT_LIMIT, positive_int

    if value is None:
        return None
    number = positive_int(value)
    if number is None:
        raise click.BadParameter(f"{value[:20]!r} is not a whole number from 1 to {INT_LIMIT:,}")
    return number


json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def bar(done: int, total: int, width: int = 20) -> str:
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "-" * (width - filled) + "]"
