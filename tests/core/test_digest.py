"""sha256 from the interpreter's builtin module agrees with hashlib's on every Python."""

from __future__ import annotations

import hashlib
import sys

from agentcfg.core.digest import sha256_hex


def test_the_builtin_digest_is_sha256() -> None:
    for data in (b"", b"abc", "sessi\u00f3n".encode(), bytes(range(256)) * 300):
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


class _Watcher:
    """An import finder that only counts the lookups of the builtin sha modules."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name in ("_sha2", "_sha256"):
            self.asked.append(name)


def test_the_builtin_module_is_looked_up_once() -> None:
    """A failed import is not remembered, so asking for `_sha2` on each call on an interpreter
    without it would search the import path every time (hundreds of times in one fire)."""
    sha256_hex(b"first")  # the module is settled here at the latest
    watcher = _Watcher()
    sys.meta_path.insert(0, watcher)
    try:
        for n in range(50):
            sha256_hex(str(n).encode())
    finally:
        sys.meta_path.remove(watcher)
    assert watcher.asked == []
