"""Configuration: agentcfg.yaml plus environment overrides, validated into one frozen value.

An invalid value is reported (doctor) and replaced by its default (hook): never a crash.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from agentcfg import cache
from agentcfg.core.chain import CHAIN
from agentcfg.core.ladder import MAX_ITERATIONS, STALL_WINDOW, WALL_CLOCK, clamp
from agentcfg.core.records import Record
from agentcfg.core.times import parse_duration
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any

MODES = ("enforce", "shadow", "off")
DETECTORS = (
    "promissory-closing",
    "unverified-completion",
    "deference",
    "unproven-step",
    "self-exit",
    "contract-change",
)
ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off", "")
SCOPES = ("claimed", "always")
SEVERITIES = ("blocking", "advisory")
QUOTES = ("excerpt", "hash")  # how the ledger keeps a detector's quote
REPLY_WAIT = 1.0  # seconds a fire waits at most for the host to write the reply it stopped on
REPLY_WAIT_LIMIT = 10.0
INT_LIMIT = 10**9
CONFIG_LIMIT = 16 * 1024
PLAIN_ITEMS = 32


class ChainEntry(Record):
    name: str
    severity: str = "blocking"
    fail_closed: bool = False
    timeout: float = 10.0


DEFAULT_CHAIN = tuple(ChainEntry(name) for name in CHAIN)


class Config(Record):
    mode: str = "enforce"
    max_iterations: int = MAX_ITERATIONS
    wall_clock: float = WALL_CLOCK
    stall_window: int = STALL_WINDOW
    chain: tuple[ChainEntry, ...] = DEFAULT_CHAIN
    gate_scope: str = "claimed"
    detectors: frozenset[str] = frozenset(DETECTORS)
    verify_timeout: float = 600.0
    no_run_continuation: bool = False  # AGENTCFG_NO_RUN_CONTINUATION
    replay: bool = False  # AGENTCFG_REPLAY
    ledger_quotes: str = "excerpt"
    problems: tuple[str, ...] = ()
    notify: tuple[str, ...] = ()  # argv run on each ending, with {event} {slug} {message}
    max_tokens: int | None = None  # no token budget unless one is set
    reply_wait: float = REPLY_WAIT  # ledger.reply_wait, AGENTCFG_REPLY_WAIT
    guard: tuple[str, ...] = ()  # contract.guard: globs of files every check depends on
    require: str = ""  # contract.require: the evidence a receipt must have to close a step
    reserve: float | None = None  # run.reserve: percent of each usage window `run` leaves alone
    reserve_margin: float | None = None  # run.reserve_margin: waited past a window's reset
    host_args: tuple[tuple[str, tuple[str, ...]], ...] = ()  # run.args.<host>: its arguments


def load_config(ws: Workspace, env: Mapping[str, str]) -> Config:
    """The workspace's configuration with env overrides; problems listed, never raised."""
    problems: list[str] = []
    data = _read(ws, problems)
    return validate(data, env, problems)


def _read(ws: Workspace, problems: list[str]) -> dict[str, Any]:
    try:
        with ws.config.open("rb") as handle:
            info = os.fstat(handle.fileno())
            source = handle.read(CONFIG_LIMIT + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        problems.append(f"{ws.config}: cannot read: {exc.strerror}")
        return {}
    if len(source) > CONFIG_LIMIT:
        problems.append(f"{ws.config}: larger than {CONFIG_LIMIT // 1024} KiB")
        return {}
    outcome: dict[str, Any] = cache.through(
        ws,
        "config",
        source,
        (str(ws.config.absolute()), info.st_size, info.st_mtime_ns),
        lambda: _parse_yaml(source),
        lambda v: v,
        lambda v: v if isinstance(v, dict) else None,
    )
    if "error" in outcome:
        problems.append(f"{ws.config}: {outcome['error']}")
        return {}
    data = outcome.get("data")
    return data if isinstance(data, dict) else {}


def _parse_yaml(source: bytes) -> dict[str, Any]:
    from agentcfg.core.yamlload import load_yaml

    try:
        data = load_yaml(source.decode("utf-8"), limit=CONFIG_LIMIT)
    except ValueError as exc:  # a UnicodeDecodeError too
        return {"error": f"not readable YAML: {exc}"}
    if data is None:
        return {"data": {}}
    if not isinstance(data, dict):
        return {"error": "not a mapping"}
    return {"data": _plain(data)}


def _plain(value: object, depth: int = 0) -> object:
    """A bounded, JSON-safe copy: YAML aliases can make a small file an enormous tree."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if depth >= 4:  # chain.stop[n].name is the deepest setting
        return "<too deep>"
    if isinstance(value, dict):
        items = list(value.items())[:PLAIN_ITEMS]
        return {str(k): _plain(v, depth + 1) for k, v in items}
    if isinstance(value, list):
        return [_plain(v, depth + 1) for v in value[:PLAIN_ITEMS]]
    return f"<{type(value).__name__}>"


def validate(data: Mapping[str, Any], env: Mapping[str, str], problems: list[str]) -> Config:
    """Build a Config from raw data and env; every bad value is noted and defaulted."""
    base = Config()
    ladder, gate, verify, ledger = (
        _section(data, name, problems) for name in ("ladder", "turn_end_gate", "verify", "ledger")
    )

    def pick(name: str, raw: object, check: Any, default: Any) -> Any:
        if raw is None:
            return default
        value = check(raw)
        if value is None:
            problems.append(f"{name}: invalid value {raw!r}; using {default!r}")
            return default
        return value

    mode = pick("mode", env.get("AGENTCFG_MODE") or data.get("mode"), _choice(MODES), base.mode)
    budgets = {
        name: pick(
            f"ladder.{name}",
            env.get(f"AGENTCFG_{name.upper()}") or ladder.get(name),
            check,
            getattr(base, name),
        )
        for name, check in (("max_iterations", positive_int), ("wall_clock", parse_duration))
    }
    for name, value in budgets.items():
        budgets[name], cut = clamp(name, value)
        if cut:
            problems.append(f"ladder.{name}: {cut}")
    stall_window = pick(
        "ladder.stall_window",
        env.get("AGENTCFG_STALL_WINDOW") or ladder.get("stall_window"),
        positive_int,
        base.stall_window,
    )
    max_tokens = pick(
        "ladder.max_tokens",
        env.get("AGENTCFG_MAX_TOKENS") or ladder.get("max_tokens"),
        positive_int,
        base.max_tokens,
    )
    verify_timeout = pick(
        "verify.timeout",
        verify.get("timeout"),
        parse_duration,
        base.verify_timeout,
    )
    quotes = pick("ledger.quotes", ledger.get("quotes"), _choice(QUOTES), base.ledger_quotes)
    reply_wait = pick(
        "ledger.reply_wait",
        env.get("AGENTCFG_REPLY_WAIT") or ledger.get("reply_wait"),
        _reply_wait,
        base.reply_wait,
    )
    for name in ledger:
        if name not in ("quotes", "reply_wait"):
            problems.append(f"ledger.{name}: unknown setting")
    scope = pick("turn_end_gate.scope", gate.get("scope"), _choice(SCOPES), base.gate_scope)
    detectors = set(DETECTORS)
    for name in DETECTORS:
        if pick(f"turn_end_gate.{name}", gate.get(name), switch, True) is False:
            detectors.discard(name)
    no_run_continuation, replay = (
        pick(name, env.get(name), switch, False)
        for name in ("AGENTCFG_NO_RUN_CONTINUATION", "AGENTCFG_REPLAY")
    )
    for name in gate:
        if name not in (*DETECTORS, "scope"):
            problems.append(f"turn_end_gate.{name}: unknown setting")
    chain = _chain(data.get("chain"), problems, base.chain)
    notify = _notify(_section(data, "notify", problems), problems)
    guard, require = _contract(_section(data, "contract", problems), problems)
    run = _section(data, "run", problems)
    reserve, margin, host_args = _run(run, problems)
    known = (
        "mode", "ladder", "chain", "turn_end_gate", "verify", "notify", "ledger", "contract", "run"
    )  # fmt: skip
    for name in data:
        if name not in known:
            problems.append(f"{name}: unknown setting")
    return Config(
        mode,
        int(budgets["max_iterations"]),
        budgets["wall_clock"],
        stall_window,
        chain,
        scope,
        frozenset(detectors),
        verify_timeout,
        no_run_continuation,
        replay,
        quotes,
        tuple(problems),
        notify=notify,
        max_tokens=max_tokens,
        reply_wait=reply_wait,
        guard=guard,
        require=require,
        reserve=reserve,
        reserve_margin=margin,
        host_args=host_args,
    )


REQUIRABLE = ("red-green",)  # the evidence contract.require may ask of every receipt


def _contract(section: Mapping[str, Any], problems: list[str]) -> tuple[tuple[str, ...], str]:
    """contract.guard (a glob or a list of globs) and contract.require (an evidence word)."""
    raw = section.get("guard", [])
    globs = [raw] if isinstance(raw, str) else raw
    if not isinstance(globs, list) or not all(isinstance(g, str) and g.strip() for g in globs):
        problems.append(f"contract.guard: invalid value {raw!r}; a glob or a list of globs")
        globs = []
    require = section.get("require", "")
    if require and require not in REQUIRABLE:
        problems.append(f"contract.require: invalid value {require!r}; only red-green")
        require = ""
    for name in section:
        if name not in ("guard", "require"):
            problems.append(f"contract.{name}: unknown setting")
    return tuple(globs), str(require)


def reserve_percent(raw: object) -> float | None:
    """A share of a usage window in percent, 0 to 100: `30`, `30.5` or `30%`; else None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, str):
        text = raw.strip().removesuffix("%").strip()
        try:
            raw = float(text) if text.replace(".", "", 1).isdigit() else None
        except ValueError:
            return None
    if not isinstance(raw, (int, float)) or not 0 <= raw <= 100:
        return None
    return float(raw)


def _run(
    section: Mapping[str, Any], problems: list[str]
) -> tuple[float | None, float | None, tuple[tuple[str, tuple[str, ...]], ...]]:
    """run.reserve (a percent), run.reserve_margin (a duration) and run.args (each host's
    arguments, a list of words)."""
    reserve = None
    if section.get("reserve") is not None:
        reserve = reserve_percent(section["reserve"])
        if reserve is None:
            problems.append(
                f"run.reserve: invalid value {section['reserve']!r}; a percent from 0 to 100"
            )
    margin = None
    if section.get("reserve_margin") is not None:
        margin = parse_duration(section["reserve_margin"])
        if margin is None:
            problems.append(
                f"run.reserve_margin: invalid value {section['reserve_margin']!r}; "
                "a duration like 2m"
            )
    raw = section.get("args", {})
    args: list[tuple[str, tuple[str, ...]]] = []
    if not isinstance(raw, dict):
        problems.append("run.args: expected a mapping of host names to lists of arguments")
        raw = {}
    for host, words in raw.items():
        if isinstance(words, list) and all(isinstance(w, str) for w in words):
            args.append((str(host), tuple(words)))
        else:
            problems.append(f"run.args.{host}: expected a list of arguments, not {words!r}")
    for name in section:
        if name not in ("reserve", "reserve_margin", "args"):
            problems.append(f"run.{name}: unknown setting")
    return reserve, margin, tuple(args)


def _reply_wait(value: object) -> float | None:
    """0 (count what is written) or a duration of at most REPLY_WAIT_LIMIT seconds."""
    if type(value) is not bool and value in (0, "0", "0s"):
        return 0.0
    seconds = parse_duration(value)
    return seconds if seconds is not None and seconds <= REPLY_WAIT_LIMIT else None


def _chain(
    raw: object, problems: list[str], default: tuple[ChainEntry, ...]
) -> tuple[ChainEntry, ...]:
    if raw is None:
        return default
    stop = raw.get("stop") if isinstance(raw, dict) else None
    if not isinstance(stop, list):
        problems.append("chain.stop: expected a list of concerns; using the default chain")
        return default
    if not stop:  # no concern at all would allow every turn end: continuation silently off
        problems.append("chain.stop: an empty chain continues nothing; using the default chain")
        return default
    entries: list[ChainEntry] = []
    for item in stop:
        spec = {"name": item} if isinstance(item, str) else item
        if not isinstance(spec, dict) or spec.get("name") not in CHAIN:
            # a typo must not leave an empty chain that allows everything
            problems.append(f"chain.stop: unknown concern {item!r}; using the default chain")
            return default
        severity = spec.get("severity", "blocking")
        fail_closed = switch(spec.get("fail_closed", False))
        timeout = parse_duration(spec.get("timeout", 10))
        if severity not in SEVERITIES or not isinstance(fail_closed, bool) or timeout is None:
            problems.append(f"chain.stop: bad settings for {spec['name']}; using defaults")
            entries.append(ChainEntry(spec["name"]))
            continue
        entries.append(ChainEntry(spec["name"], severity, fail_closed, timeout))
    return tuple(entries)


def _notify(section: dict[str, Any], problems: list[str]) -> tuple[str, ...]:
    for name in section:
        if name != "command":
            problems.append(f"notify.{name}: unknown setting")
    command = section.get("command")
    if command is None:
        return ()
    if isinstance(command, list) and command and all(isinstance(w, str) for w in command):
        return tuple(command)
    problems.append(
        f"notify.command: expected a list of words like [notify-send, '{{message}}'], "
        f"not {command!r}; nobody is notified"
    )
    return ()


def _section(data: Mapping[str, Any], name: str, problems: list[str]) -> dict[str, Any]:
    section = data.get(name, {})
    if isinstance(section, dict):
        return section
    problems.append(f"{name}: expected a mapping")
    return {}


def _choice(options: tuple[str, ...]) -> Any:
    return lambda raw: raw if raw in options else None


def positive_int(raw: object) -> int | None:
    """An integer from 1 to INT_LIMIT, given as one or as ASCII decimal digits; else None."""
    if isinstance(raw, str):
        text = raw.strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 10):
            return None
        raw = int(text)
    return raw if type(raw) is int and 0 < raw <= INT_LIMIT else None


def switch(raw: object) -> bool | None:
    """A switch: a YAML boolean, 0 or 1, or 1/true/yes/on and 0/false/no/off/"" in any case."""
    if isinstance(raw, bool):
        return raw
    word = str(raw).strip().lower() if isinstance(raw, (str, int)) else None
    return True if word in ON else False if word in OFF else None
