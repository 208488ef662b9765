"""The roadmap parser, table-driven: what counts as a step, its id, mark, verify and blocker."""

from __future__ import annotations

import time

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
        "not a checkbox: [], [ab], a link and a bare bullet",
        "## Phase 1\n- [] b\n- [ab] c\n- [x](url) d\n- e\n- [ ] f\n",
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
        "phase headings as people write them: level 2-4, emoji, emphasis, any case, separators",
        "## 🚀 **Phase 1: A**\n- [ ] a\n### _phase 2._ B\n- [ ] b\n#### Phase 3 — C\n- [ ] c\n"
        "## PHASE 4 - D\n- [ ] d\n## Phase 5\n- [ ] e\n",
        [(f"{n}.1", "open", None, None) for n in range(1, 6)],
    ),
    (
        "negative, zero, lettered and worded phase ids",
        "## Phase -1: Prep\n- [ ] a\n## Phase 0\n- [ ] b\n## Phase 2a\n- [ ] c\n"
        "## Phase One\n- [ ] d\n## Phase twelve\n- [ ] e\n",
        [
            ("-1.1", "open", None, None),
            ("0.1", "open", None, None),
            ("2a.1", "open", None, None),
            ("1.1", "open", None, None),
            ("12.1", "open", None, None),
        ],
    ),
    (
        "a repeated phase id is the same phase, counting on",
        "## Phase 0 — Validation\n- [ ] a\n### Phase 0 Validation Checkpoint\n- [ ] b\n"
        "## Phase 1\n- [ ] c\n## Phase 0 again\n- [ ] d\n",
        [
            ("0.1", "open", None, None),
            ("0.2", "open", None, None),
            ("1.1", "open", None, None),
            ("0.3", "open", None, None),
        ],
    ),
    (
        "a level-5 heading and a word that is no numeral are no phase",
        "## Phase 1\n- [ ] a\n##### Phase 2\n- [ ] b\n## Phase planning\n- [ ] c\n",
        [("1.1", "open", None, None), ("1.2", "open", None, None)],
    ),
    (
        "in progress, the second deferred mark, an unknown mark, struck through",
        "## Phase 1\n- [/] a\n- [>] b\n- [?] c\n- [ ] ~~d~~\n- [ ] **1.5** ~~e~~\n"
        "- [x] ~~f~~\n- [ ] ~~g~~ and h\n",
        [
            ("1.1", "open", None, None),
            ("1.2", "deferred", None, None),
            ("1.3", "open", None, None),
            ("1.4", "cancelled", None, None),
            ("1.5", "cancelled", None, None),
            ("1.6", "done", None, None),
            ("1.7", "open", None, None),
        ],
    ),
    (
        "markers in any case, and `blocked by #12`",
        "## Phase 1\n- [ ] a Verify: make a\n- [ ] b <!-- VERIFY: make b -->\n"
        "- [ ] c Blocked-by: x\n- [ ] d blocked by #12\n- [ ] e <!-- Blocked by: y -->\n",
        [
            ("1.1", "open", "make a", None),
            ("1.2", "open", "make b", None),
            ("1.3", "open", None, "x"),
            ("1.4", "open", None, "#12"),
            ("1.5", "open", None, "y"),
        ],
    ),
    (
        "verify with or without backticks, and as a whole code span it is text",
        "## Phase 1\n- [ ] a verify: make test\n- [ ] b verify: `make test`\n"
        "- [ ] c `verify:` `make test`\n- [ ] d `verify: make test`\n",
        [
            ("1.1", "open", "make test", None),
            ("1.2", "open", "make test", None),
            ("1.3", "open", "make test", None),
            ("1.4", "open", None, None),
        ],
    ),
    (
        "a marker named inside code is text",
        "## Phase 1\n- [ ] document the `[blocked-by:id]` marker\n"
        "- [ ] quote ``a `verify: x` b``\n- [ ] b\n\n  ```\n  verify: make x\n  blocked-by: y\n  ```\n",
        [("1.1", "open", None, None), ("1.2", "open", None, None), ("1.3", "open", None, None)],
    ),
    (
        "markers in a nested detail line belong to the item",
        "## Phase 1\n- [ ] a\n  - Verify: `make a`\n  - Blocked by: #7\n"
        "- [ ] b\n  - notes\n    - <!-- verify: deep -->\n",
        [("1.1", "open", "make a", "#7"), ("1.2", "open", "deep", None)],
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


def test_in_progress_step_is_named_next() -> None:
    parsed = parse_roadmap("## Phase 1\n- [ ] a\n- [/] b\n- [/] c\n")
    assert [s.started for s in parsed.steps] == [False, True, True]
    assert scan(parsed).counts.open == 3
    assert scan(parsed).next == parsed.steps[1]


def test_blocked_in_progress_step_is_not_next() -> None:
    parsed = parse_roadmap("## Phase 1\n- [ ] a\n- [/] b <!-- blocked-by: x -->\n")
    assert scan(parsed).next == parsed.steps[0]


def test_frontmatter_remaps_marks() -> None:
    parsed = parse_roadmap(
        '---\nmarks: {"-": in-progress, "~": cancelled, "!": done}\n---\n'
        "- [-] a\n- [~] b\n- [!] c\n- [>] d\n"
    )
    assert [(s.mark, s.started) for s in parsed.steps] == [
        ("open", True),
        ("cancelled", False),
        ("done", False),
        ("deferred", False),
    ]
    assert parsed.problems == ()


@pytest.mark.parametrize("marks", ["[1, 2]", "{ab: done}", "{'-': finished}"])
def test_bad_mark_remaps_are_warned_and_ignored(marks: str) -> None:
    parsed = parse_roadmap(f"---\nmarks: {marks}\n---\n- [-] a\n")
    assert parsed.steps[0].mark == "cancelled"
    assert [p.level for p in parsed.problems] == ["warning"]


def test_unknown_mark_is_open_with_a_warning() -> None:
    parsed = parse_roadmap("- [?] a\n- [!] b\n")
    assert [s.mark for s in parsed.steps] == ["open", "open"]
    assert [(p.line, p.message) for p in parsed.problems] == [
        (1, "unknown mark `[?]` counts as open"),
        (2, "unknown mark `[!]` counts as open"),
    ]


def labels(text: str) -> list[tuple[str, str, str]]:
    return [(s.id, s.label, s.text) for s in parse_roadmap(text).steps]


@pytest.mark.parametrize(
    ("item", "label", "text"),
    [
        ("**1.2** Scope", "1.2", "Scope"),
        ("**1.2:** Scope", "1.2", "Scope"),
        ("**1.2**: Scope", "1.2", "Scope"),
        ("1.2 Scope", "1.2", "Scope"),
        ("3. Scope", "3", "Scope"),
        ("3.1. Scope", "3.1", "Scope"),
        ("T001 Scope", "T001", "Scope"),
        ("A1 Scope", "A1", "Scope"),
        ("SEC-002: Scope", "SEC-002", "Scope"),
        ("**Step 3:** Scope", "Step 3", "Scope"),
        ("Step 3: Scope", "Step 3", "Scope"),
        ("**AI Agent Enhancement**: Scope", "", "**AI Agent Enhancement**: Scope"),
        ("2 eggs", "", "2 eggs"),
        ("Step 3 of the plan", "", "Step 3 of the plan"),
        ("v2 api", "", "v2 api"),
    ],
)
def test_author_labels(item: str, label: str, text: str) -> None:
    assert labels(f"- [ ] {item}\n") == [("1.1", label, text)]


def test_spec_kit_tags_are_kept_apart_from_the_text() -> None:
    step = parse_roadmap("- [ ] T001 [P] [US1] Create the model\n").steps[0]
    assert (step.label, step.tags, step.text) == ("T001", ("[P]", "[US1]"), "Create the model")


def test_step_n_restarting_per_phase_is_qualified_by_its_phase() -> None:
    text = (
        "## Phase -1\n- [ ] **Step 1:** a\n## Phase 0\n- [ ] **Step 1:** b\n- [ ] **Step 2:** c\n"
    )
    assert labels(text) == [
        ("-1.1", "Phase -1 Step 1", "a"),
        ("0.1", "Phase 0 Step 1", "b"),
        ("0.2", "Phase 0 Step 2", "c"),
    ]
    assert parse_roadmap(text).problems == ()


def test_a_repeated_label_is_warned_once_and_left_in_the_text() -> None:
    parsed = parse_roadmap("- [ ] **1.1** a\n- [ ] **1.1** b\n- [ ] **1.1** c\n- [ ] **2.1** d\n")
    assert [(s.id, s.label, s.text) for s in parsed.steps] == [
        ("1.1", "", "**1.1** a"),
        ("1.2", "", "**1.1** b"),
        ("1.3", "", "**1.1** c"),
        ("1.4", "2.1", "d"),
    ]
    assert [(p.line, p.level, p.message) for p in parsed.problems] == [
        (1, "warning", "label `1.1` names 3 steps (lines 1, 2, 3); they go by their ids "
         "`1.1`, `1.2`, `1.3`"),
    ]  # fmt: skip


def test_kiro_numbering_wins_over_the_ids_it_shadows() -> None:
    # `2.1` is the author's name of the third step and the id of none that lacks a label.
    parsed = parse_roadmap("- [ ] 1. a\n- [ ] 1.1 b\n- [ ] 2.1 c\n")
    assert [(s.id, s.label) for s in parsed.steps] == [("1.1", "1"), ("1.2", "1.1"), ("1.3", "2.1")]
    assert parsed.problems == ()


def test_a_label_never_hides_the_only_name_of_another_step() -> None:
    parsed = parse_roadmap("- [ ] plain\n- [ ] **1.1** labelled\n- [ ] **1.2** third\n")
    # `1.1` is the first step's id, and that step has no label: the label must go, and so
    # must `1.2`, which would then hide the second step's id.
    assert [(s.id, s.label) for s in parsed.steps] == [("1.1", ""), ("1.2", ""), ("1.3", "")]
    assert [p.line for p in parsed.problems] == [2, 3]


def test_detail_lines_are_kept_up_to_five_without_markers() -> None:
    step = parse_roadmap(
        "- [ ] a\n  - one\n  - two <!-- verify: make -->\n  - _Requirements: 1.1_\n"
        "    - nested four\n  - [ ] a step of its own\n  - five\n  - six\n"
    ).steps[0]
    assert step.detail == ("- one", "- two", "- _Requirements: 1.1_", "- nested four", "- five")
    assert step.verify == "make"


def test_a_horizontal_rule_first_is_no_frontmatter() -> None:
    for text in ("---\n# Plan\n- [ ] a\n---\n- [ ] b\n", "---\n- [ ] a\n- [ ] b\n"):
        parsed = parse_roadmap(text)
        assert [s.text for s in parsed.steps] == ["a", "b"]
        assert parsed.problems == ()


def test_sections_outside_phases_get_one_note_each_unless_named_as_criteria() -> None:
    parsed = parse_roadmap(
        "- [ ] before\n- [ ] before too\n## Phase 1\n- [ ] a\n## Risks\n- [ ] r\n- [ ] s\n"
        "## Acceptance criteria\n- [ ] x\n## Prerequisites\n- [ ] y\n### Summary\n- [ ] z\n"
    )
    assert [(p.line, p.level, p.message) for p in parsed.problems] == [
        (1, "note", "2 checkboxes before the first phase: not steps, since only sections "
         "under a `Phase` heading hold steps"),
        (5, "note", "2 checkboxes under `Risks`: not steps, since only sections under a "
         "`Phase` heading hold steps"),
    ]  # fmt: skip


def test_unclosed_comments_in_one_huge_item_parse_in_linear_time() -> None:
    for item in ("<!-- verify: " * 9_000, "`` ` " * 20_000, "verify: x\n" * 10_000):
        started = time.process_time()
        parsed = parse_roadmap("## Phase 1\n- [ ] a " + item + "\n")
        assert time.process_time() - started < 1.0
        assert len(parsed.steps) == 1


def test_ten_thousand_steps_parse_well_under_a_second_and_a_half() -> None:
    lines = [AUTONOMOUS]
    for phase in range(100):
        lines.append(f"## Phase {phase}\n")
        lines += (f"- [ ] **Step {n}:** step {n} <!-- verify: make t{n} -->\n" for n in range(100))
    text = "".join(lines)
    started = time.process_time()  # CPU time: other work on the machine does not count
    parsed = parse_roadmap(text)
    assert time.process_time() - started < 1.5
    assert len(parsed.steps) == 10_000


# fmt: off
PIECES = [
    "## Phase 1\n", "## Phase 0\n", "## Phase -1\n", "### Phase 1\n", "## Other\n",
    "- [ ] a\n", "- [x] **1.1** b\n", "- [ ] **1.2** c\n", "- [ ] 1. d\n", "- [ ] 1.1 e\n",
    "  - [ ] T001 f\n", "- [/] **Step 1:** g\n", "- [ ] Step 2: h\n", "- [?] 2.1 i\n",
    "1. [ ] j\n", "\n",
]
# fmt: on


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_canonical_ids_and_usable_names_are_unique(parts: list[str]) -> None:
    parsed = parse_roadmap("".join(parts))
    ids = [s.id.casefold() for s in parsed.steps]
    assert len(set(ids)) == len(ids)
    names = [s.name.casefold() for s in parsed.steps]
    assert len(set(names)) == len(names)
    labels = {s.label.casefold() for s in parsed.steps if s.label}
    # no step is left without a name that finds it: its id is nobody else's label
    assert all(s.label or s.id.casefold() not in labels for s in parsed.steps)
