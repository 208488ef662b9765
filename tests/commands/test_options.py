"""Every option's value is typed: `--help` names what it takes (INTEGER, DURATION), and a
bad value is refused with one usage line, exit 2."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg.cli import cli
from agentcfg.commands import COUNT, DURATION
from tests.conftest import run_cli
from tests.helpers import subcommands


def options(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, click.Option]]:
    """Every option of the CLI, with the command it belongs to."""
    found = [(" ".join(path), p) for p in command.params if isinstance(p, click.Option)]
    if isinstance(command, click.Group):
        for name, sub in subcommands(command):
            found += options(sub, (*path, name))
    return found


def test_no_option_takes_its_number_or_duration_as_text() -> None:
    """A value a callback parses shows as TEXT in `--help`: the type parses it instead."""
    parsed = [f"{where} {o.opts[0]}" for where, o in options(cli) if o.callback and not o.is_eager]
    assert parsed == []
    typed = sorted(
        f"{where} {o.opts[0]}" for where, o in options(cli) if o.type in (COUNT, DURATION)
    )
    assert typed == [
        "report --since",
        "run --lease-ttl",
        "run --max-restarts",
        "run --max-wait",
        "sessions claim --lease-ttl",
        "sessions claim --max-iterations",
        "sessions claim --wall-clock",
    ]


@pytest.mark.parametrize("command", [("run",), ("sessions", "claim"), ("report",)], ids=" ".join)
def test_help_names_the_type_of_each_value(
    ws: Path, command: tuple[str, ...], snapshot: SnapshotAssertion
) -> None:
    result = run_cli(*command, "--help")
    assert result.exit_code == 0
    assert result.output == snapshot


@pytest.mark.parametrize(
    "args",
    [
        ("run", "demo", "--host", "claude", "--max-restarts", "0x"),
        ("run", "demo", "--host", "claude", "--max-restarts", "0"),
        ("run", "demo", "--host", "claude", "--max-restarts", "٣"),
        ("run", "demo", "--host", "claude", "--max-wait", "soon"),
        ("run", "demo", "--host", "claude", "--agents", "2", "--lease-ttl", "-5m"),
        ("sessions", "claim", "demo", "--max-iterations", "1" * 30),
        ("sessions", "claim", "demo", "--wall-clock", "0s"),
        ("report", "--since", "7 days"),
    ],
    ids=" ".join,
)
def test_a_bad_value_is_one_usage_error(
    ws: Path, args: tuple[str, ...], snapshot: SnapshotAssertion
) -> None:
    result = run_cli(*args)
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == snapshot


def test_good_values_arrive_as_numbers(ws: Path) -> None:
    assert COUNT.convert("12", None, None) == 12
    assert COUNT.convert(12, None, None) == 12  # a default given as a number
    assert DURATION.convert("1h30m", None, None) == 5400.0
    assert DURATION.convert(90.0, None, None) == 90.0


def test_run_help_names_every_host_it_can_run_from_the_registry(ws: Path) -> None:
    from agentcfg.hosts import registry
    from agentcfg.run import driver

    shown = " ".join(run_cli("run", "--help").output.split())
    able = driver.runnable_hosts()
    assert len(able) == 6
    assert f"--host HOST The host to run: {', '.join(able[:-1])} or {able[-1]}." in shown
    for name in set(registry.HOSTS) - set(able):
        assert name not in shown.split("[required]")[0]
