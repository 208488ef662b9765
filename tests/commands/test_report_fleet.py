"""`agentcfg report` shows a fleet: steps per member, integrations, reopened steps, takeovers,
and who holds which step as the ledger ends."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

from syrupy.assertion import SnapshotAssertion

from agentcfg.core import report as reports
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


# two fleets on `demo`: the first of three members ends, the second is still going
FLEETS = [
    ("fleet-start", {"agents": 3}),
    ("leased", {"step": "1.1", "member": 1}),
    ("leased", {"step": "1.2", "member": 2}),
    ("leased", {"step": "1.3", "member": 3}),
    ("member-run", {"step": "1.1", "member": 1, "ending": "complete", "engagements": 2,
                    "tokens": {"total": 1200}, "waits": 0, "seconds": 240.0}),
    ("integrated", {"step": "1.1", "member": 1}),
    ("waiting", {"member": 3, "on": ["1.1"]}),
    ("member-run", {"step": "1.2", "member": 2, "ending": "complete", "engagements": 4,
                    "tokens": {"total": None}, "waits": 1, "seconds": 300.0}),
    ("reopened", {"step": "1.2", "member": 2, "reason": "conflict"}),
    ("lease-expired", {"step": "1.3", "member": 1}),
    ("leased", {"step": "1.3", "member": 1}),
    ("member-run", {"step": "1.3", "member": 1, "ending": "complete", "engagements": 1,
                    "tokens": {"total": 800}, "waits": 0, "seconds": 180.0}),
    ("integrated", {"step": "1.3", "member": 1}),
    ("leased", {"step": "1.2", "member": 2}),
    ("member-run", {"step": "1.2", "member": 2, "ending": "complete", "engagements": 1,
                    "tokens": {"total": 500}, "waits": 0, "seconds": 120.0}),
    ("integrated", {"step": "1.2", "member": 2}),
    ("fleet-end", {"ending": "complete", "members": [0, 0, 0]}),
    ("fleet-start", {"agents": 1}),
    ("leased", {"step": "1.4", "member": 1}),
]  # fmt: skip


def write_fleets(ws: Path, events: list[tuple[str, dict[str, object]]] = FLEETS) -> None:
    (ws / "state").mkdir()
    with (ws / "state" / "run-continuation.jsonl").open("w") as ledger:
        for n, (name, fields) in enumerate(events):
            at = f"2026-12-01T10:{n:02d}:00Z"  # a minute apart
            event = {"event": name, "at": at, "run": None, "slug": "demo", **fields}
            ledger.write(json.dumps(event) + "\n")


def test_each_fleet_shows_what_each_member_did_and_cost(
    ws: Path, snapshot: SnapshotAssertion
) -> None:
    write_fleets(ws)
    shown = run_cli("report")
    assert shown.exit_code == 0
    assert shown.output[shown.output.index("fleet\n") :] == snapshot
    first, second = json.loads(run_cli("report", "--json").output)["fleet"]["fleets"]
    assert (first["ending"], first["agents"], first["wall_seconds"]) == ("complete", 3, 16 * 60)
    assert first["member_seconds"] == 240 + 300 + 180 + 120
    one, two, three = (first["members"][m] for m in ("1", "2", "3"))
    assert (one["steps"], one["leased"], one["takeovers"], one["tokens"]) == (2, 2, 1, 2000)
    assert (two["steps"], two["reopened"], two["waits"], two["tokens"]) == (1, 1, 1, 500)
    assert (two["tokens_unknown"], two["engagements"], two["seconds"]) == (1, 5, 420.0)
    assert (three["steps"], three["waits"], three["runs"], three["seconds"]) == (0, 1, 0, 0.0)
    assert second["ended"] is None and second["member_seconds"] is None
    assert second["members"] == {"1": {**second["members"]["1"], "leased": 1, "steps": 0}}


def test_forged_figures_of_a_member_run_count_for_nothing(ws: Path) -> None:
    forged = {"step": "1.1", "member": 1, "engagements": -3, "waits": 10**12,
              "tokens": {"total": -5}, "seconds": -1.0}  # fmt: skip
    write_fleets(ws, [("fleet-start", {"agents": "3"}), ("member-run", forged),
                      ("member-run", {**forged, "seconds": 1e300, "tokens": "lots"})])  # fmt: skip
    (fleet,) = json.loads(run_cli("report", "--json").output)["fleet"]["fleets"]
    assert fleet["agents"] is None
    member = fleet["members"]["1"]
    assert (member["runs"], member["engagements"], member["waits"], member["seconds"]) == (
        2,
        0,
        0,
        0,
    )
    assert (member["tokens"], member["tokens_unknown"]) == (None, 2)


def test_the_page_shows_each_fleets_members(ws: Path, tmp_path: Path) -> None:
    write_fleets(ws)
    page = tmp_path / "page.html"
    assert run_cli("report", "--html", str(page)).exit_code == 0
    root = ElementTree.fromstring(page.read_text())  # still well-formed XHTML
    text = "".join(root.itertext())
    assert "Fleet on demo from 2026-12-01 10:00:00, 3 members" in text
    assert "ended complete at 2026-12-01 10:16:00. Wall time 16m; the members' time 14m" in text
    assert "(0.9× the wall time)" in text
    tables = [
        t for t in root.iter("{http://www.w3.org/1999/xhtml}table") if t.get("class") == "members"
    ]
    rows = [
        ["".join(td.itertext()) for td in tr]
        for tr in tables[0].iter("{http://www.w3.org/1999/xhtml}tr")
    ]
    assert rows[1:] == [
        ["1", "2", "2", "2,000", "0", "0", "1", "7m"],
        ["2", "1", "2", "500", "1", "1", "0", "7m"],
        ["3", "0", "1", "-", "1", "0", "0", "-"],
    ]
    assert "no end recorded" in text


def test_the_fleets_told_are_the_newest_and_their_members_bounded() -> None:
    """A ledger of many fleets lists the newest only; a fleet with more members than any has
    tells the first of them: memory stays bounded whatever the ledger holds."""
    lines = []
    for n in range(reports.FLEETS_KEPT + 5):
        lines.append({"event": "fleet-start", "slug": f"r{n}", "agents": 1})
        lines.append({"event": "leased", "slug": f"r{n}", "step": "1.1", "member": 1})
    lines += [
        {"event": "leased", "slug": "big", "step": f"1.{m}", "member": m}
        for m in range(reports.MEMBERS_KEPT + 3)
    ]
    built = reports.build(
        json.dumps({**line, "at": "2026-12-01T10:00:00Z", "run": None}) for line in lines
    )
    fleets = built.to_json()["fleet"]["fleets"]
    assert len(fleets) == reports.FLEETS_KEPT
    assert [f["slug"] for f in fleets[-2:]] == [f"r{reports.FLEETS_KEPT + 4}", "big"]
    assert len(fleets[-1]["members"]) == reports.MEMBERS_KEPT
    assert len(built.fleet.going) <= reports.FLEETS_KEPT + 1
