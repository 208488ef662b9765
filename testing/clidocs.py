"""docs/cli.md, the command reference: each command's `--help` as agentcfg prints it, walked
from the top group down. `make cli-docs` writes the file; tests/test_docs.py fails when it
differs from what the commands print, so an option added, renamed or dropped is seen there."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

WIDTH = 100  # the help is wrapped at this width, whatever the terminal
TARGET = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
HEAD = """# Command reference

Every command of `agentcfg` with its options, as `agentcfg ... --help` prints them. This file
is written by `make cli-docs` from the commands themselves, and the test suite fails when it
differs from them: change a command's options or help, then run `make cli-docs`. What each
command is for, with examples, is in the README.
"""


def helps(
    command: click.Command, path: tuple[str, ...], parent: click.Context | None = None
) -> Iterator[tuple[str, str]]:
    """(`agentcfg group command`, its --help) for the command and each one below it."""
    settings = {**command.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    ctx = click.Context(command, info_name=path[-1], parent=parent, **settings)
    yield " ".join(path), command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from helps(sub, (*path, name), ctx)


def reference() -> str:
    from agentcfg.cli import cli

    parts = [HEAD]
    for name, text in helps(cli, ("agentcfg",)):
        parts.append(f"## {name}\n\n```\n{text.rstrip()}\n```\n")
    return "\n".join(parts)


def main() -> int:
    TARGET.write_text(reference())
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
