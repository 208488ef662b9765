"""Merging a roadmap's checkbox marks from two branches as a union, never as a conflict.

Agents on one roadmap tick different boxes, often on adjacent lines, which a line-based merge
calls a conflict. The merge is done in three moves: both sides' marks on the base's lines are
set back to the base's (`unticked`), the rest is merged by the caller (git), and the marks are
put back on the result (`retick`): a box either side closed is closed.
"""

from __future__ import annotations

import re

# a list item's checkbox: bullet or number, then `[m]`; group 2 is the one-character mark
_BOX = re.compile(r"^(\s*(?:[-*+]|\d{1,9}[.)])\s+\[)(.)(\].*)$")
DONE = "x"


def _key(line: str) -> tuple[str, str] | None:
    """(the line with its mark taken out, the mark), for a checkbox line."""
    found = _BOX.match(line)
    if found is None:
        return None
    return found.group(1) + "\0" + found.group(3), found.group(2)


def _marks(text: str) -> dict[str, str]:
    """Each checkbox line's mark, by the line's text without it; lines seen twice are left out,
    since no mark could be put back on the right one of them."""
    marks: dict[str, str] = {}
    seen: set[str] = set()
    for line in text.splitlines():
        key = _key(line)
        if key is None:
            continue
        if key[0] in seen:
            marks.pop(key[0], None)
        else:
            marks[key[0]] = key[1]
        seen.add(key[0])
    return marks


def _remark(text: str, marks: dict[str, str]) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        key = _key(body)
        if key is not None and key[0] in marks and marks[key[0]] != key[1]:
            head, _, tail = key[0].partition("\0")
            line = head + marks[key[0]] + tail + line[len(body) :]
        out.append(line)
    return "".join(out)


def unticked(side: str, base: str) -> str:
    """`side` with the base's mark on every checkbox line the base also has."""
    return _remark(side, _marks(base))


def retick(merged: str, base: str, ours: str, theirs: str) -> str:
    """The merged text with the marks either side changed put back: a box closed on either side
    is closed; another change of mark wins over no change; where both changed it, ours."""
    before, mine, yours = _marks(base), _marks(ours), _marks(theirs)
    chosen: dict[str, str] = {}
    for key, was in before.items():
        a, b = mine.get(key, was), yours.get(key, was)
        if DONE in (a.lower(), b.lower()):
            chosen[key] = a if a.lower() == DONE else b
        elif a != was or b != was:
            chosen[key] = a if a != was else b
    return _remark(merged, chosen)
