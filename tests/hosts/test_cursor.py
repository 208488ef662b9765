"""Cursor: the one host not proven against its real binary, and saying so."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli
from tests.hosts.shared import findings


def test_cursor_is_stated_as_not_proven(ws: Path) -> None:
    run_cli("hooks", "install", "--host", "cursor")
    assert "not proven against a real Cursor binary" in findings("cursor")[0]["message"]
