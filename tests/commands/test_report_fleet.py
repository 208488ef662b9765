"""`agentcfg report` shows a fleet: steps per member, integrations, reopened steps, takeovers,
and who holds which step as the ledger ends."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

from syrupy.assertion import SnapshotAssertion

from tests.conftest import run_cli

EVENTS = [
    ("leased", {"step": "1.1", "member": 1}),
    ("leased", {"step": "1.2", "member": 2}),
    ("leased", {"step": "1.3", "member": 3}),
    ("integrated", {"step": "1.1", "member": 1}),
    ("lease-expired", {"step": "1.3", "member": 1}),
    ("leased", {"step": "1.3", "member": 1}),
    ("reopened", {"step": "1.2", "member": 2, "reason": "conflict"}),
    ("leased", {"step": "1.2", "member": 2}),
    ("integrated", {"step": "1.3", "member": 1}),
]


def write_ledger(ws: Path) -> None:
    (ws / "state").mkdir()
    with (ws / "state" / "run-continuation.jsonl").open("w") as ledger:
        for n, (name, fields) in enumerate(EVENTS):
            at = f"2026-12-01T10:00:{n:02d}Z"
            event = {"event": name, "at": at, "run": None, "slug": "demo", **fields}
            ledger.write(json.dumps(event) + "\n")


def test_the_report_shows_the_fleet(ws: Path, snapshot: SnapshotAssertion) -> None:
    (ws / "state").mkdir()
    with (ws / "state" / "run-continuation.jsonl").open("w") as ledger:
        for n, (name, fields) in enumerate(EVENTS):
            at = f"2026-12-01T10:00:{n:02d}Z"
            ledger.write(
                json.dumps({"event": name, "at": at, "run": None, "slug": "demo", **fields}) + "\n"
            )
    shown = run_cli("report")
    assert shown.exit_code == 0
    assert shown.output[shown.output.index("fleet\n") :] == snapshot
    fleet = json.loads(run_cli("report", "--json").output)["fleet"]
    assert (fleet["integrated"], fleet["reopened"], fleet["conflicts"], fleet["takeovers"]) == (
        2,
        1,
        1,
        1,
    )
    assert fleet["holding"] == [{"slug": "demo", "step": "1.2", "member": "2"}]
    assert fleet["members"]["1"] == {"leased": 2, "integrated": 2, "reopened": 0}


def test_the_page_shows_the_fleet(ws: Path, tmp_path: Path) -> None:
    write_ledger(ws)
    page = tmp_path / "page.html"
    assert run_cli("report", "--html", str(page)).exit_code == 0
    root = ElementTree.fromstring(page.read_text())  # still well-formed XHTML
    text = "".join(root.itertext())
    assert "2 steps integrated, 1 reopened (1 conflicts, 0 failed re-verify)" in text
    assert "Holding now: demo 1.2: member 2." in text


def test_a_ledger_without_fleets_says_nothing_of_them(ws: Path) -> None:
    assert json.loads(run_cli("report", "--json").output)["fleet"] is None
