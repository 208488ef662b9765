"""Wiring the stop hook into a host's own config file: merge in, take out, read.

What the file looks like is the host module's business (`Host.install`, `uninstall`,
`registered`); this module reads, renders and writes it atomically. Every other key and hook
of the file stays where it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcfg import state
from agentcfg.errors import InstallError
from agentcfg.hosts.base import HostFileError
from agentcfg.hosts.registry import adapter


def hook_command(host: str) -> str:
    """The command to register: absolute paths, so it runs from any folder of the project."""
    script = Path(sys.executable).parent / "agentcfg"
    if script.is_file() and os.access(script, os.X_OK):
        words = [str(script), "hook", "stop", "--host", host]
    else:
        words = [sys.executable, "-m", "agentcfg", "hook", "stop", "--host", host]
    return shlex.join(words)


def config_path(host: str, scope: str, root: Path, home: Path, env: Mapping[str, str]) -> Path:
    return adapter(host).config_path(scope, root, home, env)


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


def registered(host: str, path: Path) -> list[str]:
    """The commands of ours a host's config file registers; InstallError when malformed."""
    document = read_document(path)
    return adapter(host).registered(document) if document is not None else []


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
    spec = adapter(host)
    try:
        updated = (
            spec.install(document or {}, command) if command else spec.uninstall(document or {})
        )
    except HostFileError as exc:
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
