"""Text made safe for a terminal: control characters shown as escapes, never obeyed. Pure."""

from __future__ import annotations

import re

# C0 but the newline, DEL, C1, the bidirectional controls, and lone surrogates
_CONTROL = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def visible(text: str) -> str:
    """`text` with every control character as a `\\uXXXX` escape (valid in JSON text too)."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
