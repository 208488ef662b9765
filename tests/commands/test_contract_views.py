"""Where the person sees the contract: report (text, --json, --html), watch and the notifier
show proven/contract per run and every halt-contract-changed."""

from __future__ import annotations

import json
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import notify, state, watch
from agentcfg.workspace import Workspace
from testing.simhost import SimulatedHost
from tests import inprocess
from tests.conftest import run_cli, write_roadmap

BODY = """## Phase 1
- [ ] **1.1** Write the parser <!-- verify: true -->
- [ ] **1.2** Write the ladder <!-- verify: echo ladder -->
- [ ] **1.3** Write the report <!-- verify: echo report -->
"""
CHANGE = "step 1.3 was removed or moved out of every phase (put it back)"


@pytest.fixture
def halted(ws: Path, monkeypatch: pytest.MonkeyPatch) -> SimulatedHost:
    """A run that proved 1.1, then lost 1.3 to the agent and halted."""
    roadmap = write_roadmap(ws, "c", BODY)
    host = SimulatedHost(ws, run=inprocess.run)
    monkeypatch.setenv("XDG_STATE_HOME", host.env["XDG_STATE_HOME"])  # the person's, as the host's
    assert host.trust("c").returncode == 0
    host.human("Work through roadmap c.")
    assert host.claim("c").returncode == 0
    host.reply("Starting.")
    assert host.fire().blocked
    assert host.agentcfg("roadmap", "done", "c", "1.1").returncode == 0
    roadmap.write_text(roadmap.read_text().replace("- [ ] **1.3** Write the report", "- gone"))
    for n in range(2):
        host.reply(f"Moving on ({n}).")
        host.fire()
    return host


def test_report_shows_proven_of_contract_and_every_contract_halt(
    halted: SimulatedHost, ws: Path, snapshot: SnapshotAssertion
) -> None:
    data = json.loads(run_cli("report", "--json").output)
    (row,) = data["rows"]
    assert (row["proven"], row["contract"], row["outcome"]) == (1, 3, "halt-contract-changed")
    (halt,) = data["contract_changed"]
    assert (halt["slug"], halt["changes"]) == ("c", [CHANGE])
    text = run_cli("report").output
    masked = re.sub(r"\b[0-9a-f]{8}\b", "<run>", text)
    masked = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\dZ)?", "<time>", masked)
    masked = re.sub(r" +\d+s +", " <wall> ", masked)
    assert masked == snapshot


def test_the_html_page_shows_them_too(halted: SimulatedHost, ws: Path) -> None:
    page = ws / "report.html"
    assert run_cli("report", "--html", str(page)).exit_code == 0
    tree = ET.parse(page)
    ns = {"h": "http://www.w3.org/1999/xhtml"}
    proven = tree.find(".//h:dd[@class='proven']", ns)
    assert proven is not None and proven.text == "1 of 3"
    section = tree.find(".//h:section[@class='contract-changed']", ns)
    assert section is not None
    assert CHANGE in "".join(section.itertext())


def test_watch_shows_proven_of_contract(halted: SimulatedHost, ws: Path) -> None:
    frame = watch.frame(Workspace(ws), {}, time.time(), width=200)
    assert "proven 1/3" in frame
    assert "halted: halt-contract-changed" in frame


def test_the_notifier_names_the_changes_and_the_command_that_accepts_them() -> None:
    record = state.event(
        "halt-contract-changed", 0.0, "k" * 32, "c", iterations=2, proven=1, contract=3,
        changes=[CHANGE],
    )  # fmt: skip
    assert notify.message(record) == (
        "agentcfg: roadmap `c`: halted: contract-changed (2 iterations, 1/3 contracted steps "
        f"proven): {CHANGE}; accept with `agentcfg roadmap trust c`, or undo it"
    )
    complete = state.event("complete", 0.0, "k" * 32, "c", iterations=4, proven=3, contract=3)
    assert notify.message(complete) == (
        "agentcfg: roadmap `c`: complete (4 iterations, 3/3 contracted steps proven)"
    )
