"""An unexpected error in a command: one line on stderr naming the log that keeps its
traceback, and exit 3."""

from __future__ import annotations

import stat
from pathlib import Path

from click.testing import CliRunner
from syrupy.assertion import SnapshotAssertion

from agentcfg.cli import cli
from agentcfg.commands import Clock

CLAIM = ["sessions", "claim", "demo", "--session", "s1"]


def broken_clock() -> float:
    raise RuntimeError("the clock broke")


def test_an_unexpected_error_is_one_line_and_its_traceback_is_kept(
    ws: Path, tmp_path: Path, snapshot: SnapshotAssertion
) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "xdg")}
    result = CliRunner().invoke(cli, CLAIM, env=env, obj=Clock(now=broken_clock))
    assert result.exit_code == 3
    assert result.stderr.replace(str(tmp_path), "<tmp>") == snapshot
    log = tmp_path / "xdg" / "agentcfg" / "error.log"
    kept = log.read_text()
    assert "Traceback (most recent call last)" in kept
    assert "in broken_clock" in kept and kept.endswith("RuntimeError: the clock broke\n")
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    again = CliRunner().invoke(cli, CLAIM, env=env, obj=Clock(now=broken_clock))
    assert again.exit_code == 3 and log.read_text().count("Traceback") == 1  # the last one only


def test_a_log_that_cannot_be_written_still_leaves_the_one_line(ws: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    env = {"XDG_STATE_HOME": str(blocked)}
    result = CliRunner().invoke(cli, CLAIM, env=env, obj=Clock(now=broken_clock))
    assert result.exit_code == 3
    assert result.stderr == "agentcfg: unexpected error: RuntimeError: the clock broke\n"
