"""Step leases in git refs: compare-and-swap in one repository, its worktrees, and a shared remote."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentcfg.errors import LeaseError
from agentcfg.fleet.leases import MAX_TTL, Store, ref_of
from tests.helpers import git

NOW = 1_800_000_000.0


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "fleet@example.invalid")
    git(path, "config", "user.name", "fleet")
    (path / "README.md").write_text("fleet\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "start")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def test_a_live_lease_is_one_holders_until_it_expires(repo: Path) -> None:
    store = Store(repo)
    first = store.take("demo", "1.1", "s-a", host="claude", now=NOW, ttl=60)
    assert first is not None and first.fence == 1 and first.holder == "s-a"
    assert store.take("demo", "1.1", "s-b", host="claude", now=NOW + 59, ttl=60) is None
    taken_over = store.take("demo", "1.1", "s-b", host="codex", now=NOW + 61, ttl=60)
    assert taken_over is not None and taken_over.fence == 2 and taken_over.host == "codex"
    # fencing: the first holder can no longer act on the step
    assert not store.holds("demo", "1.1", "s-a", 1)
    assert store.holds("demo", "1.1", "s-b", 2)


def test_renewing_keeps_the_fence_and_moves_the_expiry(repo: Path) -> None:
    store = Store(repo)
    lease = store.take("demo", "1.1", "s-a", host="claude", now=NOW, ttl=60)
    assert lease is not None
    renewed = store.renew(lease, now=NOW + 50, ttl=60)
    assert renewed is not None and renewed.fence == 1 and renewed.expires == NOW + 110
    assert store.take("demo", "1.1", "s-b", host="claude", now=NOW + 100, ttl=60) is None
    # a holder taking its own live lease again renews it too
    again = store.take("demo", "1.1", "s-a", host="claude", now=NOW + 100, ttl=60)
    assert again is not None and again.fence == 1 and again.taken == NOW


def test_a_lost_lease_cannot_be_renewed(repo: Path) -> None:
    store = Store(repo)
    lease = store.take("demo", "1.1", "s-a", host="claude", now=NOW, ttl=10)
    assert lease is not None
    assert store.take("demo", "1.1", "s-b", host="claude", now=NOW + 11, ttl=10) is not None
    assert store.renew(lease, now=NOW + 12) is None


def test_release_frees_the_step_and_the_fence_keeps_growing(repo: Path) -> None:
    store = Store(repo)
    store.take("demo", "1.1", "s-a", host="claude", now=NOW)
    assert not store.release("demo", "1.1", "s-b", now=NOW + 1)  # not s-b's to give back
    assert store.release("demo", "1.1", "s-a", now=NOW + 1)
    assert not store.release("demo", "1.1", "s-a", now=NOW + 2)  # already released
    again = store.take("demo", "1.1", "s-b", host="claude", now=NOW + 2)
    assert again is not None and again.fence == 2
    assert store.release("demo", "1.1", None, now=NOW + 3)  # a person's override


def test_listing_shows_each_step_of_a_roadmap(repo: Path) -> None:
    store = Store(repo)
    store.take("demo", "1.1", "s-a", host="claude", now=NOW)
    store.take("demo", "1.2", "s-b", host="claude", now=NOW)
    store.take("other", "2.1", "s-c", host="claude", now=NOW)
    assert [(x.step, x.holder) for x in store.all("demo")] == [("1.1", "s-a"), ("1.2", "s-b")]
    assert len(store.all()) == 3


def test_worktrees_of_one_repository_share_the_leases(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "agent-2"), "-b", "agent-2")
    assert Store(repo).take("demo", "1.1", "s-a", host="claude", now=NOW) is not None
    assert Store(tmp_path / "agent-2").take("demo", "1.1", "s-b", host="claude", now=NOW) is None


def test_an_unreadable_record_is_cleared_by_a_person_only(repo: Path) -> None:
    store = Store(repo)
    store.take("demo", "1.1", "s-a", host="claude", now=NOW)
    tree = git(repo, "hash-object", "-t", "tree", "-w", "/dev/null")
    junk = git(repo, "commit-tree", tree, "-m", "not a lease")
    git(repo, "update-ref", ref_of("demo", "1.1"), junk)
    assert store.read("demo", "1.1") == (junk, None)
    assert not store.release("demo", "1.1", "s-a", now=NOW + 1)
    assert store.release("demo", "1.1", None, now=NOW + 1)
    lease = store.take("demo", "1.1", "s-b", host="claude", now=NOW + 2)
    assert lease is not None and lease.fence > 1


@pytest.mark.parametrize("slug, step", [("demo", "..x"), ("a.lock", "1.1"), ("demo", "1 2")])
def test_names_git_cannot_hold_are_refused(slug: str, step: str) -> None:
    with pytest.raises(LeaseError, match="cannot name a lease"):
        ref_of(slug, step)


@pytest.mark.slow  # a scale test: fifty racing takers
def test_fifty_racing_takers_on_two_clones_leave_exactly_one_holder(tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "seed")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(remote)], check=True)
    clones = []
    for name in ("one", "two"):
        subprocess.run(["git", "clone", "-q", str(remote), str(tmp_path / name)], check=True)
        clones.append(Store(tmp_path / name, coordinate="origin"))

    def attempt(n: int) -> str | None:
        lease = clones[n % 2].take("demo", "1.1", f"s-{n}", host="claude", now=NOW)
        return None if lease is None else lease.holder

    with ThreadPoolExecutor(max_workers=50) as pool:
        winners = [w for w in pool.map(attempt, range(50)) if w is not None]
    assert len(winners) == 1
    for store in clones:
        _, lease = store.read("demo", "1.1")
        assert lease is not None and lease.holder == winners[0] and lease.fence == 1
    clones[0].take("other", "2.1", "s-x", host="codex", now=NOW)
    assert [(x.slug, x.step) for x in clones[1].all()] == [("demo", "1.1"), ("other", "2.1")]
    assert [x.step for x in clones[1].all("other")] == ["2.1"]


def forge(repo: Path, slug: str, at: str, **fields: object) -> None:
    """A lease record written by hand under step `at`'s ref, as anyone with git can."""
    record = {"slug": slug, "step": at, "holder": "ghost", "host": "claude", "machine": "m",
              "taken": "2027-01-15T08:00:00Z", "expires": "2099-01-01T00:00:00Z", "fence": 7,
              **fields}  # fmt: skip
    tree = git(repo, "hash-object", "-t", "tree", "-w", "/dev/null")
    commit = git(repo, "commit-tree", tree, "-m", json.dumps(record))
    git(repo, "update-ref", ref_of(slug, at), commit)


def test_a_hand_written_lease_that_outlives_the_longest_lease_holds_nothing(repo: Path) -> None:
    """A ghost, or a holder's own lease extended by hand: no take or renewal writes an expiry
    further ahead than the longest lease, so such a record holds its step for no one."""
    store = Store(repo)
    forge(repo, "demo", "1.1")
    _, ghost = store.read("demo", "1.1")
    assert ghost is not None and ghost.forged(NOW) and not ghost.live(NOW)
    taken = store.take("demo", "1.1", "s-a", host="claude", now=NOW, ttl=60)
    assert taken is not None and taken.fence == 8
    forge(repo, "demo", "1.1", holder="s-a", fence=8)  # s-a extends its own lease by hand
    assert store.take("demo", "1.1", "s-b", host="claude", now=NOW + 1, ttl=60) is not None
    forge(repo, "demo", "1.2", expires="2027-01-15T08:30:00Z")  # within the longest lease
    assert store.take("demo", "1.2", "s-b", host="claude", now=NOW, ttl=60) is None


def test_a_record_under_another_steps_ref_holds_neither_step(repo: Path) -> None:
    store = Store(repo)
    forge(repo, "demo", "1.1", step="1.2", expires="2027-01-15T08:30:00Z")
    assert store.read("demo", "1.1")[1] is None
    assert store.all("demo") == []
    assert store.take("demo", "1.2", "s-a", host="claude", now=NOW, ttl=60) is not None
    assert store.take("demo", "1.1", "s-b", host="claude", now=NOW, ttl=60) is not None


def test_a_lease_is_renewed_by_its_holder_only(repo: Path) -> None:
    store = Store(repo)
    mine = store.take("demo", "1.1", "s-a", host="claude", now=NOW, ttl=60)
    assert mine is not None
    forge(repo, "demo", "1.1", holder="s-b", fence=1, expires="2027-01-15T08:30:00Z")
    assert store.renew(mine, now=NOW + 30, ttl=60) is None
    assert store.read("demo", "1.1")[1].holder == "s-b"  # type: ignore[union-attr]


def test_no_lease_lasts_longer_than_the_longest_lease(repo: Path) -> None:
    with pytest.raises(LeaseError, match="a lease lasts at most 24h"):
        Store(repo).take("demo", "1.1", "s-a", host="claude", now=NOW, ttl=MAX_TTL + 1)


@pytest.mark.parametrize("shared", [False, True], ids=["local refs", "remote"])
def test_listing_reads_every_record_at_once_and_believes_only_leases(
    repo: Path, tmp_path: Path, shared: bool
) -> None:
    """The records are read by one git process: a ref at a blob, a record not in UTF-8, or one
    whose message is longer than its first line holds nothing, and never shifts what is read
    for the refs after it."""
    if shared:
        subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "shared.git")], check=True)
        git(repo, "remote", "add", "origin", (tmp_path / "shared.git").as_uri())
    store = Store(repo, "origin" if shared else None)
    for step in ("1.1", "1.4"):
        assert store.take("demo", step, f"s-{step}", host="claude", now=NOW) is not None
    blob = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
        input=b"\xff\xfe not a lease \n\n{}", capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip
    tree = git(repo, "hash-object", "-t", "tree", "-w", "--stdin")
    odd = subprocess.run(
        ["git", "-C", str(repo), "commit-tree", tree, "-F", "-"],
        input="é\n\nplus de lignes\n".encode("latin-1"), capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip
    for step, target in (("1.2", blob), ("1.3", odd)):
        if shared:
            git(repo, "push", "-q", "origin", f"{target}:{ref_of('demo', step)}")
        else:
            git(repo, "update-ref", ref_of("demo", step), target)
    assert [(x.step, x.holder) for x in store.all("demo")] == [("1.1", "s-1.1"), ("1.4", "s-1.4")]
    assert [store.read("demo", step)[1] for step in ("1.2", "1.3")] == [None, None]
