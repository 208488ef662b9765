"""The run's contract: what a run promised when it began, and how the roadmap now stands
against it (docs/architecture.md, section 8). Pure: contract, roadmap and receipts in, a judgement out.

A contracted step is found again in the roadmap by the hash of its text (so renumbering is
not a change), else by its id (so a reworded step is named as reworded). It is closed only
by a receipt: a passing `verified` event for that step (by its id), its text and its verify
line, made after it joined the contract; the newest such receipt decides, so a failing
re-proof at the run's end reopens what an older pass closed.
"""

from __future__ import annotations

from agentcfg.core.digest import sha256_hex
from agentcfg.core.records import Record
from agentcfg.core.roadmap import Roadmap, Step

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any


def text_hash(text: str) -> str:
    return _sha256(text)


def command_hash(command: str | None) -> str | None:
    return None if command is None else _sha256(command)


def _sha256(text: str) -> str:
    return sha256_hex(text.encode("utf-8", "surrogatepass"))


class Term(Record):
    """One contracted step, as it stood when it joined the contract."""

    id: str  # its canonical id then
    text: str  # sha256 of its text
    verify: str | None  # its verify line
    blocked: bool  # blocked-by already then: staying so is no change
    since: float  # when it joined: only a receipt made since closes it

    @classmethod
    def of(cls, step: Step, since: float) -> Term:
        return cls(step.id, text_hash(step.text), step.verify, step.blocked, since)


class Contract(Record):
    mode: str | None  # the roadmap's execution.mode when the run began
    started_at: float
    terms: tuple[Term, ...]
    warned: tuple[str, ...] = ()  # the changes the gate has refused once (Change.key)

    @property
    def autonomous(self) -> bool:
        return self.mode == "autonomous"

    def to_json(self) -> dict[str, Any]:
        """The record's body: each step a list `[id, text, verify, blocked, since]`, `since` null
        when the step joined as the run began (most do), so a record stays near 100 bytes a step."""
        from agentcfg.core.times import iso_ms

        started = self.started_at
        return {
            "mode": self.mode,
            "started_at": iso_ms(started),
            "steps": [
                [t.id, t.text, t.verify, t.blocked, None if t.since == started else iso_ms(t.since)]
                for t in self.terms
            ],
            "warned": list(self.warned),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Contract | None:
        """A contract from its JSON, or None when anything has the wrong shape. A step written by
        an earlier version, an object of named fields, reads the same."""
        from agentcfg.core.times import parse_iso

        mode, started, steps, warned = (
            data.get("mode"),
            parse_iso(data.get("started_at")),
            data.get("steps"),
            data.get("warned"),
        )
        if not (isinstance(mode, (str, type(None))) and started is not None):
            return None
        if not (isinstance(steps, list) and isinstance(warned, list)):
            return None
        if not all(isinstance(w, str) for w in warned):
            return None
        terms: list[Term] = []
        for item in steps:
            if isinstance(item, dict):
                ident, text, verify, blocked = (
                    item.get(k) for k in ("id", "text", "verify", "blocked")
                )
                since = parse_iso(item.get("since"))
            elif isinstance(item, list) and len(item) == 5:
                ident, text, verify, blocked, joined = item
                since = started if joined is None else parse_iso(joined)
            else:
                return None
            if not (
                since is not None
                and isinstance(ident, str)
                and isinstance(text, str)
                and isinstance(verify, (str, type(None)))
                and isinstance(blocked, bool)
            ):
                return None
            terms.append(Term(ident, text, verify, blocked, since))
        return cls(mode, started, tuple(terms), tuple(warned))


class Receipt(Record):
    """What a passing verify line (or a step with none) left behind for one step."""

    step: str
    text: str  # sha256 of the step's text
    command: str | None  # sha256 of its verify line; None when it has none
    exit_code: int | None
    at: float
    final: bool = False  # made by the re-proof at the run's end (a failing one is kept too)

    @property
    def passed(self) -> bool:
        """Its verify line exited 0, or the step has none: nothing to run, the tick is the proof
        (a re-proof's receipt that failed says so whatever the step has)."""
        return self.exit_code == 0 or (self.command is None and not self.final)

    @classmethod
    def from_json(cls, item: object) -> Receipt | None:
        """A receipt from a line of state/receipts (its seal taken off); None when anything
        has the wrong shape."""
        from agentcfg.core.times import parse_iso

        if not isinstance(item, dict):
            return None
        at = parse_iso(item.get("at"))
        step, text, command, code = (item.get(k) for k in ("step", "text", "command", "exit_code"))
        if at is None or not (isinstance(step, str) and isinstance(text, str)):
            return None
        if not isinstance(command, (str, type(None))) or not (code is None or type(code) is int):
            return None
        return cls(step, text, command, code, at, item.get("final") is True)


class Change(Record):
    """A change to the contract the agent may not make: what it is and how to undo it."""

    step: str  # the contracted step's id; "" for the mode
    kind: str  # removed | reworded | verify | cancelled | deferred | blocked | mode
    was: str = ""  # what it was (the mode, the verify line), when that says how to undo it
    now: str = ""

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.step}:{_sha256(self.now)[:12]}"

    def describe(self) -> str:
        """The change and how to undo it, in one clause."""
        if self.kind == "mode":
            return (
                f"execution.mode changed from {self.was or 'none'} to {self.now or 'none'} "
                f"(set it back to {self.was or 'none'})"
            )
        return f"step {self.step} " + {
            "removed": "was removed or moved out of every phase (put it back)",
            "reworded": "was reworded (restore its text)",
            "verify": f"had its verify line changed (restore `{self.was or 'none'}`)",
            "cancelled": "was marked cancelled (reopen its box)",
            "deferred": "was marked deferred (reopen its box)",
            "blocked": f"was marked blocked-by {self.now or '(no id)'} (remove the marker)",
        }.get(self.kind, self.kind)


class Judgement(Record):
    changes: tuple[Change, ...]
    open_ids: frozenset[str]  # contracted or joining steps not closed: the ladder's open work
    unproven: tuple[Step, ...]  # ticked contracted steps without a valid receipt
    proven: int  # contracted steps closed by a receipt
    total: int  # contracted steps, joining ones included
    joining: tuple[Term, ...]  # steps the contract does not hold yet: they join it now


def baseline(roadmap: Roadmap, now: float) -> Contract:
    """The contract of a run that starts now: the mode and every step not yet done."""
    terms = tuple(Term.of(s, now) for s in roadmap.steps if s.mark == "open")
    return Contract(roadmap.mode, now, terms)


def proven(term: Term, receipts: tuple[Receipt, ...], step: str | None = None) -> bool:
    """Whether the newest receipt for this step (its id when it joined, or `step`, its id now),
    its text and its verify line, made since it joined, passed."""
    newest = deciding(receipts, frozenset((term.id, step or term.id)), term.text,
                      command_hash(term.verify), term.since)  # fmt: skip
    return newest is not None and newest.passed


def deciding(
    receipts: tuple[Receipt, ...],
    ids: frozenset[str],
    text: str,
    command: str | None,
    since: float,
) -> Receipt | None:
    """The receipt that decides whether a step is closed: the newest for one of its ids, its
    text and its verify line, made at or after `since`. Newest is the last written: receipts
    are only ever appended, and a time a receipt claims for itself could lie ahead."""
    found: Receipt | None = None
    for r in receipts:
        if r.step in ids and r.text == text and r.command == command and r.at >= since:
            found = r
    return found


def passed_since(receipts: tuple[Receipt, ...], step: str, since: float) -> bool:
    """Whether a receipt of this step (by its id) made at or after `since` passed: the gate's
    question of a step ticked since its previous fire, whatever its text or verify line."""
    return any(r.step == step and r.passed and r.at >= since for r in receipts)


def by_text(receipts: tuple[Receipt, ...]) -> dict[str, tuple[Receipt, ...]]:
    """The receipts of each step's text, oldest first: a term is held only against its own,
    so judging stays linear in the steps and the receipts, however many of each."""
    found: dict[str, list[Receipt]] = {}
    for r in receipts:
        found.setdefault(r.text, []).append(r)
    return {text: tuple(mine) for text, mine in found.items()}


def judge(
    contract: Contract, roadmap: Roadmap, receipts: tuple[Receipt, ...], now: float
) -> Judgement:
    """How the roadmap stands against the contract."""
    hashes = {id(s): text_hash(s.text) for s in roadmap.steps}
    held = by_text(receipts)
    matched = _match(contract.terms, roadmap.steps, hashes)
    taken = {id(s) for s in matched if s is not None}
    changes: list[Change] = []
    if contract.mode != roadmap.mode:
        changes.append(Change("", "mode", contract.mode or "", roadmap.mode or ""))
    open_ids: set[str] = set()
    unproven: list[Step] = []
    closed = 0
    for term, step in zip(contract.terms, matched, strict=True):
        closing = step.id if step is not None else None
        if (step is None or step.mark == "done") and proven(term, held.get(term.text, ()), closing):
            closed += 1  # what is done with a receipt stays done, however the text moves on
            continue
        change = _change(term, step, hashes)
        if change is not None:
            changes.append(change)
            open_ids.add(step.id if step is not None else term.id)
        elif step is not None and step.mark == "done":
            unproven.append(step)
            open_ids.add(step.id)
        elif step is not None and step.is_open:
            open_ids.add(step.id)
    # open steps the contract does not hold: added, or reopened after the run began
    added = [s for s in roadmap.steps if id(s) not in taken and s.mark == "open"]
    joining = tuple(Term.of(s, now) for s in added)
    open_ids.update(s.id for s in added if s.is_open)
    return Judgement(
        tuple(changes),
        frozenset(open_ids),
        tuple(unproven),
        closed,
        len(contract.terms) + len(joining),
        joining,
    )


def matched(contract: Contract, roadmap: Roadmap) -> list[tuple[Term, Step | None]]:
    """Each contracted step with the roadmap's step it is now (None: not found)."""
    hashes = {id(s): text_hash(s.text) for s in roadmap.steps}
    found = _match(contract.terms, roadmap.steps, hashes)
    return list(zip(contract.terms, found, strict=True))


def _match(
    terms: tuple[Term, ...], steps: tuple[Step, ...], hashes: dict[int, str]
) -> list[Step | None]:
    """Each term's step: same text (same id first), else same id; each step taken once."""
    by_text: dict[str, list[Step]] = {}
    for step in steps:
        by_text.setdefault(hashes[id(step)], []).append(step)
    taken: set[int] = set()
    found: list[Step | None] = [None] * len(terms)
    for n, term in enumerate(terms):  # the same text first, where it kept its id
        pick = None
        for step in by_text.get(term.text, ()):
            if id(step) not in taken:
                if step.id == term.id:
                    pick = step
                    break
                pick = step if pick is None else pick
        if pick is not None:
            found[n] = pick
            taken.add(id(pick))
    if None not in found:
        return found
    by_id = {s.id: s for s in steps}
    for n, term in enumerate(terms):  # then a reworded step, where its id still is
        same_id = by_id.get(term.id) if found[n] is None else None
        if same_id is not None and id(same_id) not in taken:
            found[n] = same_id
            taken.add(id(same_id))
    return found


def _change(term: Term, step: Step | None, hashes: dict[int, str]) -> Change | None:
    if step is None:
        return Change(term.id, "removed")
    if hashes[id(step)] != term.text:
        return Change(term.id, "reworded", now=step.text)
    if step.verify != term.verify:
        return Change(term.id, "verify", term.verify or "", step.verify or "")
    if step.mark in ("cancelled", "deferred"):
        return Change(term.id, step.mark)
    if step.blocked and not term.blocked:
        return Change(term.id, "blocked", now=step.blocked_by or "")
    return None


def grown(contract: Contract, joining: tuple[Term, ...]) -> Contract:
    return contract._replace(terms=contract.terms + joining)
