"""Wiring the stop hook into each host's own config file: merge in, take out, find.

The merge is pure (a document in, a document out); reading and the atomic write are the shell.
Every other key and hook of the file stays where it was.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcfg import state
from agentcfg.errors import AgentcfgError

HOOK_TIMEOUT = 30  # seconds; the chain itself gives up after 3


class InstallError(AgentcfgError):
    """A host's config file cannot be read or changed safely."""


@dataclass(frozen=True)
class HostFile:
    host: str
    event: str  # the host's name for the stop event
    project: str  # path of the config file under the project root
    user: str  # path under the home folder


HOST_FILES = {
    "claude": HostFile("claude", "Stop", ".claude/settings.json", ".claude/settings.json"),
    "codex": HostFile("codex", "Stop", ".codex/hooks.json", ".codex/hooks.json"),
    "gemini": HostFile("gemini", "AfterAgent", ".gemini/settings.json", ".gemini/settings.json"),
    "cursor": HostFile("cursor", "stop", ".cursor/hooks.json", ".cursor/hooks.json"),
}


def hook_command(host: str) -> str:
    """The command to register: absolute paths, so it runs from any folder of the project."""
    script = Path(sys.executable).parent / "agentcfg"
    if script.is_file() and os.access(script, os.X_OK):
        words = [str(script), "hook", "stop", "--host", host]
    else:
        words = [sys.executable, "-m", "agentcfg", "hook", "stop", "--host", host]
    return shlex.join(words)


def is_ours(command: object) -> bool:
    if not isinstance(command, str):
        return False
    words = command.split()
    return any(w.endswith("agentcfg") for w in words) and "hook" in words and "stop" in words


def config_path(host: str, scope: str, root: Path, home: Path) -> Path:
    spec = HOST_FILES[host]
    return (root / spec.project) if scope == "project" else (home / spec.user)


def merged(host: str, document: dict[str, Any], command: str) -> dict[str, Any]:
    """The document with our stop hook in it, once; an older command of ours is replaced."""
    result = copy.deepcopy(document)
    spec = HOST_FILES[host]
    hooks = result.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError("its `hooks` is not an object")
    if host == "cursor" and "version" not in result:
        result = {"version": 1, **result}
        hooks = result["hooks"]
    entries = hooks.setdefault(spec.event, [])
    if not isinstance(entries, list):
        raise InstallError(f"its `hooks.{spec.event}` is not a list")
    entry = _entry(host, command)
    if host == "cursor":
        if _ours(host, entries) == [entry]:
            return result  # installed already, exactly as it would be now
        _remove_ours(host, entries)
        entries.append(entry)
        return result
    if _ours(host, entries) == [entry]:
        return result
    _remove_ours(host, entries)
    entries.append({"matcher": "*", "hooks": [entry]} if host == "gemini" else {"hooks": [entry]})
    return result


def without(host: str, document: dict[str, Any]) -> dict[str, Any]:
    """The document with every stop hook of ours taken out, and the containers that held only it."""
    result = copy.deepcopy(document)
    spec = HOST_FILES[host]
    hooks = result.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError("its `hooks` is not an object")
    entries = hooks.get(spec.event, [])
    if not isinstance(entries, list):
        raise InstallError(f"its `hooks.{spec.event}` is not a list")
    if not _remove_ours(host, entries):
        return result
    if not entries:
        del hooks[spec.event]
    if not hooks:
        del result["hooks"]
        if host == "cursor" and result == {"version": 1}:
            result = {}
    return result


def _entry(host: str, command: str) -> dict[str, Any]:
    if host == "cursor":
        return {"command": command}
    if host == "gemini":  # Gemini counts its timeout in milliseconds
        return {
            "name": "agentcfg-stop",
            "type": "command",
            "command": command,
            "timeout": HOOK_TIMEOUT * 1000,
        }
    return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}


def _ours(host: str, entries: list[Any]) -> list[dict[str, Any]]:
    hooks = (
        entries
        if host == "cursor"
        else [h for g in entries if isinstance(g, dict) for h in _inner(g)]
    )
    return [h for h in hooks if isinstance(h, dict) and is_ours(h.get("command"))]


def _remove_ours(host: str, entries: list[Any]) -> bool:
    """Take our hooks out of an event's list, and any group that held nothing else; True if any."""
    found = bool(_ours(host, entries))
    if host == "cursor":
        entries[:] = [e for e in entries if not (isinstance(e, dict) and is_ours(e.get("command")))]
        return found
    kept = []
    for group in entries:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(inner, list):
            rest = [h for h in inner if not (isinstance(h, dict) and is_ours(h.get("command")))]
            if inner and not rest:
                continue  # the group held only ours
            group["hooks"] = rest
        kept.append(group)
    entries[:] = kept
    return found


def installed(host: str, document: dict[str, Any]) -> list[str]:
    """The commands of ours registered for the stop event."""
    spec = HOST_FILES[host]
    hooks = document.get("hooks")
    entries = hooks.get(spec.event) if isinstance(hooks, dict) else None
    if not isinstance(entries, list):
        return []
    return [h["command"] for h in _ours(host, entries)]


def _inner(group: dict[str, Any]) -> list[dict[str, Any]]:
    inner = group.get("hooks")
    return [h for h in inner if isinstance(h, dict)] if isinstance(inner, list) else []


def read_document(path: Path) -> dict[str, Any] | None:
    """The file's JSON object, None when the file does not exist; InstallError when malformed."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); it was left as it is") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; it was left as it is")
    return data


def render(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


@dataclass(frozen=True)
class Change:
    path: Path
    action: str  # "created" | "updated" | "unchanged" | "removed" | "absent"
    before: bytes | None
    after: bytes | None


def apply(path: Path, host: str, command: str | None, dry_run: bool) -> Change:
    """Install (`command`) or uninstall (None) our hook in one host config file."""
    document = read_document(path)
    if document is None and command is None:
        return Change(path, "absent", None, None)
    try:
        updated = (
            merged(host, document or {}, command) if command else without(host, document or {})
        )
    except InstallError as exc:
        raise InstallError(f"{path}: {exc}; it was left as it is") from None
    before = path.read_bytes() if document is not None else None
    if updated == document:
        return Change(path, "unchanged", before, before)
    if command is None and updated == {}:
        if not dry_run:
            path.unlink()
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # the folder install made for it, if nothing else is there
        return Change(path, "removed", before, None)
    after = render(updated)
    if not dry_run:
        state.write_bytes(path, after, mode=_mode(path), private_dir=False)
    return Change(path, "created" if document is None else "updated", before, after)


def _mode(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o644
