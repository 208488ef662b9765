"""Verify lines a person trusted, in a per-user store outside any repository.

A roadmap arrives with a branch; its verify lines run only once a person has read them
(`roadmap trust`), and again only while they stay as they were read. The workspace's
`notify.command` is trusted the same way. Trust covers a command's text, never the scripts
or tests that command runs.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentcfg import state
from agentcfg.contract import guard
from agentcfg.contract.guard_model import Guard
from agentcfg.core.digest import sha256_hex
from agentcfg.core.roadmap import Step
from agentcfg.core.times import iso
from agentcfg.errors import StateError, UntrustedError
from agentcfg.paths import TRUST_STORE, user_state
from agentcfg.workspace import Workspace

STORE_LIMIT = 8 * 1024 * 1024
VERSION = 1
_KINDS = {stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket", stat.S_IFDIR: "folder"}


def store_path(env: Mapping[str, str]) -> Path:
    return Path(user_state(env)) / TRUST_STORE


def digest(command: str) -> str:
    return sha256_hex(command.encode("utf-8", "surrogatepass"))


class _Bad:
    """Where the store held a number no JSON reader takes back: its entry is dropped."""


_BAD = _Bad()


def _number(text: str) -> Any:
    if len(text.lstrip("-")) > 24:
        return _BAD
    value = float(text) if any(c in text for c in ".eE") else int(text)
    return _BAD if value in (float("inf"), float("-inf")) else value


def _holds_bad(value: object) -> bool:
    if isinstance(value, dict):
        return any(_holds_bad(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_bad(v) for v in value)
    return value is _BAD


def _check(path: Path) -> None:
    """StateError unless the store is absent or a regular file of its own (not a link)."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StateError(f"the trust store {path} cannot be read: {exc.strerror}") from None
    if stat.S_ISLNK(found.st_mode):
        raise StateError(
            f"the trust store {path} is a symlink; it is never followed: remove it and trust again"
        )
    if not stat.S_ISREG(found.st_mode):
        kind = _KINDS.get(stat.S_IFMT(found.st_mode), "special file")
        raise StateError(f"the trust store {path} is a {kind}, not a file: remove it")


def _read(path: Path) -> dict[str, Any]:
    """The store; an entry holding an odd value is left out, an unreadable store is empty."""
    _check(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        fd = None
    except OSError as exc:
        raise StateError(f"the trust store {path} cannot be read: {exc.strerror}") from None
    raw = b"{}"
    if fd is not None:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # swapped since the check
                raise StateError(f"the trust store {path} is not a file: remove it")
            raw = handle.read(STORE_LIMIT + 1)
    try:
        data = json.loads(
            raw.decode("utf-8", "replace"),
            parse_int=_number,
            parse_float=_number,
            parse_constant=lambda name: _BAD,
        )
    except (ValueError, RecursionError):
        data = None
    if len(raw) > STORE_LIMIT or not isinstance(data, dict):
        data = {}
    sections = {
        section: {
            key: entry
            for key, entry in (entries.items() if isinstance(entries, dict) else ())
            if isinstance(entry, dict)
            and not _holds_bad(entry)
            and isinstance(entry.get("steps", {}), dict)
        }
        for section in ("roadmaps", "notify")
        for entries in [data.get(section)]
    }
    kept = {key: value for key, value in data.items() if not _holds_bad(value)}
    return {**kept, **sections, "version": VERSION}


@contextmanager
def _changing(env: Mapping[str, str]) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The store read under its lock, written back (atomically) as the caller leaves it."""
    path = store_path(env)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
    except OSError as exc:
        raise StateError(f"cannot write the trust store {path}: {exc.strerror}") from None
    with state.locked(path.with_name(path.name + ".lock"), private=False):
        data = _read(path)
        yield path, data
        try:
            text = json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"
            state.write_bytes(path, text.encode(), private_dir=False)
        except OSError as exc:
            raise StateError(f"cannot write the trust store {path}: {exc.strerror}") from None


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
    ws: Workspace,
    slug: str,
    steps: Sequence[Step],
    env: Mapping[str, str],
    now: float,
    guards: Mapping[str, Guard] | None = None,
) -> Path:
    """Trust these steps' verify lines (and no others) for this roadmap file, each with the
    guard of its check: the files it depends on as they are now, unless `guards` carries
    them from elsewhere; the store's path."""
    if guards is None:
        guards = guard.take(ws, slug, steps, env)
    with _changing(env) as (path, data):
        data["roadmaps"][_entry(ws, slug)] = {
            "trusted_at": iso(now),
            "steps": {step.id: digest(step.verify) for step in steps if step.verify},
            "guards": {name: taken.to_json() for name, taken in guards.items()},
        }
    return path


def trusted_guards(ws: Workspace, slug: str, env: Mapping[str, str]) -> dict[str, Guard]:
    """Step id -> the guard of its check as the person trusted it (steps trusted before
    guards were recorded have none)."""
    found = _read(store_path(env))["roadmaps"].get(_entry(ws, slug))
    listed = found.get("guards") if isinstance(found, dict) else None
    if not isinstance(listed, dict):
        return {}
    guards = {name: Guard.from_json(value) for name, value in listed.items()}
    return {name: taken for name, taken in guards.items() if taken is not None}


def _notify_entry(ws: Workspace) -> str:
    return str(ws.config.resolve())


def notify_digest(command: Sequence[str]) -> str:
    return digest(json.dumps(list(command), ensure_ascii=False))


def record_notify(
    ws: Workspace, command: Sequence[str], env: Mapping[str, str], now: float
) -> None:
    """Trust this workspace's notify command as it now reads."""
    with _changing(env) as (_, data):
        data["notify"][_notify_entry(ws)] = {
            "trusted_at": iso(now),
            "command": notify_digest(command),
        }


def notify_trusted(ws: Workspace, command: Sequence[str], env: Mapping[str, str]) -> bool:
    """A person trusted this workspace's notify command as it now reads (StateError when the
    store is not a file of its own)."""
    found = _read(store_path(env))["notify"].get(_notify_entry(ws))
    return isinstance(found, dict) and found.get("command") == notify_digest(command)


def require(ws: Workspace, slug: str, steps: Sequence[Step], env: Mapping[str, str]) -> None:
    """UntrustedError unless a person trusted every verify line of `steps` as it now reads,
    each for its own step: a line trusted for one step is not trusted for another."""
    known = trusted_lines(ws, slug, env)
    refused = [
        {
            "step": step.id,
            "command": step.verify,
            "reason": "changed" if step.id in known else "untrusted",
        }
        for step in steps
        if step.verify and known.get(step.id) != digest(step.verify)
    ]
    if refused:
        raise UntrustedError(slug, refused)
