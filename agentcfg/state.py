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

from agentcfg.core.times import iso
from agentcfg.errors import StateError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any

STATE_FILE_LIMIT = 1024 * 1024
LOCK_TIMEOUT = 5.0
LEDGER_NAME = "run-continuation.jsonl"


def ensure_dir(path: Path) -> Path:
    """Create a state folder and any missing parents, each of mode 0700."""
    missing = []
    folder = path
    while not folder.is_dir():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
    return path


def write_json(path: Path, data: Any, compact: bool = False) -> None:
    """Write JSON atomically: temp file in the same folder, fsync, os.replace; mode 0600.

    `compact` skips indentation, which also keeps json on its fast C encoder.
    """
    text = (
        json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        if compact
        else json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
    )
    write_bytes(path, (text + "\n").encode())


def write_bytes(path: Path, data: bytes, mode: int = 0o600, private_dir: bool = True) -> None:
    """Replace a file's bytes atomically: a temp file beside it, fsync, os.replace."""
    if private_dir:
        ensure_dir(path.parent)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
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


def read_json(
    path: Path,
    valid: Callable[[dict[str, Any]], bool] | None = None,
    limit: int = STATE_FILE_LIMIT,
) -> dict[str, Any] | None:
    """A JSON object from a state file, or None when absent, odd, oversized or a symlink."""
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
        data = json.loads(raw)
    except ValueError:
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
def locked(path: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold an exclusive lock on `path` (a .lock file); StateError if not had within `timeout`."""
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


def ledger_lines(state: Path) -> Iterator[bytes]:
    """The ledger's lines, oldest first; none when there is no ledger yet."""
    try:
        with (state / LEDGER_NAME).open("rb") as handle:
            yield from handle
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return


def append_ledger(state: Path, event: dict[str, Any]) -> bool:
    """Append one event as one line, one write, O_APPEND; False if it could not be written."""
    line = (json.dumps(event, sort_keys=False, ensure_ascii=False) + "\n").encode()
    try:
        ensure_dir(state)
        fd = os.open(
            state / LEDGER_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600
        )
    except OSError:
        return False
    try:
        return os.write(fd, line) == len(line)
    except OSError:
        return False
    finally:
        os.close(fd)
