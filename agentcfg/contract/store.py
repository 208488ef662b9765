"""The run's contract on disk: one record per run under state/contracts/, and the receipts of a
roadmap's steps under state/receipts/ (the ledger's `verified` events with the verify line and
when it passed, indexed for the hook: one record of each pass, for the contract and the gate).

The record carries a digest of its own content: a record edited by hand, like one that is
missing or unreadable, is named as such and halts the run. The record and each receipt are
sealed besides (contract/seal.py): one whose seal fails ("tampered") was not written by agentcfg, and
a receipt line whose seal fails never counts. Only the interpreter's own modules load here:
the stop hook reads both files on every fire of a claimed run.

Both grow with the roadmap's steps, never with its verify runs: a record holds each step in
about 100 bytes, and the receipts keep, for each step's text and verify line, its newest
passing receipt and its newest one; receipts no step nor contract holds any more are kept
only as the newest RECEIPTS_KEPT. A record is read up to state.RECORD_LIMIT, the receipts up
to RECEIPTS_LIMIT (docs/architecture.md, section 6).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from agentcfg import state
from agentcfg.contract import seal
from agentcfg.contract.model import (
    Contract,
    Receipt,
    Term,
    baseline,
    by_text,
    command_hash,
    grown,
    proven,
    text_hash,
)
from agentcfg.core.digest import sha256_hex
from agentcfg.core.times import parse_iso
from agentcfg.errors import StateError
from agentcfg.paths import CONTRACTS, PROOFS, RECEIPTS, STATE
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from collections.abc import Callable, Iterator
    from contextlib import AbstractContextManager
    from typing import Any

    from agentcfg.core.roadmap import Roadmap

VERSION = 2  # 2: compact, each step a list; a record of version 1 is read the same
READABLE = (1, 2)
RECEIPTS_KEPT = 1000  # receipts of texts and verify lines nothing holds any more: the newest
# a receipt takes about 400 bytes and its verify line: one each for some 50,000 steps, read in time
RECEIPTS_LIMIT = 3 * state.RECORD_LIMIT
TAMPERED = "tampered"  # a record whose seal is missing or wrong


def path_of(ws: Workspace, key: str, slug: str) -> Path:
    return ws.state / CONTRACTS / f"{key}-{slug}.json"


def shown(ws: Workspace, key: str, slug: str) -> str:
    """The record's path as the person reads it."""
    return f"{STATE}/{CONTRACTS}/{key}-{slug}.json"


def _digest(body: dict[str, Any]) -> str:
    return sha256_hex(seal.canonical(body))


def read(ws: Workspace, key: str, slug: str) -> tuple[Contract | None, str]:
    """The run's contract, or None and why not: "missing", "unreadable", "edited by hand" (its
    digest is wrong) or "tampered" (its digest is right, its seal is missing or wrong)."""
    path = path_of(ws, key, slug)
    if not (path.exists() or path.is_symlink()):
        return None, "missing"
    data = state.read_json(path, limit=state.RECORD_LIMIT)
    body = data.get("contract") if data is not None else None
    if not isinstance(body, dict) or data is None or data.get("version") not in READABLE:
        return None, "unreadable"
    found = Contract.from_json(body)
    if found is None:
        return None, "unreadable"
    if data.get("digest") != _digest(body) or data.get("slug") != slug:
        return None, "edited by hand"
    if not seal.check(CONTRACTS, f"{key}-{slug}", body, data.get(seal.FIELD)):
        return None, TAMPERED
    return found, ""


def write(ws: Workspace, key: str, slug: str, contract: Contract) -> None:
    body = contract.to_json()
    record = {
        "version": VERSION,
        "slug": slug,
        "contract": body,
        "digest": _digest(body),
        seal.FIELD: seal.sign(CONTRACTS, f"{key}-{slug}", body),
    }
    # never larger than `read` takes: a claim of too long a roadmap fails, and says so
    state.write_json(path_of(ws, key, slug), record, compact=True, limit=state.RECORD_LIMIT)


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


def refuse_tampered(ws: Workspace, slug: str) -> None:
    """ClaimError naming the first record of the roadmap whose seal fails: what it held cannot
    be read, so no run starts that would carry it (or drop it) unseen."""
    for key, _ in records(ws, slug):
        if read(ws, key, slug)[1] == TAMPERED:
            _refuse(f"the run's contract record {shown(ws, key, slug)}", slug)
    bad = sealed_receipts(ws, slug)[1]
    if bad:
        _refuse(refused(slug, bad), slug)


def _refuse(record: str, slug: str) -> None:
    from agentcfg.errors import ClaimError

    raise ClaimError(
        f"{record} failed its seal: agentcfg did not write it so; a person removes it before "
        f"`{slug}` is claimed again"
    )


def start(ws: Workspace, key: str, slug: str, roadmap: Roadmap, now: float) -> Contract:
    """Record the contract of a run that starts now.

    What earlier runs on this roadmap contracted and never proved stays contracted: claiming
    again does not drop a step, nor turn an autonomous run into one nobody judges.
    """
    fresh = baseline(roadmap, now)
    receipts = by_text(read_receipts(ws, slug))
    have = {t.text for t in fresh.terms}
    carried: list[Term] = []
    mode = fresh.mode
    for other, _ in records(ws, slug):
        old, _problem = read(ws, other, slug)
        left = [t for t in old.terms if not proven(t, receipts.get(t.text, ()))] if old else []
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
    """Steps the agent added join the run's contract (scope may grow, never shrink).

    A contract at its size limit takes no more: they stay open work all the same, the run
    goes on, and the record stays one the hook can read."""
    with lock(ws, key, slug):
        found, _ = read(ws, key, slug)
        if found is None:
            return
        known = {t.text for t in found.terms}
        new = tuple(t for t in joining if t.text not in known)
        if new:
            with contextlib.suppress(state.TooLarge):
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
    receipts = by_text(read_receipts(ws, slug))
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
                if t.text in ticked
                and t.text not in have
                and not proven(t, receipts.get(t.text, ()))
            )
            write(ws, key, slug, Contract(roadmap.mode, now, fresh.terms + kept))
        count += 1
    return count


# -- receipts -----------------------------------------------------------------------------------


def receipts_path(ws: Workspace, slug: str) -> Path:
    return ws.state / RECEIPTS / f"{slug}.json"


def _stored(path: Path) -> list[object] | None:
    """The receipt lines in `path` as they are; [] when there is no such file, None when it
    cannot be read."""
    data = state.read_json(path, limit=RECEIPTS_LIMIT)
    listed = data.get("receipts") if data is not None else None
    if not isinstance(listed, list):
        return None if os.path.lexists(path) else []
    return listed


def read_receipts(ws: Workspace, slug: str) -> tuple[Receipt, ...]:
    """The roadmap's receipts whose seal holds; any other line never counts."""
    return load_receipts(ws, slug)[0]


def load_receipts(ws: Workspace, slug: str) -> tuple[tuple[Receipt, ...], tuple[object, ...]]:
    """The roadmap's receipts whose seal holds, and the lines whose seal is missing or wrong."""
    good, bad = sealed_receipts(ws, slug)
    return tuple(r for r in map(Receipt.from_json, good) if r), tuple(bad)


def sealed_receipts(ws: Workspace, slug: str) -> tuple[list[dict[str, Any]], list[object]]:
    """The receipt lines of the roadmap whose seal holds (their fields, the seal taken off),
    and the lines whose seal is missing or wrong, as they are."""
    good: list[dict[str, Any]] = []
    bad: list[object] = []
    for item in _stored(receipts_path(ws, slug)) or []:
        fields = _unsealed(slug, item)
        if fields is None:
            bad.append(item)
        else:
            good.append(fields)
    return good, bad


def _unsealed(slug: str, item: object) -> dict[str, Any] | None:
    """A receipt line's fields, its seal taken off, when the seal holds; else None."""
    if not isinstance(item, dict):
        return None
    fields = {k: v for k, v in item.items() if k != seal.FIELD}
    return fields if fields and seal.check(RECEIPTS, slug, fields, item.get(seal.FIELD)) else None


def refused(slug: str, bad: tuple[object, ...] | list[object]) -> str:
    """The receipt lines whose seal failed, as the person reads them: the steps they name."""
    from agentcfg.core.visible import visible  # rare: loaded only then

    named = [visible(str(i.get("step"))[:40]) for i in bad if isinstance(i, dict) and "step" in i]
    steps = ", ".join(dict.fromkeys(named)) or "no step"
    lines = f"{len(bad)} receipt line{'s' if len(bad) != 1 else ''}"
    return f"{lines} in {STATE}/{RECEIPTS}/{slug}.json (step {steps})"


def proven_before(ws: Workspace, slug: str, step: str, since: float) -> bool:
    """Whether state/proofs/<slug>.json says the step's verify line passed at or after `since`.

    Versions before receipts held every proof wrote there, beside each receipt, when each step's
    verify line last passed; nothing writes it now. It is not sealed: the gate alone reads it,
    as those versions did, for a step ticked since its previous fire that no receipt answers.
    It never becomes a receipt, nor closes a step of a run's contract."""
    path = ws.state / PROOFS / f"{slug}.json"
    proof = (state.read_json(path, limit=state.RECORD_LIMIT) or {}).get(step)
    at = parse_iso(proof.get("passed_at")) if isinstance(proof, dict) else None
    return at is not None and at >= since


def add_receipt(ws: Workspace, slug: str, fields: dict[str, Any], roadmap: Roadmap) -> None:
    """Index one receipt (the fields of its `verified` event) for the roadmap's runs.

    For each step (by its id), text and verify line, its newest passing receipt and its newest
    receipt stay, and every older one of theirs goes. Those of the newest RECEIPTS_KEPT texts and verify
    lines stay whatever holds them; beyond those, only the ones a step of `roadmap` or any
    run's contract on it holds: what proves a step is never dropped. The ledger keeps all."""

    def held() -> set[tuple[str, str | None]]:
        found = {(text_hash(s.text), command_hash(s.verify)) for s in roadmap.steps}
        for key, _path in records(ws, slug):
            made, _problem = read(ws, key, slug)
            found.update((t.text, command_hash(t.verify)) for t in (made.terms if made else ()))
        return found

    path = receipts_path(ws, slug)
    with state.locked(path.with_suffix(".lock")):
        stored = _stored(path)
        if stored is None:  # never written over: every step's proof would go with it
            raise StateError(
                f"{STATE}/{RECEIPTS}/{slug}.json cannot be read (odd, or larger than "
                f"{RECEIPTS_LIMIT >> 20} MiB); move it away to keep receipts again"
            )
        good = [item for item in stored if isinstance(item, dict) and _unsealed(slug, item)]
        # lines whose seal fails are kept as found (the newest of them), for audit to name
        bad = [item for item in stored if not (isinstance(item, dict) and _unsealed(slug, item))]
        line = {**fields, seal.FIELD: seal.sign(RECEIPTS, slug, fields)}
        kept = bad[-RECEIPTS_KEPT:] + _kept([*good, line], held)
        state.write_json(path, {"receipts": kept}, compact=True, limit=RECEIPTS_LIMIT)


def _kept(
    items: list[dict[str, Any]], held: Callable[[], set[tuple[str, str | None]]]
) -> list[dict[str, Any]]:
    """Of `items` (oldest first), the receipts `add_receipt` keeps, in the same order.

    `held()`, the texts and verify lines that steps and contracts hold, is asked only when
    there are more than RECEIPTS_KEPT of them to keep: it reads every contract record."""
    newest: set[tuple[object, str, str | None]] = set()  # by step: twins each keep their own
    passing: set[tuple[object, str, str | None]] = set()
    others: set[tuple[str, str | None]] = set()
    holding: set[tuple[str, str | None]] | None = None
    kept: list[dict[str, Any]] = []
    for item in reversed(items):
        text, command, code = item.get("text"), item.get("command"), item.get("exit_code")
        if not isinstance(text, str) or not isinstance(command, (str, type(None))):
            continue
        key = (text, command)
        mine = (item.get("step"), text, command)
        # as Receipt.passed: a re-proof's failing receipt is no pass, whatever the step has
        passed = code == 0 or (command is None and item.get("final") is not True)
        first, first_passing = mine not in newest, passed and mine not in passing
        newest.add(mine)
        if passed:
            passing.add(mine)
        if not (first or first_passing):
            continue  # an older receipt of a text and verify line that has a newer one
        if key not in others and len(others) >= RECEIPTS_KEPT:
            holding = held() if holding is None else holding
            if key not in holding:
                continue
        elif holding is None or key not in holding:
            others.add(key)
        kept.append(item)
    kept.reverse()
    return kept
