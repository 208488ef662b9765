"""`make demo`: what it shows a person, never a None or a placeholder."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from syrupy.assertion import SnapshotAssertion

from testing.demo import ledger_line
from tests.conftest import REPO

EVENTS = [
    {"event": "trusted", "iterations": None, "open": 3, "blocked": 1},
    {"event": "claimed", "iterations": 0, "open": None, "blocked": None},
    {"event": "engage", "iterations": 1, "open": 3, "blocked": 1, "step": "1.2",
     "tokens": {"total": 87100}},
    {"event": "verified", "iterations": None, "open": 3, "blocked": 1, "step": "1.2"},
    {"event": "blocked", "iterations": 12, "open": 0, "blocked": 1, "tokens": None},
    {"event": "complete", "iterations": 4, "open": 0, "blocked": 0, "tokens": {"total": None}},
]  # fmt: skip


def test_a_ledger_line_shows_the_fields_an_event_knows_in_columns(
    snapshot: SnapshotAssertion,
) -> None:
    shown = [ledger_line(event) for event in EVENTS]
    assert shown == snapshot
    assert not any(re.search(r"None|=-|=\s", line) for line in shown)


@pytest.mark.slow
def test_the_demo_shows_no_none_or_placeholder() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "testing.demo"],
        capture_output=True, text=True, cwd=REPO, timeout=300, check=True,
    ).stdout  # fmt: skip
    assert "claimed" in shown and "complete" in shown
    assert not re.search(r"\bNone\b|=-(?!\d)|=\s", shown), shown
