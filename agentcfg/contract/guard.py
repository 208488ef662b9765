"""Guarded files on disk: what a verify line's check read when a person trusted it, and what
changed since (contract/guard_model.py decides which files count).

A person trusts a check, not just its command: `roadmap trust` records the digests of the
files it depends on; `roadmap done` refuses to close a step whose check changed since, and
names the files. A refusal is remembered in state/checks/<slug>.json for the stop hook, which
then halts the run `halt-check-changed`.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from agentcfg import state
from agentcfg.contract import guard_model as model
from agentcfg.contract.guard_model import Guard
from agentcfg.core.digest import sha256_hex
from agentcfg.core.roadmap import Step
from agentcfg.core.times import iso_ms
from agentcfg.paths import CHECKS, ROADMAPS, STATE
from agentcfg.workspace import Workspace

FILE_LIMIT = 16 * 1024 * 1024  # a guarded file larger than this counts by its size and time


class Tree:
    """The workspace's files as the checks see them: listed once, each file read at most once
    for each part of it that counts, however many checks ask."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: list[tuple[str, Path]] | None = None
        self._digests: dict[tuple[str, str], str | None] = {}

    def take(self, command: str, globs: Iterable[str] = ()) -> Guard:
        """The guard of a check as the workspace holds it now."""
        patterns = model.patterns(command, globs)
        files = self._matching(patterns)
        absent: list[str] = []
        for path in model.named_paths(command):
            full = self.root / path
            if _agentcfgs(path):
                continue
            if full.is_dir() and not full.is_symlink():
                for rel, inner in _files(self.root, full):  # a named folder: what it holds now
                    files[rel] = self._whole(rel, inner)
            elif full.is_file():
                files[path] = self._whole(path, full)
            elif model.runs(command, path):
                absent.append(path)
        return Guard(patterns, files, tuple(absent))

    def changed(self, guard: Guard) -> tuple[str, ...]:
        """The guarded files that changed, were deleted, or were created since the guard was
        taken: named files by their digest; any new match of a pattern counts as created."""
        now = self._matching(guard.patterns)
        for path in guard.files:
            if path in now or any(model.matches(p, path) for p in guard.patterns):
                continue
            full = self.root / path
            if full.is_file() and not full.is_symlink():
                now[path] = self._whole(path, full)
        return model.changes(guard.files, now)

    def _matching(self, patterns: Mapping[str, str]) -> dict[str, str]:
        """Path -> digest of the part that counts, for every file matching a pattern."""
        if not patterns:
            return {}
        if self._files is None:
            self._files = list(_files(self.root, self.root))
        found: dict[str, str] = {}
        for rel, full in self._files:
            for pattern, part in patterns.items():
                if model.matches(pattern, rel):
                    digest = self._digest(rel, full, part)
                    if digest is not None:
                        found[rel] = digest
                    break
        return found

    def _whole(self, rel: str, full: Path) -> str:
        found = self._digest(rel, full, "file")
        return found if found is not None else "unreadable"

    def _digest(self, rel: str, full: Path, part: str) -> str | None:
        key = (rel, part)
        if key not in self._digests:
            self._digests[key] = _part_digest(full, part)
        return self._digests[key]


def take(
    ws: Workspace, slug: str, steps: Iterable[Step], env: Mapping[str, str]
) -> dict[str, Guard]:
    """Step id -> the guard of its check now, for each step with a verify line, with the
    person's `contract.guard` globs."""
    globs, _ = settings(ws, slug, env)
    tree = Tree(ws.root)
    return {step.id: tree.take(step.verify, globs) for step in steps if step.verify}


def _files(root: Path, folder: Path) -> Iterable[tuple[str, Path]]:
    """(path from the root with `/`, full path) of every regular file under `folder`, past
    folders no runner collects from; symlinks are never followed."""
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith(".") and entry.name not in model.SKIPPED:
                    stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                full = Path(entry.path)
                rel = full.relative_to(root).as_posix()
                if not _agentcfgs(rel):
                    yield rel, full


def _agentcfgs(path: str) -> bool:
    """A path agentcfg itself writes or guards otherwise: the roadmaps (ticked by `roadmap
    done`, held by the run's contract) and the state folder. No check's guard covers them."""
    top = path.split("/", 1)[0]
    return top in (ROADMAPS, STATE)


def _part_digest(full: Path, part: str) -> str | None:
    try:
        info = full.lstat()
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > FILE_LIMIT:
            return f"size:{info.st_size}:{info.st_mtime_ns}"
        data = full.read_bytes()
    except OSError:
        return "unreadable"
    kept = model.relevant(part, data)
    return None if kept is None else sha256_hex(kept)


# -- the person's settings: contract.guard and contract.require ---------------------------------


def settings(ws: Workspace, slug: str, env: Mapping[str, str]) -> tuple[tuple[str, ...], str]:
    """The guard globs and the evidence required, from the roadmap's frontmatter `contract:`
    and agentcfg.yaml's `contract:` (globs from both; the roadmap's `require` wins)."""
    from agentcfg.config import REQUIRABLE, load_config
    from agentcfg.core.roadmap import read_frontmatter

    config = load_config(ws, env)
    try:
        meta = read_frontmatter(ws.roadmap_path(slug).read_text("utf-8", "replace"))
    except OSError:
        meta = {}
    section = meta.get("contract")
    globs: list[str] = list(config.guard)
    require = config.require
    if isinstance(section, dict):
        listed = section.get("guard")
        if isinstance(listed, str):
            listed = [listed]
        if isinstance(listed, list):
            globs += [g for g in listed if isinstance(g, str) and g.strip()]
        wanted = section.get("require")
        if isinstance(wanted, str) and wanted in REQUIRABLE:
            require = wanted
    return tuple(dict.fromkeys(globs)), require


# -- a refusal remembered for the stop hook -------------------------------------------------------


def refusal_path(ws: Workspace, slug: str) -> Path:
    return ws.state / CHECKS / f"{slug}.json"


def remember_refusal(
    ws: Workspace, slug: str, step: Step, files: Sequence[str], now: float
) -> None:
    """`roadmap done` refused this step because its check changed: the next turn end halts."""
    with _refusals(ws, slug) as steps:
        steps[step.id] = {"files": list(files), "at": iso_ms(now)}


def forget_refusal(ws: Workspace, slug: str, step_id: str) -> None:
    """The step's check is as trusted again (the change was undone)."""
    if refusal_path(ws, slug).exists():
        with _refusals(ws, slug) as steps:
            steps.pop(step_id, None)


def forget_refusals(ws: Workspace, slug: str) -> None:
    """A person re-trusted the roadmap: its checks are as they trusted them again."""
    state.remove(refusal_path(ws, slug))


@contextlib.contextmanager
def _refusals(ws: Workspace, slug: str) -> Iterator[dict[str, object]]:
    path = refusal_path(ws, slug)
    with state.locked(path.with_suffix(".lock")):
        found = (state.read_json(path) or {}).get("steps")
        steps: dict[str, object] = found if isinstance(found, dict) else {}
        yield steps
        if steps:
            state.write_json(path, {"steps": steps})
        else:
            state.remove(path)
