"""Step leases: which fleet member works which step, kept in git refs.

A lease is `refs/agentcfg/leases/<slug>/<step>` pointing at a commit (empty tree) whose message
is the lease as JSON. Every change is a compare-and-swap of that ref: `git update-ref` in the
repository, whose refs all its worktrees share, or an atomic `git push --force-with-lease` to a
remote that several machines share. A release writes a released record rather than deleting
the ref, so the fencing number only ever grows and a holder that lost its lease can tell.

Anyone with git can write a ref, so a record is believed only as far as agentcfg itself could
have written it: one whose slug and step are not its ref's holds nothing, and neither does
one whose expiry lies further ahead than the longest lease (MAX_TTL), such as a ghost's or a
holder's own lease extended by hand. A lease is renewed by its holder only, with its fence.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from agentcfg.core.times import format_duration, iso, parse_iso
from agentcfg.errors import LeaseError
from agentcfg.paths import remote_name_ok

PREFIX = "refs/agentcfg/leases"
TTL = 15 * 60.0
MAX_TTL = 24 * 3600.0  # no take or renewal writes an expiry further ahead than this
GIT_TIMEOUT = 30.0
RECORD_LIMIT = 4096
# the name on the commits agentcfg writes itself: lease records always, merges where git has none
IDENTITY = {
    "GIT_AUTHOR_NAME": "agentcfg",
    "GIT_AUTHOR_EMAIL": "agentcfg@localhost",
    "GIT_COMMITTER_NAME": "agentcfg",
    "GIT_COMMITTER_EMAIL": "agentcfg@localhost",
}
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **IDENTITY}
# the stores opened in this process, by repository and remote: opening one asks git twice, and
# a fleet's member opens its store again for each lease it takes, renews, reads and gives back
_OPENED: dict[tuple[Path, str | None], Store] = {}
# a ref name part git accepts as is: no leading dot, no "..", no ".lock" or "." at the end
_PART = re.compile(r"(?!\.)(?!.*\.\.)(?!.*\.lock$)(?!.*\.$)[A-Za-z0-9._-]{1,200}")


@dataclass(frozen=True)
class Lease:
    slug: str
    step: str
    holder: str  # the session id; "" once released
    host: str
    machine: str
    taken: float
    expires: float
    fence: int  # grows by one each time the step passes to a new holder

    @property
    def released(self) -> bool:
        return not self.holder

    def live(self, now: float) -> bool:
        return not self.released and now < self.expires and not self.forged(now)

    def forged(self, now: float) -> bool:
        """Held until later than any take or renewal writes: the record was written by hand."""
        return not self.released and self.expires > now + MAX_TTL

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "step": self.step,
            "holder": self.holder,
            "host": self.host,
            "machine": self.machine,
            "taken": iso(self.taken),
            "expires": iso(self.expires),
            "fence": self.fence,
        }

    @classmethod
    def from_json(cls, data: object) -> Lease | None:
        """A lease from its record, or None when any field has the wrong shape."""
        if not isinstance(data, dict):
            return None
        texts = [data.get(name) for name in ("slug", "step", "holder", "host", "machine")]
        taken, expires, fence = (
            parse_iso(data.get("taken")),
            parse_iso(data.get("expires")),
            data.get("fence"),
        )
        if not all(isinstance(t, str) for t in texts) or taken is None or expires is None:
            return None
        if type(fence) is not int or fence < 0:
            return None
        slug, step, holder, host, machine = (str(t) for t in texts)
        return cls(slug, step, holder, host, machine, taken, expires, fence)


def name_ok(part: str) -> bool:
    """Can a slug or step id be one part of a lease's ref name, as it is?"""
    return _PART.fullmatch(part) is not None


def check_ttl(ttl: float) -> float:
    """`ttl`, or LeaseError when it is longer than the longest lease."""
    if not 0 < ttl <= MAX_TTL:
        raise LeaseError(
            f"--lease-ttl {format_duration(ttl)}: a lease lasts at most {MAX_TTL / 3600:g}h"
        )
    return ttl


def ref_of(slug: str, step: str) -> str:
    """The lease's ref; LeaseError for a slug or step id git cannot hold in a ref name."""
    for part in (slug, step):
        if not name_ok(part):
            raise LeaseError(f"`{part}` cannot name a lease (letters, digits, '.', '_', '-')")
    return f"{PREFIX}/{slug}/{step}"


def _parse_heads(out: str, ref: str, under: bool) -> dict[str, str]:
    """Ref name -> commit from `for-each-ref`/`ls-remote` lines, for `ref` or refs below it."""
    heads: dict[str, str] = {}
    for line in out.splitlines():
        commit, _, name = line.replace("\t", " ").partition(" ")
        if name == ref or (under and name.startswith(ref + "/")):
            heads[name] = commit
    return heads


def _recorded(commit: str, ref: str) -> Lease | None:
    """The lease a commit's text records in its message; None when unreadable, or when it is
    not `ref`'s own."""
    _, _, message = commit.partition("\n\n")
    try:
        data = json.loads(message[:RECORD_LIMIT])
    except ValueError:
        return None
    lease = Lease.from_json(data)
    return lease if lease is not None and ref == f"{PREFIX}/{lease.slug}/{lease.step}" else None


def _folder_of(repo: Path, url: str) -> Path | None:
    """The folder a remote's URL names on this machine (a bare repository, or a checkout's
    .git), or None for a remote reached by a network."""
    if url.startswith("file://"):
        path = Path(unquote(urlsplit(url).path))
    elif "://" in url or ":" in url.partition("/")[0]:  # a URL, or ssh's host:path
        return None
    else:
        path = repo / url
    return path / ".git" if (path / ".git").is_dir() else path


def machine_name() -> str:
    return socket.gethostname() or "unknown"


class Store:
    """The leases of one repository, or of the remote it names with `coordinate`."""

    def __init__(self, repo: Path, coordinate: str | None = None) -> None:
        if coordinate is not None and not remote_name_ok(coordinate):
            raise LeaseError(f"{coordinate!r} cannot name a git remote: it is never passed to git")
        self.repo = repo
        self.coordinate = coordinate
        self._empty: str | None = None
        self._home: Path | None = None  # the folder of the git repository that holds the leases

    @classmethod
    def open(cls, repo: Path, coordinate: str | None = None) -> Store:
        """The store of the git repository at `repo`; LeaseError when there is none, or when
        `coordinate` names no remote of it. Opened once a process for each repository."""
        known = _OPENED.get((repo, coordinate))
        if known is not None:
            return known
        store = cls(repo, coordinate)
        found = store._git("rev-parse", "--git-common-dir", check=False)
        if found.returncode != 0:
            raise LeaseError(f"{repo} is not in a git repository: leases live in git refs")
        store._home = repo / found.stdout.strip()  # told relative to `repo`, or absolute
        if coordinate is not None:
            url = store._git("remote", "get-url", "--", coordinate, check=False)
            if url.returncode != 0:
                raise LeaseError(f"`{coordinate}` is not a remote of {repo} (see `git remote -v`)")
            store._home = _folder_of(repo, url.stdout.strip())
        _OPENED[(repo, coordinate)] = store
        return store

    def watched(self, *refs: str) -> list[Path]:
        """The files that change when one of `refs`, or a ref below it, moves in the repository
        that holds the leases: its loose refs and its packed refs. None at all when that
        repository is not a folder on this machine (a remote reached by a network)."""
        if self._home is None:
            return []
        return [*(self._home / ref for ref in refs), self._home / "packed-refs"]

    # --- reading

    def read(self, slug: str, step: str) -> tuple[str | None, Lease | None]:
        """The lease ref's commit (None: never leased) and the lease it records."""
        ref = ref_of(slug, step)
        return self._records(ref, under=False).get(ref, (None, None))

    def records(self, slug: str) -> dict[str, tuple[str, Lease | None]]:
        """Each lease ref of `slug`: its commit and the lease it records (None: unreadable),
        as `read` reads one, read at once."""
        return self._records(ref_of(slug, "x").rpartition("/")[0], under=True)

    def all(self, slug: str | None = None) -> list[Lease]:
        """Every lease record under `slug` (or every slug), released ones included."""
        pattern = PREFIX if slug is None else ref_of(slug, "x").rpartition("/")[0]
        leases = [lease for _, lease in self._records(pattern, under=True).values()]
        return sorted(
            (lease for lease in leases if lease is not None), key=lambda x: (x.slug, x.step)
        )

    def _records(self, ref: str, under: bool) -> dict[str, tuple[str, Lease | None]]:
        """The refs at `ref` (or below it), each one's commit and the lease it records."""
        if self.coordinate is None:
            return self._local(ref, under)
        for _ in range(5):  # a ref that moves between listing and fetching is listed again
            listed = self._git("ls-remote", "--refs", self.coordinate, f"{ref}/*" if under else ref)
            heads = _parse_heads(listed.stdout, ref, under)
            found, missing = self._read_here(heads)
            if missing:  # bring the records not here yet; by ref name needs no server setting
                self._git(
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--no-write-fetch-head",
                    self.coordinate,
                    *missing,
                )
                fetched, missing = self._read_here(missing)
                found.update(fetched)
            if not missing:
                return {name: found[name] for name in heads}
        raise LeaseError(f"the leases on {self.coordinate} kept moving while being read")

    def _read_here(
        self, heads: dict[str, str]
    ) -> tuple[dict[str, tuple[str, Lease | None]], dict[str, str]]:
        """The lease each ref's commit records, read by one git process for them all (a fleet's
        members list every lease of the roadmap before each take), and the refs whose commit
        is not here: the records this machine's members wrote are here already."""
        found: dict[str, tuple[str, Lease | None]] = {}
        missing: dict[str, str] = {}
        if not heads:
            return found, missing
        listing = "".join(f"{commit}\n" for commit in heads.values()).encode()
        out = self._bytes("cat-file", "--batch", stdin=listing)
        at = 0
        for ref, commit in heads.items():
            end = out.find(b"\n", at)
            header = out[at:end].split() if end >= 0 else []
            at = end + 1 if end >= 0 else len(out)
            if header[1:] == [b"missing"]:
                missing[ref] = commit
                continue
            if len(header) != 3 or not header[2].isdigit():  # not what git says of an object
                found[ref] = (commit, None)
                continue
            size = int(header[2])
            body = out[at : at + size]
            at += size + 1  # the object, then its newline
            text = body.decode("utf-8", "replace")
            found[ref] = (commit, _recorded(text, ref) if header[1] == b"commit" else None)
        return found, missing

    def _local(self, ref: str, under: bool) -> dict[str, tuple[str, Lease | None]]:
        """This repository's refs at `ref` (or below it): each one's commit and the lease it
        records, the records read with the refs by one git process."""
        out = self._bytes(
            "for-each-ref", "--format=%(objectname) %(objecttype) %(refname)%00%(contents)%00", ref
        )
        found: dict[str, tuple[str, Lease | None]] = {}
        parts = out.split(b"\0")  # no commit message holds a NUL: git refuses one
        for header, contents in zip(parts[0::2], parts[1::2], strict=False):  # and a last "\n"
            fields = header.strip().decode("utf-8", "replace").split(" ")
            if len(fields) != 3:
                continue
            commit, kind, name = fields
            if name == ref or (under and name.startswith(ref + "/")):
                text = "\n\n" + contents.decode("utf-8", "replace")  # as a commit's message
                found[name] = (commit, _recorded(text, name) if kind == "commit" else None)
        return found

    def _bytes(self, *args: str, stdin: bytes | None = None) -> bytes:
        """What a git command prints, as bytes: a record written by hand need not be UTF-8."""
        try:
            result = subprocess.run(
                ["git", "-C", str(self.repo), *args], input=stdin, capture_output=True,
                env={**os.environ, **GIT_ENV}, timeout=GIT_TIMEOUT,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise LeaseError(f"git {args[0]} failed: {exc}") from None
        if result.returncode != 0:
            why = result.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"]
            raise LeaseError(f"git {args[0]} failed: {why[-1]}")
        return result.stdout

    # --- writing

    def take(
        self,
        slug: str,
        step: str,
        holder: str,
        *,
        host: str,
        now: float,
        ttl: float = TTL,
        seen: tuple[str | None, Lease | None] | None = None,
    ) -> Lease | None:
        """The step's lease for `holder`, or None while another holder's lease is live (or
        another taker won the race). Taking a lease one already holds renews it. `seen`: the
        ref's commit and record as a listing read them a moment ago, not read again; had the
        ref moved since, the swap over that commit fails and nothing is taken."""
        check_ttl(ttl)
        old, current = self.read(slug, step) if seen is None else seen
        if current is not None and current.live(now) and current.holder != holder:
            return None
        if current is not None and current.live(now):  # already this holder's: renewed
            fence, taken = current.fence, current.taken
        else:
            fence, taken = self._next_fence(old, current), now
        lease = Lease(slug, step, holder, host, machine_name(), taken, now + ttl, fence)
        return lease if self._swap(ref_of(slug, step), old, lease) else None

    def _next_fence(self, old: str | None, current: Lease | None) -> int:
        if old is None:
            return 1
        if current is not None:
            return current.fence + 1
        # an unreadable record: every fence given so far is at most the number of records
        return int(self._git("rev-list", "--count", old).stdout.strip() or 0) + 1

    def renew(self, lease: Lease, *, now: float, ttl: float = TTL) -> Lease | None:
        """The same lease with a later expiry, or None when it is no longer this holder's: the
        record must name `lease`'s holder and fence."""
        check_ttl(ttl)
        old, current = self.read(lease.slug, lease.step)
        if current is None or (current.holder, current.fence) != (lease.holder, lease.fence):
            return None
        renewed = replace(current, expires=now + ttl)
        return renewed if self._swap(ref_of(lease.slug, lease.step), old, renewed) else None

    def release(self, slug: str, step: str, holder: str | None, *, now: float) -> bool:
        """Let the step go: a holder releases its own lease; `holder=None` (a person) any."""
        old, current = self.read(slug, step)
        if old is None or (current is not None and current.released):
            return False
        if current is None:  # an unreadable record: only a person may clear it
            if holder is not None:
                return False
            current = Lease(slug, step, "", "", "", now, now, self._next_fence(old, None))
        elif holder is not None and current.holder != holder:
            return False
        return self._swap(ref_of(slug, step), old, replace(current, holder="", expires=now))

    def holds(self, slug: str, step: str, holder: str, fence: int) -> bool:
        """The fencing check: is this still `holder`'s lease, with the number it was given?"""
        _, current = self.read(slug, step)
        return current is not None and (current.holder, current.fence) == (holder, fence)

    def _swap(self, ref: str, old: str | None, lease: Lease) -> bool:
        message = json.dumps(lease.to_json(), sort_keys=True)
        if self._empty is None:  # the empty tree every record points at, written once a store
            self._empty = self._git("hash-object", "-t", "tree", "-w", "--stdin", stdin="").stdout
        empty = self._empty.strip()
        parents = ("-p", old) if old else ()
        new = self._git("commit-tree", empty, *parents, "-m", message).stdout.strip()
        if self.coordinate is None:
            line = f"update {ref} {new} {old}\n" if old else f"create {ref} {new}\n"
            done = self._git("update-ref", "--stdin", stdin=line, check=False)
        else:
            done = self._git(
                "push",
                "--quiet",
                "--porcelain",
                "--atomic",
                f"--force-with-lease={ref}:{old or ''}",
                self.coordinate,
                f"{new}:{ref}",
                check=False,
            )
        return done.returncode == 0

    def _git(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **GIT_ENV}
        try:
            result = subprocess.run(
                ["git", "-C", str(self.repo), *args],
                input=stdin,
                capture_output=True,
                encoding="utf-8",
                errors="surrogateescape",
                env=env,
                timeout=GIT_TIMEOUT,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise LeaseError(f"git {args[0]} failed: {exc}") from None
        if check and result.returncode != 0:
            why = (result.stderr.strip().splitlines() or ["no message"])[-1]
            raise LeaseError(f"git {args[0]} failed: {why}")
        return result
