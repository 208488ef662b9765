"""Checkpoints: the workspace kept as a commit before each step's work, and the way back to one.

A checkpoint is `refs/agentcfg/checkpoints/<slug>/<step>/<n>`: a commit of the working tree as
it is (untracked files included, ignored ones not) whose parent is HEAD, built in an index of
its own so that the person's index, HEAD and tree stay as they are. A rollback first keeps the
state it leaves the same way under `refs/agentcfg/attempts/<slug>/<step>/<n>`: nothing is lost.
"""

from __future__ import annotations

import contextlib
import os
import time

from agentcfg import state
from agentcfg.core import events
from agentcfg.core.records import Record
from agentcfg.core.times import iso, parse_iso
from agentcfg.errors import CheckpointError, StateError
from agentcfg.paths import CHECKPOINTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

    from agentcfg.workspace import Workspace

CHECKPOINT_REFS = "refs/agentcfg/checkpoints"
ATTEMPT_REFS = "refs/agentcfg/attempts"
HOOK_BUDGET = 1.5  # seconds a stop fire gives a checkpoint in all: well inside the chain's 3 s
COMMAND_BUDGET = 60.0  # seconds a command gives the git work of a checkpoint or a rollback
IDENTITY = {  # checkpoints are agentcfg's records, whoever the repository's author is
    "GIT_AUTHOR_NAME": "agentcfg",
    "GIT_AUTHOR_EMAIL": "agentcfg@localhost",
    "GIT_COMMITTER_NAME": "agentcfg",
    "GIT_COMMITTER_EMAIL": "agentcfg@localhost",
}


class Repo(Record):
    top: str  # the working tree's top folder
    gitdir: str  # this worktree's own git folder (its index lives there)
    head: str | None  # the commit HEAD names; None before the first commit
    branch: str | None = None  # the branch HEAD is on (`refs/heads/...`); None when detached


class Checkpoint(Record):
    step: str
    n: int
    ref: str
    commit: str
    at: float  # when it was taken
    run: str | None  # the run it was taken for, when one was known
    changed: int | None = None  # files that differ between it and the workspace now
    branch: str | None = None  # the branch it was taken on; None when HEAD was detached


class Rollback(Record):
    checkpoint: Checkpoint
    attempt: str  # the ref that keeps the state the rollback left
    reopened: tuple[str, ...]  # the steps whose boxes the rollback opened again


def in_repository(root: Path) -> bool:
    """Whether `root` or a folder above it holds `.git`: a stat or a few, no process."""
    folder = os.path.abspath(root)
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


class _Git:
    """git in one repository, every command bounded by what is left of one deadline."""

    def __init__(self, root: Path, budget: float, env: Mapping[str, str]) -> None:
        self.cwd = str(root)
        self.deadline = time.monotonic() + budget
        # the index is ours to name: a GIT_INDEX_FILE in the agent's shell never leaks in
        self.env = {k: v for k, v in env.items() if k != "GIT_INDEX_FILE"}

    def run(self, *args: str, index: str | None = None) -> str:
        """stdout of `git ARGS`; CheckpointError when it fails, runs out of time or cannot
        start."""
        found = self.attempt(*args, index=index, failing=True)
        assert found is not None
        return found

    def attempt(self, *args: str, index: str | None = None, failing: bool = False) -> str | None:
        """stdout of `git ARGS`, None when it fails (CheckpointError instead with `failing`);
        CheckpointError when it runs out of time or cannot start."""
        import subprocess  # only a fire that takes a checkpoint pays for it

        left = self.deadline - time.monotonic()
        if left <= 0:
            raise CheckpointError("git ran out of time")
        env = {**self.env, **IDENTITY}
        if index is not None:
            env["GIT_INDEX_FILE"] = index
        try:
            done = subprocess.run(
                ["git", *args], cwd=self.cwd, env=env, capture_output=True, encoding="utf-8",
                errors="replace", timeout=left, stdin=subprocess.DEVNULL, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise CheckpointError(f"`git {args[0]}` ran out of time") from None
        except OSError as exc:
            raise CheckpointError(f"cannot run git: {exc.strerror or exc}") from None
        if done.returncode != 0:
            if not failing:
                return None
            why = done.stderr.strip().splitlines()
            raise CheckpointError(f"`git {args[0]}` failed: {why[-1] if why else done.returncode}")
        return done.stdout

    def repo(self) -> Repo:
        found = self.attempt(
            "rev-parse", "--show-toplevel", "--absolute-git-dir", "HEAD", "--symbolic-full-name",
            "HEAD",
        )  # fmt: skip
        if found is None:  # no HEAD yet, or no repository at all: which one, for the message
            found = self.attempt("rev-parse", "--show-toplevel", "--absolute-git-dir") or ""
        lines = found.splitlines()
        if len(lines) < 2:
            raise CheckpointError("the workspace is not in a git repository with a working tree")
        self.cwd = lines[0]  # from the top: the whole tree, whatever folder the workspace is
        head = lines[2] if len(lines) > 2 else None
        branch = lines[3] if len(lines) > 3 and lines[3].startswith("refs/heads/") else None
        return Repo(lines[0], lines[1], head, branch)


class _Snapshot:
    """The working tree as a tree object, built in a copy of the person's index (its file
    stamps spare hashing what did not change); the copy is removed on leaving."""

    def __init__(self, git: _Git, repo: Repo) -> None:
        self.git, self.repo = git, repo
        self.index = os.path.join(repo.gitdir, f"agentcfg-snapshot-{os.getpid()}.index")
        self.tree = ""

    def __enter__(self) -> _Snapshot:
        try:
            with open(os.path.join(self.repo.gitdir, "index"), "rb") as source:
                data = source.read()
        except OSError:
            data = b""  # no index yet: git builds one
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        fd = os.open(self.index, flags, 0o600)
        with os.fdopen(fd, "wb") as copy:
            copy.write(data)
        try:
            self.git.run("add", "-A", "--", ".", index=self.index)
            self.tree = self.git.run("write-tree", index=self.index).strip()
        except BaseException:
            self._remove()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._remove()

    def _remove(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.index)


def _commit(git: _Git, repo: Repo, tree: str, message: str) -> str:
    parents = ("-p", repo.head) if repo.head else ()
    return git.run("commit-tree", tree, *parents, "-m", message).strip()


def _numbered(git: _Git, prefix: str) -> dict[int, tuple[str, str]]:
    """The refs `<prefix>/<n>`: n -> (ref, commit)."""
    found: dict[int, tuple[str, str]] = {}
    listed = git.run("for-each-ref", "--format=%(refname) %(objectname)", f"{prefix}/")
    for line in listed.splitlines():
        ref, _, commit = line.partition(" ")
        tail = ref.removeprefix(f"{prefix}/")
        if tail.isdigit():
            found[int(tail)] = (ref, commit)
    return found


def _keep(git: _Git, prefix: str, commit: str) -> tuple[str, int]:
    """`commit` under the next free `<prefix>/<n>`; an update of a ref that must not exist yet,
    so two writers never take the same number."""
    n = max(_numbered(git, prefix), default=0) + 1
    for attempt in range(3):
        ref = f"{prefix}/{n + attempt}"
        if git.attempt("update-ref", ref, commit, "") is not None:
            return ref, n + attempt
    raise CheckpointError(f"cannot write a ref under {prefix}/")


def _message(title: str, slug: str, step: str, run: str | None, now: float, repo: Repo) -> str:
    lines = [title, "", f"slug: {slug}", f"step: {step}", f"taken: {iso(now)}"]
    lines += [f"branch: {repo.branch}"] if repo.branch else []
    return "\n".join([*lines, *([f"run: {run}"] if run else [])]) + "\n"


def _shown(branch: str | None) -> str:
    return f"branch `{branch.removeprefix('refs/heads/')}`" if branch else "a detached HEAD"


def _prefix(kind: str, slug: str, step: str) -> str:
    return f"{kind}/{slug}/{step}"


def take(
    ws: Workspace, slug: str, step: str, run: str | None, now: float, env: Mapping[str, str],
    budget: float = COMMAND_BUDGET,
) -> Checkpoint:  # fmt: skip
    """Keep the working tree as the checkpoint before `step`; index, HEAD and tree untouched."""
    git = _Git(ws.root, budget, env)
    repo = git.repo()
    if repo.head is None:
        raise CheckpointError("the repository has no commit yet to take a checkpoint on")
    with _Snapshot(git, repo) as snap:
        message = _message(f"agentcfg checkpoint before step {step}", slug, step, run, now, repo)
        commit = _commit(git, repo, snap.tree, message)
    ref, n = _keep(git, _prefix(CHECKPOINT_REFS, slug, step), commit)
    return Checkpoint(step, n, ref, commit, now, run, branch=repo.branch)


# -- the stop hook and the driver: one checkpoint when the step engaged changes --------------


def _record_path(ws: Workspace, slug: str) -> Path:
    return ws.state / CHECKPOINTS / f"{slug}.json"


def last_step(ws: Workspace, slug: str) -> str | None:
    """The step the last checkpoint of the roadmap was taken (or tried) for."""
    found = state.read_json(_record_path(ws, slug))
    step = found.get("step") if found is not None else None
    return step if isinstance(step, str) else None


def before_step(
    ws: Workspace, slug: str, step: str, run: str | None, now: float, env: Mapping[str, str],
    budget: float = HOOK_BUDGET, again: bool = False,
) -> Checkpoint | None:  # fmt: skip
    """A checkpoint before `step` unless the last one was taken for it already (`again`: a new
    run's first step takes one whatever came before). Never raises: a checkpoint that cannot be
    taken is a ledger event, and the work goes on. Outside a git repository: no checkpoint, no
    event."""
    if not again and last_step(ws, slug) == step:
        return None
    taken: Checkpoint | None = None
    try:
        if in_repository(ws.root):
            taken = take(ws, slug, step, run, now, env, budget)
            fields: dict[str, object] = {"step": step, "ref": taken.ref, "commit": taken.commit}
            state.append_ledger(ws.state, state.event(events.CHECKPOINT, now, run, slug, **fields))
    except (CheckpointError, OSError, ValueError) as exc:  # the work goes on without one
        fields = {"step": step, "reason": str(exc) or type(exc).__name__}
        state.append_ledger(
            ws.state, state.event(events.CHECKPOINT_FAILED, now, run, slug, **fields)
        )
    # tried once per step, in a repository or not: a repository too slow for the budget is not
    # tried at every fire, and a fire outside one loads nothing more until the step changes
    try:
        record = {"step": step, "ref": taken.ref if taken else None, "at": iso(now), "run": run}
        state.write_json(_record_path(ws, slug), record)
    except (OSError, StateError):
        pass
    return taken


def forget(ws: Workspace, slug: str) -> None:
    """After a rollback, the next step engaged takes a checkpoint again."""
    state.remove(_record_path(ws, slug))


# -- the person's commands ------------------------------------------------------------------


def listed(
    ws: Workspace, slug: str, env: Mapping[str, str], changes: bool = True
) -> list[Checkpoint]:
    """The roadmap's checkpoints, oldest first; with `changes`, how many files differ between
    each and the workspace as it is now (untracked files included)."""
    git = _Git(ws.root, COMMAND_BUDGET, env)
    repo = git.repo()
    prefix = f"{CHECKPOINT_REFS}/{slug}/"
    fields = "%(refname)%00%(objectname)%00%(contents)%00"
    found: list[Checkpoint] = []
    for record in git.run("for-each-ref", f"--format={fields}", prefix).split("\0\n"):
        parts = record.split("\0")
        if len(parts) < 3:
            continue
        ref, commit, message = parts[0].strip(), parts[1], parts[2]
        step, _, n = ref.removeprefix(prefix).rpartition("/")
        if not step or not n.isdigit():
            continue
        facts = dict(_facts(message))
        at = parse_iso(facts.get("taken")) or 0.0
        found.append(
            Checkpoint(step, int(n), ref, commit, at, facts.get("run"), branch=facts.get("branch"))
        )
    found.sort(key=lambda c: (c.at, c.step, c.n))
    if not changes or not found or repo.head is None:
        return found
    with _Snapshot(git, repo) as snap:
        return [c._replace(changed=_differ(git, c.commit, snap.tree)) for c in found]


def _differ(git: _Git, commit: str, tree: str) -> int:
    """How many files differ between a checkpoint and a tree."""
    return len(git.run("diff-tree", "-r", "--name-only", commit, tree).splitlines())


def _facts(message: str) -> Iterator[tuple[str, str]]:
    for line in message.splitlines()[2:]:
        name, sep, value = line.partition(": ")
        if sep:
            yield name, value.strip()


def newest(ws: Workspace, slug: str, step: str, env: Mapping[str, str]) -> Checkpoint:
    """The last checkpoint taken before `step`; CheckpointError naming the steps that have one."""
    mine = [c for c in listed(ws, slug, env, changes=False) if c.step == step]
    if mine:
        return max(mine, key=lambda c: c.n)
    steps = sorted({c.step for c in listed(ws, slug, env, changes=False)})
    have = f"steps with one: {', '.join(steps)}" if steps else "it has none"
    raise CheckpointError(f"roadmap `{slug}` has no checkpoint before step {step} ({have})")


def restore(ws: Workspace, slug: str, found: Checkpoint, now: float, env: Mapping[str, str]) -> str:
    """Keep the workspace as it is under the next `refs/agentcfg/attempts/<slug>/<step>/<n>`,
    then bring the branch (HEAD) back to the checkpoint's parent and the working tree to the
    checkpoint (files made since removed, ignored files left alone), the index to the branch.
    Returns the ref that keeps what was left."""
    git = _Git(ws.root, COMMAND_BUDGET, env)
    repo = git.repo()
    parent = (git.attempt("rev-parse", "--verify", "--quiet", f"{found.commit}^1") or "").strip()
    if not parent:
        raise CheckpointError(f"checkpoint {found.ref} has no commit to bring the branch back to")
    if found.branch != repo.branch:  # never moves a branch the checkpoint was not taken on
        on = _shown(found.branch)
        raise CheckpointError(
            f"checkpoint {found.ref} was taken on {on}, and the worktree is on "
            f"{_shown(repo.branch)}: check out {on} first"
        )
    with _Snapshot(git, repo) as snap:
        title = f"agentcfg attempt at step {found.step}, kept by a rollback"
        kept = _commit(git, repo, snap.tree, _message(title, slug, found.step, None, now, repo))
        attempt, _n = _keep(git, _prefix(ATTEMPT_REFS, slug, found.step), kept)
        # the snapshot's index is the tree as it is: reading the checkpoint over it rewrites
        # what differs and removes what the checkpoint lacks, and nothing else
        git.run("read-tree", "--reset", "-u", found.commit, index=snap.index)
    git.run("reset", "--quiet", "--mixed", parent)  # the branch and the index; the tree stays
    return attempt


def rollback(
    ws: Workspace, slug: str, step: str, now: float, env: Mapping[str, str], by: str
) -> Rollback:
    """Bring the workspace back to the checkpoint before `step`, the current state kept first;
    the steps closed since open again, and every run's contract on the roadmap starts from the
    roadmap as restored (as `roadmap trust` does), so a receipt made before closes nothing."""
    from agentcfg import claims, loading
    from agentcfg.contract import store as contract
    from agentcfg.contract import verify

    slug = ws.canonical(slug)
    found = newest(ws, slug, step, env)
    before = _ticked(ws, slug)
    ignored = _ignored(ws.roadmap_path(slug), env)
    attempt = restore(ws, slug, found, now, env)
    if ignored:  # the checkpoint does not hold the roadmap, so its ticks stayed: the steps
        # `roadmap done` closed since the checkpoint are opened here, every other byte as it is
        receipts = contract.read_receipts(ws, slug)
        since = {r.step for r in receipts if r.at >= found.at and r.passed and not r.final}
        for ticked in _ticked(ws, slug):
            if ticked in since:
                verify.mark_open(ws, slug, ticked)
    roadmap = loading.load(ws, slug)
    after = {s.id for s in roadmap.steps if s.mark == "done"}
    reopened = tuple(s for s in before if s not in after)
    live = {c.key for c in claims.all_claims(ws) if c.slug == slug}
    runs = contract.rebaseline(ws, slug, roadmap, live, now)
    forget(ws, slug)
    fields: dict[str, object] = {
        "step": step, "checkpoint": found.ref, "attempt": attempt, "reopened": list(reopened),
        "runs": runs, "by": by,
    }  # fmt: skip
    state.append_ledger(ws.state, state.event(events.ROLLED_BACK, now, None, slug, **fields))
    return Rollback(found, attempt, reopened)


def _ignored(path: Path, env: Mapping[str, str]) -> bool:
    """Whether git ignores the file, so that no checkpoint holds it."""
    git = _Git(path.parent, COMMAND_BUDGET, env)
    return git.attempt("check-ignore", "--quiet", "--", path.name) is not None


def _ticked(ws: Workspace, slug: str) -> tuple[str, ...]:
    from agentcfg import loading
    from agentcfg.errors import AgentcfgError

    try:
        return tuple(s.id for s in loading.load(ws, slug).steps if s.mark == "done")
    except AgentcfgError:
        return ()
