"""`roadmap audit`: which ticked steps of a roadmap a receipt proves, for a reviewer.

proven: the newest receipt for the step (its id, its text and its current verify line, made
since it joined a run's contract) passed; stale: receipts only for a verify line it no longer
has; unproven: ticked with none, or the newest failed (a re-proof at a run's end); open: not
ticked. The hook judges a run by the same rule (contract/model.py). The entries of the final
re-proof's record (state/finals/, committed on a fleet's branch) count as receipts.
With `rerun`, the trusted verify lines of the proven steps run again on the tree as it is.
A receipt line or a run's contract record whose seal fails (contract/seal.py) proves nothing and is
named: the audit then fails.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentcfg import loading
from agentcfg.config import load_config
from agentcfg.contract import carried, finals, trust, verify
from agentcfg.contract import store as contract
from agentcfg.contract.model import Receipt, command_hash, deciding, matched, text_hash
from agentcfg.contract.verify import VerifyResult
from agentcfg.core.evidence import WORDS
from agentcfg.core.roadmap import Step
from agentcfg.workspace import Workspace

STATUSES = ("proven", "unproven", "stale", "open")


@dataclass(frozen=True)
class Row:
    step: Step
    status: str  # proven | unproven | stale | open | deferred | cancelled
    contracted: bool
    receipt: dict[str, Any] | None  # the newest receipt that proves it (or once did)
    rerun: VerifyResult | None = None
    elsewhere: bool = False  # stale: its receipt was taken on a commit outside this history

    @property
    def evidence(self) -> str | None:
        """What the proving receipt shows about the work (core/evidence.py); None unless proven."""
        if self.status != "proven":
            return None
        found = (self.receipt or {}).get("evidence")
        return found if found in WORDS else "unknown"

    @property
    def refuted(self) -> str | None:
        """Why the re-proof at a run's end failed this step, when its newest receipt says so
        (reopened or not: the run did not end on a proof)."""
        receipt = self.receipt or {}
        if receipt.get("final") is not True or receipt.get("exit_code") == 0:
            return None
        return str(receipt.get("reason") or "it failed")

    @property
    def ok(self) -> bool:
        """Nothing for a reviewer to hold against this step."""
        ticked = self.step.mark == "done"
        rerun_ok = self.rerun is None or self.rerun.passed
        proven = not ticked or not self.contracted or self.status == "proven"
        return proven and rerun_ok and (self.refuted is None or not self.contracted)


@dataclass(frozen=True)
class Audit:
    slug: str
    rows: tuple[Row, ...]
    contracts: int  # run contract records on the roadmap; none: every step counts
    tampered: tuple[str, ...] = ()  # the records whose seal fails, as the person reads them
    history: int = (
        0  # receipts read as the branch's history holds them, their seal not this person's
    )

    @property
    def ok(self) -> bool:
        return not self.tampered and all(row.ok for row in self.rows)

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "ok": self.ok,
            "contracts": self.contracts,
            "tampered": list(self.tampered),
            "from_history": self.history,
            "counts": {s: sum(r.status == s for r in self.rows) for s in STATUSES},
            "evidence": {w: sum(r.evidence == w for r in self.rows) for w in WORDS},
            "steps": [
                {
                    "step": r.step.id,
                    "label": r.step.label or None,
                    "mark": r.step.mark,
                    "status": r.status,
                    "contracted": r.contracted,
                    "evidence": r.evidence,
                    "receipt": r.receipt,
                    "refuted": r.refuted,
                    "rerun": None
                    if r.rerun is None
                    else {"exit_code": r.rerun.exit_code, "passed": r.rerun.passed},
                }
                for r in self.rows
            ],
        }


def audit(ws: Workspace, slug: str, env: Mapping[str, str], rerun: bool = False) -> Audit:
    slug = ws.canonical(slug)
    roadmap = loading.load(ws, slug)
    good, refused = contract.sealed_receipts(ws, slug)
    tampered = [contract.refused(slug, refused)] if refused else []
    own, others = carried.read(ws, slug)
    if others and not verify.committed(ws.root, carried.shown(slug)):
        tampered.append(
            f"{len(others)} of the receipts in {carried.shown(slug)} (not as committed)"
        )
        others = []
    receipts = _receipts(ws, slug, [*own, *others, *good])
    contracted: set[str] = set()
    terms: dict[str, tuple[set[str], float]] = {}  # a step's ids then and when it joined, by id
    records = 0
    for key, _path in contract.records(ws, slug):
        found, problem = contract.read(ws, key, slug)
        records += 1
        if found is not None:
            contracted.update(t.text for t in found.terms)
            for term, step in matched(found, roadmap):
                if step is not None:
                    ids, since = terms.get(step.id, ({step.id}, 0.0))
                    terms[step.id] = (ids | {term.id}, max(since, term.since))
        elif problem == contract.TAMPERED:
            tampered.append(f"the run's contract record {contract.shown(ws, key, slug)}")
    rows = [
        _row(step, receipts, not records or text_hash(step.text) in contracted,
             terms.get(step.id, ({step.id}, 0.0)))
        for step in roadmap.steps
    ]  # fmt: skip
    rows = _in_history(ws, rows)
    if rerun:
        again = [r.step for r in rows if r.status == "proven" and r.step.verify]
        trust.require(ws, slug, again, env)
        timeout = load_config(ws, env).verify_timeout
        rows = [
            Row(r.step, r.status, r.contracted, r.receipt, verify.run(r.step, ws.root, timeout))
            if r.step in again
            else r
            for r in rows
        ]
    return Audit(slug, tuple(rows), records, tuple(tampered), len(others))


def _receipts(
    ws: Workspace, slug: str, items: list[dict[str, Any]]
) -> list[tuple[Receipt, dict[str, Any]]]:
    """Every receipt of the roadmap whose seal holds (the final re-proof's entries too), and
    those its fleet's branch carries, read as the hook reads them, each with its fields."""
    # the final record first: where receipts are kept it repeats some, and those after it are newer
    final = finals.read_final(ws, slug)
    if final is None and verify.committed(ws.root, finals.shown(slug)):
        # a fleet's record, committed on its branch: sealed on the machine that made it, read
        # here as the branch's history holds it (a reviewer's clone has another key)
        final = finals.read_final(ws, slug, sealed=False)
    items = finals.as_receipts(final) + items
    read = ((Receipt.from_json(item), item) for item in items)
    return [(r, item) for r, item in read if r is not None]


def _row(
    step: Step,
    receipts: list[tuple[Receipt, dict[str, Any]]],
    contracted: bool,
    term: tuple[set[str], float],
) -> Row:
    ids, since = frozenset(term[0]), term[1]
    text = text_hash(step.text)
    fields = {id(r): item for r, item in receipts}
    known = tuple(r for r, _ in receipts)
    newest = deciding(known, ids, text, command_hash(step.verify), since)
    if step.mark != "done":
        failed = newest if newest is not None and newest.final and not newest.passed else None
        shown = fields[id(failed)] if failed is not None else None
        return Row(step, "open" if step.mark == "open" else step.mark, contracted, shown)
    if newest is not None and not newest.passed:
        return Row(step, "unproven", contracted, fields[id(newest)])
    if newest is not None:  # a re-proof's pass confirms the proof before it: that one is shown
        command = command_hash(step.verify)
        proofs = [r for r in known if r.step in ids and r.text == text and r.command == command
                  and r.at >= since and r.passed and not r.final]  # fmt: skip
        return Row(step, "proven", contracted, fields[id(proofs[-1] if proofs else newest)])
    older = [r for r in known if r.step in ids and r.text == text and r.passed and r.at >= since]
    if older:
        return Row(step, "stale", contracted, fields[id(older[-1])])
    return Row(step, "unproven", contracted, None)


def _in_history(ws: Workspace, rows: list[Row]) -> list[Row]:
    """A receipt counts for the line of history it was taken on: one whose commit is not an
    ancestor of the tree being audited (another branch, a rewritten history) is stale here."""
    heads = {
        r.receipt["head"] for r in rows
        if r.status == "proven" and r.receipt and isinstance(r.receipt.get("head"), str)
    }  # fmt: skip
    if not heads or verify.git_facts(ws.root)["head"] is None:
        return rows
    outside = {head for head in heads if not _ancestor(ws, head)}
    return [
        dataclasses.replace(r, status="stale", elsewhere=True)
        if r.status == "proven" and r.receipt and r.receipt.get("head") in outside
        else r
        for r in rows
    ]


def _ancestor(ws: Workspace, head: str) -> bool:
    found = verify.git(ws.root, "merge-base", "--is-ancestor", head, "HEAD")
    return found is None or found.returncode == 0  # git cannot tell: not held against it
