"""Text made safe to show and to keep: control characters shown as escapes, never obeyed;
quotes cut short with anything that looks like a secret masked. Pure."""

from __future__ import annotations

import re

# C0 but the newline, DEL, C1, the bidirectional controls, and lone surrogates
_CONTROL = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_SECRETS = (
    # key = value, key: value
    re.compile(r"(?i)\b(password|passwd|secret|token|api[_-]?key|auth\w*|bearer)(\s*[:=]?\s*)\S+"),
    # runs of key-like characters holding both letters and digits: tokens, hashes, keys
    re.compile(r"(?=[\w+/.=-]*[0-9])(?=[\w+/.=-]*[A-Za-z])[\w+/.=-]{16,}", re.ASCII),
)
EXCERPT = 80


def visible(text: str) -> str:
    """`text` with every control character as a `\\uXXXX` escape (valid in JSON text too)."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """A short, secret-masked excerpt of a quote, for a record that outlives the session."""
    masked = _SECRETS[1].sub("***", _SECRETS[0].sub(r"\1\2***", text[: limit * 4]))
    flat = " ".join(visible(masked).split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."
