"""Parse a roadmap (frontmatter mode, phases, steps) and scan it for open work.

Pure: text in, frozen dataclasses out. markdown-it and ruamel.yaml load lazily so that a
caller holding a cached parse never pays for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any

    from markdown_it.token import Token

MODES = ("autonomous", "phase-checkpoints", "interactive")
DEFAULT_MODE = "interactive"
MARKS = {" ": "open", "x": "done", "X": "done", "~": "deferred", "-": "cancelled"}
TEXT_LIMIT = 240

_PHASE = re.compile(r"Phase\s+([A-Za-z]?\d+(?:\.\d+)*[A-Za-z]?|[IVXLCDM]+)(?![\w.])")
_CHECKBOX = re.compile(r"\[([ xX~-])\](?:[ \t]+|$)")
_BOLD_ID = re.compile(r"\*\*([^*\s][^*]*?)\*\*\s*")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_VERIFY_COMMENT = re.compile(r"<!--\s*verify:\s*(.*?)\s*-->", re.S)
_VERIFY_PLAIN = re.compile(r"`?verify:`?[ \t]*`([^`\n]+)`")
_BLOCKED_COMMENT = re.compile(r"<!--\s*blocked-by:\s*(.*?)\s*-->", re.S)
_BLOCKED_PLAIN = re.compile(r"`?blocked-by:`?[ \t]*`?([^\s`]*)`?")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Problem:
    """A diagnostic the parser found; `roadmap lint` reports it."""

    line: int
    level: str  # "error" | "warning"
    message: str


@dataclass(frozen=True)
class Phase:
    id: str
    title: str
    line: int


@dataclass(frozen=True)
class Step:
    id: str
    mark: str  # open | done | deferred | cancelled
    text: str
    verify: str | None
    blocked_by: str | None  # None: not blocked; "" : blocked with no id
    line: int
    phase: str

    @property
    def blocked(self) -> bool:
        return self.blocked_by is not None

    @property
    def is_open(self) -> bool:
        return self.mark == "open" and not self.blocked


@dataclass(frozen=True)
class Roadmap:
    mode: str | None  # the raw execution.mode, None when absent or unreadable
    title: str | None
    phases: tuple[Phase, ...]
    steps: tuple[Step, ...]
    problems: tuple[Problem, ...] = field(default=())

    @property
    def autonomous(self) -> bool:
        return self.mode == "autonomous"


@dataclass(frozen=True)
class Counts:
    open: int = 0
    blocked: int = 0
    done: int = 0
    deferred: int = 0
    cancelled: int = 0

    @property
    def total(self) -> int:
        return self.open + self.blocked + self.done + self.deferred + self.cancelled


@dataclass(frozen=True)
class Scan:
    counts: Counts
    next: Step | None
    phases: tuple[tuple[Phase, Counts], ...]


def count(steps: Iterable[Step]) -> Counts:
    tally = dict.fromkeys(("open", "blocked", "done", "deferred", "cancelled"), 0)
    for step in steps:
        if step.mark == "open":
            tally["blocked" if step.blocked else "open"] += 1
        else:
            tally[step.mark] += 1
    return Counts(**tally)


def scan(roadmap: Roadmap) -> Scan:
    """Counts, the next open unblocked step, and per-phase counts."""
    next_step = next((s for s in roadmap.steps if s.is_open), None)
    by_phase: dict[str, list[Step]] = {phase.id: [] for phase in roadmap.phases}
    for step in roadmap.steps:
        by_phase.setdefault(step.phase, []).append(step)
    per_phase = tuple((phase, count(by_phase[phase.id])) for phase in roadmap.phases)
    return Scan(count(roadmap.steps), next_step, per_phase)


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    """Comments removed, whitespace collapsed, cut to `limit` characters with `...`."""
    flat = _SPACE.sub(" ", _COMMENT.sub(" ", text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def parse_roadmap(text: str) -> Roadmap:
    """Parse a roadmap's text. Never raises on any input string."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    problems: list[Problem] = []
    meta, body, offset = _split_frontmatter(text, problems)
    mode = _mode_of(meta, problems)
    title = meta.get("title") if isinstance(meta.get("title"), str) else None
    phases, steps = _parse_body(body, offset, problems)
    return Roadmap(mode, title, tuple(phases), tuple(steps), tuple(problems))


def _split_frontmatter(text: str, problems: list[Problem]) -> tuple[dict[str, Any], str, int]:
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, text, 0
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        problems.append(Problem(1, "error", "frontmatter has no closing `---`"))
        return {}, text, 0
    body = "\n".join(lines[end + 1 :])
    meta = _load_yaml("\n".join(lines[1:end]), problems)
    return meta, body, end + 1


def _load_yaml(source: str, problems: list[Problem]) -> dict[str, Any]:
    from ruamel.yaml import YAML

    try:
        data = YAML(typ="safe", pure=True).load(source)
    except Exception as exc:  # ruamel raises many unrelated types for bad input
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        problems.append(Problem(1, "error", f"frontmatter is not readable YAML: {first}"))
        return {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        problems.append(Problem(1, "error", "frontmatter is not a mapping"))
        return {}
    return data


def _mode_of(meta: dict[str, Any], problems: list[Problem]) -> str | None:
    execution = meta.get("execution")
    if execution is None:
        return None
    mode = execution.get("mode") if isinstance(execution, dict) else None
    if not isinstance(mode, str) or mode not in MODES:
        problems.append(
            Problem(
                1, "error", f"unknown execution.mode {mode!r}; expected one of {', '.join(MODES)}"
            )
        )
        return None
    return mode


def _parse_body(body: str, offset: int, problems: list[Problem]) -> tuple[list[Phase], list[Step]]:
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark")
    # Only block structure and each block's raw text are read: inline parsing is skipped.
    parser.core.ruler.disable("inline")
    tokens = parser.parse(body)
    heading_phases = _phase_headings(tokens, offset)
    phased = any(phase is not None for _, _, phase in heading_phases)
    phases: list[Phase] = [p for _, _, p in heading_phases if p is not None]
    if not phased:
        phases = [Phase("1", "", 0)]
    steps: list[Step] = []
    ordinals: dict[str, int] = {}
    stack: list[tuple[int, Phase]] = []  # open phase spans: (heading level, phase)
    heading_iter = iter(heading_phases)
    upcoming = next(heading_iter, None)
    for index, token in enumerate(tokens):
        if token.type != "list_item_open" or token.map is None:
            continue
        line = token.map[0] + offset + 1
        while upcoming is not None and upcoming[0] <= line:
            _, level, phase = upcoming
            while stack and stack[-1][0] >= level:
                stack.pop()
            if phase is not None:
                stack.append((level, phase))
            upcoming = next(heading_iter, None)
        own = _own_text(tokens, index)
        found = _CHECKBOX.match(own[0]) if own else None
        if found is None:
            continue
        if phased and not stack:
            problems.append(Problem(line, "warning", "checkbox outside any phase is not a step"))
            continue
        phase = stack[-1][1] if phased else phases[0]
        ordinals[phase.id] = ordinals.get(phase.id, 0) + 1
        steps.append(_step(own, found, phase.id, ordinals[phase.id], line))
    return phases, steps


def _phase_headings(tokens: Sequence[Token], offset: int) -> list[tuple[int, int, Phase | None]]:
    """Every heading as (line, level, phase or None)."""
    out: list[tuple[int, int, Phase | None]] = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None:
            continue
        level = int(token.tag[1:])
        text = tokens[index + 1].content.strip() if index + 1 < len(tokens) else ""
        line = token.map[0] + offset + 1
        match = _PHASE.match(text) if level in (2, 3) else None
        out.append((line, level, Phase(match.group(1), text, line) if match else None))
    return out


def _own_text(tokens: Sequence[Token], start: int) -> list[str]:
    """The inline and HTML text of one list item, without its nested lists."""
    item_level = tokens[start].level
    parts: list[str] = []
    index = start + 1
    while index < len(tokens):
        token = tokens[index]
        if token.type == "list_item_close" and token.level == item_level:
            break
        if token.type in ("bullet_list_open", "ordered_list_open"):
            index = _skip_block(tokens, index)
            continue
        if token.type in ("inline", "html_block"):
            parts.append(token.content)
        index += 1
    if parts and tokens[start + 1].type != "paragraph_open":
        return []  # the item opens with something other than a paragraph: no checkbox
    return parts


def _skip_block(tokens: Sequence[Token], start: int) -> int:
    depth = 0
    for index in range(start, len(tokens)):
        depth += tokens[index].nesting
        if depth == 0:
            return index + 1
    return len(tokens)


def _step(own: list[str], box: re.Match[str], phase: str, ordinal: int, line: int) -> Step:
    whole = "\n".join(own)
    first = own[0][box.end() :]
    bold = _BOLD_ID.match(first)
    step_id = bold.group(1).strip() if bold else f"{phase}.{ordinal}"
    if bold:
        first = first[bold.end() :]
    verify_match = _VERIFY_COMMENT.search(whole) or _VERIFY_PLAIN.search(_COMMENT.sub(" ", whole))
    verify = clip(verify_match.group(1), 10_000) if verify_match else None
    blocked_match = _BLOCKED_COMMENT.search(whole) or _BLOCKED_PLAIN.search(
        _COMMENT.sub(" ", whole)
    )
    blocked_by = blocked_match.group(1).strip() if blocked_match else None
    text = _BLOCKED_PLAIN.sub(" ", _VERIFY_PLAIN.sub(" ", _COMMENT.sub(" ", first)))
    return Step(step_id, MARKS[box.group(1)], clip(text), verify or None, blocked_by, line, phase)
