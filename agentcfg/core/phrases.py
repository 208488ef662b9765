"""What a final message says of the turn's end: promises, completion claims, deference, questions.

Pure heuristics over the message's closing sentences; each returns the sentence it matched.
"""

from __future__ import annotations

import re

CLOSING_CHARS = 600
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_DECORATION = re.compile(r"^[\s>*_#`-]+|[\s*_`]+$")
_NEGATION = re.compile(r"\b(?:not|no|never|cannot)\b|n't\b", re.I)

_CONTINUE = (
    r"(?:continue|proceed|go ahead|keep going|carry on|move on|start|begin|implement|tackle"
    r"|work on|do (?:that|this|it|the next))"
)
_DEFERENCE = [
    re.compile(rf"\b(?:would|do) you (?:like|want) me to {_CONTINUE}", re.I),
    re.compile(rf"\b(?:shall|should) I {_CONTINUE}", re.I),
    re.compile(rf"\blet me know if (?:you(?:'d| would) like|you want) me to {_CONTINUE}", re.I),
    re.compile(rf"\b(?:want|ready for) me to {_CONTINUE}", re.I),
    re.compile(r"\b(?:ok(?:ay)?|good|fine) (?:for me )?to (?:proceed|continue)\?", re.I),
    re.compile(r"^(?:proceed|continue)\?$", re.I),
]
_PROMISE = re.compile(
    r"^(?:(?:now|next|then|first|ok(?:ay)?|alright)[,:]?\s+)*"
    r"(?:I'll|I will|I am going to|I'm going to|let me|let's|I need to)\b",
    re.I,
)
_NOT_A_PROMISE = re.compile(
    r"\b(?:stop|wait|pause|leave (?:it|this|that)|hand (?:it )?back)\b", re.I
)
_COMPLETION = [
    re.compile(
        r"\b(?:all )?(?:\d+ )?tests? (?:now |all )?"
        r"(?:pass|passed|passing|are passing|are green|succeed)\b",
        re.I,
    ),
    re.compile(
        r"\b(?:is|are|'s) (?:now )?(?:all )?"
        r"(?:complete|completed|done|finished|fixed|implemented|working)\b",
        re.I,
    ),
    re.compile(
        r"\bI(?:'ve| have) (?:now )?(?:successfully )?(?:completed|finished|implemented|fixed)\b",
        re.I,
    ),
    re.compile(r"\b(?:everything|CI|the build) is (?:now )?green\b", re.I),
    re.compile(r"^(?:all )?done[.!]*$", re.I),
]


def closing_sentences(message: str) -> list[str]:
    """The sentences of the message's closing part, last one last, decoration stripped."""
    tail = message[-CLOSING_CHARS:]
    parts = (_DECORATION.sub("", part) for part in _SENTENCE_END.split(tail))
    return [part for part in parts if part]


def deference(message: str) -> str | None:
    for sentence in closing_sentences(message)[-2:]:
        if any(pattern.search(sentence) for pattern in _DEFERENCE):
            return sentence
    return None


def question(message: str) -> str | None:
    """The closing question the message puts to the person, if it is not deference."""
    sentences = closing_sentences(message)
    if not sentences or not sentences[-1].endswith("?") or deference(message):
        return None
    return sentences[-1]


def promise(message: str) -> str | None:
    sentences = closing_sentences(message)
    if not sentences:
        return None
    last = sentences[-1]
    if last.endswith("?") or _NOT_A_PROMISE.search(last):
        return None
    if _PROMISE.search(last) or (last.endswith(":") and _PROMISE.search(last.rstrip(":"))):
        return last
    return None


def completion(message: str) -> str | None:
    for sentence in reversed(closing_sentences(message)):
        if _NEGATION.search(sentence):
            continue
        if any(pattern.search(sentence) for pattern in _COMPLETION):
            return sentence
    return None
