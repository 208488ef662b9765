"""What a final message says of the turn's end (promises, completion claims, deference,
questions to the person), and what the person's prompt asks of the run (pause, go on).

Pure heuristics; each returns the sentence it matched.
"""

from __future__ import annotations

import re

CLOSING_CHARS = 600
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_PARAGRAPH_END = re.compile(r"\n[ \t>]*\n")
_CODE = re.compile(r"```.*?(?:```|$)|`[^`\n]*`", re.S)
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
# a request for the person's decision, wherever it stands in the closing paragraph
_DECISION = re.compile(
    r"\blet me know (?:which|what|whether|how|where|when|your"
    r"|if you(?:'d| would)? (?:prefer|rather|agree|approve|want (?!me to)|like (?!me to)))"
    r"|\bplease (?:confirm|decide|choose|advise|approve|pick)\b"
    r"|\byour (?:call|choice|decision|preference)\b|\bup to you\b"
    r"|\b(?:which|what) (?:one )?(?:do|would) you (?:prefer|rather|choose|like)\b"
    r"|\bI need (?:your|a) (?:decision|input|approval|go-ahead|answer|choice)\b"
    r"|\b(?:awaiting|waiting (?:for|on)) your (?:decision|input|approval|answer|confirmation)\b",
    re.I,
)
# a why/what/how question the message answers itself ("Why did it fail? The cache was cold.")
_RHETORICAL = re.compile(r"^(?:so,?\s+)?(?:why|what|how|where|when|who)\b", re.I)
_TO_PERSON = re.compile(r"\b(?:you|your|we|us|our|should|shall|prefer|rather|ok|okay)\b", re.I)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
CLOSING_REGION = 2000
SHORT_LINE = 60

_PROMISE = re.compile(
    r"^(?:(?:now|next|then|first|ok(?:ay)?|alright)[,:]?\s+)*"
    r"(?:I'll|I will|I am going to|I'm going to|let me(?! know)|let's|I need to)\b",
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
    """The closing sentence asking leave to go on; a real question alongside it wins."""
    for sentence in closing_sentences(message)[-2:]:
        if _is_deference(sentence):
            return None if question(message) else sentence
    return None


def question(message: str) -> str | None:
    """The first question or decision request the message's closing paragraph puts to the
    person; deference (asking leave to go on) is none."""
    sentences = [s for s in _closing_paragraph(message) if not _is_deference(s)]
    for index, sentence in enumerate(sentences):
        if _DECISION.search(sentence):
            return sentence
        if not sentence.endswith("?"):
            continue
        answered = index < len(sentences) - 1  # statements follow in the same paragraph
        if not (answered and _RHETORICAL.search(sentence) and not _TO_PERSON.search(sentence)):
            return sentence
    return None


def _closing_paragraph(message: str) -> list[str]:
    """The sentences of the last prose paragraph, with any lists and short lines after it.

    Code is left out: a `?` inside it asks nobody anything.
    """
    text = _CODE.sub(" ", message[-CLOSING_REGION:])
    paragraphs = [p.strip() for p in _PARAGRAPH_END.split(text) if p.strip()]
    closing: list[str] = []
    for paragraph in reversed(paragraphs):
        closing.insert(0, paragraph)
        if len(paragraph) >= SHORT_LINE and not _LIST_ITEM.match(paragraph):
            break
    parts = (_DECORATION.sub("", part) for part in _SENTENCE_END.split("\n".join(closing)))
    return [part for part in parts if part]


def _is_deference(sentence: str) -> bool:
    return any(pattern.search(sentence) for pattern in _DEFERENCE)


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


# what the person's latest prompt asks of the run
_PAUSE_WORD = r"(?:stop|pause|halt|hold on|hold off|hang on|wait|freeze|enough)"
_PAUSE = [
    # the prompt opens with a bare pause: "stop", "Wait, ...", "pause the roadmap for now."
    re.compile(
        r"^(?:(?:please|ok(?:ay)?|no|hey|actually|now|right)[,.!]*\s+)*"
        rf"{_PAUSE_WORD}"
        r"(?:\s+(?:it|that|this|here|there|now|for now|please|working|everything|all"
        r"|(?:for )?a (?:moment|minute|bit|sec(?:ond)?)|(?:the |this |your )?(?:roadmap|run|loop"
        r"|work|autonomous run)))*\s*(?:[.!,;:\-]|$)",
        re.I,
    ),
    re.compile(r"\b(?:don't|do not|dont) (?:continue|carry on|go on|proceed|keep going)\b", re.I),
    re.compile(
        r"\b(?:pause|stop|halt) (?:the |this |your )?(?:roadmap|run|loop|autonomous run)\b", re.I
    ),
    re.compile(r"\bstop working\b", re.I),
]
_NOT_PAUSE = re.compile(r"\b(?:don't|do not|dont|never) (?:stop|pause|halt|wait)\b", re.I)
_RESUME = [
    re.compile(
        r"^(?:(?:ok(?:ay)?|please|alright|right|now|yes)[,.!]*\s+)*"
        r"(?:go on|continue|carry on|resume|proceed|keep going|go ahead|unpause|start again)\b",
        re.I,
    ),
    re.compile(
        r"\b(?:resume|continue|unpause|restart) (?:the |this |your )?(?:roadmap|run)\b", re.I
    ),
    _NOT_PAUSE,
]
PROMPT_REGION = 2000


def intent(prompt: str | None) -> str | None:
    """What the person's prompt asks of the run: "pause", "resume", or None for neither."""
    text = (prompt or "")[:PROMPT_REGION].strip()
    if not text:
        return None
    if not _NOT_PAUSE.search(text) and any(p.search(text) for p in _PAUSE):
        return "pause"
    if any(p.search(text) for p in _RESUME):
        return "resume"
    return None
