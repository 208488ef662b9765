"""Evidence words, in process: the grade of a passing check and the lines a person reads."""

from __future__ import annotations

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg.core.evidence import (
    EXPLAINED,
    WORDS,
    baseline_line,
    baseline_total,
    grade,
    summary,
)


@pytest.mark.parametrize(
    ("before", "baselined", "agent_wrote", "word"),
    [
        (1, True, False, "red-green"),
        (None, True, False, "red-green"),  # it ran out of time before the work: a failure
        (0, True, False, "vacuous"),
        (0, False, False, "unknown"),
        (1, True, True, "agent-check"),  # whatever the baseline says, the agent wrote the check
        (0, False, True, "agent-check"),
    ],
)
def test_a_passing_check_is_graded(
    before: int | None, baselined: bool, agent_wrote: bool, word: str
) -> None:
    assert grade(before, baselined, agent_wrote) == word


def test_every_word_is_explained() -> None:
    assert set(EXPLAINED) == set(WORDS)


def test_what_a_person_reads(snapshot: SnapshotAssertion) -> None:
    graded = [("1.1", "red-green"), ("1.2", "vacuous"), ("1.3", "red-green")]
    many = [(f"2.{n}", "unknown") for n in range(1, 11)]
    assert [
        summary(graded),
        summary([("1.1", "red-green")]),
        summary(graded + many + [("3.1", "agent-check")]),
        baseline_line("1.1", 1, 0.42),
        baseline_line("1.2", 0, 0.1),
        baseline_line("1.3", None, 600.0),
        baseline_total("demo", [(1, 0.42), (0, 0.1), (None, 600.0)]),
        baseline_total("demo", [(1, 0.5)]),
        baseline_total("demo", [], ["1.2", "1.3"]),
    ] == snapshot
