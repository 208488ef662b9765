"""Configuration: defaults, the file, env overrides, and invalid values replaced by defaults."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from agentcfg import config as config_module
from agentcfg.config import CONFIG_LIMIT, ChainEntry, Config, load_config, validate
from agentcfg.core.times import format_duration, parse_duration
from agentcfg.hosts import claude
from agentcfg.hosts.base import StopEvent
from agentcfg.paths import CONFIG_NAME
from agentcfg.stop.context import HookContext
from agentcfg.workspace import Workspace


def load(root: Path, text: str | None, env: dict[str, str] | None = None) -> Config:
    if text is not None:
        (root / "agentcfg.yaml").write_text(text)
    return load_config(Workspace(root), env or {})


def test_defaults_without_a_file(tmp_path: Path) -> None:
    config = load(tmp_path, None)
    assert config._replace(problems=()) == Config()
    assert (config.max_iterations, config.wall_clock, config.stall_window) == (25, 14400.0, 3)
    assert config.problems == ()


def test_the_file_is_read(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        "mode: shadow\nladder: {max_iterations: 5, wall_clock: 30m, stall_window: 2}\n"
        "chain:\n  stop:\n    - run-continuation\n    - {name: turn-end-gate, severity: advisory}\n"
        "turn_end_gate: {scope: always, deference: false}\n",
    )
    assert (config.mode, config.max_iterations, config.wall_clock, config.stall_window) == (
        "shadow", 5, 1800.0, 2
    )  # fmt: skip
    assert config.chain == (ChainEntry("run-continuation"), ChainEntry("turn-end-gate", "advisory"))
    assert config.gate_scope == "always"
    assert "deference" not in config.detectors
    assert config.problems == ()


def test_env_overrides_win(tmp_path: Path) -> None:
    env = {"AGENTCFG_MODE": "off", "AGENTCFG_MAX_ITERATIONS": "7", "AGENTCFG_WALL_CLOCK": "1h"}
    config = load(tmp_path, "mode: shadow\nladder: {max_iterations: 5}\n", env)
    assert (config.mode, config.max_iterations, config.wall_clock) == ("off", 7, 3600.0)


def test_token_budget_from_the_file_or_the_environment(tmp_path: Path) -> None:
    assert load(tmp_path, "", {}).max_tokens is None
    assert load(tmp_path, "ladder: {max_tokens: 2000000}\n", {}).max_tokens == 2_000_000
    env = {"AGENTCFG_MAX_TOKENS": "500000"}
    assert load(tmp_path, "ladder: {max_tokens: 2000000}\n", env).max_tokens == 500_000
    for bad in ("0", "-5", "lots", "true", "1.5"):
        config = load(tmp_path, f"ladder: {{max_tokens: {bad}}}\n", {})
        assert config.max_tokens is None
        assert [p.split(":")[0] for p in config.problems] == ["ladder.max_tokens"]


def test_the_wait_for_a_late_reply_from_the_file_or_the_environment(tmp_path: Path) -> None:
    assert load(tmp_path, "", {}).reply_wait == 1.0
    assert load(tmp_path, "ledger: {reply_wait: 3s}\n", {}).reply_wait == 3.0
    assert load(tmp_path, "ledger: {reply_wait: 0}\n", {}).reply_wait == 0.0
    assert (
        load(tmp_path, "ledger: {reply_wait: 3s}\n", {"AGENTCFG_REPLY_WAIT": "0"}).reply_wait == 0
    )
    for bad in ("11s", "-1", "false", "soon"):
        config = load(tmp_path, f"ledger: {{reply_wait: {bad}}}\n", {})
        assert config.reply_wait == 1.0
        assert [p.split(":")[0] for p in config.problems] == ["ledger.reply_wait"]


def test_a_fire_waits_for_a_late_reply_as_its_configuration_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(claude, "usage_since", lambda path, start, wait: waits.append(wait))
    event = StopEvent("s", "", "/nowhere/t.jsonl", "/nowhere", None, False, False, 0, "claude")
    config = validate({"ledger": {"reply_wait": "2s"}}, {}, [])
    HookContext(event, Workspace(Path("/nowhere")), config, {}, 0.0).spent_since(None)
    assert waits == [2.0]


def test_invalid_values_fall_back_to_defaults_and_are_reported(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        "mode: loud\nladder: {max_iterations: -1, wall_clock: soon, stall_window: true}\n"
        "chain: {stop: [run-continuation, telepathy]}\nturn_end_gate: {scope: never, colour: red}\n"
        "extra: 1\n",
    )
    assert (config.mode, config.max_iterations, config.wall_clock, config.stall_window) == (
        "enforce", 25, 14400.0, 3
    )  # fmt: skip
    assert config.chain == Config().chain  # a typo never leaves a chain that allows all
    assert config.gate_scope == "claimed"
    assert len(config.problems) == 8


@pytest.mark.parametrize(
    "text", ["mode: [", "- a list\n", "\x00", "a: !!python/object:os.system {}\n"]
)
def test_unreadable_file_means_defaults(tmp_path: Path, text: str) -> None:
    config = load(tmp_path, text)
    assert config._replace(problems=()) == Config()
    assert len(config.problems) == 1


def test_parsed_config_is_cached_and_refreshed_on_change(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()  # the cache lives only where state/ exists
    assert load(tmp_path, "mode: shadow\n").mode == "shadow"
    assert list((tmp_path / "state" / "cache").glob("config-*.json"))
    assert load(tmp_path, None).mode == "shadow"  # from the cache
    assert load(tmp_path, "mode: off\n# longer\n").mode == "off"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        (90, 90.0),
        ("30m", 1800.0),
        ("4h", 14400.0),
        ("1h30m", 5400.0),
        ("2d", 172800.0),
    ],
)
def test_durations(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "0", "-5", "1x", True, None, "h"])
def test_bad_durations(text: object) -> None:
    assert parse_duration(text) is None


def test_format_duration() -> None:
    assert [format_duration(s) for s in (5, 125, 3600, 5400, 90000)] == [
        "5s", "2m", "1h", "1h30m", "1d1h"
    ]  # fmt: skip


def test_a_yaml_alias_bomb_stays_small(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()  # the cache lives only where state/ exists
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + n)}: &{chr(98 + n)} [*{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, "
        f"*{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}]\n"
        for n in range(9)
    )
    config = load(tmp_path, bomb + "mode: shadow\n")
    assert config.mode == "enforce"  # refused whole, read as defaults, and reported
    assert config.problems == (
        f"{tmp_path / 'agentcfg.yaml'}: not readable YAML: expands to more than 20000 nodes "
        "(aliases)",
    )
    cached = next((tmp_path / "state" / "cache").glob("config-*.json"))
    assert cached.stat().st_size < 2_000


@pytest.mark.parametrize(
    ("raw", "valid"),
    [("²", False), ("٣", False), ("1e309", False), ("9" * 400, False), (".nan", False),
     (".inf", False), ("0", False), ("-5", False), ("12", True), ("'12'", True)],
)  # fmt: skip
def test_numbers_are_ascii_decimals_in_range(tmp_path: Path, raw: str, valid: bool) -> None:
    config = load(tmp_path, f"ladder: {{max_iterations: {raw}, stall_window: {raw}}}\n")
    assert (config.max_iterations == 12) is valid
    assert len(config.problems) == (0 if valid else 2)
    from_env = load(tmp_path, "", {"AGENTCFG_MAX_ITERATIONS": raw.strip("'")})
    assert (from_env.max_iterations == 12) is valid


def test_a_large_config_is_refused_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused from its first 16 KiB and a byte: the rest is never read, nothing is parsed."""
    asked: list[int] = []
    real_open = Path.open

    class Counted(io.BufferedReader):
        def read(self, size: int | None = -1) -> bytes:
            asked.append(-1 if size is None else size)
            return super().read(size)

    def counted(path: Path, *args: Any, **kwargs: Any) -> Any:
        if path.name != CONFIG_NAME or args[:1] != ("rb",):
            return real_open(path, *args, **kwargs)
        return Counted(io.FileIO(path, "rb"))

    def never(source: bytes) -> dict[str, Any]:
        raise AssertionError("a config over the limit was parsed")

    monkeypatch.setattr(Path, "open", counted)
    monkeypatch.setattr(config_module, "_parse_yaml", never)
    config = load(tmp_path, "mode: shadow\n" + "# padding\n" * 110_000)
    assert asked == [CONFIG_LIMIT + 1]
    assert config.mode == "enforce" and "larger than 16 KiB" in config.problems[0]


def test_a_typo_in_the_chain_keeps_the_default_chain(tmp_path: Path) -> None:
    config = load(tmp_path, "chain: {stop: [turn-end-gate, run-continuaton]}\n")
    assert config.chain == Config().chain
    assert config.problems == (
        "chain.stop: unknown concern 'run-continuaton'; using the default chain",
    )


def test_sections_of_the_wrong_shape_are_reported(tmp_path: Path) -> None:
    config = load(tmp_path, "ladder: 5\nturn_end_gate: [a]\nverify: yes\n")
    assert config._replace(problems=()) == Config()
    assert sorted(config.problems) == [
        "ladder: expected a mapping",
        "turn_end_gate: expected a mapping",
        "verify: expected a mapping",
    ]


@pytest.mark.parametrize(
    ("raw", "on"),
    [
        *((word, True) for word in ("1", "true", "TRUE", "yes", "Yes", "on", "ON", " on ")),
        *((word, False) for word in ("0", "false", "False", "no", "NO", "off", "Off", "")),
    ],
)
def test_environment_switches_read_like_switches(tmp_path: Path, raw: str, on: bool) -> None:
    config = load(tmp_path, None, {"AGENTCFG_NO_RUN_CONTINUATION": raw, "AGENTCFG_REPLAY": raw})
    assert (config.no_run_continuation, config.replay) == (on, on)
    assert config.problems == ()


def test_a_switch_that_is_neither_is_reported_and_off(tmp_path: Path) -> None:
    config = load(tmp_path, "turn_end_gate: {deference: 'off', self-exit: maybe}\n",
                  {"AGENTCFG_NO_RUN_CONTINUATION": "sure"})  # fmt: skip
    assert not config.no_run_continuation
    assert "deference" not in config.detectors and "self-exit" in config.detectors
    assert config.problems == (
        "turn_end_gate.self-exit: invalid value 'maybe'; using True",
        "AGENTCFG_NO_RUN_CONTINUATION: invalid value 'sure'; using False",
    )


def test_budgets_are_clamped_with_a_clear_message(tmp_path: Path) -> None:
    config = load(tmp_path, "ladder: {max_iterations: 5000, wall_clock: 30d}\n")
    assert (config.max_iterations, config.wall_clock) == (1000, 7 * 86400.0)
    assert config.problems == (
        "ladder.max_iterations: 5000 is above the limit of 1000; using 1000",
        "ladder.wall_clock: 30d0h is above the limit of 7d0h; using 7d0h",
    )
    from_env = load(tmp_path, "", {"AGENTCFG_MAX_ITERATIONS": "1001", "AGENTCFG_WALL_CLOCK": "7d"})
    assert (from_env.max_iterations, from_env.wall_clock) == (1000, 7 * 86400.0)
    assert from_env.problems == (
        "ladder.max_iterations: 1001 is above the limit of 1000; using 1000",
    )


def test_the_default_chain_is_every_concern_the_registry_runs_in_order() -> None:
    from agentcfg.core.chain import CHAIN
    from agentcfg.stop.concerns import REGISTRY

    assert tuple(REGISTRY) == CHAIN == tuple(entry.name for entry in Config().chain)
