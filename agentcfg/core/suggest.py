"""Close names for a mistyped one: the `did you mean` of an error line. Pure."""

from __future__ import annotations

from collections.abc import Iterable

SHOWN = 3  # names offered at most
CUTOFF = 0.6  # how alike a name must be, as difflib's get_close_matches has it


def did_you_mean(word: str, names: Iterable[str]) -> str:
    """`; did you mean `a` or `b`?` for the names close to `word` (case aside), best first;
    "" when none is close. Ready to end an error line."""
    import difflib  # only an error line pays for it

    by_key: dict[str, str] = {}
    for name in names:
        by_key.setdefault(name.casefold(), name)
    matcher = difflib.SequenceMatcher(b=word.casefold())
    scored = []
    for key in by_key if word else ():
        matcher.set_seq1(key)
        if matcher.real_quick_ratio() >= CUTOFF and matcher.ratio() >= CUTOFF:
            scored.append((matcher.ratio(), key))
    scored.sort(key=lambda pair: -pair[0])  # stable: equally close names keep their order
    close = [key for _, key in scored[:SHOWN]]
    if not close:
        return ""
    shown = [f"`{by_key[key]}`" for key in close]
    listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
    return f"; did you mean {listed}?"
