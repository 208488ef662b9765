"""The state store: atomic JSON files, shape-checked reads, file locks, the append-only ledger."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from agentcfg.core.times import iso, wall_clock
from agentcfg.errors import StateError
from agentcfg.paths import LEDGER_NAME, STATE

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any, BinaryIO

STATE_FILE_LIMIT = 1024 * 1024
# a file that grows with a roadmap's steps (a run's contract, the gate's marks):
# a contract of 50,000 steps fits, and the hook reads one this size well within its time budget
# (docs/architecture.md, section 6; `make bench` measures it)
RECORD_LIMIT = 8 * 1024 * 1024
LEDGER_LINE_LIMIT = 1024 * 1024
LOCK_TIMEOUT = 5.0
STALE_TEMP = 60.0  # seconds: a temp file this old belongs to a writer that was killed


class TooLarge(StateError):
    """A file would be larger than its readers take: it is not written."""


def followed(folder: Path) -> bool:
    """True when `folder`, or a folder between it and the state folder above it, is a symlink.

    The state folder is the nearest ancestor named `state/`; everything at or below it is
    ours, and a link there could carry a write outside the workspace.
    """
    parts = folder.parts
    if STATE not in parts:
        return False
    top = len(parts) - 1 - parts[::-1].index(STATE)
    return any(os.path.islink(os.path.join(*parts[: n + 1])) for n in range(top, len(parts)))


def _guard(folder: Path) -> None:
    if followed(folder):
        raise StateError(f"{folder} is reached through a symlink; state is never followed out")


def ensure_dir(path: Path) -> Path:
    """Create a state folder and any missing parents, each of mode 0700 whatever the umask.

    A new `state/` folder gets its own .gitignore, so nothing in it lands in a commit.
    """
    _guard(path)
    missing = []
    folder = path
    while not folder.is_dir():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise StateError(f"{folder} is not a folder; move it out of the way") from None
        os.chmod(folder, 0o700)
    top = _state_top(path)
    if top is not None and not os.path.lexists(top / ".gitignore"):
        # first use of a state/ that was there before (a repository's state/.gitkeep): ours now
        with contextlib.suppress(OSError):
            os.chmod(top, 0o700)
        _write_new(top / ".gitignore", b"*\n")
    return path


def _state_top(path: Path) -> Path | None:
    """The state folder at or above `path`, None when there is none."""
    parts = path.parts
    if STATE not in parts:
        return None
    return Path(*parts[: len(parts) - parts[::-1].index(STATE)])


def _write_new(path: Path, data: bytes) -> None:
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)


def write_json(path: Path, data: Any, compact: bool = False, limit: int | None = None) -> None:
    """Write JSON atomically: temp file in the same folder, fsync, os.replace; mode 0600.

    `compact` skips indentation, which also keeps json on its fast C encoder. With a `limit`,
    a file larger than its readers take is TooLarge (a StateError), and stays as it was.
    """
    text = (
        json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        if compact
        else json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    )
    raw = (text + "\n").encode("utf-8", "replace")
    if limit is not None and len(raw) > limit:
        raise TooLarge(f"{path} would be larger than the {limit >> 20} MiB it may hold")
    write_bytes(path, raw)


def write_bytes(path: Path, data: bytes, mode: int = 0o600, private_dir: bool = True) -> None:
    """Replace a file's bytes atomically: a temp file beside it, fsync, os.replace.

    Temp files of ours for the same file left by a killed writer are removed first.
    """
    if private_dir:
        ensure_dir(path.parent)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    _clean_stale(path)
    temp = path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)  # whatever the umask took away
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _clean_stale(path: Path) -> None:
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    prefix, now = f".{path.name}.", wall_clock()
    for name in names:
        middle = name[len(prefix) : -len(".tmp")]
        if not (name.startswith(prefix) and name.endswith(".tmp") and len(middle) == 12):
            continue
        temp = path.parent / name
        with contextlib.suppress(OSError):
            if now - temp.lstat().st_mtime > STALE_TEMP:
                temp.unlink()


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("a number out of range")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a state file holds")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 24:
        raise ValueError("a number out of range")
    return int(text)


def loads(raw: bytes | str) -> Any:
    """json.loads for our own files: NaN, Infinity, 1e309 and 25-digit numbers are errors."""
    return json.loads(raw, parse_float=_finite, parse_int=_bounded_int, parse_constant=_no_constant)


def read_json(
    path: Path,
    valid: Callable[[dict[str, Any]], bool] | None = None,
    limit: int = STATE_FILE_LIMIT,
) -> dict[str, Any] | None:
    """A JSON object from a state file, or None when absent, odd, oversized or a symlink."""
    if followed(path.parent):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            raw = handle.read(limit + 1)
    except OSError:
        return None
    if len(raw) > limit:
        return None
    try:
        data = loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or (valid is not None and not valid(data)):
        return None
    return data


def remove(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


@contextlib.contextmanager
def locked(path: Path, timeout: float = LOCK_TIMEOUT, private: bool = True) -> Iterator[None]:
    """Hold an exclusive lock on `path` (a .lock file); StateError if not had within `timeout`.

    `private`: the lock is in state/, whose folders are made (0700) as needed; otherwise its
    folder must exist already."""
    if private:
        ensure_dir(path.parent)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise StateError(f"cannot open lock {path}: {exc.strerror}") from None
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise StateError(f"cannot lock {path}: {exc.strerror}") from None
                if time.monotonic() >= deadline:
                    raise StateError(f"lock {path} is held by another process") from None
                time.sleep(0.005)
        yield
    finally:
        os.close(fd)


def event(
    name: str, at: float, run: str | None, slug: str | None, **fields: object
) -> dict[str, Any]:
    """A ledger event: the standard fields every line has (None where unknown), then its own."""
    record: dict[str, Any] = dict.fromkeys(("turn", "iterations", "open", "blocked"))
    record = {"event": name, "at": iso(at), "run": run, "slug": slug, **record}
    record.update(fields)
    return record


def ledger_quote(text: str, how: str = "excerpt") -> str:
    """How the ledger keeps a quote of the assistant's words: never verbatim. `excerpt` is
    short and secret-masked; `hash` keeps only a digest to match quotes by."""
    from agentcfg.core.digest import sha256_hex
    from agentcfg.core.visible import excerpt

    if how == "hash":
        return "sha256:" + sha256_hex(text.encode("utf-8", "replace"))[:16]
    return excerpt(text)


def open_ledger(state: Path) -> BinaryIO | None:
    """The ledger open for reading; None when there is none yet, or when it is not a regular
    file of ours (a link, a FIFO, a device): such a thing is never read, nor waited on."""
    if followed(state):
        return None
    try:
        fd = os.open(state / LEDGER_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    handle = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        handle.close()
        return None
    return handle


def ledger_lines(state: Path, limit: int = LEDGER_LINE_LIMIT) -> Iterator[bytes]:
    """The ledger's lines, oldest first; none when there is no ledger yet, or when it is not
    a regular file of ours. A line longer than `limit` comes as b"" (unreadable), unread."""
    handle = open_ledger(state)
    if handle is None:
        return
    with handle:
        while line := handle.readline(limit + 1):
            if len(line) <= limit:
                yield line
                continue
            while line and not line.endswith(b"\n"):  # skip the rest of an oversized line
                line = handle.readline(limit + 1)
            yield b""


def append_ledger(state: Path, event: dict[str, Any]) -> bool:
    """Append one event as one line, one write, O_APPEND; False if it could not be written,
    or when the ledger is not a regular file (a FIFO nobody reads is never waited on)."""
    try:
        text = json.dumps(event, sort_keys=False, ensure_ascii=False, allow_nan=False)
    except ValueError:  # a number no JSON reader takes back
        return False
    line = (text + "\n").encode("utf-8", "replace")  # a lone surrogate becomes "?"
    try:
        ensure_dir(state)
        fd = os.open(
            state / LEDGER_NAME,
            os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK,
            0o600,
        )
    except (OSError, StateError):
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.write(fd, line) == len(line)
    except OSError:
        return False
    finally:
        os.close(fd)
