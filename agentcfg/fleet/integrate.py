"""Integrating a fleet member's branch: merge it, settle the roadmap's ticks, prove the step again.

A step a fleet member closed in its own worktree is done for the fleet only once its branch is
merged into the fleet's branch and the step's verify line passes on the merged tree. The
roadmap file is merged by its marks (`core.ticks`), so ticks on adjacent lines never conflict;
any other conflict, or a verify line that fails after the merge, leaves the fleet's branch as
it was and the member's branch for a person.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentcfg import loading
from agentcfg.contract import carried, finals, trust
from agentcfg.contract.verify import changed_checks, find_step, mark_open, receipt, run
from agentcfg.core import ticks
from agentcfg.core.roadmap import parse_roadmap
from agentcfg.errors import IntegrationError
from agentcfg.fleet.leases import IDENTITY
from agentcfg.paths import ROADMAPS
from agentcfg.workspace import Workspace

GIT_TIMEOUT = 120.0
# whether git knows a committer's name, by checkout and environment: asked once a process, for
# every merge and commit a fleet's member makes
_IDENTIFIED: dict[tuple[Path, frozenset[tuple[str, str]]], bool] = {}


@dataclass(frozen=True)
class Integration:
    branch: str
    step: str
    outcome: str  # "integrated", "conflict" or "reverify-failed"
    commit: str | None = None  # the merge commit, when integrated
    detail: str = ""
    unticked: tuple[str, ...] = ()  # boxes the member ticked besides its own step: reopened


def integrate(
    target: Path,
    branch: str,
    slug: str,
    step_id: str,
    env: Mapping[str, str],
    *,
    timeout: float,
) -> Integration:
    """Merge `branch` into the branch checked out at `target` and re-run the step's verify
    line there; commit the merge only when both succeed."""
    if git(target, "status", "--porcelain", "--untracked-files=no").stdout.strip():
        raise IntegrationError(f"{target} has uncommitted changes; integrate into a clean tree")
    merging = git(target, "merge", "--no-ff", "--no-commit", branch, check=False)
    if merging.returncode != 0:
        left = _settle(target, f"{ROADMAPS}/{slug}.md")
        if left is None and not _merge_in_progress(target):
            raise IntegrationError(f"git merge {branch} failed: {_last_line(merging)}")
        if left:
            _abort(target)
            return Integration(branch, step_id, "conflict", detail=", ".join(left))
    try:
        _keep_ours(target, (carried.shown(slug), finals.shown(slug)))
        return _prove(target, branch, slug, step_id, env, timeout)
    except BaseException:
        _abort(target)
        raise


def _prove(
    target: Path, branch: str, slug: str, step_id: str, env: Mapping[str, str], timeout: float
) -> Integration:
    """The merged tree's verify run for the step, then the merge commit; the merge is undone
    when the step fails there."""
    ws = Workspace(target)
    unticked = _untick_others(target, ws, slug, step_id)
    roadmap = loading.load(ws, slug)
    step = find_step(roadmap, step_id)
    result = None
    if step.verify:
        trust.require(ws, slug, [step], env)
        changed = changed_checks(ws, slug, [step], env).get(step.id)
        if changed:  # the check itself is not the one a person trusted
            _abort(target)
            shown = f"check changed: {', '.join(changed)}"
            return Integration(branch, step.id, "reverify-failed", detail=shown)
        result = run(step, target, timeout)
        if not result.passed:
            _abort(target)
            shown = "timed out" if result.exit_code is None else f"exit {result.exit_code}"
            return Integration(branch, step.id, "reverify-failed", detail=shown)
    made = receipt(ws, slug, roadmap, step, env, result)  # proven on the fleet's branch
    if made is not None:  # the receipt travels with the integration, on the branch
        carried.add(ws, slug, made)
        git(target, "add", "--force", "--", carried.shown(slug))
    if _merge_in_progress(target):
        git(target, "commit", "--quiet", "--no-edit", "--no-verify")
    elif unticked or made is not None:  # nothing in progress: a commit of its own
        said = (f"reopen what step {step.id}'s member ticked without its proof" if unticked
                else f"step {step.id}'s receipt")  # fmt: skip
        git(target, "commit", "--quiet", "--no-verify", "-m", f"agentcfg: {slug}: {said}")
    commit = git(target, "rev-parse", "HEAD").stdout.strip()
    return Integration(branch, step.id, "integrated", commit, unticked=unticked)


def _keep_ours(target: Path, paths: tuple[str, ...]) -> None:
    """The fleet's own records on its branch as the branch had them, whatever the member's
    branch brought: only an integration or the fleet's final re-proof writes them."""
    changed = git(target, "diff", "--cached", "--name-only", "HEAD", "--", *paths).stdout
    for path in changed.splitlines():
        if git(target, "cat-file", "-e", f"HEAD:{path}", check=False).returncode == 0:
            git(target, "checkout", "HEAD", "--", path)
        else:
            git(target, "rm", "--quiet", "--cached", "--force", "--", path)
            (target / path).unlink(missing_ok=True)


def _untick_others(target: Path, ws: Workspace, slug: str, step_id: str) -> tuple[str, ...]:
    """Reopen every box the merge ticked besides the member's leased step: only that step is
    proven (again, here) for the fleet; a tick merged in without its proof never counts."""
    path = f"{ROADMAPS}/{slug}.md"
    held = blob(target, f"HEAD:{path}")  # UTF-8 as the roadmap is, whatever the locale's
    if held is None:
        return ()
    before = parse_roadmap(held.decode("utf-8", "surrogateescape"))
    was_done = {s.text for s in before.steps if s.mark == "done"}
    merged = loading.load(ws, slug)
    others = [s.id for s in merged.steps
              if s.mark == "done" and s.id != step_id and s.text not in was_done]  # fmt: skip
    for other in others:
        mark_open(ws, slug, other)
    if others:
        git(target, "add", "--", path)
    return tuple(others)


def _settle(target: Path, roadmap: str) -> list[str] | None:
    """Resolve a conflicted roadmap by its marks; the files still in conflict after that
    (None when git reported no conflicted file at all)."""
    listed = git(target, "diff", "--name-only", "--diff-filter=U").stdout.splitlines()
    if not listed:
        return None
    left = [name for name in listed if name != roadmap]
    if roadmap in listed:
        merged = merge_roadmap(target, roadmap)
        if merged is None:
            left.append(roadmap)
        else:
            (target / roadmap).write_bytes(merged.encode("utf-8", "surrogateescape"))
            git(target, "add", "--", roadmap)
    return left


def merge_roadmap(target: Path, path: str) -> str | None:
    """The three sides of a conflicted roadmap merged with their ticks as a union; None when
    something besides the marks conflicts."""
    base, ours, theirs = (_stage(target, n, path) for n in (1, 2, 3))
    sides = (ticks.unticked(ours, base), base, ticks.unticked(theirs, base))
    with tempfile.TemporaryDirectory() as folder:
        files = []
        for name, text in zip(("ours", "base", "theirs"), sides, strict=True):
            file = Path(folder, name)
            file.write_bytes(text.encode("utf-8", "surrogateescape"))
            files.append(str(file))
        merged = subprocess.run(
            ["git", "merge-file", "-p", *files], capture_output=True, timeout=GIT_TIMEOUT
        )
    if merged.returncode != 0:
        return None
    return ticks.retick(merged.stdout.decode("utf-8", "surrogateescape"), base, ours, theirs)


def _stage(target: Path, number: int, path: str) -> str:
    """One side of a conflicted file, its line endings as they are."""
    data = blob(target, f":{number}:{path}")
    return "" if data is None else data.decode("utf-8", "surrogateescape")


def blob(target: Path, name: str) -> bytes | None:
    """A file as git holds it (`<commit>:<path>`, `:<stage>:<path>`), its bytes as they are
    (text mode would fold line endings and fail on another encoding); None when git has none
    by that name."""
    try:
        shown = subprocess.run(
            ["git", "-C", str(target), "cat-file", "blob", name],
            capture_output=True, timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise IntegrationError(f"git cat-file failed: {exc}") from None
    return shown.stdout if shown.returncode == 0 else None


def _merge_in_progress(target: Path) -> bool:
    return git(target, "rev-parse", "-q", "--verify", "MERGE_HEAD", check=False).returncode == 0


def _abort(target: Path) -> None:
    git(target, "merge", "--abort", check=False)


def _last_line(result: subprocess.CompletedProcess[str]) -> str:
    return ((result.stderr or result.stdout).strip().splitlines() or ["no message"])[-1]


def git(
    target: Path, *args: str, check: bool = True, timeout: float = GIT_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """`git ARGS` in `target`, read as UTF-8, with agentcfg's name on a commit where git knows
    none; IntegrationError when it cannot run, runs out of `timeout`, or (`check`) fails."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_MERGE_AUTOEDIT": "no", "LC_ALL": "C"}
    if args[0] in ("merge", "commit") and not has_identity(target, env):
        env.update(IDENTITY)  # merge commits need a name: agentcfg's, where git has none
    try:
        result = subprocess.run(
            ["git", "-C", str(target), *args],
            capture_output=True,
            encoding="utf-8",
            errors="surrogateescape",
            env=env,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise IntegrationError(f"git {args[0]} failed: {exc}") from None
    if check and result.returncode != 0:
        raise IntegrationError(f"git {args[0]} failed: {_last_line(result)}")
    return result


def has_identity(target: Path, env: Mapping[str, str]) -> bool:
    """Whether git knows a name to put on a commit made in `target` (asked once a process)."""
    key = (target, frozenset(env.items()))
    if key not in _IDENTIFIED:
        asked = subprocess.run(
            ["git", "-C", str(target), "var", "GIT_COMMITTER_IDENT"],
            capture_output=True, env=env, timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        _IDENTIFIED[key] = asked.returncode == 0
    return _IDENTIFIED[key]
