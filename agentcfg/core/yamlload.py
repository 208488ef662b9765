"""YAML read with bounds: safe types only, a size limit, and aliases that cannot multiply. Pure.

An alias is a reference, so a few hundred bytes of aliases to aliases describe a tree of
billions of nodes: whatever walks the loaded value pays for all of them. The node graph is
measured as it would expand before any value is built.

Most frontmatters and setting files are a few plain `key: value` lines, which a small reader
answers without loading ruamel.yaml (the stop hook pays for every import); it gives up on
anything outside that strict subset, and ruamel.yaml reads it.
"""

from __future__ import annotations

SOURCE_LIMIT = 16 * 1024  # a setting file or a frontmatter; pure-Python YAML costs ~12 ms/KiB
NODE_LIMIT = 20_000

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def load_yaml(source: str, limit: int = SOURCE_LIMIT, nodes: int = NODE_LIMIT) -> Any:
    """The value of a YAML document; ValueError (one line) when unreadable or out of bounds."""
    if len(source) > limit:
        raise ValueError(f"larger than {limit // 1024} KiB")
    simple = plain_mapping(source)
    if simple is not None:
        return simple
    from ruamel.yaml import YAML

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


# A plain word: a letter, then letters, digits, spaces, printable non-ASCII characters and a few
# marks that mean nothing to YAML in block context; no `:`, `#`, quotes, brackets or trailing
# space. Words YAML may read as a boolean or null are left to ruamel.yaml.
_MARKS = frozenset(" _.,/()+=?!;-")
_KEY = r"[A-Za-z][A-Za-z0-9_-]*"
_RESERVED = frozenset(("true", "false", "yes", "no", "on", "off", "null", "y", "n"))


def plain_mapping(source: str) -> dict[str, Any] | None:
    """The mapping of a document in a strict subset of YAML (nested `key: value` blocks of plain
    words, small integers, one-line quoted text without escapes, one-level flow mappings of
    plain words); None when the document is anything else or empty: not sure, ask ruamel.yaml."""
    import re

    rows: list[tuple[int, str, str]] = []
    for line in source.split("\n"):
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            if stripped.isprintable():
                continue
            return None
        match = re.fullmatch(rf"( *)({_KEY}):(?: +(.*?))? *", line)
        if match is None or match[2].lower() in _RESERVED:
            return None
        rows.append((len(match[1]), match[2], match[3] or ""))
    if not rows or rows[0][0] != 0:
        return None
    result, used = _block(rows, 0, 0)
    return result if used == len(rows) else None


def _block(rows: list[tuple[int, str, str]], start: int, indent: int) -> tuple[Any, int]:
    """The mapping whose keys sit at `indent` from row `start`, and the row after it; (None, -1)
    when the rows are outside the subset."""
    mapping: dict[str, Any] = {}
    n = start
    while n < len(rows) and rows[n][0] >= indent:
        depth, key, text = rows[n]
        if depth != indent or key in mapping:
            return None, -1
        n += 1
        if text:
            value = _scalar(text)
            if value is None:
                return None, -1
            mapping[key] = value[0]
        elif n < len(rows) and rows[n][0] > indent:
            mapping[key], n = _block(rows, n, rows[n][0])
            if n < 0:
                return None, -1
        else:
            mapping[key] = None
    return mapping, n


def _scalar(text: str) -> tuple[Any] | None:
    """A value in the subset, boxed; None when outside it."""
    import re

    if re.fullmatch(r"0|[1-9][0-9]{0,8}", text):
        return (int(text),)
    if _word(text, flow=False):
        return (text,)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        inner = text[1:-1]
        if inner.isprintable() and not any(c in inner for c in "'\"\\"):
            return (inner,)
        return None
    flow = re.fullmatch(r"\{ *(.*?) *\}", text)
    if flow is None:
        return None
    mapping: dict[str, str] = {}
    for item in flow[1].split(","):
        pair = re.fullmatch(rf" *({_KEY}): +(.*?) *", item)
        if pair is None or pair[1] in mapping or pair[1].lower() in _RESERVED:
            return None
        if not _word(pair[2], flow=True):
            return None
        mapping[pair[1]] = pair[2]
    return (mapping,)


def _word(text: str, flow: bool) -> bool:
    """Whether a plain scalar reads as the very text (in a flow mapping: no commas either)."""
    if not text or not text[0].isalpha() or text[-1] == " " or text.lower() in _RESERVED:
        return False
    return all(
        char.isalnum() or (char in _MARKS and not (flow and char == ","))
        if char.isascii()
        else char.isprintable()
        for char in text
    )


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
