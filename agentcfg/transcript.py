"""What a host's transcript says about the current turn, read from a bounded tail.

Claude Code's JSONL shape: one object a line; real human turns are `user` lines that are
not meta, not sidechain, not tool results and not stop-hook feedback. In Codex's rollout
file the person's prompts are `UserMessage` items (hook prompts are other items).
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import json
import os
import stat

from agentcfg.core.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from collections.abc import Callable, Iterator
    from typing import Any

TAIL = 8 * 1024 * 1024
COUNT_LIMIT = 10**12  # tokens one record may claim in one part
_USER = (b'"type":"user"', b'"type": "user"')
_ASSISTANT = (b'"type":"assistant"', b'"type": "assistant"')
_NOT_HUMAN = (b'"isMeta":true', b'"isMeta": true', b'"isSidechain":true', b'"isSidechain": true')
_CODEX_PROMPT = (b'"type":"UserMessage"', b'"type": "UserMessage"')
FEEDBACK_PREFIX = "Stop hook feedback"


class TurnInfo(Record):
    turn: str  # the fallback turn id; "" when the tail cannot tell it
    tools_ran: bool | None  # a tool call since the last human turn; None when unknown
    final_message: str | None  # the last assistant text
    size: int  # the transcript's size in bytes, part of the reply key
    prompt: str | None = None  # the person's latest prompt; None when the tail holds none


UNKNOWN = TurnInfo("", None, None, 0)


def read_turn(path: str | None, tail: int = TAIL) -> TurnInfo:
    """Read the transcript's last `tail` bytes; anything unreadable gives UNKNOWN."""
    read = _read_tail(path, tail)
    if read is None:
        return UNKNOWN
    lines = read.pieces[1:] if read.start > 0 else read.pieces  # the first a partial line
    return _scan(lines, whole=read.start == 0, size=read.size)


def read_tail(path: str | None, tail: int = TAIL) -> bytes:
    """The transcript's last `tail` bytes; b"" when it cannot be read."""
    read = _read_tail(path, tail)
    return read.data if read is not None else b""


class _Tail:
    """A transcript's tail as read from disk: its bytes, where they start, the file's size,
    and, once asked for, its pieces between newlines (the last one unfinished or empty)."""

    __slots__ = ("_pieces", "data", "size", "start")

    def __init__(self, data: bytes, start: int, size: int) -> None:
        self.data, self.start, self.size = data, start, size
        self._pieces: list[bytes] | None = None

    @property
    def pieces(self) -> list[bytes]:
        """Shared by every reader of this tail: not to be changed."""
        if self._pieces is None:
            self._pieces = self.data.split(b"\n")
        return self._pieces


# the tails read inside `read_once`, innermost last
_READ: list[dict[tuple[str, int], _Tail | None]] = []


@contextlib.contextmanager
def read_once() -> Iterator[None]:
    """Within it each transcript's tail is read from disk once: the readers of one stop fire
    (its turn, the tokens its segment spent) share the same bytes."""
    _READ.append({})
    try:
        yield
    finally:
        _READ.pop()


def _read_tail(path: str | None, tail: int, fresh: bool = False) -> _Tail | None:
    """The last `tail` bytes, where they start and the file's size; None when unreadable.

    `fresh`: read from disk even inside `read_once`, and share that read from then on.
    """
    if not path:
        return None
    if not _READ:
        return _read_from_disk(path, tail)
    read = _READ[-1]
    if fresh or (path, tail) not in read:
        read[path, tail] = _read_from_disk(path, tail)
    return read[path, tail]


def _read_from_disk(path: str, tail: int) -> _Tail | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        start = max(0, info.st_size - tail)
        os.lseek(fd, start, os.SEEK_SET)
        return _Tail(_read_exactly(fd, info.st_size - start), start, info.st_size)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_exactly(fd: int, size: int) -> bytes:
    """`size` bytes, fewer at the end of the file; a regular file gives them in one read, and
    joining one chunk copies nothing."""
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.read(fd, size)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _scan(lines: list[bytes], whole: bool, size: int) -> TurnInfo:
    tools_ran: bool | None = None
    final: str | None = None
    last_human: tuple[int, dict[str, Any]] | None = None
    saw_tool = False
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if any(marker in line for marker in _ASSISTANT):
            if final is not None and (saw_tool or b'"tool_use"' not in line):
                continue  # nothing left to learn from it: a long turn is not parsed line by line
            message = _load(line).get("message")
            for block in _blocks(message):
                if block.get("type") == "tool_use":
                    saw_tool = True
                elif (
                    final is None
                    and block.get("type") == "text"
                    and isinstance(block.get("text"), str)
                ):
                    final = block["text"]
        elif _maybe_human(line):
            record = _load(line)
            if is_human(record):
                last_human = (index, record)
                break
        elif any(marker in line for marker in _CODEX_PROMPT):
            prompt = _codex_prompt(_load(line))
            if prompt is not None:
                return TurnInfo("", True if saw_tool else None, final, size, prompt)
    if last_human is not None:
        tools_ran = saw_tool
    elif saw_tool:
        tools_ran = True
    if last_human is None:
        return TurnInfo("", tools_ran, final, size)
    record = last_human[1]
    prompt = "\n".join(
        b["text"] for b in _blocks(record.get("message")) if isinstance(b.get("text"), str)
    )
    if whole:
        ordinal = sum(
            1 for line in lines[: last_human[0] + 1] if _maybe_human(line) and is_human(_load(line))
        )
        return TurnInfo(f"turn-{ordinal}", tools_ran, final, size, prompt)
    ident = record.get("promptId") or record.get("uuid")
    turn = f"prompt-{ident}" if isinstance(ident, str) else ""
    return TurnInfo(turn, tools_ran, final, size, prompt)


def _codex_prompt(record: dict[str, Any]) -> str | None:
    """The text of a Codex `UserMessage` item, None for any other line."""
    payload = record.get("payload")
    item = payload.get("item") if isinstance(payload, dict) else None
    if not isinstance(item, dict) or item.get("type") != "UserMessage":
        return None
    return "\n".join(b["text"] for b in _blocks(item) if isinstance(b.get("text"), str))


def _maybe_human(line: bytes) -> bool:
    return (
        any(marker in line for marker in _USER)
        and b"tool_result" not in line
        and not any(marker in line for marker in _NOT_HUMAN)
    )


def _load(line: bytes) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return {}
    return record if isinstance(record, dict) else {}


def _blocks(message: object) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def is_human(record: dict[str, Any]) -> bool:
    """A real human turn: a user line that is not meta, sidechain, tool result or hook feedback."""
    if record.get("type") != "user" or record.get("isMeta") or record.get("isSidechain"):
        return False
    blocks = _blocks(record.get("message"))
    if not blocks or any(block.get("type") == "tool_result" for block in blocks):
        return False
    first = blocks[0].get("text")
    return not (isinstance(first, str) and first.startswith(FEEDBACK_PREFIX))


# Token usage. A fire's segment is the transcript's bytes from where the run's previous
# recorded fire stopped reading (its mark) to the last whole line now; without a mark, from
# the start of the current human turn. Each host reads its own usage records from the lines.


class Usage(Record):
    """Tokens a segment spent, in disjoint parts: fresh input, cache reads, cache writes, output."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def to_json(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "total": self.total,
        }


class Spent(Record):
    """What one fire's segment cost (None: unknown) and where the segment ends (None: unread)."""

    usage: Usage | None
    end: int | None


NOT_READ = Spent(None, None)


class Segment(Record):
    """A fire's segment of the transcript, with the window's lines before it for context."""

    before: list[bytes]
    lines: list[bytes] | None  # None: the segment starts before the tail's reach
    whole: bool  # the window reaches back to the transcript's first line
    end: int  # the offset just after the segment's last whole line


def read_segment(
    path: str | None,
    start: int | None,
    is_turn_start: Callable[[bytes], bool],
    tail: int = TAIL,
    fresh: bool = False,
) -> Segment | None:
    """The lines from offset `start` (None: from the last line `is_turn_start` accepts, else the
    file's first) to the last whole line; None when unreadable. `fresh`: the file has grown
    since the fire's shared read (see `read_once`), so read it again.

    A `start` past the end means the file was replaced: the segment starts as if unmarked.
    """
    read = _read_tail(path, tail, fresh)
    if read is None:
        return None
    first = read.start
    complete = read.data.rfind(b"\n") + 1  # a line still being written belongs to the next one
    lines = read.pieces[:-1]  # without the piece after the last newline
    cut = 1 if first > 0 and lines else 0  # the first piece is a partial line
    end, whole = first + complete, first == 0
    if start is not None and start <= end:
        offsets = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=first))
        lines, offsets = lines[cut:], offsets[cut:]
        if not whole and start < (offsets[0] if offsets else end):
            return Segment([], None, whole, end)
        index = bisect.bisect_left(offsets, start)
    else:  # the last turn start, looked for from the end: the tail may hold thousands of lines
        lines = lines[cut:]
        last = next((i for i in range(len(lines) - 1, -1, -1) if is_turn_start(lines[i])), None)
        if last is None and not whole:
            return Segment([], None, whole, end)
        index = last or 0
    return Segment(lines[:index], lines[index:], whole, end)


def count(value: object) -> int:
    """A token count from a host record; anything but a non-negative integer counts 0, and no
    count is taken past COUNT_LIMIT (a larger one is a forgery, not a reply)."""
    return min(value, COUNT_LIMIT) if type(value) is int and value > 0 else 0


def load(line: bytes) -> dict[str, Any]:
    """One JSONL record; {} when it is not a JSON object."""
    return _load(line)


def human_line(line: bytes) -> bool:
    """A Claude Code transcript line that is a real human turn."""
    return _maybe_human(line) and is_human(_load(line))


def spent_per_message(
    segment: Segment | None, read: Callable[[bytes], tuple[object, Usage | None] | None]
) -> Spent:
    """What a segment spent, summed over its messages (see `per_message`); NOT_READ when the
    transcript could not be read."""
    if segment is None:
        return NOT_READ
    usage = per_message(segment, read) if segment.lines is not None else None
    return Spent(usage, segment.end)


def per_message(
    segment: Segment, read: Callable[[bytes], tuple[object, Usage | None] | None]
) -> Usage | None:
    """The sum of the segment's messages' usage; None when any message's is unknown.

    `read` gives a line's (message id, usage), or None for a line that is no message. A message
    written over several lines counts once, its last line; one the previous segment ended on was
    counted there.
    """
    counted: object = None
    for line in reversed(segment.before):
        found = read(line)
        if found is not None:
            counted = found[0]
            break
    messages: dict[object, Usage | None] = {}
    for index, line in enumerate(segment.lines or ()):
        found = read(line)
        if found is not None and (found[0] is None or found[0] != counted):
            ident = found[0] if isinstance(found[0], str) else None  # a list is no message id
            messages[index if ident is None else ident] = found[1]
    known = [usage for usage in messages.values() if usage is not None]
    if len(known) < len(messages):
        return None
    return Usage(
        sum(u.input for u in known),
        sum(u.output for u in known),
        sum(u.cache_read for u in known),
        sum(u.cache_write for u in known),
    )
