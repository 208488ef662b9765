"""The final record: what the re-proof at a run's end found, kept in state/finals/<slug>.json.

`complete` is recorded only once every contracted step's verify line ran again on the final
tree (`contract/reprove.py`); the stop hook accepts `complete` only with a record that covers the run's
contract and the roadmap as they are now. Reading it is one small JSON file: the interpreter's
own modules only, as the hook reads it on the fire that would end a run.
"""

from __future__ import annotations

from agentcfg import state
from agentcfg.contract import seal
from agentcfg.contract.model import command_hash, matched, text_hash
from agentcfg.core.digest import sha256_hex
from agentcfg.core.records import Record
from agentcfg.core.times import iso_ms, parse_iso
from agentcfg.paths import FINALS, STATE
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from agentcfg.contract.model import Contract
    from agentcfg.core.roadmap import Roadmap

VERSION = 1


class Proved(Record):
    """One step as the re-proof found it."""

    step: str  # its id
    text: str  # sha256 of its text
    command: str | None  # sha256 of its verify line; None when it has none
    passed: bool
    reason: str = ""  # why it failed: "exit 1", "open", "check changed: <files>", ...

    def to_json(self) -> dict[str, Any]:
        return self._asdict()

    @classmethod
    def from_json(cls, item: object) -> Proved | None:
        if not isinstance(item, dict):
            return None
        step, text, command, passed, reason = (
            item.get(k) for k in ("step", "text", "command", "passed", "reason")
        )
        if not (isinstance(step, str) and isinstance(text, str) and isinstance(passed, bool)):
            return None
        if not (isinstance(command, (str, type(None))) and isinstance(reason, str)):
            return None
        return cls(step, text, command, passed, reason)


class Final(Record):
    slug: str
    at: float
    seconds: float  # how long the re-proof took
    roadmap: str  # the roadmap's steps as they were re-proven (roadmap_digest)
    steps: tuple[Proved, ...]

    @property
    def passed(self) -> bool:
        return all(p.passed for p in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "slug": self.slug,
            "at": iso_ms(self.at),
            "seconds": round(self.seconds, 3),
            "passed": self.passed,
            "roadmap": self.roadmap,
            "steps": [p.to_json() for p in self.steps],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Final | None:
        """The record from its body (version and seal checked by its reader); None when
        anything has the wrong shape."""
        slug, at, seconds, digest, listed = (
            data.get("slug"),
            parse_iso(data.get("at")),
            data.get("seconds"),
            data.get("roadmap"),
            data.get("steps"),
        )
        if not isinstance(slug, str) or at is None or not isinstance(digest, str):
            return None
        if not isinstance(seconds, (int, float)) or not isinstance(listed, list):
            return None
        steps = tuple(p for p in map(Proved.from_json, listed) if p is not None)
        if len(steps) != len(listed):
            return None
        return cls(slug, at, float(seconds), digest, steps)


def path_of(ws: Workspace, slug: str) -> Path:
    return ws.state / FINALS / f"{slug}.json"


def shown(slug: str) -> str:
    """The record's path as a person reads it (and as git holds it on a fleet's branch)."""
    return f"{STATE}/{FINALS}/{slug}.json"


def roadmap_digest(roadmap: Roadmap) -> str:
    """Every step's id, text, verify line, mark and blocker: a tick, an untick or an edit made
    after the re-proof means it no longer covers the roadmap."""
    lines = "\n".join(
        f"{s.id}\t{text_hash(s.text)}\t{s.verify or ''}\t{s.mark}\t{int(s.blocked)}"
        for s in roadmap.steps
    )
    return sha256_hex(lines.encode("utf-8", "surrogatepass"))


def write_final(ws: Workspace, final: Final) -> None:
    body = final.to_json()
    state.write_json(
        path_of(ws, final.slug), {**body, seal.FIELD: seal.sign(FINALS, final.slug, body)}
    )


def read_final(ws: Workspace, slug: str, sealed: bool = True) -> Final | None:
    """The roadmap's final record; None when absent, of another shape, or (unless a caller
    vouches for it otherwise: `sealed` False) when its seal fails."""
    data = state.read_json(path_of(ws, slug))
    if data is None or data.get("version") != VERSION or data.get("slug") != slug:
        return None
    body = {k: v for k, v in data.items() if k != seal.FIELD}
    if sealed and not seal.check(FINALS, slug, body, data.get(seal.FIELD)):
        return None
    return Final.from_json(body)


def covers(final: Final | None, contract: Contract | None, roadmap: Roadmap) -> bool:
    """Whether the final record proves the run's end: it passed, on the roadmap as it is now,
    for every contracted step still in it (without a contract: every ticked step)."""
    if final is None or not final.passed or final.roadmap != roadmap_digest(roadmap):
        return False
    proved = {(p.step, p.text, p.command) for p in final.steps if p.passed}
    if contract is None:
        wanted = [s for s in roadmap.steps if s.mark == "done"]
    else:
        wanted = [step for _term, step in matched(contract, roadmap) if step is not None]
    return all((s.id, text_hash(s.text), command_hash(s.verify)) in proved for s in wanted)


def reopened(ws: Workspace, slug: str, roadmap: Roadmap) -> tuple[str, ...]:
    """The steps the last re-proof failed that are open now: what the continuation names."""
    path = path_of(ws, slug)
    if not (path.exists() or path.is_symlink()):
        return ()
    final = read_final(ws, slug)
    failed = {p.step for p in final.steps if not p.passed} if final is not None else set()
    return tuple(s.id for s in roadmap.steps if s.id in failed and s.mark == "open")


def as_receipts(final: Final | None) -> list[dict[str, Any]]:
    """The record's entries as receipts (`final`: a failing one counts too): what `roadmap
    audit` reads, in a fresh clone of a fleet's branch as in the workspace it was made in."""
    if final is None:
        return []
    return [
        {
            "step": p.step,
            "text": p.text,
            "command": p.command,
            "exit_code": 0 if p.passed else None,
            "at": iso_ms(final.at),
            "final": True,
            "reason": p.reason,
        }
        for p in final.steps
    ]
