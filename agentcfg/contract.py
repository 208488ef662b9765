"""The run's contract on disk: one record per run under state/contracts/, and the receipts of a
roadmap's steps under state/receipts/ (the ledger's `verified` events, indexed for the hook).

The record carries a digest of its own content: a record edited by hand, like one that is
missing or unreadable, is named as such and halts the run. Only the interpreter's own modules
load here: the stop hook reads both files on every fire of a claimed run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agentcfg import state
from agentcfg.core.contract import (
    Contract,
    Receipt,
    Term,
    baseline,
    from_json,
    grown,
    proven,
    text_hash,
    to_json,
)
from agentcfg.core.digest import sha256_hex
from agentcfg.core.times import parse_iso
from agentcfg.paths import CONTRACTS, RECEIPTS, STATE
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from collections.abc import Iterator
    from contextlib import AbstractContextManager
    from typing import Any

    from agentcfg.core.roadmap import Roadmap

VERSION = 1
RECEIPTS_KEPT = 1000  # per roadmap: the newest are kept, older ones stay in the ledger


def path_of(ws: Workspace, key: str, slug: str) -> Path:
    return ws.state / CONTRACTS / f"{key}-{slug}.json"


def shown(ws: Workspace, key: str, slug: str) -> str:
    """The record's path as the person reads it."""
    return f"{STATE}/{CONTRACTS}/{key}-{slug}.json"


def _digest(body: dict[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256_hex(text.encode("utf-8", "surrogatepass"))


def read(ws: Workspace, key: str, slug: str) -> tuple[Contract | None, str]:
    """The run's contract, or None and why not: "missing", "unreadable" or "edited by hand"."""
    path = path_of(ws, key, slug)
    if not (path.exists() or path.is_symlink()):
        return None, "missing"
    data = state.read_json(path)
    body = data.get("contract") if data is not None else None
    if not isinstance(body, dict) or data is None or data.get("version") != VERSION:
        return None, "unreadable"
    found = from_json(body)
    if found is None:
        return None, "unreadable"
    if data.get("digest") != _digest(body) or data.get("slug") != slug:
        return None, "edited by hand"
    return found, ""


def write(ws: Workspace, key: str, slug: str, contract: Contract) -> None:
    body = to_json(contract)
    record = {"version": VERSION, "slug": slug, "contract": body, "digest": _digest(body)}
    state.write_json(path_of(ws, key, slug), record)


def lock(ws: Workspace, key: str, slug: str) -> AbstractContextManager[None]:
    return state.locked(path_of(ws, key, slug).with_suffix(".lock"))


def records(ws: Workspace, slug: str) -> Iterator[tuple[str, Path]]:
    """(key, path) of every run's record on this roadmap, whatever its claim."""
    folder = ws.state / CONTRACTS
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return
    for name in names:
        key, dash, rest = name.partition("-")
        if dash and len(key) == 32 and rest == f"{slug}.json":
            yield key, folder / name


def start(ws: Workspace, key: str, slug: str, roadmap: Roadmap, now: float) -> Contract:
    """Record the contract of a run that starts now.

    What earlier runs on this roadmap contracted and never proved stays contracted: claiming
    again does not drop a step, nor turn an autonomous run into one nobody judges.
    """
    fresh = baseline(roadmap, now)
    receipts = read_receipts(ws, slug)
    have = {t.text for t in fresh.terms}
    carried: list[Term] = []
    mode = fresh.mode
    for other, _ in records(ws, slug):
        old, _problem = read(ws, other, slug)
        left = [t for t in old.terms if not proven(t, receipts)] if old else []
        if old is not None and left and old.autonomous:
            mode = old.mode
        for term in left:
            if term.text not in have:
                have.add(term.text)
                carried.append(term)
    made = Contract(mode, now, fresh.terms + tuple(carried))
    with lock(ws, key, slug):
        write(ws, key, slug, made)
    return made


def join(ws: Workspace, key: str, slug: str, joining: tuple[Term, ...]) -> None:
    """Steps the agent added join the run's contract (scope may grow, never shrink)."""
    with lock(ws, key, slug):
        found, _ = read(ws, key, slug)
        if found is None:
            return
        known = {t.text for t in found.terms}
        new = tuple(t for t in joining if t.text not in known)
        if new:
            write(ws, key, slug, grown(found, new))


def warn(ws: Workspace, key: str, slug: str, keys: tuple[str, ...]) -> None:
    """Remember the changes the gate refused: the next turn end that still finds them halts."""
    with lock(ws, key, slug):
        found, _ = read(ws, key, slug)
        if found is not None:
            merged = tuple(dict.fromkeys((*found.warned, *keys)))
            write(ws, key, slug, Contract(found.mode, found.started_at, found.terms, merged))


def rebaseline(ws: Workspace, slug: str, roadmap: Roadmap, live: set[str], now: float) -> int:
    """A person accepted the roadmap as it is: every live run's contract starts again from it,
    keeping its steps that are ticked but unproven; records of ended runs are dropped."""
    receipts = read_receipts(ws, slug)
    count = 0
    for key, path in list(records(ws, slug)):
        if key not in live:
            state.remove(path)
            continue
        with lock(ws, key, slug):
            old, _ = read(ws, key, slug)
            fresh = baseline(roadmap, now)
            have = {t.text for t in fresh.terms}
            ticked = {text_hash(s.text) for s in roadmap.steps if s.mark == "done"}
            kept = tuple(
                t
                for t in (old.terms if old else ())
                if t.text in ticked and t.text not in have and not proven(t, receipts)
            )
            write(ws, key, slug, Contract(roadmap.mode, now, fresh.terms + kept))
        count += 1
    return count


# -- receipts -----------------------------------------------------------------------------------


def receipts_path(ws: Workspace, slug: str) -> Path:
    return ws.state / RECEIPTS / f"{slug}.json"


def read_receipts(ws: Workspace, slug: str) -> tuple[Receipt, ...]:
    data = state.read_json(receipts_path(ws, slug), limit=4 * state.STATE_FILE_LIMIT)
    listed = data.get("receipts") if data is not None else None
    return tuple(r for r in map(receipt_of, listed if isinstance(listed, list) else ()) if r)


def receipt_of(item: object) -> Receipt | None:
    """One receipt from its JSON; None when anything has the wrong shape."""
    if not isinstance(item, dict):
        return None
    at = parse_iso(item.get("at"))
    step, text, command, code = (item.get(k) for k in ("step", "text", "command", "exit_code"))
    if at is None or not (isinstance(step, str) and isinstance(text, str)):
        return None
    if not isinstance(command, (str, type(None))) or not (code is None or type(code) is int):
        return None
    return Receipt(step, text, command, code, at, item.get("final") is True)


def add_receipt(ws: Workspace, slug: str, fields: dict[str, Any]) -> None:
    """Index one receipt (the fields of its `verified` event) for the roadmap's runs."""
    path = receipts_path(ws, slug)
    with state.locked(path.with_suffix(".lock")):
        data = state.read_json(path, limit=4 * state.STATE_FILE_LIMIT) or {}
        listed = data.get("receipts")
        kept = listed if isinstance(listed, list) else []
        state.write_json(path, {"receipts": [*kept, fields][-RECEIPTS_KEPT:]}, compact=True)
