"""Roadmaps read through the parse cache come back as the parser made them."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcfg import loading
from agentcfg.core import roadmap
from agentcfg.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
LABELLED = """---
execution:
  mode: autonomous
---
# Labelled

## Phase 1: Setup

- [x] T001 [P] [US1] Create the project
  - uses the template
  - and its defaults
- [/] T002 Wire it <!-- verify: make test -->
- [ ] T003 Deploy blocked-by: T002
- [~] T004 Dropped

## Phase 2

- [?] Step with an unknown mark
"""
ROADMAPS = [
    pytest.param((REPO / "roadmaps" / "demo.md").read_text(), id="demo"),
    *(
        pytest.param(path.read_text(), id=path.stem)
        for path in sorted((REPO / "tests" / "fixtures" / "formats").glob("*.md"))
    ),
    pytest.param(LABELLED, id="labelled"),
]


def test_the_labelled_roadmap_fills_every_kind_of_field() -> None:
    """What the round trip below must carry: problems, phases, tags and detail lines."""
    parsed = roadmap.parse_roadmap(LABELLED)
    assert parsed.problems and parsed.phases and any(s.tags and s.detail for s in parsed.steps)
    assert any(s.started for s in parsed.steps) and any(s.blocked for s in parsed.steps)


@pytest.mark.parametrize("text", ROADMAPS)
def test_a_roadmap_read_from_the_cache_is_the_one_parsed(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = Workspace(tmp_path)
    (tmp_path / "state").mkdir()
    path = tmp_path / "roadmaps" / "r.md"
    path.parent.mkdir()
    path.write_text(text)
    parsed = loading.load(ws, "r")
    assert parsed == roadmap.parse_roadmap(text) and parsed.steps
    assert list((tmp_path / "state" / "cache").glob("roadmap-*.json"))

    def unparsed(source: str) -> roadmap.Roadmap:
        raise AssertionError("parsed again: the cache was not used")

    monkeypatch.setattr(loading, "parse_roadmap", unparsed)
    cached = loading.load(ws, "r")
    assert cached == parsed
    assert [type(field) for field in cached.steps[0]] == [type(f) for f in parsed.steps[0]]
