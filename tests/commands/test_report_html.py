"""`agentcfg report --html`: one self-contained page that parses as XHTML, one section per run,
and the same figures as `report --json`."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from syrupy.assertion import SnapshotAssertion

from testing.simhost import SimulatedHost
from tests import inprocess
from tests.commands.test_report import HAND_MADE, TOKENED, write_ledger
from tests.conftest import run_cli

NS = {"h": "http://www.w3.org/1999/xhtml", "s": "http://www.w3.org/2000/svg"}


def page_and_data(root: Path) -> tuple[ET.Element, dict[str, Any]]:
    result = run_cli("report", "--html", str(root / "page.html"), "--json")
    assert result.exit_code == 0
    return ET.parse(root / "page.html").getroot(), json.loads(result.output)


def figure(text: str | None) -> int | None:
    return None if text in (None, "-") else int(str(text).replace(",", ""))


def assert_matches(page: ET.Element, data: dict[str, Any]) -> None:
    sections = page.findall(".//h:section", NS)
    assert len(sections) == len(data["rows"]) > 0
    summary = page.findall(".//h:table[@class='summary']/h:tbody/h:tr", NS)
    assert len(summary) == len(data["rows"]) + 1  # and the totals
    for tr, section, row in zip(summary, sections, data["rows"], strict=False):
        assert section.get("data-run") == row["run"]
        cells = {str(td.get("class")).split()[0]: td for td in tr.findall("h:td", NS)}
        listed = {dd.get("class"): dd.text for dd in section.findall(".//h:dd", NS)}
        spent = row["tokens"]
        expected = {
            "engagements": row["engagements"], "closed": row["closed"],
            "tokens": spent["total"], "per-step": spent["per_step_closed"],
            "waste": spent["waste"],
        }  # fmt: skip
        for name, value in expected.items():
            assert figure(cells[name].text) == value, name
            assert figure(listed[name]) == value, name
        assert listed["outcome"] == cells["outcome"].text == row["outcome"]
        assert section.get("data-outcome") == row["outcome"]
        assert figure(listed["unknown"]) == spent["unknown"]
        rects = section.findall(".//s:rect", NS)
        assert [figure(r.get("data-tokens") or None) for r in rects] == [
            e["tokens"] for e in spent["engagements"]
        ]
        assert ["waste" in str(r.get("class")) for r in rects] == [
            e["closed"] == 0 and e["tokens"] is not None for e in spent["engagements"]
        ]
        marks = section.findall(".//s:circle", NS)
        assert len(marks) == len(row["timeline"]["engagements"])
    totals = {td.get("class"): td.text for td in summary[-1].findall("h:td", NS)}
    assert figure(totals["tokens"]) == data["tokens"]["total"]
    assert figure(totals["waste"]) == data["tokens"]["waste"]
    assert figure(totals["per-step"]) == data["tokens"]["per_step_closed"]
    assert figure(totals["engagements"]) == data["engagements"]


def test_the_page_matches_the_json(ws: Path, snapshot: SnapshotAssertion) -> None:
    write_ledger(ws, TOKENED + HAND_MADE)
    page, data = page_and_data(ws)
    assert_matches(page, data)
    assert len(page.findall(".//h:section", NS)) == 7
    assert page.findtext(".//h:h1", namespaces=NS) == "agentcfg report — ws"
    text = (ws / "page.html").read_text()
    assert "<script" not in text and "src=" not in text and "url(" not in text
    assert text == snapshot


def test_the_page_of_runs_the_real_hook_recorded(ws: Path) -> None:
    host = SimulatedHost(ws, usage={"input_tokens": 100, "output_tokens": 20}, run=inprocess.run)
    assert host.trust("demo").returncode == 0
    host.human("go")
    host.claim("demo")
    for attempt in range(6):
        host.reply(f"Working {attempt}.")
        result = host.fire()
        if result.next_step and attempt % 2 == 0:  # every other engagement closes its step
            host.agentcfg("roadmap", "done", "demo", result.next_step)
    page, data = page_and_data(ws)
    assert_matches(page, data)
    assert data["rows"][0]["outcome"] == "blocked"
    assert data["tokens"]["total"] == 120 * 10  # the claim, six replies, three closes
    assert data["tokens"]["waste"] == 120 * 2  # engagements 2 and 4: one reply each


def test_an_unwritable_page_is_one_error_line(ws: Path) -> None:
    write_ledger(ws, TOKENED)
    result = run_cli("report", "--html", str(ws / "roadmaps"))
    assert result.exit_code == 2  # a folder: refused by the option itself
    result = run_cli("report", "--html", str(ws / "missing" / "page.html"))
    assert result.exit_code == 1
    assert result.output.startswith("agentcfg: error: cannot write")


def test_control_characters_in_the_ledger_still_make_a_page(ws: Path) -> None:
    from tests.commands.test_report import line

    write_ledger(ws, [line("engage", "10:00:00", run="r\x01\x1b[31m", slug="d\x07emo", open=2,
                           step="1.\x00", tokens={"total": 5})])  # fmt: skip
    page, data = page_and_data(ws)
    assert page.find(".//h:section", NS) is not None
    assert data["tokens"]["total"] == 5


def test_a_page_at_a_fifo_is_written_into_it_never_replacing_it(ws: Path) -> None:
    """A path that is not a regular file (a FIFO, a device) is written where it stands: a
    person who names one means what it leads to, and the node itself is never replaced."""
    import os
    import stat
    import threading

    write_ledger(ws, TOKENED)
    fifo = ws.parent / "page.fifo"
    os.mkfifo(fifo)
    result = run_cli("report", "--html", str(fifo))  # nobody reads it: one error line
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"agentcfg: error: cannot write {fifo}: ")
    assert result.output.count("\n") == 1
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_bytes()))
    reader.start()
    while not read and reader.is_alive():  # the reader opens the FIFO before the write
        result = run_cli("report", "--html", str(fifo))
        if result.exit_code == 0:
            break
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert read and read[0].startswith(b"<?xml"), read


def test_a_page_at_a_full_device_is_one_error_line(ws: Path) -> None:
    """`--html` at a device that refuses the write (a node like /dev/full, made here so no
    system device is at stake): one error line and a non-zero exit, the node left standing."""
    import os
    import stat

    import pytest

    full = ws.parent / "full"
    try:
        os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        full.open("wb").close()
    except OSError:
        pytest.skip("device nodes cannot be made or opened here")
    write_ledger(ws, TOKENED)
    result = run_cli("report", "--html", str(full))
    assert (result.exit_code, result.output) == (
        1, f"agentcfg: error: cannot write {full}: No space left on device\n"
    )  # fmt: skip
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_the_strip_counts_the_evidence_of_complete_runs(ws: Path) -> None:
    """Each complete run's steps per evidence word, added up in the strip and the JSON; a run
    that did not complete adds none, and a forged word or count is dropped."""
    lines = [
        {"event": "claimed", "at": "2026-11-18T10:00:00Z", "run": "a" * 16, "slug": "demo"},
        {"event": "complete", "at": "2026-11-18T10:05:00Z", "run": "a" * 16, "slug": "demo",
         "evidence": "3 steps, 2 red-green, 1 vacuous (1.2)",
         "words": {"red-green": 2, "vacuous": 1, "green": 5}},
        {"event": "claimed", "at": "2026-11-18T11:00:00Z", "run": "b" * 16, "slug": "demo"},
        {"event": "complete", "at": "2026-11-18T11:05:00Z", "run": "b" * 16, "slug": "demo",
         "evidence": "2 steps, 1 red-green, 1 unknown (2.1)",
         "words": {"red-green": 1, "unknown": -4}},
        {"event": "claimed", "at": "2026-11-18T12:00:00Z", "run": "c" * 16, "slug": "demo"},
        {"event": "halt-stall", "at": "2026-11-18T12:05:00Z", "run": "c" * 16, "slug": "demo",
         "evidence": "1 step, 1 red-green", "words": {"red-green": 1}},
    ]  # fmt: skip
    write_ledger(ws, [json.dumps(line) for line in lines])
    page, data = page_and_data(ws)
    assert data["evidence"] == {"red-green": 3, "vacuous": 1}
    (card,) = page.findall(".//h:ul[@class='strip']/h:li[@class='steps-proven']", NS)
    words = [(w.get("title"), "".join(w.itertext())) for w in card.iter(f"{{{NS['h']}}}span")]
    assert words[-2:] == [
        ("it failed before the work and passes now", "3 red-green"),
        ("it passed before the work began", "1 vacuous"),
    ]
