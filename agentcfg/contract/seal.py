"""Seals on the records that decide how a run ends: an HMAC-SHA256 over the record's canonical
JSON, with a key of the person's own kept beside the trust store, outside every workspace.

A record whose seal is missing or wrong was not written by agentcfg with this person's key:
it is refused, never read as what it says. The key is read once per process, and made (32
random bytes, mode 0600) by the first write that needs it; a read never makes it, so without
a key every sealed record is refused. Read on every engaged fire: the interpreter's own
modules only, and json, which an engaged fire has loaded already.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from _operator import _compare_digest

from agentcfg.core.digest import hmac_sha256_hex
from agentcfg.errors import StateError
from agentcfg.paths import SEAL_KEY, user_state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

FIELD = "seal"  # the name of the seal in a record that carries one
KEY_SIZE = 32
_KEYS: dict[str, bytes] = {}  # by path: read once per process


def key_path(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(user_state(os.environ if env is None else env), SEAL_KEY)


def canonical(value: object) -> bytes:
    """The one byte form of a JSON value that a digest or a seal is taken over."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")


def sign(kind: str, name: str, body: object, env: Mapping[str, str] | None = None) -> str:
    """The seal of `body` as the record `kind` named `name` (a state file's name): a seal
    binds the record to its place, so a record copied over another's is refused as well.
    Makes the key on first use; StateError when it cannot be read or made."""
    return hmac_sha256_hex(_key(key_path(env), create=True) or b"", _message(kind, name, body))


def check(
    kind: str, name: str, body: object, mark: object, env: Mapping[str, str] | None = None
) -> bool:
    """Whether `mark` is the seal of `body` as the record `kind` named `name`. False when it
    is missing or wrong, and when there is no key to check it with (or the key is not one
    agentcfg made)."""
    if not isinstance(mark, str):
        return False
    try:
        found = _key(key_path(env), create=False)
    except StateError:
        return False
    if found is None:
        return False
    return bool(_compare_digest(mark, hmac_sha256_hex(found, _message(kind, name, body))))


def _message(kind: str, name: str, body: object) -> bytes:
    return canonical([kind, name, body])


def _key(path: str, create: bool) -> bytes | None:
    known = _KEYS.get(path)
    if known is not None:
        return known
    found = _read_key(path)
    if found is None and create:
        found = _make_key(path)
    if found is not None:
        _KEYS[path] = found
    return found


def _read_key(path: str) -> bytes | None:
    """The key at `path`; None when there is none; StateError when it is not a key of ours."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateError(f"the seal key {path} cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
        data = handle.read(KEY_SIZE + 1) if regular else b""
    if len(data) != KEY_SIZE:
        raise StateError(
            f"the seal key {path} is not one agentcfg made; remove it "
            "(every record sealed with it is then refused)"
        )
    return data


def _make_key(path: str) -> bytes:
    """A new key, written whole before it appears: a process that reads it at the same
    moment finds all of it or none of it, and of two processes making one, one key wins."""
    folder = os.path.dirname(path)
    temp = os.path.join(folder, f".{SEAL_KEY}.{os.urandom(6).hex()}.tmp")
    made = os.urandom(KEY_SIZE)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(made)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o600)  # whatever the umask took away
        try:
            os.link(temp, path)
        except FileExistsError:  # another process made one first: that one is the key
            made = _read_key(path) or made
    except OSError as exc:
        raise StateError(f"cannot make the seal key {path}: {exc.strerror}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    return made
