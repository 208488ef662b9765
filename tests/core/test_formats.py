"""Roadmaps in the shapes people already write, one fixture per known format."""

from __future__ import annotations

from pathlib import Path

from agentcfg.core.lint import lint
from agentcfg.core.roadmap import Roadmap, parse_roadmap, scan

FORMATS = Path(__file__).parent.parent / "fixtures" / "formats"


def parse(name: str) -> Roadmap:
    return parse_roadmap((FORMATS / name).read_text())


def rows(roadmap: Roadmap) -> list[tuple[str, str, str, bool]]:
    return [(s.id, s.name, s.mark, s.started) for s in roadmap.steps]


def test_spec_kit_tasks() -> None:
    roadmap = parse("spec-kit-tasks.md")
    assert [p.id for p in roadmap.phases] == ["1", "2", "3"]
    assert [(s.id, s.label, s.tags) for s in roadmap.steps] == [
        ("1.1", "T001", ()),
        ("1.2", "T002", ("[P]",)),
        ("1.3", "T003", ("[P]",)),
        ("2.1", "T004", ()),
        ("2.2", "T005", ("[P]",)),
        ("3.1", "T006", ("[P]", "[US1]")),
        ("3.2", "T007", ("[US1]",)),
        ("3.3", "T008", ("[US1]",)),
    ]
    assert roadmap.steps[1].text == "Configure the linter and formatter in `pyproject.toml`"
    assert scan(roadmap).next == roadmap.steps[1]
    assert lint(roadmap) == []  # the code block's `Task: "T002 ..."` lines are no steps


def test_kiro_tasks() -> None:
    roadmap = parse("kiro-tasks.md")
    assert [(s.id, s.label, s.mark) for s in roadmap.steps] == [
        ("1.1", "1", "done"),
        ("1.2", "2", "open"),
        ("1.3", "2.1", "open"),
        ("1.4", "2.2", "open"),
        ("1.5", "3", "open"),
        ("1.6", "3.1", "open"),
        ("1.7", "3.2", "open"),
    ]
    assert roadmap.steps[2].detail == (
        "- Add a `Note` type with title, body and tags",
        "- Reject empty titles",
        "- _Requirements: 2.1_",
    )
    assert roadmap.steps[4].detail == ()  # nested checkboxes are steps, not detail
    assert lint(roadmap) == []


def test_agent_config_roadmap() -> None:
    roadmap = parse("agent-config-roadmap.md")
    assert roadmap.autonomous
    assert [(p.id, p.line) for p in roadmap.phases] == [("-1", 7), ("0", 12), ("1", 20)]
    assert [(s.id, s.name, s.verify, s.blocked_by) for s in roadmap.steps] == [
        ("-1.1", "Phase -1 Step 1", None, None),
        ("-1.2", "Phase -1 Step 2", "make baseline", None),
        ("0.1", "Phase 0 Step 1", "make test", None),
        ("0.2", "Phase 0 Step 2", "make flaky-report", None),
        ("0.3", "Phase 0 Step 3", None, "review"),
        ("1.1", "Phase 1 Step 1", "make ci", None),
        ("1.2", "1.2", "make rerun", None),
    ]
    assert roadmap.steps[-1].text == "**AI Agent Enhancement**: let the agent rerun a failed job"
    assert lint(roadmap) == []  # no duplicate ids, no notes for acceptance criteria


def test_plain_todo_file() -> None:
    roadmap = parse("todo.md")
    assert roadmap.mode is None
    assert rows(roadmap) == [
        ("1.1", "1.1", "open", False),
        ("1.2", "1.2", "done", False),
        ("1.3", "1.3", "open", False),
        ("1.4", "1.4", "open", False),
    ]
    assert roadmap.steps[2].detail == ("- the two about exports first",)
    assert lint(roadmap) == []  # interactive: no verify lines asked for


def test_obsidian_marks() -> None:
    roadmap = parse("obsidian-tasks.md")
    assert [p.id for p in roadmap.phases] == ["1"]
    assert rows(roadmap) == [
        ("1.1", "1.1", "open", True),
        ("1.2", "1.2", "open", False),
        ("1.3", "1.3", "deferred", False),
        ("1.4", "1.4", "cancelled", False),
        ("1.5", "1.5", "open", False),
        ("1.6", "1.6", "cancelled", False),
    ]
    assert [(p.line, p.level) for p in lint(roadmap)] == [(6, "warning")]
    assert scan(roadmap).next == roadmap.steps[0]


def test_the_readme_samples_read_as_it_says() -> None:
    readme = (FORMATS.parent.parent.parent / "README.md").read_text()
    section = readme.split("\n## Formats\n", 1)[1].split("\n## Development\n", 1)[0]
    samples = [block.split("```")[0] for block in section.split("```markdown\n")[1:]]
    names = [[s.name for s in parse_roadmap(sample).steps] for sample in samples]
    assert names == [
        ["Step 1", "Step 2"],
        ["T006", "T007"],
        ["2.1"],
        ["1.1", "1.2"],
        ["1.1", "1.2", "1.3"],
    ]
    assert all(len(sample.splitlines()) == 3 for sample in samples)
