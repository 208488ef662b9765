"""The `agentcfg` command group; each subcommand lives in agentcfg/commands/."""

from __future__ import annotations

import json
from typing import Any

import click

from agentcfg import __version__
from agentcfg.core.visible import visible
from agentcfg.errors import AgentcfgError

READER_GONE = 141  # what a shell reports for a writer ended by SIGPIPE: 128 + 13


class Group(click.Group):
    """The one error path: an AgentcfgError is one line on stderr and its exit code (1, or 2
    for usage), Ctrl-C exits 130, and anything unexpected is one line naming the log that
    keeps its traceback, and exit 3. A command asked for `--json` also gets the error as a
    JSON object on stdout. A reader that closed the pipe early (`agentcfg report | head -1`)
    ends the command quietly, with exit 141."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:  # `--help` and `--version` print while the arguments are parsed
            return super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError:
            raise click.exceptions.Exit(quiet_stdout()) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return self._invoke(ctx)
        except BrokenPipeError:  # also from an error's own lines, written below
            raise click.exceptions.Exit(quiet_stdout()) from None

    def _invoke(self, ctx: click.Context) -> Any:
        as_json = "--json" in ctx.args  # read now: click empties it on the way down
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            raise
        except AgentcfgError as exc:
            if as_json:
                click.echo(json.dumps({**exc.to_json(), "exit_code": exc.exit_code}, indent=2))
            click.echo(visible(f"agentcfg: error: {exc}"), err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("agentcfg: interrupted", err=True)
            ctx.exit(130)
        except Exception as exc:
            kept = _keep_traceback(exc)
            where = f" (the traceback is in {kept})" if kept else ""
            click.echo(
                visible(f"agentcfg: unexpected error: {type(exc).__name__}: {exc}{where}"),
                err=True,
            )
            ctx.exit(3)


def quiet_stdout() -> int:
    """The reader of stdout is gone: what is left to write, the interpreter's last flush
    included, goes to the null device instead of failing again. The exit code to end with."""
    import os
    import sys

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, sys.stdout.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError):  # stdout is no file (a test runner's): nothing to point
        pass
    return READER_GONE


def _keep_traceback(exc: Exception) -> str | None:
    """Write the error's traceback to the person's error log, replacing the last one; its
    path, or None when it cannot be written (the one line still says what broke)."""
    import os
    import sys
    import traceback

    from agentcfg.paths import ERROR_LOG, user_state

    try:
        folder = user_state(os.environ)
        os.makedirs(folder, 0o700, exist_ok=True)
        path = os.path.join(folder, ERROR_LOG)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        with os.fdopen(os.open(path, flags, 0o600), "w", encoding="utf-8", errors="replace") as log:
            log.write(f"agentcfg {__version__}, Python {sys.version.split()[0]}\n")
            log.write(f"argv: {sys.argv!r}\n\n")
            log.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    except OSError:
        return None
    return path


# each command's module, imported when the command is asked for: a process that runs one
# command loads only what that one needs (`--help` and the command reference load them all)
COMMANDS = {
    "checkpoints": ("checkpoints", "checkpoints_command"),
    "doctor": ("doctor", "doctor"),
    "hook": ("hook", "hook"),
    "hooks": ("wiring", "hooks"),
    "leases": ("leases", "leases"),
    "report": ("report", "report"),
    "resume": ("controls", "resume"),
    "roadmap": ("roadmap", "roadmap"),
    "rollback": ("checkpoints", "rollback"),
    "run": ("run", "run"),
    "sessions": ("sessions", "sessions"),
    "stop": ("controls", "stop"),
    "watch": ("watch", "watch"),
}


class Commands(Group):
    """The top group: its commands are named in COMMANDS and each is imported on first ask."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, name = COMMANDS[cmd_name]
        command: click.Command = getattr(
            __import__(f"agentcfg.commands.{module}", fromlist=[name]), name
        )
        return command


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="agentcfg")
def cli() -> None:
    """Keep an AI coding agent working on the roadmap it claimed, until the work is done."""
