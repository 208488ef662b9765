"""`report --html` against a hostile ledger and a hostile file name: the page is written whole or
not at all, and never over the ledger or a roadmap."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcfg import state
from tests.hostile.commands import cli

LINE = (
    '{"event": "engage", "at": "2026-09-21T14:13:30Z", "run": "r", "slug": "%s", "open": 2, '
    '"tokens": {"total": 5}}\n'
)


@pytest.fixture
def root(ws: Path) -> Path:
    state.ensure_dir(ws / "state")
    (ws / "state" / state.LEDGER_NAME).write_text(LINE % "demo")
    return ws


def test_a_lone_surrogate_in_the_ledger_still_gives_a_whole_page(root: Path) -> None:
    with (root / "state" / state.LEDGER_NAME).open("a") as handle:
        handle.write(LINE % "\\ud800evil")
    page = root / "page.html"
    page.write_text("the page that was here")
    cli(root, ["report", "--html", "page.html"], 0)
    shown = page.read_text(encoding="utf-8")
    assert "<!DOCTYPE html>" in shown and shown.rstrip().endswith("</html>")
    assert "evil" in shown


@pytest.mark.parametrize(
    "target",
    [
        "state/run-continuation.jsonl",
        "roadmaps/demo.md",
        "roadmaps/../roadmaps/demo.md",
        "roadmaps/new.html",
        "state/page.html",
    ],
)
def test_the_page_is_never_written_over_the_ledger_or_a_roadmap(root: Path, target: str) -> None:
    before = {p: p.read_bytes() for p in [*root.glob("roadmaps/*"), *root.glob("state/*")]}
    out = cli(root, ["report", "--html", target], 1)
    assert out.stderr.startswith("agentcfg: error: ") and "roadmaps/ or state/" in out.stderr
    assert {p: p.read_bytes() for p in [*root.glob("roadmaps/*"), *root.glob("state/*")]} == before


def test_a_page_linked_to_a_roadmap_replaces_the_link_not_the_roadmap(root: Path) -> None:
    roadmap = root / "roadmaps" / "demo.md"
    kept = roadmap.read_bytes()
    (root / "page.html").symlink_to(roadmap)
    cli(root, ["report", "--html", "page.html"], 0)
    assert roadmap.read_bytes() == kept
    assert not (root / "page.html").is_symlink()
    assert "<!DOCTYPE html>" in (root / "page.html").read_text()
