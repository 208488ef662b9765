"""Click commands: parse options, call one function, render its result as text or JSON."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import click

from agentcfg.workspace import Workspace, find_root


def workspace() -> Workspace:
    return find_root(os.getcwd(), os.environ)


def now() -> float:
    return time.time()


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def bar(done: int, total: int, width: int = 20) -> str:
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "-" * (width - filled) + "]"
