"""A huge roadmap from a hostile repository scans in bounded time, and the shortcut that makes
it fast reads every roadmap exactly as markdown-it alone does."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcfg.core.roadmap import _KEYWORD, _may_hold_keyword, parse_roadmap, scan

LINES = [
    "- [ ] a", "- [x] b", "- [/] c <!-- verify: make test -->", "- [ ]", "- [ ]\tt", "- [ ] x  ",
    "- [ ] **1.1** labelled", "- [ ] ~~struck~~", "- [ ] `verify:` `true`", "- [ ] a \\",
    "- [z] odd", "-  [ ] wide", "* [ ] star", "1. [ ] one", "\t- [ ] tab", "  - [ ] nested",
    "    - [ ] deep", "  more of the item", "    code", "lazy text", "", " ", "## Phase 1",
    "### Phase 2", "# Title", "#nospace", "Setext", "===", "---", "***", "> - [ ] quoted", "> q",
    "```", "~~~", "<div>", "<!-- note -->", "-->", "<script>", "  ```", "- ```", "\x00",
    "- [ ] \x0b", "- [ ] a\x1f", "Phase 3", "- [ ] verify: true", "- [ ] blocked-by: x",
    "## Phase 4 ##", "## Phase 5 \\#", "##\tPhase 6 #  ", "#", "## #", "####### Phase 7",
    "   ## Phase 8", "## Phase 9 #\u3000", "Prose \u00e9t\u00e9", "\u00c9t\u00e9 prose", "\x0b",
    "#### Phase 10 ###", "##### Phase 11", "- [ ] [P] 1.2 side", "- [ ] T002 [P] [US1] tagged",
    "- [ ] b <!-- needs: 1.1, T002 -->", "  needs: 1.1", "  - needs: Step 3", "- [ ] [P] plain",
    "- [ ] needs: x", "<!-- needs: 1.1 -->", "- [ ] [WIP] work",
]  # fmt: skip


# bodies markdown-it need not read at all: simple items, headings at the margin and prose,
# with a few lines that send the whole body back to it; the test draws from either list
PLAIN = [
    "- [ ] a", "- [x] **1.1** b <!-- verify: make -->", "- [/] c", "- [ ] a \\", "- [ ]", "",
    " ", "\t", "## Phase 1", "## Phase 2 ##", "### Phase 3 #", "#### Phase 4 ###", "#", "## #",
    "# Title", "##\tPhase 5", "## Phase 6 \\#", "## Phase 7 #\u3000", "## Phase one",
    "##### Phase 8", "Prose", "\u00c9t\u00e9", "Phase 9", "####### Phase 10", "#nospace",
    "  indented", "===", "1. [ ] one", "- [ ] [P] **1.2** side", "- [ ] c <!-- needs: 1.1 -->",
    "- [ ] T003 [P] d", "- [ ] [P] e",
]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(
    st.one_of(
        st.lists(st.sampled_from(LINES), max_size=30), st.lists(st.sampled_from(PLAIN), max_size=30)
    )
)
def test_the_shortcuts_read_every_roadmap_as_markdown_it_does(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert parse_roadmap(text) == parse_roadmap(text, shortcut=False)
    assert parse_roadmap(text + "\n") == parse_roadmap(text + "\n", shortcut=False)


@pytest.mark.slow
def test_a_50k_step_roadmap_parses_four_times_faster_than_through_markdown_it_alone() -> None:
    text = "---\nexecution: {mode: autonomous}\n---\n## Phase 1\n" + "- [ ] x\n" * 50_000

    def cpu(shortcut: bool) -> float:
        started = time.process_time()
        found = scan(parse_roadmap(text, shortcut))
        assert found.counts.open == 50_000
        return time.process_time() - started

    slow, fast = cpu(False), cpu(True)
    # against the parse before the shortcut it is more than 6x; markdown-it itself got faster
    assert fast * 4 <= slow, f"{slow:.2f}s through markdown-it, {fast:.2f}s with the shortcut"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="verifyblockdVERIFYBLOCKD\u0131\u0130\u017f\u212a -:#\tx", max_size=30))
def test_the_keyword_gate_lets_every_keyword_through(text: str) -> None:
    assert _may_hold_keyword(text) or re.search(_KEYWORD, text) is None
    # each a keyword to the pattern: `ı` and `İ` match i in any case, the Kelvin sign k
    for keyword in ("VERIFY:", "ver\u0131fy:", "VER\u0130FY:", "bloc\u212aed by:", "verify #"):
        assert re.search(_KEYWORD, f"{text} {keyword}") and _may_hold_keyword(f"{text} {keyword}")
