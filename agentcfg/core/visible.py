"""Text made safe to show and to keep: control characters shown as escapes, never obeyed;
quotes cut short with anything that looks like a secret masked. Pure."""

from __future__ import annotations

import re

# C0 but the newline, DEL, C1, lone surrogates, and every character a terminal draws as
# nothing or that reorders what follows: the soft hyphen, the combining grapheme joiner, the
# Arabic letter mark, Hangul fillers, the Mongolian vowel separator, zero-width spaces and
# joiners, the bidirectional marks, embeddings, overrides and isolates, the line and
# paragraph separators, the word joiner and invisible operators, the deprecated format
# characters, variation selectors, the byte order mark, interlinear annotation marks, and the
# tag characters. Kept as source text, as the patterns below: `re` compiles each on its
# first use, and most stop hook fires show no text through them.
_CONTROL = (
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\ud800-\udfff\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_SECRETS = (
    # key = value, key: value
    r"(?i)\b(password|passwd|secret|token|api[_-]?key|auth\w*|bearer)(\s*[:=]?\s*)\S+",
    # runs of key-like characters holding both letters and digits: tokens, hashes, keys
    r"(?a)(?=[\w+/.=-]*[0-9])(?=[\w+/.=-]*[A-Za-z])[\w+/.=-]{16,}",
)
EXCERPT = 80


def visible(text: str) -> str:
    """`text` with every control or invisible character as a `\\uXXXX` escape, past the
    Basic Multilingual Plane a pair of them (UTF-16, as JSON text writes it)."""
    return re.sub(_CONTROL, _escape, text)


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """A short, secret-masked excerpt of a quote, for a record that outlives the session."""
    masked = re.sub(_SECRETS[1], "***", re.sub(_SECRETS[0], r"\1\2***", text[: limit * 4]))
    flat = " ".join(visible(masked).split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."
