"""Click commands: parse options, call one function, render its result as text or JSON."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from agentcfg.core.times import wall_clock
from agentcfg.core.visible import visible
from agentcfg.workspace import Workspace, find_root


def workspace() -> Workspace:
    return find_root(os.getcwd(), os.environ)


@dataclass(frozen=True)
class Clock:
    """The time commands act at and how they wait: the system's, unless the CLI is invoked
    with another as its context object (`cli.main(obj=Clock(...))`, as tests pin the time)."""

    now: Callable[[], float] = wall_clock
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


class Duration(click.ParamType):  # type: ignore[type-arg]  # generic in later click
    """Seconds from a duration like 90s, 30m, 2h, 1h30m or 7d."""

    name = "duration"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "DURATION"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        from agentcfg.core.times import parse_duration

        seconds = parse_duration(value)
        if seconds is None:
            self.fail(f"{value!r} is not a duration like 90s, 30m, 2h, 1h30m or 7d", param, ctx)
        return seconds


class Count(click.ParamType):  # type: ignore[type-arg]  # generic in later click
    """A whole number from 1 to a billion, in ASCII digits."""

    name = "integer"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "INTEGER"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        from agentcfg.config import INT_LIMIT, positive_int

        number = positive_int(value)
        if number is None:
            shown = value[:20] if isinstance(value, str) else value
            self.fail(f"{shown!r} is not a whole number from 1 to {INT_LIMIT:,}", param, ctx)
        return number


DURATION = Duration()
COUNT = Count()


json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def bar(done: int, total: int, width: int = 20) -> str:
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "-" * (width - filled) + "]"
