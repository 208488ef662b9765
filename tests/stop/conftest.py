"""Fixtures of the stop hook's tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, SESSION, run_cli


@pytest.fixture
def claimed(ws: Path) -> Path:
    """The workspace with the fixtures' session claiming the demo roadmap and their transcript."""
    shutil.copy(FIXTURES / "transcript.jsonl", ws / "transcript.jsonl")
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    return ws
