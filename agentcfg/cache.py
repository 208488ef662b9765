"""A parse cache in state/cache/: one entry per source file, keyed by its size, mtime and hash."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from agentcfg import state
from agentcfg.core.digest import sha256_hex
from agentcfg.errors import StateError
from agentcfg.paths import CACHE
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any, TypeVar

    T = TypeVar("T")

VERSION = 5  # 2: steps carry label, started, tags and detail; 3: records as lists;
# 4: a roadmap's problems name a `mode:` outside `execution:`; 5: steps' needs, the order
CACHE_LIMIT = 64 * 1024 * 1024


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
    costs a rebuild; the cache is written only where state/ already exists.
    """
    path, size, mtime_ns = identity
    name = sha256_hex(path.encode("utf-8", "surrogateescape"))[:24]
    entry = ws.state / CACHE / f"{kind}-{name}.json"
    key = {
        "version": VERSION,
        "size": size,
        "mtime_ns": mtime_ns,
        "sha256": sha256_hex(source),
    }
    hit = state.read_json(entry, limit=CACHE_LIMIT)
    if hit is not None and all(hit.get(k) == v for k, v in key.items()):
        restored = restore(hit.get("value"))
        if restored is not None:
            return restored
    value = build()
    if ws.state.is_dir():  # a read-only command in a fresh workspace creates nothing
        with contextlib.suppress(OSError, StateError, TypeError, ValueError):
            state.write_json(entry, {**key, "value": dump(value)}, compact=True)
    return value
