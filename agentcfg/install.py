"""Wiring the stop hook into a host's own config file: merge in, take out, read.

What the file looks like is the host module's business (`Host.parse`, `render`, `install`,
`uninstall`, `registered`, `trust`); this module reads and writes it atomically. Every other
key and hook of the file stays where it was.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcfg import state
from agentcfg.errors import InstallError
from agentcfg.hosts.base import Finding, HostFileError
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
    """The host's config file; InstallError when a project's host folder (`.claude/`, ...)
    or the file itself is a symlink that leads out of the project."""
    path = adapter(host).config_path(scope, root, home, env)
    if scope == "project" and path.is_relative_to(root):
        inside = root.resolve()
        for folder in [*[*path.relative_to(root).parents][-2::-1], path.relative_to(root)]:
            real = (root / folder).resolve()
            if (root / folder).is_symlink() and not real.is_relative_to(inside):
                raise InstallError(
                    f"{root / folder} is a symlink to {real}, outside the project; "
                    "it was left as it is"
                )
    return path


def _refuse_second_route(host: str, root: Path, home: Path, env: Mapping[str, str]) -> None:
    """InstallError when our plugin already runs the stop hook in this host: one route at a time."""
    spec = adapter(host)
    plugin = spec.plugin(root, home, env)
    if plugin is not None:
        raise InstallError(
            f"the agentcfg plugin runs the stop hook in {spec.TITLE} already ({plugin.record});"
            f" to wire the hook here instead, remove the plugin first: {plugin.remove}"
        )


def read_document(host: str, path: Path) -> dict[str, Any] | None:
    """The host's file as a document, None when it does not exist; InstallError when malformed."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return adapter(host).parse(raw)
    except HostFileError as exc:
        raise InstallError(f"{path}: {exc}; it was left as it is") from None


def registered(host: str, path: Path) -> list[str]:
    """The commands of ours a host's config file registers; InstallError when malformed."""
    document = read_document(host, path)
    return adapter(host).registered(document) if document is not None else []


@dataclass(frozen=True)
class Change:
    path: Path
    action: str  # "created" | "updated" | "unchanged" | "removed" | "absent"
    before: bytes | None
    after: bytes | None
    what: str = "the stop hook"


@dataclass(frozen=True)
class Wiring:
    """What `hooks install|uninstall` changed, and what the host still needs to run the hook."""

    changes: tuple[Change, ...]
    missing: tuple[Finding, ...]


def wire(
    host: str,
    scope: str,
    root: Path,
    home: Path,
    env: Mapping[str, str],
    *,
    remove: bool = False,
    trust: bool = False,
    dry_run: bool = False,
) -> Wiring:
    """Install (or remove) the stop hook; with `trust`, also the trust the host needs for it.

    Removing always takes out the trust an install wrote.
    """
    if not remove:
        _refuse_second_route(host, root, home, env)
    path = config_path(host, scope, root, home, env)
    change = apply(path, host, None if remove else hook_command(host), dry_run)
    changes = [change]
    if remove or trust:
        text = change.before if remove else change.after
        document = adapter(host).parse(text or b"")
        edit = apply_trust(host, document, path, root, home, env, not remove, dry_run)
        if edit is not None and (trust or edit.action != "absent"):
            changes.append(edit)
    missing = [] if remove or dry_run else adapter(host).checks(path, root, home, env)
    return Wiring(tuple(changes), tuple(f for f in missing if f.level != "ok"))


def apply(path: Path, host: str, command: str | None, dry_run: bool) -> Change:
    """Install (`command`) or uninstall (None) our hook in one host config file."""
    document = read_document(host, path)
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
    after = spec.render(updated)
    if not dry_run:  # through a symlinked file to its target: the link stays a link
        target = path.resolve() if path.is_symlink() else path
        state.write_bytes(target, after, mode=_mode(path), private_dir=False)
    return Change(path, "created" if document is None else "updated", before, after)


def apply_trust(
    host: str,
    document: dict[str, Any],
    path: Path,
    root: Path,
    home: Path,
    env: Mapping[str, str],
    grant: bool,
    dry_run: bool,
) -> Change | None:
    """Write (or take out) the trust the host keeps for our hook; None for a host with none."""
    try:
        edit = adapter(host).trust(document, path, root, home, env, grant)
    except HostFileError as exc:
        raise InstallError(f"{exc}; it was left as it is") from None
    if edit is None:
        return None
    what = f"{adapter(host).TITLE}'s trust in the stop hook"
    try:
        before = edit.before.encode() if edit.before is not None else None
        after = edit.after.encode()
    except UnicodeEncodeError:  # the trust names the project's folder, and a file holds UTF-8
        raise InstallError(
            f"the project's path {os.fsencode(root)!r} is not UTF-8, so "
            f"{adapter(host).TITLE}'s trust cannot name it; rename the folder"
        ) from None
    if before == after or (before is None and not after):
        return Change(edit.path, "unchanged" if before else "absent", before, before, what)
    if not after:
        if not dry_run:
            edit.path.unlink()
        return Change(edit.path, "removed", before, None, what)
    if not dry_run:  # through a symlinked file to its target: the link stays a link
        target = edit.path.resolve() if edit.path.is_symlink() else edit.path
        state.write_bytes(target, after, mode=_mode(edit.path, 0o600), private_dir=False)
    return Change(edit.path, "created" if before is None else "updated", before, after, what)


def _mode(path: Path, default: int = 0o644) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return default
