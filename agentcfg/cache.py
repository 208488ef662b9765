"""A parse cache in state/cache/: one entry per source file, keyed by its size, mtime and hash."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

from agentcfg import state
from agentcfg.workspace import Workspace

VERSION = 1
T = TypeVar("T")


def through(
    ws: Workspace,
    kind: str,
    source: bytes,
    identity: tuple[str, int, int],
    build: Callable[[], T],
    dump: Callable[[T], Any],
    restore: Callable[[Any], T | None],
) -> T:
    """`build()`'s result for these bytes, from the cache when the file is unchanged.

    `identity` is (path, size, mtime_ns). A cache that cannot be read or written only
    costs a rebuild.
    """
    path, size, mtime_ns = identity
    name = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    entry = ws.state / "cache" / f"{kind}-{name}.json"
    key = {
        "version": VERSION,
        "size": size,
        "mtime_ns": mtime_ns,
        "sha256": hashlib.sha256(source).hexdigest(),
    }
    hit = state.read_json(entry)
    if hit is not None and all(hit.get(k) == v for k, v in key.items()):
        restored = restore(hit.get("value"))
        if restored is not None:
            return restored
    value = build()
    with contextlib.suppress(OSError, TypeError, ValueError):
        state.write_json(entry, {**key, "value": dump(value)})
    return value
