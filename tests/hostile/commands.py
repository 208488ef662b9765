"""A hostile command's run where time is not what the test is about: the bound is wide, so a
busy machine does not fail it; every other check of `run_hostile` holds."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.hostile.harness import run_hostile

SLOW = 50.0


def cli(
    root: Path, args: list[str], expect: int | tuple[int, ...], **options: Any
) -> subprocess.CompletedProcess[str]:
    return run_hostile(root, args, expect, seconds=SLOW, **options)
