"""sha256 in hex from the interpreter's builtin module: `hashlib` loads OpenSSL, which the
stop hook's lean path does without. The module is `_sha2` from Python 3.12, `_sha256` before."""

from __future__ import annotations


def sha256_hex(data: bytes) -> str:
    try:
        from _sha2 import sha256  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found, unused-ignore]
        except ImportError:  # pragma: no cover - a build without either; hashlib loads OpenSSL
            from hashlib import sha256
    digest: str = sha256(data).hexdigest()
    return digest
