"""What a final message says of the turn's end (promises, completion claims, deference,
questions to the person), and what the person's prompt asks of the run (pause, go on).

Pure heuristics; each returns the sentence it matched.
"""

from __future__ import annotations

import re

# The patterns are kept as source text, as in core.roadmap: `re` compiles each on its first
# use and keeps it, so a stop hook fire compiles only those its message reaches.
CLOSING_CHARS = 600
_PARAGRAPH_END = r"\n[ \t>]*\n"
_CODE = r"(?s)```.*?(?:```|$)|`[^`\n]*`"
# sentences end at a line break, or at white space after one of these
_SENTENCE_MARKS = ".!?"
# a sentence's decoration: white space and these, before it and after it
_LEADING = ">*_#`-"
_TRAILING = "*_`"
_NEGATION = r"(?i)\b(?:not|no|never|cannot)\b|n't\b"

_CONTINUE = (
    r"(?:continue|proceed|go ahead|keep going|carry on|move on|start|begin|implement|tackle"
    r"|work on|do (?:that|this|it|the next))"
)
_DEFERENCE = [
    rf"(?i)\b(?:would|do) you (?:like|want) me to {_CONTINUE}",
    rf"(?i)\b(?:shall|should) I {_CONTINUE}",
    rf"(?i)\blet me know if (?:you(?:'d| would) like|you want) me to {_CONTINUE}",
    rf"(?i)\b(?:want|ready for) me to {_CONTINUE}",
    r"(?i)\b(?:ok(?:ay)?|good|fine) (?:for me )?to (?:proceed|continue)\?",
    r"(?i)^(?:proceed|continue)\?$",
]
# a request for the person's decision, wherever it stands in the closing paragraph
_DECISION = (
    r"(?i)\blet me know (?:which|what|whether|how|where|when|your"
    r"|if you(?:'d| would)? (?:prefer|rather|agree|approve|want (?!me to)|like (?!me to)))"
    r"|\bplease (?:confirm|decide|choose|advise|approve|pick)\b"
    r"|\byour (?:call|choice|decision|preference)\b|\bup to you\b"
    r"|\b(?:which|what) (?:one )?(?:do|would) you (?:prefer|rather|choose|like)\b"
    r"|\bI need (?:your|a) (?:decision|input|approval|go-ahead|answer|choice)\b"
    r"|\b(?:awaiting|waiting (?:for|on)) your (?:decision|input|approval|answer|confirmation)\b"
)
# a why/what/how question the message answers itself ("Why did it fail? The cache was cold.")
_RHETORICAL = r"(?i)^(?:so,?\s+)?(?:why|what|how|where|when|who)\b"
_TO_PERSON = r"(?i)\b(?:you|your|we|us|our|should|shall|prefer|rather|ok|okay)\b"
_LIST_ITEM = r"^\s*(?:[-*+]|\d+[.)])\s"
CLOSING_REGION = 2000
SHORT_LINE = 60

_PROMISE = (
    r"(?i)^(?:(?:now|next|then|first|ok(?:ay)?|alright)[,:]?\s+)*"
    r"(?:I'll|I will|I am going to|I'm going to|let me(?! know)|let's|I need to)\b"
)
_NOT_A_PROMISE = r"(?i)\b(?:stop|wait|pause|leave (?:it|this|that)|hand (?:it )?back)\b"
_COMPLETION = [
    (
        r"(?i)\b(?:all )?(?:\d+ )?tests? (?:now |all )?"
        r"(?:pass|passed|passing|are passing|are green|succeed)\b"
    ),
    (
        r"(?i)\b(?:is|are|'s) (?:now )?(?:all )?"
        r"(?:complete|completed|done|finished|fixed|implemented|working)\b"
    ),
    r"(?i)\bI(?:'ve| have) (?:now )?(?:successfully )?(?:completed|finished|implemented|fixed)\b",
    r"(?i)\b(?:everything|CI|the build) is (?:now )?green\b",
    r"(?i)^(?:all )?done[.!]*$",
]


def closing_sentences(message: str) -> list[str]:
    """The sentences of the message's closing part, last one last, decoration stripped."""
    return _sentences(message[-CLOSING_CHARS:])


def _sentences(text: str) -> list[str]:
    """The text's sentences, decoration stripped, the empty ones left out.

    Read with string methods (a stop fire reads them on every turn end, and compiling the
    patterns they stand for would cost more than reading): a line break ends a sentence, and
    so does white space after a full stop, an exclamation or a question mark.
    """
    found: list[str] = []
    for line in text.split("\n"):
        start = 0
        for end in _ends(line):
            found.append(_undecorated(line[start:end]))
            start = end
        found.append(_undecorated(line[start:]))
    return [sentence for sentence in found if sentence]


def _ends(line: str) -> list[int]:
    """Where the line's sentences end but the last: after each mark white space follows."""
    return sorted(
        at + 1
        for mark in _SENTENCE_MARKS
        for at in _positions(line, mark)
        if line[at + 1 : at + 2].isspace()
    )


def _positions(line: str, mark: str) -> list[int]:
    found: list[int] = []
    at = line.find(mark)
    while at >= 0:
        found.append(at)
        at = line.find(mark, at + 1)
    return found


def _undecorated(sentence: str) -> str:
    """The sentence without white space and markup (quote marks, emphasis, headings, list
    dashes, backticks) before it, nor white space, emphasis and backticks after it."""
    start, end = 0, len(sentence)
    while start < end and (sentence[start].isspace() or sentence[start] in _LEADING):
        start += 1
    while end > start and (sentence[end - 1].isspace() or sentence[end - 1] in _TRAILING):
        end -= 1
    return sentence[start:end]


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
        if _found(_DECISION, sentence):
            return sentence
        if not sentence.endswith("?"):
            continue
        answered = index < len(sentences) - 1  # statements follow in the same paragraph
        if not (answered and _found(_RHETORICAL, sentence) and not _found(_TO_PERSON, sentence)):
            return sentence
    return None


def _closing_paragraph(message: str) -> list[str]:
    """The sentences of the last prose paragraph, with any lists and short lines after it.

    Code is left out: a `?` inside it asks nobody anything.
    """
    text = message[-CLOSING_REGION:]
    text = re.sub(_CODE, " ", text) if "`" in text else text  # no backtick, no code
    blocks = re.split(_PARAGRAPH_END, text) if "\n" in text else [text]
    paragraphs = [p.strip() for p in blocks if p.strip()]
    closing: list[str] = []
    for paragraph in reversed(paragraphs):
        closing.insert(0, paragraph)
        if len(paragraph) >= SHORT_LINE and not re.match(_LIST_ITEM, paragraph):
            break
    return _sentences("\n".join(closing))


def _is_deference(sentence: str) -> bool:
    return any(_found(pattern, sentence) for pattern in _DEFERENCE)


def promise(message: str) -> str | None:
    sentences = closing_sentences(message)
    if not sentences:
        return None
    last = sentences[-1]
    if last.endswith("?") or _found(_NOT_A_PROMISE, last):
        return None
    if _found(_PROMISE, last) or (last.endswith(":") and _found(_PROMISE, last.rstrip(":"))):
        return last
    return None


def completion(message: str) -> str | None:
    for sentence in reversed(closing_sentences(message)):
        if _found(_NEGATION, sentence):
            continue
        if any(_found(pattern, sentence) for pattern in _COMPLETION):
            return sentence
    return None


# what the person's latest prompt asks of the run
_PAUSE_WORD = r"(?:stop|pause|halt|hold on|hold off|hang on|wait|freeze|enough)"
_PAUSE = [
    # the prompt opens with a bare pause: "stop", "Wait, ...", "pause the roadmap for now."
    (
        r"(?i)^(?:(?:please|ok(?:ay)?|no|hey|actually|now|right)[,.!]*\s+)*"
        rf"{_PAUSE_WORD}"
        r"(?:\s+(?:it|that|this|here|there|now|for now|please|working|everything|all"
        r"|(?:for )?a (?:moment|minute|bit|sec(?:ond)?)|(?:the |this |your )?(?:roadmap|run|loop"
        r"|work|autonomous run)))*\s*(?:[.!,;:\-]|$)"
    ),
    r"(?i)\b(?:don't|do not|dont) (?:continue|carry on|go on|proceed|keep going)\b",
    r"(?i)\b(?:pause|stop|halt) (?:the |this |your )?(?:roadmap|run|loop|autonomous run)\b",
    r"(?i)\bstop working\b",
]
_NOT_PAUSE = r"(?i)\b(?:don't|do not|dont|never) (?:stop|pause|halt|wait)\b"
_RESUME = [
    (
        r"(?i)^(?:(?:ok(?:ay)?|please|alright|right|now|yes)[,.!]*\s+)*"
        r"(?:go on|continue|carry on|resume|proceed|keep going|go ahead|unpause|start again)\b"
    ),
    r"(?i)\b(?:resume|continue|unpause|restart) (?:the |this |your )?(?:roadmap|run)\b",
    _NOT_PAUSE,
]
PROMPT_REGION = 2000

# For each pattern, words (lowercase) one of which any text it matches holds: a text with
# none of them is not searched, so the pattern is not even compiled. Only ASCII texts are
# screened so: beyond ASCII, re's case folding matches more than lower() shows.
_NEEDS: dict[str, tuple[str, ...]] = {
    _NEGATION: ("no", "never", "n't"),  # "not" and "cannot" hold "no"
    _DEFERENCE[0]: ("me to",),
    _DEFERENCE[1]: ("shall i ", "should i "),
    _DEFERENCE[2]: ("me to",),
    _DEFERENCE[3]: ("me to",),
    _DEFERENCE[4]: ("proceed?", "continue?"),
    _DEFERENCE[5]: ("proceed?", "continue?"),
    _DECISION: ("let me know", "please", "you", "i need"),  # "your" holds "you"
    _RHETORICAL: ("wh", "how"),
    _TO_PERSON: ("you", "we", "us", "our", "should", "shall", "prefer", "rather", "ok"),
    _PROMISE: ("i'll", "i will", "i am going to", "i'm going to", "let me", "let's", "i need to"),
    _NOT_A_PROMISE: ("stop", "wait", "pause", "leave ", "hand "),
    _COMPLETION[0]: ("test",),
    _COMPLETION[1]: ("complete", "done", "finished", "fixed", "implemented", "working"),
    _COMPLETION[2]: ("i've", "i have"),
    _COMPLETION[3]: ("green",),
    _COMPLETION[4]: ("done",),
    _PAUSE[0]: ("stop", "pause", "halt", "hold o", "hang on", "wait", "freeze", "enough"),
    _PAUSE[1]: ("don't", "do not", "dont"),
    _PAUSE[2]: ("pause", "stop", "halt"),
    _PAUSE[3]: ("stop working",),
    _NOT_PAUSE: ("stop", "pause", "halt", "wait"),
    _RESUME[0]: (
        "go on",
        "continue",
        "carry on",
        "resume",
        "proceed",
        "keep going",
        "go ahead",
        "unpause",
        "start again",
    ),
    _RESUME[1]: ("resume", "continue", "unpause", "restart"),
}


def _found(pattern: str, text: str) -> bool:
    """`re.search(pattern, text)` found something; screened first by the pattern's words."""
    words = _NEEDS.get(pattern)
    if words is not None and text.isascii():
        lowered = text.lower()
        if not any(word in lowered for word in words):
            return False
    return re.search(pattern, text) is not None


def intent(prompt: str | None) -> str | None:
    """What the person's prompt asks of the run: "pause", "resume", or None for neither."""
    text = (prompt or "")[:PROMPT_REGION].strip()
    if not text:
        return None
    if not _found(_NOT_PAUSE, text) and any(_found(p, text) for p in _PAUSE):
        return "pause"
    if any(_found(p, text) for p in _RESUME):
        return "resume"
    return None
