"""sha256 in hex from the interpreter's builtin module (agentcfg/_speed.py): `hashlib` loads
OpenSSL, which the stop hook's lean path does without (and `hmac` loads `hashlib`).

The constructor is looked up once: a failed import is not remembered by the interpreter, so
trying the builtin module on every call would search the whole import path each time."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_SHA256: list[Callable[[bytes], Any]] = []  # filled on first use
_BLOCK = 64  # sha256's block size in bytes
_PADS: dict[bytes, tuple[Any, Any]] = {}  # by HMAC key: sha256 of each padded key, to copy


def sha256_hex(data: bytes) -> str:
    if not _SHA256:
        _SHA256.append(_constructor())
    digest: str = _SHA256[0](data).hexdigest()
    return digest


def hmac_sha256_hex(key: bytes, data: bytes) -> str:
    """HMAC-SHA256 (RFC 2104) in hex, from the same builtin sha256: the `hmac` module loads
    `hashlib`. A key longer than sha256's block is hashed first, as the RFC says. The two
    padded keys are hashed once per key, and each message starts from copies of them."""
    pads = _PADS.get(key)
    if pads is None:
        pads = _PADS[key] = _pads(key)
    inner, outer = pads[0].copy(), pads[1].copy()
    inner.update(data)
    outer.update(inner.digest())
    digest: str = outer.hexdigest()
    return digest


def _pads(key: bytes) -> tuple[Any, Any]:
    if not _SHA256:
        _SHA256.append(_constructor())
    sha256 = _SHA256[0]
    if len(key) > _BLOCK:
        key = sha256(key).digest()
    key = key.ljust(_BLOCK, b"\0")
    return sha256(bytes(b ^ 0x36 for b in key)), sha256(bytes(b ^ 0x5C for b in key))


def _constructor() -> Callable[[bytes], Any]:
    from agentcfg import _speed

    return _speed.sha256()
