"""Parse a roadmap (frontmatter mode, phases, steps), scan it for open work and say which
open steps are ready in its order.

Pure: text in, frozen records out. markdown-it and ruamel.yaml load lazily so that a
caller holding a cached parse never pays for them. Every scan here is linear in its input:
one item's text is cut into code spans and comments once, by position, never by
backtracking regexes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

from agentcfg.core.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any

    from markdown_it.token import Token

MODES = ("autonomous", "phase-checkpoints", "interactive")
# `execution.fleet.order`: what a step waits for before it is ready (see core/order.py)
ORDERS = ("steps", "phases", "free")
DEFAULT_ORDER = "steps"
DEFAULT_MODE = "interactive"
STATES = ("open", "in-progress", "done", "deferred", "cancelled")
MARKS = {
    " ": "open",
    "/": "in-progress",
    "x": "done",
    "X": "done",
    "~": "deferred",
    ">": "deferred",
    "-": "cancelled",
}
PARALLEL = "[P]"  # the tag of a step that may run beside the step before it
TEXT_LIMIT = 240
DETAIL_LINES = 5
DETAIL_LIMIT = 160

# The parser's patterns, kept as source text: `re` compiles each on its first use and keeps
# it, so a caller served from the parse cache compiles none of them.
_CHECKBOX = r"\[([^\]\[\\\n\t])\](?:\s+|$)"
_PHASE = (
    r"(?i)[\W_]*phase\s+(?:(?P<number>[-\u2212]?\d+(?:\.\d+)*[a-z]?)|(?P<prefixed>[a-z]\d+(?:\.\d+)*)"
    r"|(?P<word>[a-z]+))(?=$|[\s:.,;)\]\u2014\u2013*_-])"
)
_ROMAN = r"M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"
# fmt: off
_NUMERALS = {word: str(n) for n, word in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty",
))}
# fmt: on
# An author's own id at the start of an item: bold or plain, with a `:` `.` `)` after it.
_LABEL = (
    r"(?P<bold>\*\*|__)?(?P<label>(?i:step|task)\s+-?\d+[a-z]?|-?\d+(?:\.\d+)*[a-z]?"
    r"|[A-Z][A-Z0-9]*-?\d+(?:\.\d+)*[a-z]?)(?P<sep>[:.)])?(?P=bold)?(?P<after>[:.)])?(?:\s+|$)"
)
_WORDED = r"(?i:step|task)\s"
_TAGS = r"(?:\[[A-Za-z0-9][\w.-]{0,15}\](?:\s+|$))+"
_TICKS = r"`+"
_KEYWORD = r"(?i)(?<![\w-])(verify|blocked[ -]?by)(?:[ \t]*:|(?=[ \t]+#))"
_KEYWORD_ONLY = r"(?i)\s*(verify|blocked[ -]?by)\s*:\s*"
_KEYWORD_LEAD = r"(?i)(verify|blocked[ -]?by)\s*:?"
# `needs:` opening a comment, or a line of the item's own (after its first) or of a nested item
_NEEDS_LEAD = r"(?i)needs[ \t]*:"
_NEEDS_LINE = r"(?i)[ \t]*(?:[-*+][ \t]+)?needs[ \t]*:(.*)"
_WORDED_NAME = r"(?i)(?:step|task)\s+\S+"
_YAML_KEY = r"[\w\"'][\w \"'.-]*:(?:\s|$)"
_EXEMPT = ("acceptance", "prerequisite", "criteria", "summary", "checklist")
_COMPILED: dict[str, re.Pattern[str]] = {}


def _rx(pattern: str) -> re.Pattern[str]:
    """`pattern` compiled on its first use; a step's few lookups then skip `re`'s own cache,
    which costs more than the match itself on a roadmap of many short steps."""
    found = _COMPILED.get(pattern)
    if found is None:
        found = _COMPILED[pattern] = re.compile(pattern)
    return found


class Problem(Record):
    """A diagnostic the parser found; `roadmap lint` reports it."""

    line: int
    level: str  # "error" | "warning" | "note"
    message: str


class Phase(Record):
    id: str
    title: str
    line: int


class Step(Record):
    id: str  # canonical `<phase>.<n>`: unique in its roadmap and shell-safe
    mark: str  # open | done | deferred | cancelled
    text: str
    verify: str | None
    blocked_by: str | None  # None: not blocked; "" : blocked with no id
    line: int
    phase: str
    label: str = ""  # the author's own id (`T001`, `1.2`, `Step 3`) when it names this step alone
    started: bool = False  # `[/]`: open, and named before other open steps
    tags: tuple[str, ...] = ()  # `[P]`, `[US1]` after a label
    detail: tuple[str, ...] = ()  # the first lines of its nested detail
    needs: tuple[str, ...] = ()  # the ids or labels its `needs:` names, as written

    @property
    def name(self) -> str:
        """How the step is named to people and agents: its own label, else its id."""
        return self.label or self.id

    @property
    def parallel(self) -> bool:
        """`[P]`: it may run beside the step before it."""
        return PARALLEL in self.tags

    @property
    def blocked(self) -> bool:
        return self.blocked_by is not None

    @property
    def is_open(self) -> bool:
        return self.mark == "open" and not self.blocked

    def to_json(self) -> dict[str, Any]:
        """The step as `roadmap status --json` shows it."""
        return {
            "id": self.id,
            "label": self.label or None,
            "text": self.text,
            "verify": self.verify,
            "line": self.line,
            "in_progress": self.started,
        }


class Roadmap(Record):
    mode: str | None  # the raw execution.mode, None when absent or unreadable
    title: str | None
    phases: tuple[Phase, ...]
    steps: tuple[Step, ...]
    problems: tuple[Problem, ...] = ()
    order: str = DEFAULT_ORDER  # execution.fleet.order

    @property
    def autonomous(self) -> bool:
        return self.mode == "autonomous"


class Counts(Record):
    open: int = 0
    blocked: int = 0
    done: int = 0
    deferred: int = 0
    cancelled: int = 0

    @property
    def total(self) -> int:
        return self.open + self.blocked + self.done + self.deferred + self.cancelled

    def to_json(self) -> dict[str, int]:
        """Each count by its name: open, blocked, done, deferred, cancelled."""
        return self._asdict()


class Scan(Record):
    counts: Counts
    next: Step | None
    phases: tuple[tuple[Phase, Counts], ...]


def scan(roadmap: Roadmap) -> Scan:
    """Counts, the next step (the first ready one, a started one first; see core/order.py),
    per-phase counts."""
    tallies: dict[str, Counter[str]] = {phase.id: Counter() for phase in roadmap.phases}
    first_open = started = None
    for step in roadmap.steps:  # one pass: a roadmap may hold a great many steps
        kind = step.mark
        if kind == "open":
            if step.blocked_by is not None:
                kind = "blocked"
            elif started is None:
                if first_open is None:
                    first_open = step
                if step.started:
                    started = step
        tally = tallies.get(step.phase)
        if tally is None:
            tally = tallies[step.phase] = Counter()
        tally[kind] += 1
    total: Counter[str] = Counter()
    for tally in tallies.values():
        total.update(tally)
    per_phase = tuple((phase, _counts(tallies[phase.id])) for phase in roadmap.phases)
    upcoming = started or first_open
    if upcoming is not None and any(step.needs for step in roadmap.steps):
        # with no `needs:`, the first open step is ready in every order: nothing comes
        # before it that is still open and not blocked
        upcoming = first_ready(roadmap) or upcoming  # waiting for each other: in order
    return Scan(_counts(total), upcoming, per_phase)


# --- readiness: which open steps may start, by the roadmap's order (see core/order.py) ----


class Readiness(Record):
    """The open, unblocked steps that are ready, and each other one with what it waits for."""

    ready: tuple[Step, ...]  # in roadmap order
    waiting: tuple[tuple[Step, tuple[Step, ...]], ...]  # (step, the open steps it waits for)

    def waits_for(self, step_id: str) -> tuple[Step, ...]:
        return next((on for step, on in self.waiting if step.id == step_id), ())


def step_names(roadmap: Roadmap) -> dict[str, Step]:
    """Each step by its id and by its label, case folded."""
    found: dict[str, Step] = {}
    for step in roadmap.steps:
        found.setdefault(step.id.casefold(), step)
        if step.label:
            found.setdefault(step.label.casefold(), step)
    return found


def readiness(roadmap: Roadmap) -> Readiness:
    """Every open, unblocked step either ready or waiting, with the open steps it waits for."""
    waits = waits_of(roadmap, lambda step: step.mark == "open")
    ready: list[Step] = []
    waiting: list[tuple[Step, tuple[Step, ...]]] = []
    for step in roadmap.steps:
        if step.is_open:
            on = waits.get(step.id, ())
            if on:
                waiting.append((step, on))
            else:
                ready.append(step)
    return Readiness(tuple(ready), tuple(waiting))


def first_ready(roadmap: Roadmap) -> Step | None:
    """The step one agent takes next: a started ready step, else the first ready one."""
    ready = readiness(roadmap).ready
    return next((step for step in ready if step.started), next(iter(ready), None))


def waits_of(roadmap: Roadmap, pending: Callable[[Step], bool]) -> dict[str, tuple[Step, ...]]:
    """What each step waits for: the steps `pending` holds to be not yet done among those its
    `needs:` names, else among those the order puts before it."""
    known = step_names(roadmap) if any(step.needs for step in roadmap.steps) else {}
    flow = [s for s in roadmap.steps if s.mark in ("open", "done") and not s.blocked]
    implicit = _implicit(roadmap, flow, pending)
    waits: dict[str, tuple[Step, ...]] = {}
    for step in roadmap.steps:
        if step.needs:
            named = (known.get(name.casefold()) for name in step.needs)
            on = _unique(s for s in named if s is not None and s.id != step.id and pending(s))
        else:
            on = implicit.get(step.id, ())
        if on:
            waits[step.id] = on
    return waits


def _implicit(
    roadmap: Roadmap, flow: list[Step], pending: Callable[[Step], bool]
) -> dict[str, tuple[Step, ...]]:
    implicit: dict[str, tuple[Step, ...]] = {}
    if roadmap.order == "steps":
        group: list[Step] = []
        before: tuple[Step, ...] = ()
        for step in flow:
            if not (step.parallel and group):  # a new group: it waits for the one before
                before = tuple(s for s in group if pending(s))
                group = []
            group.append(step)
            implicit[step.id] = before
    elif roadmap.order == "phases":
        earlier: list[Step] = []  # the pending steps of the phases before this one
        this: list[Step] = []
        phase: str | None = None
        before = ()
        for step in flow:
            if step.phase != phase:
                earlier += this
                this, phase, before = [], step.phase, tuple(earlier)
            if pending(step):
                this.append(step)
            implicit[step.id] = before
    return implicit


def _unique(steps: Iterable[Step]) -> tuple[Step, ...]:
    seen: dict[str, Step] = {}
    for step in steps:
        seen.setdefault(step.id, step)
    return tuple(seen.values())


def _counts(tally: Counter[str]) -> Counts:
    return Counts(*(tally[field] for field in Counts._fields))


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    """Comments removed, whitespace collapsed, cut to `limit` characters with `...`."""
    return _cut(" ".join(_drop_comments(text).split()), limit)


def _cut(flat: str, limit: int = TEXT_LIMIT) -> str:
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def _drop_comments(text: str, inner: list[str] | None = None) -> str:
    """The text with each comment made one space; each comment's own text goes to `inner`."""
    if "<!--" not in text:
        return text
    parts: list[str] = []
    pos = 0
    while (start := text.find("<!--", pos)) >= 0:
        end = text.find("-->", start + 4)
        if end < 0:
            break  # an unclosed comment is text, and so is every later one
        parts += (text[pos:start], " ")
        if inner is not None:
            inner.append(text[start + 4 : end].strip())
        pos = end + 3
    parts.append(text[pos:])
    return "".join(parts)


def parse_roadmap(text: str, shortcut: bool = True) -> Roadmap:
    """Parse a roadmap's text. Never raises on any input string.

    `shortcut` reads one-line top-level checkbox items without markdown-it, as markdown-it
    would (see `_simple_items`); False sends every line through it, to check the two agree.
    """
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    problems: list[Problem] = []
    meta, body, offset = _split_frontmatter(text, problems)
    mode = _mode_of(meta, problems)
    title = meta.get("title") if isinstance(meta.get("title"), str) else None
    marks = _marks_of(meta, problems)
    order = _order_of(meta, problems)
    phases, steps = _parse_body(body, offset, marks, problems, shortcut)
    return Roadmap(mode, title, tuple(phases), tuple(steps), tuple(problems), order)


def read_frontmatter(text: str) -> dict[str, Any]:
    """A roadmap's frontmatter as a mapping; {} when it has none or it cannot be read."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return _split_frontmatter(text, [])[0]


def _split_frontmatter(text: str, problems: list[Problem]) -> tuple[dict[str, Any], str, int]:
    """YAML between a first `---` and the next one; a `---` before markdown is a rule."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, text, 0
    end = next((n for n in range(1, len(lines)) if lines[n].rstrip() in ("---", "...")), 0)
    first = next((s for s in lines[1 : end or None] if s.strip() and s[0] != "#"), "")
    if first and not re.match(_YAML_KEY, first):
        return {}, text, 0
    if not end:
        problems.append(Problem(1, "error", "frontmatter has no closing `---`"))
        return {}, text, 0
    body = "\n".join(lines[end + 1 :])
    meta = _load_yaml("\n".join(lines[1:end]), problems)
    return meta, body, end + 1


def _load_yaml(source: str, problems: list[Problem]) -> dict[str, Any]:
    from agentcfg.core.yamlload import load_yaml

    try:
        data = load_yaml(source)
    except ValueError as exc:
        problems.append(Problem(1, "error", f"frontmatter is not readable YAML: {exc}"))
        return {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        problems.append(Problem(1, "error", "frontmatter is not a mapping"))
        return {}
    return data


def _mode_of(meta: dict[str, Any], problems: list[Problem]) -> str | None:
    execution = meta.get("execution")
    mode = _execution_mode(execution, problems) if execution is not None else None
    top = meta.get("mode")
    if isinstance(top, str) and top in MODES:  # `mode:` where `execution:` was meant
        if mode is None and execution is None:
            problems.append(Problem(1, "error", (
                f"frontmatter `mode: {top}` is at the top level, where it is not read: the mode "
                f"goes under `execution:` (`execution: {{mode: {top}}}`); without it the roadmap "
                "is interactive and the stop hook never carries it on"
            )))  # fmt: skip
        elif mode is not None:
            problems.append(Problem(1, "warning", (
                f"frontmatter `mode: {top}` at the top level is not read: the roadmap runs in "
                f"its `execution:` mode, `{mode}`"
            )))  # fmt: skip
    return mode


def _execution_mode(execution: object, problems: list[Problem]) -> str | None:
    mode = execution.get("mode") if isinstance(execution, dict) else None
    if not isinstance(mode, str) or mode not in MODES:
        told = "`execution:` has no `mode:`" if mode is None else f"unknown execution.mode {mode!r}"
        problems.append(Problem(1, "error", (
            f"{told}; expected autonomous (the stop hook carries the "
            "agent on to the next open step), phase-checkpoints (as interactive, for now) or "
            "interactive (the default: every turn end is the person's)"
        )))  # fmt: skip
        return None
    return mode


def _order_of(meta: dict[str, Any], problems: list[Problem]) -> str:
    """`execution.fleet.order`, the default when absent; an unknown one is reported."""
    execution = meta.get("execution")
    fleet = execution.get("fleet") if isinstance(execution, dict) else None
    order = fleet.get("order") if isinstance(fleet, dict) else None
    if order is None:
        if fleet is not None and not isinstance(fleet, dict):
            problems.append(Problem(1, "warning", "`execution.fleet` is not a mapping; ignored"))
        return DEFAULT_ORDER
    if order not in ORDERS:
        problems.append(Problem(1, "error", (
            f"unknown execution.fleet.order {order!r}; expected steps (the default: each step "
            "waits for the one before it), phases (a phase waits for the phases before it) or "
            f"free (any open step may run); read as {DEFAULT_ORDER}"
        )))  # fmt: skip
        return DEFAULT_ORDER
    return str(order)


def _marks_of(meta: dict[str, Any], problems: list[Problem]) -> dict[str, str]:
    """The mark table, with the frontmatter's `marks:` remapping applied."""
    marks = dict(MARKS)
    remap = meta.get("marks")
    if remap is None:
        return marks
    if not isinstance(remap, dict):
        problems.append(Problem(1, "warning", "frontmatter `marks:` is not a mapping; ignored"))
        return marks
    for key, state in remap.items():
        if isinstance(key, str) and re.fullmatch(_CHECKBOX, f"[{key}]") and state in STATES:
            marks[key] = state
        else:
            message = (
                f"frontmatter `marks:` entry {key!r}: {state!r} ignored; a mark is one "
                f"character and its state one of {', '.join(STATES)}"
            )
            problems.append(Problem(1, "warning", message))
    return marks


_Heading = tuple[int, int, str, "str | None"]  # line, level, title, phase id
_Section = tuple[int, "str | None"]  # a heading's line and title


def _parse_body(
    body: str, offset: int, marks: dict[str, str], problems: list[Problem], shortcut: bool
) -> tuple[list[Phase], list[Step]]:
    tokens, items, headings = _blocks(body, offset, shortcut)
    found: dict[str, Phase] = {}
    for at, _, title, phase_id in headings:
        if phase_id is not None and phase_id not in found:
            found[phase_id] = Phase(phase_id, title, at)
    phases = list(found.values()) or [Phase("1", "", 0)]
    drafts: list[Step] = []  # each with the label it found, settled at the end
    shown: dict[int, str] = {}  # a labelled draft's text with its label left in
    ordinals: dict[str, int] = {}
    stray: dict[_Section, list[int]] = {}  # section: lines of its checkboxes
    checkbox = _rx(_CHECKBOX).match
    for line, item, section, phase in _placed(items, headings, offset):
        if isinstance(item, int):
            box = _box(tokens, item)
            own, nested, _ = _item_parts(tokens, item) if box is not None else ([], [], 0)
        else:
            box, own, nested = checkbox(item), [item], []
        if box is None:
            continue
        if phase is None and found:  # a checkbox outside every phase
            stray.setdefault(section, []).append(line)
            continue
        phase = phases[0].id if phase is None else phase
        ordinals[phase] = ordinals.get(phase, 0) + 1
        step, text = _draft(
            own, nested, box, marks, f"{phase}.{ordinals[phase]}", phase, line, problems
        )
        if step.label:
            shown[len(drafts)] = text
        drafts.append(step)
    _note_strays(stray, problems)
    return phases, _settle_labels(drafts, shown, problems)


def _blocks(
    body: str, offset: int, shortcut: bool
) -> tuple[list[Token], list[tuple[int, int | str]], list[_Heading]]:
    """The body's markdown-it tokens (none when every line is simple), its list items in
    order (a token's index, or a simple item's text, after the item's line in the body) and
    its headings."""
    rows = body.split("\n")
    simple = _simple_items(rows) if shortcut else {}
    plain = _plain_headings(rows, simple, offset) if simple else None
    tokens = [] if plain is not None else _markdown_it(body, rows, simple)
    items: list[tuple[int, int | str]] = [
        (token.map[0], index)
        for index, token in enumerate(tokens)
        if token.type == "list_item_open" and token.map is not None
    ]
    if simple:
        items = sorted([*items, *simple.items()], key=lambda item: item[0])
    return tokens, items, _headings(tokens, offset) if plain is None else plain


def _placed(
    items: list[tuple[int, int | str]], headings: list[_Heading], offset: int
) -> Iterator[tuple[int, int | str, _Section, str | None]]:
    """Each item with its line, the heading it sits under, and the id of the innermost phase
    whose heading's span holds it (None outside every phase)."""
    stack: list[tuple[int, str]] = []  # open phase spans: (heading level, phase id)
    section: _Section = (0, None)
    upcoming = iter(headings)
    heading = next(upcoming, None)
    for at_line, item in items:
        line = at_line + offset + 1
        while heading is not None and heading[0] <= line:
            at, level, title, phase_id = heading
            while stack and stack[-1][0] >= level:
                stack.pop()
            if phase_id is not None:
                stack.append((level, phase_id))
            section = (at, title)
            heading = next(upcoming, None)
        yield line, item, section, stack[-1][1] if stack else None


def _note_strays(stray: dict[_Section, list[int]], problems: list[Problem]) -> None:
    """A note for each section outside every phase that holds checkboxes, unless its title
    says they are not meant as steps (acceptance criteria, a checklist...)."""
    for (at, name), lines in stray.items():
        if name is None or not any(word in name.casefold() for word in _EXEMPT):
            where = f"under `{clip(name, 60)}`" if name is not None else "before the first phase"
            many = len(lines) > 1
            message = (
                f"{len(lines)} checkbox{'es' if many else ''} {where}: "
                f"{'not steps' if many else 'not a step'}, since only sections under a `Phase` "
                "heading hold steps"
            )
            problems.append(Problem(at or lines[0], "note", message))


def _markdown_it(body: str, rows: list[str], simple: dict[int, str]) -> list[Token]:
    """markdown-it's block tokens for the body, the simple items' lines left blank."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark")
    # Only block structure and each block's raw text are read: inline parsing is skipped,
    # and so are link reference definitions (no checkbox item can be one).
    parser.core.ruler.disable("inline")
    parser.block.ruler.disable("reference")
    if simple:  # those lines are left blank for markdown-it: it parses everything else
        return parser.parse("\n".join("" if n in simple else row for n, row in enumerate(rows)))
    return parser.parse(body)


def _plain_headings(
    rows: list[str], simple: dict[int, str], offset: int
) -> list[tuple[int, int, str, str | None]] | None:
    """The headings, as `_headings` gives them, of a body whose every line but its simple
    items is blank, an ATX heading at the margin or prose opening with a letter; None when
    any line is something else, for markdown-it to read.

    Such a body holds no block but those items, headings and paragraphs: a letter opens no
    other block, and a prose line that would continue an item already kept that item from
    the simple ones (see `_simple_items`).
    """
    out: list[tuple[int, int, str, str | None]] = []
    for number, row in enumerate(rows):
        if number in simple or not row.strip(" \t") or row[0].isalpha():
            continue
        level = len(row) - len(row.lstrip("#"))
        if not 1 <= level <= 6 or row[level : level + 1] not in ("", " ", "\t"):
            return None
        end = len(row.rstrip(" \t"))
        closing = len(row[:end].rstrip("#"))
        if level < closing < end and row[closing - 1] in " \t":  # a closing run of `#`
            end = closing
        text = row[level:end].strip()
        out.append((number + offset + 1, level, text, _phase_id(text) if 2 <= level <= 4 else None))
    return out


def _simple_items(lines: list[str]) -> dict[int, str]:
    """The lines that are one-line checkbox items at the top level (`- [ ] text`), by line
    number, with the text markdown-it would give their paragraph; {} when any line of the
    body could open a fenced code or HTML block, which would hold the lines after it.

    markdown-it gives each such line the same item it would read itself: a `- [` line at the
    margin always opens a top-level item, and its paragraph ends at the next line unless that
    line continues it, which the last line of a run is checked for. Left blank, the lines
    change nothing markdown-it makes of the rest.
    """
    body = "\n".join(lines)
    if "\0" in body or re.search(_HOLDING, body, re.M | re.I):
        return {}
    item = re.compile(r"- \[[^\]\[\\\n\t]\](?:[ \t].*)?")
    found: dict[int, str] = {}
    index, size = 0, len(lines)
    while index < size:
        if not item.fullmatch(lines[index]):
            index += 1
            continue
        end = index
        while end < size and item.fullmatch(lines[end]):
            end += 1
        if not _closes_item(lines, end):
            end -= 1  # the last one's paragraph may go on: markdown-it reads that item
        for number in range(index, end):
            found[number] = lines[number][2:].strip()
        index = max(end, index + 1)
    return found


# a line whose block can hold the lines after it: a code fence, or an HTML block (any line
# opening with `<`, which covers every kind)
_HOLDING = r"^[ \t>]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)*(?:```|~~~|<)"


def _closes_item(lines: list[str], end: int) -> bool:
    """Nothing from line `end` on belongs to the item on the line before it: the end, a heading
    at the margin, or blank lines and then the end or a line at the margin."""
    if end < len(lines) and re.match(r"#{1,6}(?:[ \t]|$)", lines[end]):
        return True
    if end < len(lines) and lines[end].strip(" \t"):
        return False  # a line right after it: the paragraph's continuation, or more of the item
    while end < len(lines) and not lines[end].strip(" \t"):
        end += 1
    return end == len(lines) or lines[end][0] not in " \t"


def _headings(tokens: Sequence[Token], offset: int) -> list[tuple[int, int, str, str | None]]:
    """Every heading as (line, level, text, phase id or None)."""
    out: list[tuple[int, int, str, str | None]] = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None:
            continue
        level = int(token.tag[1:])
        text = tokens[index + 1].content.strip() if index + 1 < len(tokens) else ""
        phase_id = _phase_id(text) if 2 <= level <= 4 else None
        out.append((token.map[0] + offset + 1, level, text, phase_id))
    return out


def _phase_id(heading: str) -> str | None:
    """`Phase <id>` at the start of a heading (after emoji and emphasis), normalised."""
    found = re.match(_PHASE, heading)
    if found is None:
        return None
    number, prefixed, word = found.group("number", "prefixed", "word")
    if number:
        return number.replace("\u2212", "-").lower()
    if prefixed:
        return prefixed[0].upper() + prefixed[1:]
    if word.casefold() in _NUMERALS:
        return _NUMERALS[word.casefold()]
    if (len(word) == 1 and word.isupper()) or re.fullmatch(_ROMAN, word):
        return word
    return None


def _box(tokens: Sequence[Token], index: int) -> re.Match[str] | None:
    """The checkbox opening a list item's first paragraph, if it has one."""
    if index + 2 >= len(tokens) or tokens[index + 1].type != "paragraph_open":
        return None
    return _rx(_CHECKBOX).match(tokens[index + 2].content)


def _item_parts(tokens: Sequence[Token], start: int) -> tuple[list[str], list[str], int]:
    """One item's own text blocks, those of its nested items that are not steps (each
    nested item's first line marked `- `), and the index after the item."""
    item_level = tokens[start].level
    own: list[str] = []
    nested: list[str] = []
    index = start + 1
    while index < len(tokens):
        token = tokens[index]
        if token.type == "list_item_close" and token.level == item_level:
            return own, nested, index + 1
        if token.type == "list_item_open":
            if _box(tokens, index) is not None:  # a step of its own
                index = _skip_block(tokens, index)
                continue
            sub_own, sub_nested, index = _item_parts(tokens, index)
            if sub_own:
                sub_own[0] = "- " + sub_own[0]
            nested += sub_own + sub_nested
            continue
        if token.type in ("inline", "html_block"):
            own.append(token.content)
        index += 1
    return own, nested, index


def _skip_block(tokens: Sequence[Token], start: int) -> int:
    depth = 0
    for index in range(start, len(tokens)):
        depth += tokens[index].nesting
        if depth == 0:
            return index + 1
    return len(tokens)


class _Markers:
    """The markers one item's text holds, the first of each kind and place kept."""

    __slots__ = ("blocked_comment", "blocked_plain", "needs", "verify_comment", "verify_plain")

    def __init__(self) -> None:
        self.needs: list[str] = []
        self.verify_comment: str | None = None
        self.verify_plain: str | None = None
        self.blocked_comment: str | None = None
        self.blocked_plain: str | None = None

    def comment(self, inner: str) -> None:
        """A comment's text: a marker when it opens with one."""
        if lead := _rx(_KEYWORD_LEAD).match(inner):
            self.note(lead.group(1), inner[lead.end() :].strip(), comment=True)
        elif lead := _rx(_NEEDS_LEAD).match(inner):
            self.need(inner[lead.end() :])

    def need(self, value: str) -> None:
        """The names a `needs:` gives, split at commas (and spaces, but for `Step 3`)."""
        for part in value.split(","):
            part = " ".join(part.split()).strip(".;)]")
            if _rx(_WORDED_NAME).fullmatch(part):
                names = [part]
            else:
                names = [word.strip(".;)]") for word in part.split()]
            self.needs += [name for name in names if name and name not in self.needs]

    def note(self, keyword: str, value: str, comment: bool) -> None:
        if keyword.casefold() == "verify":
            if comment and self.verify_comment is None:
                self.verify_comment = value
            elif not comment and self.verify_plain is None:
                self.verify_plain = value
        else:
            value = next(iter(value.split()), "").rstrip(".,;)]")  # the first word is the id
            if comment and self.blocked_comment is None:
                self.blocked_comment = value
            elif not comment and self.blocked_plain is None:
                self.blocked_plain = value


def _draft(
    own: list[str],
    nested: list[str],
    box: re.Match[str],
    marks: dict[str, str],
    step_id: str,
    phase: str,
    line: int,
    problems: list[Problem],
) -> tuple[Step, str]:
    """The item's step, with the label it found, and its text with that label left in."""
    markers = _Markers()
    first = _read(own[0][box.end() :], markers)
    if "\n" in first and "eeds" in first.casefold():  # a `needs:` line after the first
        head, *more = first.split("\n")
        first = "\n".join([head, *(row for row in more if not _needs_line(row, markers))])
    detail: list[str] = []
    for part in (*own[1:], *nested) if len(own) > 1 or nested else ():
        for detail_line in _read(part, markers).split("\n"):
            if _needs_line(detail_line, markers):
                continue
            if detail_line.strip(" -") and len(detail) < DETAIL_LINES:
                detail.append(clip(detail_line, DETAIL_LIMIT))
    mark_found = box.group(1)
    state = marks.get(mark_found)
    if state is None:
        problems.append(Problem(line, "warning", f"unknown mark `[{mark_found}]` counts as open"))
        state = "open"
    flat = " ".join(first.split())
    struck, flat = _unstrike(flat) if flat[:2] == "~~" else (False, flat)
    shown = flat
    label, tags, flat = _label(flat)
    struck_after, flat = _unstrike(flat) if label else (False, flat)
    mark = "open" if state == "in-progress" else state
    if (struck or struck_after) and mark != "done":
        mark = "cancelled"
    verify = markers.verify_comment or markers.verify_plain
    blocked = markers.blocked_comment
    if blocked is None:
        blocked = markers.blocked_plain
    step = Step(
        step_id, mark, _cut(flat), clip(verify, 10_000) if verify else None, blocked, line, phase,
        label, state == "in-progress" and mark == "open", tags, tuple(detail),
        tuple(markers.needs),
    )  # fmt: skip
    return step, shown


def _needs_line(row: str, markers: _Markers) -> bool:
    """True, its names noted, when the line is a `needs:` line."""
    found = _rx(_NEEDS_LINE).fullmatch(row) if "eeds" in row.casefold() else None
    if found is None:
        return False
    markers.need(found.group(1))
    return True


def _unstrike(text: str) -> tuple[bool, str]:
    """(True, inner text) when the whole text is struck through."""
    if len(text) > 4 and text.startswith("~~") and text.endswith("~~") and "~~" not in text[2:-2]:
        return True, text[2:-2].strip()
    return False, text


def _label(text: str) -> tuple[str, tuple[str, ...], str]:
    """An author's id at the start of the text, the tags before or after it, and the rest."""
    if text[:1] == "[" and (ahead := _rx(_TAGS).match(text)):  # `[P] T001 ...`: tags first
        after, more, remainder = _label(text[ahead.end() :])
        leading = _tags(ahead.group())
        if after or PARALLEL in leading:  # else `[WIP] Fix` is the step's own text
            return after, (*leading, *more), remainder
        return "", (), text
    found = _rx(_LABEL).match(text)
    if found is None:
        return "", (), text
    label, bold, sep = found.group("label", "bold", "sep")
    if not bold and (
        (_rx(_WORDED).match(label) and sep != ":")
        or (not sep and "." not in label and label.lstrip("-").isdigit())
    ):
        return "", (), text  # `2 eggs`, `Step 3 of the plan`: prose, not an id
    rest = text[found.end() :]
    tags_found = _rx(_TAGS).match(rest) if rest[:1] == "[" else None
    tags: tuple[str, ...] = ()
    if tags_found:
        tags = _tags(tags_found.group())
        rest = rest[tags_found.end() :]
    return label if " " not in label else " ".join(label.split()), tags, rest.lstrip(":. ")


def _tags(found: str) -> tuple[str, ...]:
    return tuple(tag + "]" for tag in "".join(found.split()).split("]")[:-1])


def _settle_labels(
    drafts: list[Step], shown: dict[int, str], problems: list[Problem]
) -> list[Step]:
    """Keep each label that names exactly one step and never hides another step's id; a step
    whose label goes is named by its id, and its text (`shown`) keeps the label."""
    # `Step N` that restarts in each phase is qualified by its phase, all of them alike.
    worded_label = _rx(_WORDED).match
    worded = Counter(d.label.casefold() for d in drafts if d.label and worded_label(d.label))
    if any(n > 1 for n in worded.values()):
        drafts = [
            d._replace(label=f"Phase {d.phase} {d.label}") if worded_label(d.label) else d
            for d in drafts
        ]
    usable: dict[str, int] = {}  # label: the one step that has it
    holders: dict[str, list[int]] = {}  # label: the steps that share it
    for index in shown:
        key = drafts[index].label.casefold()
        if key in holders:
            holders[key].append(index)
        elif key in usable:
            holders[key] = [usable.pop(key), index]
        else:
            usable[key] = index
    for shared in sorted(holders.values()):
        where = ", ".join(str(drafts[i].line) for i in shared[:8])
        ids = ", ".join(f"`{drafts[i].id}`" for i in shared[:8])
        message = (
            f"label `{drafts[shared[0]].label}` names {len(shared)} steps (lines {where}); "
            f"they go by their ids {ids}"
        )
        problems.append(Problem(drafts[shared[0]].line, "warning", message))
    by_id = {d.id.casefold(): index for index, d in enumerate(drafts)}
    # A label that is another step's id hides that id: keep it only while that step has a
    # label of its own to be named by. Dropping one label can expose the next.
    pending = [key for key in usable if key in by_id]
    while pending:
        key = pending.pop()
        owner, other = usable.get(key), by_id.get(key)
        if owner is None or other is None or other == owner:
            continue
        if drafts[other].label.casefold() in usable:
            continue
        del usable[key]
        message = (
            f"label `{drafts[owner].label}` is also the id of the step on line "
            f"{drafts[other].line}; this step goes by its id `{drafts[owner].id}`"
        )
        problems.append(Problem(drafts[owner].line, "warning", message))
        pending.append(drafts[owner].id.casefold())
    named = set(usable.values())
    for index in shown.keys() - named:
        parallel = (PARALLEL,) if PARALLEL in drafts[index].tags else ()  # its text keeps it
        drafts[index] = drafts[index]._replace(label="", text=_cut(shown[index]), tags=parallel)
    return drafts


def _segments(text: str) -> list[tuple[str, int, int]]:
    """`text` cut into ("text" | "code" | "comment", start, end) runs, in one pass.

    A code span closes at the next backtick run of the same length (CommonMark); a
    comment at the next `-->`. Whichever opens first wins. An opener with no closer is
    text, and so is every later opener of its kind when no closer is left at all.
    """
    if "`" not in text and "<!--" not in text:
        return [("text", 0, len(text))] if text else []
    runs = [(m.start(), m.end()) for m in _rx(_TICKS).finditer(text)] if "`" in text else []
    partner = [-1] * len(runs)
    later: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        width = runs[index][1] - runs[index][0]
        partner[index] = later.get(width, -1)
        later[width] = index
    out: list[tuple[str, int, int]] = []
    size = len(text)
    pos = text_start = run = 0
    comment = -1
    comments_left = True
    while True:
        while run < len(runs) and runs[run][0] < pos:
            run += 1
        tick = runs[run][0] if run < len(runs) else size
        if comments_left and comment < pos:
            comment = text.find("<!--", pos)
            comments_left = comment >= 0
        opens = comment if comments_left else size
        if tick == size and opens == size:
            break
        if opens < tick:
            close = text.find("-->", opens + 4)
            if close < 0:
                comments_left = False
                continue
            kind, start, pos = "comment", opens, close + 3
        else:
            if partner[run] < 0:
                pos = runs[run][1]
                continue
            kind, start, pos = "code", tick, runs[partner[run]][1]
        if start > text_start:
            out.append(("text", text_start, start))
        out.append((kind, start, pos))
        text_start = pos
    if text_start < size:
        out.append(("text", text_start, size))
    return out


def _may_hold_keyword(text: str) -> bool:
    """False when `_KEYWORD` cannot match: its match holds `ver` or `bloc` in any case, and of
    the letters that match others in any case (`ı` `İ` `ſ` `K`: i, i, s, k) none is in those."""
    low = text.lower()
    return "ver" in low or "bloc" in low


def _read(text: str, markers: _Markers) -> str:
    """The text with comments and markers taken out; the markers go into `markers`.

    A marker is `verify:` or `blocked-by:` (any case, `blocked by` too) in the text, a
    comment opening with one, or a code span holding only the keyword; a code span that
    merely mentions one is text.
    """
    if "`" not in text:  # as in most step texts: at most comments to take out
        comments: list[str] = []
        plain = _drop_comments(text, comments)
        if not _may_hold_keyword(plain) or _rx(_KEYWORD).search(plain) is None:  # nor a keyword
            for inner in comments:
                markers.comment(inner)
            return plain
    segments = _segments(text)
    kept: list[str] = []
    index = pos = 0  # pos: the text before it is kept or taken
    while index < len(segments):
        kind, start, end = segments[index]
        start = max(start, pos)
        if start >= end:
            index += 1
            continue
        if kind == "text" and (found := _rx(_KEYWORD).search(text, start, end)) is not None:
            kept.append(text[start : found.start()])
            value, pos = _value(text, segments, index, found.end())
            markers.note(found.group(1), value, comment=False)
            continue
        pos = end
        index += 1
        if kind == "comment":
            markers.comment(text[start + 4 : end - 3].strip())
            kept.append(" ")
        elif kind == "code" and (keyword := re.fullmatch(_KEYWORD_ONLY, _code(text, start, end))):
            value, pos = _value(text, segments, index, end)
            markers.note(keyword.group(1), value, comment=False)
        else:
            kept.append(text[start:end])
    return "".join(kept)


def _code(text: str, start: int, end: int) -> str:
    width = 0
    while text[start + width] == "`":
        width += 1
    return text[start + width : end - width]


def _value(
    text: str, segments: list[tuple[str, int, int]], index: int, pos: int
) -> tuple[str, int]:
    """A marker's value from `pos`, and where it ends: the rest of its line when that holds
    anything, else a code span right after it on the same line."""
    if index < len(segments) and segments[index][0] == "text":
        end = segments[index][2]
        stop = text.find("\n", pos, end)
        if stop >= 0 or text[pos:end].strip():
            stop = end if stop < 0 else stop
            return text[pos:stop].strip(), stop
        index, pos = index + 1, end
    if index < len(segments) and segments[index][0] == "code":
        _, start, end = segments[index]
        return _code(text, start, end).strip(), end
    return "", pos
