"""The receipts a fleet's branch carries: state/carried/<slug>.json, committed with each
integration, one receipt a step integrated (its verify line run again on the merged tree).

A fleet's receipts are made in the checkout that integrates, on one machine, sealed with the key
of the person who runs it there (seal.py). A fresh clone of the branch has none of the members'
worktrees and, on another person's machine, another key: there a receipt's seal cannot be
checked at all. `roadmap audit` then reads the committed receipts as the branch's history holds
them (as it reads the fleet's final record), says so, and `--rerun` runs their checks again.
A receipt whose seal holds with this person's key is theirs as any other sealed record is.
"""

from __future__ import annotations

from agentcfg import state
from agentcfg.contract import seal
from agentcfg.errors import StateError
from agentcfg.paths import CARRIED, LOCKS, STATE
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

VERSION = 1


def path_of(ws: Workspace, slug: str) -> Path:
    return ws.state / CARRIED / f"{slug}.json"


def shown(slug: str) -> str:
    """The file's path as a person reads it, and as git holds it on the fleet's branch."""
    return f"{STATE}/{CARRIED}/{slug}.json"


def _listed(ws: Workspace, slug: str) -> list[object] | None:
    """The file's receipt lines as they are; None when there is no such file of this shape."""
    data = state.read_json(path_of(ws, slug), limit=state.RECORD_LIMIT)
    if data is None or data.get("version") != VERSION or data.get("slug") != slug:
        return None
    listed = data.get("receipts")
    return listed if isinstance(listed, list) else None


def add(ws: Workspace, slug: str, fields: dict[str, Any]) -> None:
    """Append one integrated step's receipt, sealed; StateError when the file is there but odd
    (it is never written over: the branch's receipts would be lost)."""
    path = path_of(ws, slug)
    with state.locked(ws.state / LOCKS / f"carried-{slug}.lock"):
        listed = _listed(ws, slug)
        if listed is None and (path.exists() or path.is_symlink()):
            raise StateError(f"{shown(slug)} cannot be read; move it away to carry receipts again")
        line = {**fields, seal.FIELD: seal.sign(CARRIED, slug, fields)}
        body = {"version": VERSION, "slug": slug, "receipts": [*(listed or []), line]}
        state.write_json(path, body, compact=True, limit=state.RECORD_LIMIT)


def read(ws: Workspace, slug: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The carried receipts: those whose seal holds with this person's key, and those whose
    seal does not (another person's key, or a forgery: a seal cannot tell which), each with
    its seal taken off, oldest first."""
    sealed: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []
    for item in _listed(ws, slug) or []:
        if not isinstance(item, dict):
            continue
        fields = {k: v for k, v in item.items() if k != seal.FIELD}
        if seal.check(CARRIED, slug, fields, item.get(seal.FIELD)):
            sealed.append(fields)
        else:
            other.append(fields)
    return sealed, other
