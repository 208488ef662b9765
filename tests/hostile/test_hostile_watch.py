"""`watch` against a hostile repository: roadmap and ledger text is shown, never obeyed or
parsed as markup, and the ledger is read within bounds whatever stands in its place."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from agentcfg import claims, state, watch
from agentcfg.workspace import Workspace
from tests.conftest import hook_env, run_cli, write_roadmap

T0 = 1_790_000_000.0
RAW = ("\x1b", "\x9b", "\u202e", "\x07")


def watch_once(root: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcfg", "watch", "--once"],
        capture_output=True,
        text=True,
        env={**hook_env(root), "COLUMNS": "120"},  # wide enough for the next step's column
        cwd=root,
        timeout=timeout,
        check=False,
    )


def test_roadmap_and_ledger_text_reach_the_terminal_shown_not_obeyed(ws: Path) -> None:
    write_roadmap(
        ws, "evil", "## Phase 1\n- [ ] **1.1** [/] \x1b]0;owned\x07 \x9b31m [bold red]x\n"
    )
    claim = claims.claim(Workspace(ws), "session-one", "evil", now=T0).claim
    event = state.event("\x1b[2J\u202eengage", T0 + 5, claim.key, "evil", tokens={"total": 3})
    state.append_ledger(ws / "state", event)
    result = run_cli("watch", "--once")
    assert result.exit_code == 0, result.output
    assert not any(raw in result.output for raw in RAW)
    shown = watch.frame(Workspace(ws), {}, T0 + 10, width=400)
    assert not any(raw in shown for raw in RAW)
    assert "1.1 [/] \\u001b]0;owned\\u0007 \\u009b31m" in shown  # as written, markup and all
    assert "\\u001b[2J\\u202eengage" in shown


def test_a_ledger_linked_to_dev_zero_is_not_read(ws: Path) -> None:
    claims.claim(Workspace(ws), "session-one", "demo", now=T0)
    ledger = ws / "state" / state.LEDGER_NAME
    ledger.unlink(missing_ok=True)
    ledger.symlink_to("/dev/zero")
    result = watch_once(ws)
    assert result.returncode == 0 and "1 claimed run" in result.stdout, result.stderr
    assert result.stderr == ""


def test_a_fifo_in_place_of_the_ledger_does_not_hang_it(ws: Path) -> None:
    claims.claim(Workspace(ws), "session-one", "demo", now=T0)
    ledger = ws / "state" / state.LEDGER_NAME
    ledger.unlink(missing_ok=True)
    os.mkfifo(ledger)
    result = watch_once(ws, timeout=20)
    assert result.returncode == 0 and "1 claimed run" in result.stdout, result.stderr


def test_a_huge_ledger_is_read_in_bounded_memory(ws: Path) -> None:
    """A 48 MiB line with no end, then ordinary events: the tail holds neither in memory."""
    ledger = ws / "state" / state.LEDGER_NAME
    state.ensure_dir(ws / "state")
    with ledger.open("wb") as handle:
        handle.write(b'{"event": "engage", "x": "' + b"a" * (48 * 1024 * 1024) + b'"}\n')
    for n in range(3):
        state.append_ledger(
            ws / "state", state.event("engage", T0 + n, "r", "demo", tokens={"total": 5})
        )
    tail = watch.LedgerTail(Workspace(ws))
    tracemalloc.start()
    try:
        tail.read()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB"
    assert tail.tokens[("r", "demo")] == 15  # the oversized line is passed over, not the rest


@pytest.mark.slow  # a scale test: a ledger of many runs
def test_a_ledger_of_many_runs_keeps_only_the_newest(ws: Path) -> None:
    state.ensure_dir(ws / "state")
    lines = b"".join(
        b'{"event": "engage", "at": "2026-09-21T14:13:30Z", "run": "r%d", "slug": "demo", '
        b'"tokens": {"total": 1}}\n' % n
        for n in range(30_000)
    )
    (ws / "state" / state.LEDGER_NAME).write_bytes(lines)
    tail = watch.LedgerTail(Workspace(ws))
    tail.read()
    assert len(tail.last) <= watch.RUNS_KEPT and len(tail.tokens) <= watch.RUNS_KEPT
    assert ("r29999", "demo") in tail.last  # the newest runs are the ones kept


def test_link_markup_and_escapes_in_step_text_are_shown_as_written(ws: Path) -> None:
    """`watch --once` as a person runs it: link markup and an OSC 8 hyperlink in a step's text
    come out as the characters written, never as a link or a style."""
    write_roadmap(
        ws, "evil", "## Phase 1\n- [ ] **1.1** [link=x]go[/link] \x1b]8;;y\x1b\\\n"
    )  # fmt: skip
    claims.claim(Workspace(ws), "session-one", "evil", now=T0)
    shown = watch_once(ws)
    assert shown.returncode == 0, shown.stderr
    assert not any(raw in shown.stdout for raw in RAW)
    for written in ("[link=x]", "go[/link]", "\\u001b]8;;y\\u001b\\"):  # wrapped in its cell
        assert written in shown.stdout, shown.stdout
