"""Proofs that a step's verify line passed, kept in state/proofs/ for the quality gate.

Kept apart from contract/verify.py so the stop hook can ask without loading subprocess.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentcfg import state
from agentcfg.core.times import iso_ms, parse_iso
from agentcfg.errors import StateError
from agentcfg.paths import PROOFS, STATE
from agentcfg.workspace import Workspace


def path_of(ws: Workspace, slug: str) -> Path:
    return ws.state / PROOFS / f"{slug}.json"


def record(ws: Workspace, slug: str, step: str, command: str, now: float) -> None:
    """Remember that a step's verify line passed."""
    path = path_of(ws, slug)
    with state.locked(path.with_suffix(".lock")):
        proofs = state.read_json(path, limit=state.RECORD_LIMIT)  # one a step
        if proofs is None and os.path.lexists(path):  # never written over: they would be lost
            raise StateError(
                f"{STATE}/{PROOFS}/{slug}.json cannot be read (odd, or larger than "
                f"{state.RECORD_LIMIT >> 20} MiB); move it away to keep proofs again"
            )
        proofs = proofs or {}
        proofs[step] = {"command": command, "passed_at": iso_ms(now)}
        state.write_json(path, proofs, compact=True, limit=state.RECORD_LIMIT)


def proven_since(ws: Workspace, slug: str, step: str, since: float) -> bool:
    proof = (state.read_json(path_of(ws, slug), limit=state.RECORD_LIMIT) or {}).get(step)
    at = parse_iso(proof.get("passed_at")) if isinstance(proof, dict) else None
    return at is not None and at >= since
