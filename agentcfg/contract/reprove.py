"""The re-proof at a run's end: every contracted step's trusted verify line runs again on the
final tree before `complete` is recorded (docs/architecture.md, section 8).

A step that fails is reopened (its box unticked) and the run goes on, told; a verify line that
several steps share runs once. Each step's outcome is a receipt marked `final` (a failing one
too: the newest receipt decides), and the whole is the roadmap's final record
(`contract/finals.py`), which the stop hook asks for before it lets a run end `complete`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcfg import loading, state
from agentcfg.config import load_config
from agentcfg.contract import carried, finals, trust, verify
from agentcfg.contract import store as contract
from agentcfg.contract.finals import Final, Proved
from agentcfg.contract.model import Receipt, command_hash, deciding, judge, matched, text_hash
from agentcfg.contract.verify import VerifyResult
from agentcfg.core import events
from agentcfg.core.roadmap import Roadmap, Step, scan
from agentcfg.core.times import iso_ms
from agentcfg.errors import AgentcfgError
from agentcfg.workspace import Workspace

Run = Callable[[Step, Path, float], VerifyResult]
Changed = Callable[[Step], tuple[str, ...]]


@dataclass(frozen=True)
class Reproof:
    """What the re-proof found: the steps that passed, those that failed (with why), those it
    reopened, and how long it took."""

    slug: str
    passed: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]  # (step id, reason)
    reopened: tuple[str, ...]
    seconds: float
    commands: int  # verify lines run (a shared one once)

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def steps(self) -> int:
        return len(self.passed) + len(self.failed)

    def summary(self) -> str:
        """For the ending: "re-proof 3 steps in 1.2 s" (and how many failed)."""
        noun = "step" if self.steps == 1 else "steps"
        line = f"re-proof {self.steps} {noun} in {self.seconds:.1f} s"
        return line + (f", {len(self.failed)} failed" if self.failed else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "ok": self.ok,
            "passed": list(self.passed),
            "failed": [{"step": step, "reason": why} for step, why in self.failed],
            "reopened": list(self.reopened),
            "seconds": round(self.seconds, 3),
            "commands": self.commands,
        }


def guarded(ws: Workspace, slug: str, env: Mapping[str, str]) -> Changed:
    """`changed` as the commands pass it: the guarded files of a step's check that changed
    since a person trusted it (verify.changed_checks)."""

    def changed(step: Step) -> tuple[str, ...]:
        return verify.changed_checks(ws, slug, [step], env).get(step.id, ())

    return changed


def contracted(ws: Workspace, slug: str, roadmap: Roadmap) -> dict[str, frozenset[str]]:
    """The roadmap's steps any run on it contracted, in the roadmap's order, each with the ids
    its receipts may name (its own, and its id when it joined); with no record of a run, every
    ticked step (as `roadmap audit` counts them)."""
    ids: dict[str, set[str]] = {}
    records = 0
    for key, _path in contract.records(ws, slug):
        records += 1
        found, _problem = contract.read(ws, key, slug)
        for term, step in matched(found, roadmap) if found is not None else ():
            if step is not None:
                ids.setdefault(step.id, {step.id}).add(term.id)
    if not records:
        ids = {s.id: {s.id} for s in roadmap.steps if s.mark == "done"}
    return {s.id: frozenset(ids[s.id]) for s in roadmap.steps if s.id in ids}


def closed_out(ws: Workspace, slug: str, now: float) -> bool:
    """Every run on the roadmap has closed every step of its contract, and nothing is left
    blocked: the moment to re-prove them all (the `roadmap done` of the last one)."""
    roadmap = loading.load(ws, slug)
    receipts = contract.read_receipts(ws, slug)
    judged = [
        judge(found, roadmap, receipts, now)
        for key, _path in contract.records(ws, slug)
        for found in (contract.read(ws, key, slug)[0],)
        if found is not None
    ]
    blocked = any(s.blocked and s.mark == "open" for s in roadmap.steps)
    return bool(judged) and not blocked and all(not j.open_ids for j in judged)


def reprove(
    ws: Workspace,
    slug: str,
    env: Mapping[str, str],
    *,
    now: float,
    changed: Changed | None = None,
    run: Run = verify.run,
    only: frozenset[str] | None = None,
    reopen: bool = True,
    record: bool = True,
    clock: Callable[[], float] = time.monotonic,
    key: str | None = None,
    branch: bool = False,
) -> Reproof:
    """Run every contracted step's trusted verify line again (`only`: just these steps, a fleet
    member's); reopen the ticked ones that fail; record each outcome as a `final` receipt and,
    with `record`, the roadmap's final record.

    `changed(step)`: the files its check guards that changed since a person trusted it (a step
    with any counts as failed, "check changed: <files>"); None: nothing changed. With `branch`
    (a fleet's final re-proof on its branch), the receipts the branch carries count too: those
    of the steps other machines integrated (carried.py).
    """
    started = clock()
    slug = ws.canonical(slug)
    roadmap = loading.load(ws, slug)
    ids = contracted(ws, slug, roadmap)
    steps = [s for s in roadmap.steps if s.id in ids and (only is None or s.id in only)]
    stored = _stored(ws, slug, branch)
    receipts = tuple(r for r in map(Receipt.from_json, stored) if r is not None)
    known = _trusted(ws, slug, env)
    timeout = load_config(ws, env).verify_timeout
    outcomes: dict[str, tuple[bool, str]] = {}
    ran: dict[str, VerifyResult] = {}  # by command: a line shared by several steps runs once
    for step in steps:
        outcomes[step.id] = _outcome(
            step, ids[step.id], changed, known, receipts, ran, ws.root, timeout, run
        )
    seconds = clock() - started
    for step in steps:
        fields = _final_receipt(step, outcomes[step.id], ran, now)
        confirmed = _proof(stored, ids[step.id], fields) if outcomes[step.id][0] else None
        if confirmed is not None and "evidence" in confirmed:
            fields["evidence"] = confirmed["evidence"]  # what the proof it confirms showed
        contract.add_receipt(ws, slug, fields, roadmap)
    failed = tuple((s.id, outcomes[s.id][1]) for s in steps if not outcomes[s.id][0])
    passed = tuple(s.id for s in steps if outcomes[s.id][0])
    reopened = _reopen(ws, slug, steps, failed) if reopen else ()
    found = Reproof(slug, passed, failed, reopened, seconds, len(ran))
    after = loading.load(ws, slug)
    key = key if key is not None else verify.run_key(env)  # the driver names its own run
    _log(ws, events.REPROOF, slug, after, now, key, passed=list(found.passed),
         failed=[list(f) for f in failed], seconds=round(seconds, 3), commands=len(ran))  # fmt: skip
    if reopened:
        _log(ws, events.REPROOF_REOPENED, slug, after, now, key, steps=list(reopened))
    if record:
        finals.write_final(ws, _final(slug, after, steps, outcomes, now, seconds))
    return found


def _final(
    slug: str,
    roadmap: Roadmap,
    steps: list[Step],
    outcomes: dict[str, tuple[bool, str]],
    now: float,
    seconds: float,
) -> Final:
    """The roadmap's final record: each re-proven step's outcome, on the roadmap as it ends."""
    proved = tuple(
        Proved(s.id, text_hash(s.text), command_hash(s.verify), *outcomes[s.id]) for s in steps
    )
    return Final(slug, now, seconds, finals.roadmap_digest(roadmap), proved)


def _final_receipt(
    step: Step, outcome: tuple[bool, str], ran: dict[str, VerifyResult], now: float
) -> dict[str, object]:
    """The receipt of one step's outcome in the re-proof, marked `final`."""
    passed, reason = outcome
    fields: dict[str, object] = {
        "step": step.id,
        "text": text_hash(step.text),
        "command": command_hash(step.verify),
        "line": step.verify,
        "exit_code": 0 if passed else _code(ran.get(step.verify or "")),
        "at": iso_ms(now),
        "final": True,
    }
    return {**fields, "reason": reason} if reason else fields


def _reopen(
    ws: Workspace, slug: str, steps: list[Step], failed: tuple[tuple[str, str], ...]
) -> tuple[str, ...]:
    """Untick the failed steps that are ticked; those the roadmap no longer lets be are left."""
    reopened: list[str] = []
    for step_id, _why in failed:
        step = next(s for s in steps if s.id == step_id)
        if step.mark == "done":
            try:
                verify.mark_open(ws, slug, step_id)
            except AgentcfgError:
                continue
            reopened.append(step_id)
    return tuple(reopened)


def _outcome(
    step: Step,
    ids: frozenset[str],
    changed: Changed | None,
    known: dict[str, str] | None,
    receipts: tuple[Receipt, ...],
    ran: dict[str, VerifyResult],
    root: Path,
    timeout: float,
    run: Run,
) -> tuple[bool, str]:
    """Whether one step passes again on the tree as it is, and why not."""
    if step.mark != "done":
        return False, "blocked" if step.blocked and step.mark == "open" else step.mark
    newest = deciding(receipts, ids, text_hash(step.text), command_hash(step.verify), 0.0)
    if newest is None or not newest.passed:  # a tick without a receipt never counts
        return False, "no receipt"
    if not step.verify:  # nothing to run: its receipt of `roadmap done --no-verify` closes it
        return True, ""
    if known is None or known.get(step.id) != trust.digest(step.verify):
        return False, "not trusted"
    files = changed(step) if changed is not None else ()
    if files:
        return False, "check changed: " + ", ".join(files)
    result = ran.get(step.verify)
    if result is None:
        result = ran[step.verify] = run(step, root, timeout)
    if result.passed:
        return True, ""
    return False, "timed out" if result.exit_code is None else f"exit {result.exit_code}"


def _proof(
    stored: list[dict[str, Any]], ids: frozenset[str], fields: dict[str, object]
) -> dict[str, Any] | None:
    """The newest passing receipt of this step, text and verify line: the proof a passing
    re-proof confirms (an earlier re-proof's carries the evidence of the proof it confirmed)."""
    for item in reversed(stored):
        same = item.get("text") == fields["text"] and item.get("command") == fields["command"]
        passed = item.get("exit_code") == 0 or item.get("command") is None
        if same and passed and item.get("step") in ids:
            found: dict[str, Any] = item
            return found
    return None


def _stored(ws: Workspace, slug: str, branch: bool) -> list[dict[str, Any]]:
    """The roadmap's sealed receipts, with `branch` those its branch carries (as committed),
    in the order they were made."""
    stored = contract.sealed_receipts(ws, slug)[0]
    if not branch:
        return stored
    own, others = carried.read(ws, slug)
    kept = others if verify.committed(ws.root, carried.shown(slug)) else []
    return sorted([*stored, *own, *kept], key=lambda item: str(item.get("at")))


def _trusted(ws: Workspace, slug: str, env: Mapping[str, str]) -> dict[str, str] | None:
    try:
        return trust.trusted_lines(ws, slug, env)
    except AgentcfgError:
        return None


def _code(result: VerifyResult | None) -> int | None:
    """The exit code a failing step's receipt shows: its line's, or None when nothing of its
    own failed (never 0, which would read as a pass)."""
    return None if result is None or result.passed else result.exit_code


def _log(
    ws: Workspace,
    event: str,
    slug: str,
    roadmap: Roadmap,
    now: float,
    key: str | None,
    **fields: object,
) -> None:
    """A ledger event of the re-proof, tied to the run it proves (`key`), when one is known."""
    counts = scan(roadmap).counts
    record = state.event(event, now, key, slug, open=counts.open, blocked=counts.blocked, **fields)
    state.append_ledger(ws.state, record)
