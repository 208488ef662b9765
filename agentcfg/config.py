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


BASE = Config()  # each setting's default


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
    ladder, gate, verify, ledger = (
        _section(data, name, problems) for name in ("ladder", "turn_end_gate", "verify", "ledger")
    )
    raw_mode = env.get("AGENTCFG_MODE") or data.get("mode")
    mode = _pick(problems, "mode", raw_mode, _choice(MODES), BASE.mode)
    fields = _ladder(ladder, env, problems)
    fields["verify_timeout"] = _pick(
        problems, "verify.timeout", verify.get("timeout"), parse_duration, BASE.verify_timeout
    )
    fields.update(_ledger(ledger, env, problems))
    fields.update(_gate(gate, env, problems))
    chain = _chain(data.get("chain"), problems, DEFAULT_CHAIN)
    notify = _notify(_section(data, "notify", problems), problems)
    guard, require = _contract(_section(data, "contract", problems), problems)
    reserve, margin, host_args = _run(_section(data, "run", problems), problems)
    _unknown("", data, TOP_LEVEL, problems)
    return Config(
        mode=mode, chain=chain, problems=tuple(problems), notify=notify, guard=guard,
        require=require, reserve=reserve, reserve_margin=margin, host_args=host_args, **fields,
    )  # fmt: skip


# the settings at the top of agentcfg.yaml
TOP_LEVEL = (
    "mode",
    "ladder",
    "chain",
    "turn_end_gate",
    "verify",
    "notify",
    "ledger",
    "contract",
    "run",
)


def _pick(problems: list[str], name: str, raw: object, check: Any, default: Any) -> Any:
    """`raw` as `check` reads it; the default when it is not given, or, noted in `problems`,
    when `check` refuses it."""
    if raw is None:
        return default
    value = check(raw)
    if value is None:
        problems.append(f"{name}: invalid value {raw!r}; using {default!r}")
        return default
    return value


def _ladder(
    section: Mapping[str, Any], env: Mapping[str, str], problems: list[str]
) -> dict[str, Any]:
    """The ladder's settings by field name, each overridden by AGENTCFG_<NAME>; a budget past
    its ceiling is cut to it."""

    def read(name: str, check: Any) -> Any:
        raw = env.get(f"AGENTCFG_{name.upper()}") or section.get(name)
        return _pick(problems, f"ladder.{name}", raw, check, getattr(BASE, name))

    budgets = (("max_iterations", positive_int), ("wall_clock", parse_duration))
    fields = {name: read(name, check) for name, check in budgets}
    for name, value in fields.items():
        fields[name], cut = clamp(name, value)
        if cut:
            problems.append(f"ladder.{name}: {cut}")
    fields["max_iterations"] = int(fields["max_iterations"])
    limits = ("stall_window", "max_tokens")
    return fields | {name: read(name, positive_int) for name in limits}


def _ledger(
    section: Mapping[str, Any], env: Mapping[str, str], problems: list[str]
) -> dict[str, Any]:
    """ledger.quotes and ledger.reply_wait (AGENTCFG_REPLY_WAIT over it)."""
    raw_quotes, raw_wait = section.get("quotes"), section.get("reply_wait")
    quotes = _pick(problems, "ledger.quotes", raw_quotes, _choice(QUOTES), BASE.ledger_quotes)
    raw_wait = env.get("AGENTCFG_REPLY_WAIT") or raw_wait
    reply_wait = _pick(problems, "ledger.reply_wait", raw_wait, _reply_wait, BASE.reply_wait)
    _unknown("ledger.", section, ("quotes", "reply_wait"), problems)
    return {"ledger_quotes": quotes, "reply_wait": reply_wait}


def _gate(
    section: Mapping[str, Any], env: Mapping[str, str], problems: list[str]
) -> dict[str, Any]:
    """turn_end_gate.scope and each detector's switch, with the switches only env sets."""
    scope = _pick(
        problems, "turn_end_gate.scope", section.get("scope"), _choice(SCOPES), BASE.gate_scope
    )
    detectors = frozenset(
        name
        for name in DETECTORS
        if _pick(problems, f"turn_end_gate.{name}", section.get(name), switch, True) is not False
    )
    no_run_continuation, replay = (
        _pick(problems, name, env.get(name), switch, False)
        for name in ("AGENTCFG_NO_RUN_CONTINUATION", "AGENTCFG_REPLAY")
    )
    _unknown("turn_end_gate.", section, (*DETECTORS, "scope"), problems)
    return {
        "gate_scope": scope,
        "detectors": detectors,
        "no_run_continuation": no_run_continuation,
        "replay": replay,
    }


def _unknown(
    prefix: str, section: Mapping[str, Any], known: tuple[str, ...], problems: list[str]
) -> None:
    """A problem for each setting of a section that names none of the `known` ones."""
    problems.extend(f"{prefix}{name}: unknown setting" for name in section if name not in known)


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
    _unknown("contract.", section, ("guard", "require"), problems)
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
    reserve = _optional(section, "reserve", reserve_percent, "a percent from 0 to 100", problems)
    margin = _optional(section, "reserve_margin", parse_duration, "a duration like 2m", problems)
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
    _unknown("run.", section, ("reserve", "reserve_margin", "args"), problems)
    return reserve, margin, tuple(args)


def _optional(
    section: Mapping[str, Any], name: str, check: Any, expected: str, problems: list[str]
) -> float | None:
    """run.<name> as `check` reads it: None when it is not given or, noted, when refused."""
    raw = section.get(name)
    value = None if raw is None else check(raw)
    if raw is not None and value is None:
        problems.append(f"run.{name}: invalid value {raw!r}; {expected}")
    return value


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
    _unknown("notify.", section, ("command",), problems)
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
