"""sha256 from the interpreter's builtin module agrees with hashlib's on every Python."""

from __future__ import annotations

import hashlib

from agentcfg.core.digest import sha256_hex


def test_the_builtin_digest_is_sha256() -> None:
    for data in (b"", b"abc", "sessi\u00f3n".encode(), bytes(range(256)) * 300):
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()
