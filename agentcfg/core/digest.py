"""sha256 in hex from the interpreter's builtin module: `hashlib` loads OpenSSL, which the
stop hook's lean path does without. The module is `_sha2` from Python 3.12, `_sha256` before.

The constructor is looked up once: a failed import is not remembered by the interpreter, so
trying `_sha2` on every call would search the whole import path each time."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_SHA256: list[Callable[[bytes], Any]] = []  # filled on first use


def sha256_hex(data: bytes) -> str:
    if not _SHA256:
        _SHA256.append(_constructor())
    digest: str = _SHA256[0](data).hexdigest()
    return digest


def _constructor() -> Callable[[bytes], Any]:
    try:
        from _sha2 import sha256  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found, unused-ignore]
        except ImportError:  # pragma: no cover - a build without either; hashlib loads OpenSSL
            from hashlib import sha256
    found: Callable[[bytes], Any] = sha256
    return found
