"""`roadmap audit`: which ticked steps of a roadmap a receipt proves, for a reviewer.

proven: a passing receipt for the step's text and its current verify line; stale: receipts
only for a verify line it no longer has; unproven: ticked with none; open: not ticked.
With `rerun`, the trusted verify lines of the proven steps run again on the tree as it is.
A receipt line or a run's contract record whose seal fails (seal.py) proves nothing and is
named: the audit then fails.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentcfg import contract, loading, trust, verify
from agentcfg.config import load_config
from agentcfg.core.contract import command_hash, text_hash
from agentcfg.core.evidence import WORDS
from agentcfg.core.roadmap import Step
from agentcfg.verify import VerifyResult
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
    def ok(self) -> bool:
        """Nothing for a reviewer to hold against this step."""
        ticked = self.step.mark == "done"
        rerun_ok = self.rerun is None or self.rerun.passed
        return (not ticked or not self.contracted or self.status == "proven") and rerun_ok


@dataclass(frozen=True)
class Audit:
    slug: str
    rows: tuple[Row, ...]
    contracts: int  # run contract records on the roadmap; none: every step counts
    tampered: tuple[str, ...] = ()  # the records whose seal fails, as the person reads them

    @property
    def ok(self) -> bool:
        return not self.tampered and all(row.ok for row in self.rows)


def audit(ws: Workspace, slug: str, env: Mapping[str, str], rerun: bool = False) -> Audit:
    slug = ws.canonical(slug)
    roadmap = loading.load(ws, slug)
    receipts, refused = contract.sealed_receipts(ws, slug)
    tampered = [contract.refused(slug, refused)] if refused else []
    contracted: set[str] = set()
    records = 0
    for key, _path in contract.records(ws, slug):
        found, problem = contract.read(ws, key, slug)
        records += 1
        if found is not None:
            contracted.update(t.text for t in found.terms)
        elif problem == contract.TAMPERED:
            tampered.append(f"the run's contract record {contract.shown(ws, key, slug)}")
    rows = [_row(step, receipts, not records or text_hash(step.text) in contracted)
            for step in roadmap.steps]  # fmt: skip
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
    return Audit(slug, tuple(rows), records, tuple(tampered))


def _row(step: Step, receipts: list[dict[str, Any]], contracted: bool) -> Row:
    if step.mark != "done":
        return Row(step, "open" if step.mark == "open" else step.mark, contracted, None)
    mine = [r for r in receipts if r.get("text") == text_hash(step.text)]
    passed = [r for r in mine if r.get("exit_code") == 0 or r.get("command") is None]
    proving = [r for r in passed if r.get("command") == command_hash(step.verify)]
    if proving:
        return Row(step, "proven", contracted, proving[-1])
    if passed:
        return Row(step, "stale", contracted, passed[-1])
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
    try:
        found = subprocess.run(
            ["git", "merge-base", "--is-ancestor", head, "HEAD"], cwd=ws.root,
            capture_output=True, timeout=verify.GIT_TIMEOUT, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return True  # git cannot tell: the receipt is not held against the history
    return found.returncode == 0


def to_json(found: Audit) -> dict[str, Any]:
    return {
        "slug": found.slug,
        "ok": found.ok,
        "contracts": found.contracts,
        "tampered": list(found.tampered),
        "counts": {s: sum(r.status == s for r in found.rows) for s in STATUSES},
        "evidence": {w: sum(r.evidence == w for r in found.rows) for w in WORDS},
        "steps": [
            {
                "step": r.step.id,
                "label": r.step.label or None,
                "mark": r.step.mark,
                "status": r.status,
                "contracted": r.contracted,
                "evidence": r.evidence,
                "receipt": r.receipt,
                "rerun": None
                if r.rerun is None
                else {"exit_code": r.rerun.exit_code, "passed": r.rerun.passed},
            }
            for r in found.rows
        ],
    }
