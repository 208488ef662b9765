"""The roadmap parser, table-driven: what counts as a step, its id, mark, verify and blocker."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcfg.core.roadmap import Roadmap, clip, parse_roadmap, scan

AUTONOMOUS = "---\nexecution:\n  mode: autonomous\n---\n"


def steps(roadmap: Roadmap) -> list[tuple[str, str, str | None, str | None]]:
    return [(s.id, s.mark, s.verify, s.blocked_by) for s in roadmap.steps]


CASES: list[tuple[str, str, list[tuple[str, str, str | None, str | None]]]] = [
    (
        "h2 phases with bold ids",
        "## Phase 1 — A\n- [ ] **1.1** one\n- [x] **1.2** two\n## Phase 2\n- [ ] **2.1** three\n",
        [("1.1", "open", None, None), ("1.2", "done", None, None), ("2.1", "open", None, None)],
    ),
    (
        "h3 phases under an h2",
        "## Plan\n### Phase 1\n- [ ] a\n### Phase 2\n- [ ] b\n",
        [("1.1", "open", None, None), ("2.1", "open", None, None)],
    ),
    (
        "deeper heading inside a phase does not end it",
        "## Phase 1\n#### Notes\n- [ ] a\n##### Deeper\n- [ ] b\n",
        [("1.1", "open", None, None), ("1.2", "open", None, None)],
    ),
    (
        "same-level heading ends the phase",
        "## Phase 1\n- [ ] a\n## Acceptance criteria\n- [ ] not a step\n",
        [("1.1", "open", None, None)],
    ),
    (
        "shallower heading ends an h3 phase",
        "### Phase 1\n- [ ] a\n## Risks\n- [ ] not a step\n",
        [("1.1", "open", None, None)],
    ),
    (
        "no phase headings: every checkbox is a step of phase 1",
        "# Title\n- [ ] a\n## Anything\n- [x] b\n",
        [("1.1", "open", None, None), ("1.2", "done", None, None)],
    ),
    (
        "phase ids of every form",
        "## Phase 2.1\n- [ ] a\n## Phase 3a\n- [ ] b\n## Phase IV\n- [ ] c\n## Phase B2\n- [ ] d\n",
        [
            ("2.1.1", "open", None, None),
            ("3a.1", "open", None, None),
            ("IV.1", "open", None, None),
            ("B2.1", "open", None, None),
        ],
    ),
    (
        "a heading that merely starts with Phase-like text is no phase",
        "## Phaseout\n- [ ] a\n## Phase 1\n- [ ] b\n",
        [("1.1", "open", None, None)],
    ),
    (
        "all bullet kinds and ordered markers",
        "## Phase 1\n- [ ] a\n\n* [ ] b\n\n+ [ ] c\n\n1. [ ] d\n2) [ ] e\n",
        [(f"1.{n}", "open", None, None) for n in range(1, 6)],
    ),
    (
        "nested items are steps of their own",
        "## Phase 1\n- [ ] a\n  - [ ] b\n    - [x] c\n- [ ] d\n",
        [
            ("1.1", "open", None, None),
            ("1.2", "open", None, None),
            ("1.3", "done", None, None),
            ("1.4", "open", None, None),
        ],
    ),
    (
        "every mark",
        "## Phase 1\n- [ ] a\n- [x] b\n- [X] c\n- [~] d\n- [-] e\n",
        [
            ("1.1", "open", None, None),
            ("1.2", "done", None, None),
            ("1.3", "done", None, None),
            ("1.4", "deferred", None, None),
            ("1.5", "cancelled", None, None),
        ],
    ),
    (
        "not a checkbox: [y], [] and a bare bullet",
        "## Phase 1\n- [y] a\n- [] b\n- c\n- [ ] d\n",
        [("1.1", "open", None, None)],
    ),
    (
        "verify as an html comment",
        "## Phase 1\n- [ ] a <!-- verify: pytest -k phases -->\n",
        [("1.1", "open", "pytest -k phases", None)],
    ),
    (
        "verify as plain text on a continuation line, label in backticks",
        "## Phase 1\n- [ ] **1.1** a\n      `verify:` `pytest tests/test_roadmap.py`\n",
        [("1.1", "open", "pytest tests/test_roadmap.py", None)],
    ),
    (
        "verify as plain text, label without backticks",
        "## Phase 1\n- [ ] a verify: `make check`\n",
        [("1.1", "open", "make check", None)],
    ),
    (
        "the comment form wins over the plain form",
        "## Phase 1\n- [ ] a `verify:` `plain`\n  <!-- verify: comment -->\n",
        [("1.1", "open", "comment", None)],
    ),
    (
        "verify is never borrowed from the next item",
        "## Phase 1\n- [ ] a\n- [ ] b <!-- verify: only-b -->\n",
        [("1.1", "open", None, None), ("1.2", "open", "only-b", None)],
    ),
    (
        "verify is never borrowed from a nested item",
        "## Phase 1\n- [ ] a\n  - [ ] b <!-- verify: nested -->\n",
        [("1.1", "open", None, None), ("1.2", "open", "nested", None)],
    ),
    (
        "verify in a later paragraph of the same item",
        "## Phase 1\n1. [ ] a\n\n   <!-- verify: late -->\n2. [ ] b\n",
        [("1.1", "open", "late", None), ("1.2", "open", None, None)],
    ),
    (
        "blocked-by as a comment and as plain text",
        "## Phase 1\n- [ ] a <!-- blocked-by: cache -->\n- [ ] b blocked-by: `design`\n",
        [("1.1", "open", None, "cache"), ("1.2", "open", None, "design")],
    ),
    (
        "blocked-by with no id still blocks",
        "## Phase 1\n- [ ] a <!-- blocked-by: -->\n",
        [("1.1", "open", None, "")],
    ),
    (
        "a checkbox in a fenced code block is text",
        "## Phase 1\n```\n- [ ] not a step\n```\n- [ ] a\n",
        [("1.1", "open", None, None)],
    ),
    (
        "a checkbox in an indented code block is text",
        "## Phase 1\n\n    - [ ] not a step\n\n- [ ] a\n",
        [("1.1", "open", None, None)],
    ),
    (
        "a checkbox in an html block is text",
        "## Phase 1\n<div>\n- [ ] not a step\n</div>\n\n- [ ] a\n",
        [("1.1", "open", None, None)],
    ),
    (
        "sections after the phases are not steps",
        "## Phase 1\n- [ ] a\n## Blockers\n- [ ] x\n## Risk Register\n- [ ] y\n"
        "## Done means\n- [ ] z\n",
        [("1.1", "open", None, None)],
    ),
    (
        "CRLF line endings",
        "## Phase 1\r\n- [ ] a <!-- verify: make -->\r\n- [x] b\r\n",
        [("1.1", "open", "make", None), ("1.2", "done", None, None)],
    ),
    (
        "ids count every step of the phase whatever its mark",
        "## Phase 7\n- [x] a\n- [-] b\n- [ ] c\n",
        [
            ("7.1", "done", None, None),
            ("7.2", "cancelled", None, None),
            ("7.3", "open", None, None),
        ],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_steps(text: str, expected: list[tuple[str, str, str | None, str | None]]) -> None:
    assert steps(parse_roadmap(AUTONOMOUS + text)) == expected


@pytest.mark.parametrize(
    ("front", "mode"),
    [
        ("execution:\n  mode: autonomous\n", "autonomous"),
        ("execution: {mode: autonomous}\n", "autonomous"),
        ("execution:\n  mode: 'autonomous'\n", "autonomous"),
        ('execution: {mode: "phase-checkpoints"}\n', "phase-checkpoints"),
        ("title: x\n", None),
        ("execution:\n  mode: turbo\n", None),
        ("execution: [1, 2]\n", None),
        ("execution: !!python/object:os.system {mode: autonomous}\n", None),
        ("a: !custom 1\nexecution: {mode: autonomous}\n", None),
        ("a: [unclosed\n", None),
        ("- just a list\n", None),
    ],
)
def test_frontmatter_mode(front: str, mode: str | None) -> None:
    assert parse_roadmap(f"---\n{front}---\n- [ ] a\n").mode == mode


def test_yaml_tags_are_reported_not_constructed() -> None:
    parsed = parse_roadmap("---\nexecution: !!python/object/apply:os.system ['true']\n---\n")
    assert parsed.mode is None
    assert [p.level for p in parsed.problems] == ["error"]
    assert "YAML" in parsed.problems[0].message


def test_bom_is_ignored_and_line_numbers_count_the_frontmatter() -> None:
    parsed = parse_roadmap("\ufeff" + AUTONOMOUS + "# T\n\n## Phase 1\n- [ ] a\n")
    assert parsed.mode == "autonomous"
    assert [s.line for s in parsed.steps] == [8]


def test_unclosed_frontmatter_is_an_error_and_no_mode() -> None:
    parsed = parse_roadmap("---\nexecution: {mode: autonomous}\n- [ ] a\n")
    assert parsed.mode is None
    assert parsed.problems[0].message == "frontmatter has no closing `---`"


def test_step_text_drops_comments_and_annotations() -> None:
    parsed = parse_roadmap(
        "## Phase 1\n- [ ] **1.2** Scope  checkboxes <!-- verify: x -->\n      `verify:` `y`\n"
    )
    assert parsed.steps[0].text == "Scope checkboxes"


def test_text_is_cut_to_240_characters() -> None:
    long = "word " * 100
    step = parse_roadmap(f"## Phase 1\n- [ ] {long}\n").steps[0]
    assert len(step.text) == 240
    assert step.text.endswith("...")
    assert clip("a  b\n c") == "a b c"


def test_scan_counts_and_next_step() -> None:
    parsed = parse_roadmap(
        "## Phase 1\n- [x] a\n- [ ] b <!-- blocked-by: x -->\n  - [ ] c <!-- verify: v -->\n"
        "## Phase 2\n- [~] d\n- [-] e\n- [ ] f\n"
    )
    result = scan(parsed)
    counts = result.counts
    assert (counts.open, counts.blocked, counts.done, counts.deferred, counts.cancelled) == (
        2,
        1,
        1,
        1,
        1,
    )
    assert result.next is not None
    assert (result.next.id, result.next.verify) == ("1.3", "v")
    assert [(p.id, c.open) for p, c in result.phases] == [("1", 1), ("2", 1)]


def test_stray_checkboxes_in_a_phased_roadmap_are_warned() -> None:
    parsed = parse_roadmap("- [ ] before\n## Phase 1\n- [ ] a\n## Criteria\n- [ ] after\n")
    assert [(p.line, p.level) for p in parsed.problems] == [(1, "warning"), (5, "warning")]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("-*+1.)[]xX~ #\n\r\t`<!>:abPhase\ufeff")), max_size=400)
)
def test_parse_never_raises_and_counts_add_up(text: str) -> None:
    parsed = parse_roadmap(text)
    result = scan(parsed)
    assert result.counts.total == len(parsed.steps)
    assert sum(c.total for _, c in result.phases) == len(parsed.steps)
    assert result.next is None or result.next.is_open


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_parse_never_raises_on_any_text(text: str) -> None:
    for source in (text, "---\n" + text + "\n---\n" + text):
        parsed = parse_roadmap(source)
        assert all(step.phase in {p.id for p in parsed.phases} for step in parsed.steps)
