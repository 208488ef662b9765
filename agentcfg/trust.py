"""Verify lines a person trusted, in a per-user store outside any repository.

A roadmap arrives with a branch; its verify lines run only once a person has read them
(`roadmap trust`), and again only while they stay as they were read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentcfg import state
from agentcfg.core.roadmap import Step
from agentcfg.core.times import iso
from agentcfg.errors import StateError, UntrustedError
from agentcfg.paths import sha256_hex
from agentcfg.workspace import Workspace

STORE_LIMIT = 8 * 1024 * 1024
VERSION = 1


def store_path(env: Mapping[str, str]) -> Path:
    """$XDG_STATE_HOME/agentcfg/trust.json, else ~/.local/state/agentcfg/trust.json."""
    base = env.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):
        home = env.get("HOME") or str(Path.home())
        base = os.path.join(home, ".local", "state")
    return Path(base) / "agentcfg" / "trust.json"


def digest(command: str) -> str:
    return sha256_hex(command.encode("utf-8", "surrogatepass"))


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            raw = handle.read(STORE_LIMIT + 1)
        data = state.loads(raw) if len(raw) <= STORE_LIMIT else None
    except (OSError, ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("roadmaps"), dict):
        return {"version": VERSION, "roadmaps": {}}
    return data


def _entry(ws: Workspace, slug: str) -> str:
    return str(ws.roadmap_path(slug).resolve())


def trusted_lines(ws: Workspace, slug: str, env: Mapping[str, str]) -> dict[str, str]:
    """Step id -> sha256 of the verify line a person trusted, for this roadmap file."""
    found = _read(store_path(env))["roadmaps"].get(_entry(ws, slug))
    steps = found.get("steps") if isinstance(found, dict) else None
    if not isinstance(steps, dict):
        return {}
    return {k: v for k, v in steps.items() if isinstance(v, str)}


def record(
    ws: Workspace, slug: str, steps: Sequence[Step], env: Mapping[str, str], now: float
) -> Path:
    """Trust these steps' verify lines (and no others) for this roadmap file; the store's path."""
    path = store_path(env)
    data = _read(path)
    data["roadmaps"][_entry(ws, slug)] = {
        "trusted_at": iso(now),
        "steps": {step.id: digest(step.verify) for step in steps if step.verify},
    }
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        state.write_bytes(
            path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode(), private_dir=False
        )
    except OSError as exc:
        raise StateError(f"cannot write the trust store {path}: {exc.strerror}") from None
    return path


def require(ws: Workspace, slug: str, steps: Sequence[Step], env: Mapping[str, str]) -> None:
    """UntrustedError unless a person trusted every verify line of `steps` as it now reads."""
    known = trusted_lines(ws, slug, env)
    hashes = set(known.values())
    refused = [
        {
            "step": step.id,
            "command": step.verify,
            "reason": "changed" if step.id in known else "untrusted",
        }
        for step in steps
        if step.verify and digest(step.verify) not in hashes
    ]
    if refused:
        raise UntrustedError(slug, refused)
