"""Claude Code's `--output-format stream-json --verbose` lines, as typed values: the tool calls
the agent made, the host's answers to them (refused for lack of permission, failed), the
tokens of each reply, the usage windows (`rate_limit_event`) and the final `result`.

Pure: each function reads text it is given. A line that is not one of these is skipped, never
an error: what the host prints is not ours to trust.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

# the arguments that make `claude -p` print these lines
STREAM_ARGS = ("--output-format", "stream-json", "--verbose")

SHOWN = 200  # characters of a command kept in a value (commands can be whole scripts)


@dataclass(frozen=True)
class ToolCall:
    """A tool call the agent made: its id, the tool, and the command (or the input) shown."""

    id: str
    tool: str
    command: str


@dataclass(frozen=True)
class ToolResult:
    """The host's answer to a tool call: `error` when the call failed or was refused."""

    id: str
    error: bool
    text: str


@dataclass(frozen=True)
class Tokens:
    """The usage of one reply of the model, as the host reports it."""

    message: str  # the reply's id: a reply's lines repeat its usage
    input: int
    output: int
    cache_read: int
    cache_write: int


@dataclass(frozen=True)
class Window:
    """One usage window of a subscription: `five_hour`, `seven_day`..."""

    name: str
    utilization: float | None  # 0..1
    resets_at: float | None  # epoch seconds
    status: str


@dataclass(frozen=True)
class RateLimit:
    """A `rate_limit_event`: the status of the limit that binds, and every window shown."""

    status: str  # allowed | allowed_warning | rejected
    kind: str  # the binding window's name (`rateLimitType`)
    resets_at: float | None
    windows: tuple[Window, ...]
    utilization: float | None = None  # the binding window's, when the event tells it


@dataclass(frozen=True)
class Denial:
    """A tool call the host refused for lack of permission (the result's `permission_denials`)."""

    tool: str
    command: str


@dataclass(frozen=True)
class Result:
    """The final `result` line of one headless run."""

    error: bool
    text: str
    denials: tuple[Denial, ...]


@dataclass(frozen=True)
class Refusal:
    """The host refused one tool call for lack of permission, as it happened (a `system`
    line of subtype `permission_denied`)."""

    id: str  # the tool call's
    tool: str
    message: str


Event = ToolCall | ToolResult | Tokens | RateLimit | Result | Refusal


def parse_line(line: str | bytes) -> list[Event]:
    """The events of one printed line (an assistant line may carry several tool calls)."""
    try:
        record = json.loads(line)
    except ValueError:
        return []
    if not isinstance(record, dict):
        return []
    kind = record.get("type")
    if kind == "assistant":
        return list(_assistant(record.get("message")))
    if kind == "user":
        return list(_user(record.get("message")))
    if kind == "rate_limit_event":
        found = _rate_limit(record.get("rate_limit_info"))
        return [] if found is None else [found]
    if kind == "result":
        return [_result(record)]
    if kind == "system" and record.get("subtype") == "permission_denied":
        return [
            Refusal(
                _str(record.get("tool_use_id")),
                _str(record.get("tool_name")),
                _str(record.get("message")),
            )
        ]
    return []


def parse(text: str) -> list[Event]:
    """Every event of a run's printed output, in order."""
    return [
        event for line in text.splitlines() if line.startswith("{") for event in parse_line(line)
    ]


def _assistant(message: object) -> Iterator[Event]:
    if not isinstance(message, dict):
        return
    for block in _blocks(message.get("content")):
        if block.get("type") == "tool_use":
            yield ToolCall(
                _str(block.get("id")), _str(block.get("name")), _input(block.get("input"))
            )
    usage = message.get("usage")
    if isinstance(usage, dict):
        yield Tokens(
            _str(message.get("id")),
            _int(usage.get("input_tokens")),
            _int(usage.get("output_tokens")),
            _int(usage.get("cache_read_input_tokens")),
            _int(usage.get("cache_creation_input_tokens")),
        )


def _user(message: object) -> Iterator[Event]:
    if not isinstance(message, dict):
        return
    for block in _blocks(message.get("content")):
        if block.get("type") == "tool_result":
            yield ToolResult(
                _str(block.get("tool_use_id")), block.get("is_error") is True, _text(block)
            )


def _rate_limit(info: object) -> RateLimit | None:
    if not isinstance(info, dict):
        return None
    windows = info.get("unifiedWindows")
    shown = tuple(
        Window(
            name,
            _fraction(value.get("utilization")),
            _epoch(value.get("resetsAt")),
            _str(value.get("status")),
        )
        for name, value in (windows.items() if isinstance(windows, dict) else ())
        if isinstance(name, str) and isinstance(value, dict)
    )
    return RateLimit(
        _str(info.get("status")),
        _str(info.get("rateLimitType")),
        _epoch(info.get("resetsAt")),
        shown,
        _fraction(info.get("utilization")),
    )


def _result(record: dict[str, object]) -> Result:
    denials = record.get("permission_denials")
    found = tuple(
        Denial(_str(d.get("tool_name")), _input(d.get("tool_input")))
        for d in (denials if isinstance(denials, list) else ())
        if isinstance(d, dict)
    )
    return Result(record.get("is_error") is True, _str(record.get("result")), found)


def _blocks(content: object) -> Iterator[dict[str, object]]:
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict):
            yield block


def _input(value: object) -> str:
    """A tool's input as a person reads it: the shell command, else the file, else its JSON."""
    if not isinstance(value, dict):
        return ""
    for name in ("command", "file_path", "path", "pattern", "url"):
        if isinstance(value.get(name), str):
            return _clip(value[name])
    return _clip(json.dumps(value, ensure_ascii=False, sort_keys=True))


def _text(block: dict[str, object]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return _clip(content)
    parts = [p.get("text") for p in _blocks(content)]
    return _clip(" ".join(p for p in parts if isinstance(p, str)))


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int(value: object) -> int:
    return value if type(value) is int and value >= 0 else 0


def _fraction(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 100:
        return float(value)
    return None


def _epoch(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


@dataclass(frozen=True)
class Outcome:
    """What a run's output tells of the agent's tool calls: those the host refused for lack of
    permission, and the last ones that failed (commands, oldest first)."""

    denied: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


def outcome(events: Iterable[Event], keep: int = 3) -> Outcome:
    """The refused and failed tool calls of a run's events. The result's `permission_denials`
    is the host's own count; a run cut off before its result counts the refusals it told as
    they came (its `permission_denied` lines, or tool results that say so)."""
    calls: dict[str, ToolCall] = {}
    denied: set[str] = set()
    refused: list[str] = []
    failed: list[str] = []
    final: Result | None = None
    for event in events:
        if isinstance(event, ToolCall):
            calls[event.id] = event
        elif isinstance(event, Refusal):
            denied.add(event.id)
            call = calls.get(event.id)
            refused.append(call.command if call is not None else event.tool)
        elif isinstance(event, ToolResult) and event.error and event.id not in denied:
            call = calls.get(event.id)
            shown = call.command if call is not None else event.text
            if _is_refusal(event.text):
                refused.append(shown)
            else:
                failed.append(shown)
        elif isinstance(event, Result):
            final = event
    if final is not None and final.denials:
        refused = [d.command or d.tool for d in final.denials]
    return Outcome(tuple(refused), tuple(failed[-keep:]))


def _is_refusal(text: str) -> bool:
    lowered = text.lower()
    return "requires approval" in lowered or ("permission" in lowered and "denied" in lowered)


def reply(text: str) -> str:
    """The run's final reply (the `result` line's text), or `text` itself when it holds none:
    what the run said last, as `-p` without stream-json prints it."""
    found = [e for e in parse(text) if isinstance(e, Result)]
    return found[-1].text if found else text
