"""YAML read with bounds: safe types only, a size limit, and aliases that cannot multiply. Pure.

An alias is a reference, so a few hundred bytes of aliases to aliases describe a tree of
billions of nodes: whatever walks the loaded value pays for all of them. The node graph is
measured as it would expand before any value is built.
"""

from __future__ import annotations

SOURCE_LIMIT = 16 * 1024  # a setting file or a frontmatter; pure-Python YAML costs ~12 ms/KiB
NODE_LIMIT = 20_000

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def load_yaml(source: str, limit: int = SOURCE_LIMIT, nodes: int = NODE_LIMIT) -> Any:
    """The value of a YAML document; ValueError (one line) when unreadable or out of bounds."""
    from ruamel.yaml import YAML

    if len(source) > limit:
        raise ValueError(f"larger than {limit // 1024} KiB")
    yaml = YAML(typ="safe", pure=True)
    try:
        root = yaml.compose(source)
        if root is None:
            return None
        if _expanded(root, nodes) > nodes:
            raise ValueError(f"expands to more than {nodes} nodes (aliases)")
        return yaml.constructor.construct_document(root)
    except ValueError:
        raise
    except Exception as exc:  # ruamel raises many unrelated types for bad input
        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        raise ValueError(lines[0]) from None


def _expanded(root: Any, limit: int) -> int:
    """How many nodes the graph holds with every alias expanded, counted up to past `limit`."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        children = _children(node)
        if children_done:
            open_nodes.discard(id(node))
            total = 1 + sum(sizes[id(child)] for child in children)
            sizes[id(node)] = min(total, limit + 1)
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            return limit + 1  # an alias inside its own anchor: endless
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children)
    return sizes[id(root)]


def _children(node: Any) -> list[Any]:
    value = node.value
    if not isinstance(value, list):
        return []
    return [part for item in value for part in (item if isinstance(item, tuple) else (item,))]
