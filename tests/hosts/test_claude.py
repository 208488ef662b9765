"""Claude Code: where it records our plugin, the settings that switch its hooks off, and the
tokens a fire reads from its transcript (a message cut by a fire, a line still being written,
the reply it stopped on written late)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from pathlib import Path

import pytest

from agentcfg.hosts import claude
from agentcfg.hosts.base import Plugin
from agentcfg.transcript import Spent, TurnInfo, read_once, read_turn
from tests.conftest import run_cli
from tests.hosts.shared import (
    NO_WAIT,
    assistant,
    enable_claude,
    findings,
    plugin_of,
    write,
    write_lines,
)


def test_claude_the_narrowest_settings_file_decides(ws: Path) -> None:
    home = ws.parent / "home"
    enable_claude(home / ".claude" / "settings.json")
    enable_claude(ws / ".claude" / "settings.json", on=False)  # the project turns it off
    assert plugin_of("claude", ws) is None
    local = enable_claude(ws / ".claude" / "settings.local.json")  # and this person back on
    assert plugin_of("claude", ws) == Plugin(
        local, "claude plugin uninstall agentcfg@agentcfg --scope local"
    )


def test_claude_any_marketplace_but_only_our_plugin(ws: Path) -> None:
    settings = ws / ".claude" / "settings.json"
    enable_claude(settings, key="agentcfg-extras@team")
    assert plugin_of("claude", ws) is None
    enable_claude(settings, key="agentcfg@team")
    assert plugin_of("claude", ws) == Plugin(
        settings, "claude plugin uninstall agentcfg@team --scope project"
    )


def test_claude_unreadable_settings_mean_no_plugin(ws: Path) -> None:
    write(ws.parent / "home" / ".claude" / "settings.json", "{not json")
    write(ws / ".claude" / "settings.json", json.dumps({"enabledPlugins": ["agentcfg@x"]}))
    assert plugin_of("claude", ws) is None


def test_claude_settings_that_switch_hooks_off(ws: Path) -> None:
    run_cli("hooks", "install", "--host", "claude")
    assert findings("claude") == []
    (ws / ".claude" / "settings.local.json").write_text(json.dumps({"disableAllHooks": True}))
    found = findings("claude")
    assert [f["level"] for f in found] == ["error"]
    assert "settings.local.json" in found[0]["message"]


def test_claude_counts_every_part_and_a_message_once(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    parts = {"input_tokens": 3, "output_tokens": 40, "cache_read_input_tokens": 2000,
             "cache_creation_input_tokens": 500}  # fmt: skip
    write_lines(path, [
        {"type": "user", "message": {"content": "go"}},
        assistant("m1", **parts), assistant("m1", **parts),  # one message, two content blocks
        assistant("m2", input_tokens=1, output_tokens=1),
    ])  # fmt: skip
    spent = claude.usage_since(str(path), None, NO_WAIT)
    assert spent.usage is not None
    assert spent.usage.to_json() == {
        "input": 4, "output": 41, "cache_read": 2000, "cache_write": 500, "total": 2545
    }  # fmt: skip


def test_a_message_cut_by_a_fire_counts_in_the_first_segment_only(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_lines(
        path, [{"type": "user", "message": {"content": "go"}}, assistant("m1", input_tokens=7)]
    )
    first = claude.usage_since(str(path), None, NO_WAIT)
    with path.open("ab") as handle:
        handle.write(json.dumps(assistant("m1", input_tokens=7)).encode() + b"\n")
    second = claude.usage_since(str(path), first.end, NO_WAIT)
    assert first.usage is not None and first.usage.total == 7
    assert second.usage is not None and second.usage.total == 0


def test_a_line_still_being_written_waits_for_the_next_fire(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    half = json.dumps(assistant("m2", output_tokens=9)).encode()
    write_lines(path, [{"type": "user", "message": {"content": "go"}}, assistant("m1", output_tokens=4)],
          tail=half[:20])  # fmt: skip
    first = claude.usage_since(str(path), None, NO_WAIT)
    assert first.usage is not None and first.usage.total == 4
    assert first.end == path.stat().st_size - 20
    with path.open("ab") as handle:
        handle.write(half[20:] + b"\n")
    second = claude.usage_since(str(path), first.end, NO_WAIT)
    assert second.usage is not None and second.usage.total == 9


def test_a_replaced_transcript_is_read_from_its_human_turn(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_lines(
        path, [{"type": "user", "message": {"content": "go"}}, assistant("m1", input_tokens=5)]
    )
    spent = claude.usage_since(str(path), 10**6, NO_WAIT)  # the mark lies past the end of this file
    assert spent.usage is not None and spent.usage.total == 5


def test_a_fire_reads_a_long_transcript_as_each_reader_does_alone(tmp_path: Path) -> None:
    """Inside a fire the turn and the tokens share one read of the tail and one split of it;
    each finds what it finds alone, also where the tail begins inside a line."""
    path = tmp_path / "t.jsonl"
    words = {"type": "text", "text": "x" * 100_000}
    said = [{**assistant(f"m{n}", output_tokens=n), "message": {
        "id": f"m{n}", "content": [words], "usage": {"output_tokens": n}}} for n in range(1, 100)]  # fmt: skip
    prompts = [{"type": "user", "message": {"content": "go"}, "promptId": f"p{n}"} for n in (1, 2)]
    write_lines(path, [prompts[0], *said[:60], prompts[1], *said[60:]], tail=b'{"type": "assis')
    assert path.stat().st_size > 8 * 1024 * 1024  # longer than the tail a fire reads

    def readers() -> tuple[TurnInfo, Spent]:
        return read_turn(str(path)), claude.usage_since(str(path), None, NO_WAIT)

    alone = readers()
    with read_once():
        shared = readers()
    assert shared == alone
    turn, spent = alone
    assert turn.turn == "prompt-p2" and turn.final_message == words["text"]
    assert spent.usage is not None and spent.usage.total == sum(range(61, 100))


@pytest.mark.parametrize("shared", [False, True], ids=["alone", "in-a-fire"])
def test_claude_waits_a_moment_for_the_reply_it_stopped_on(tmp_path: Path, shared: bool) -> None:
    """Also inside a fire, whose readers share one read of the tail taken before the wait."""
    path = tmp_path / "t.jsonl"
    call = {**assistant("m1", input_tokens=5), "message": {
        "id": "m1", "stop_reason": "tool_use", "usage": {"input_tokens": 5}}}  # fmt: skip
    result = {"type": "user", "message": {"content": [{"type": "tool_result", "content": "ok"}]}}
    write_lines(path, [{"type": "user", "message": {"content": "go"}}, call, result])
    late = threading.Timer(0.2, lambda: path.open("a").write(json.dumps(assistant("m2", output_tokens=7)) + "\n"))  # fmt: skip
    fire = read_once() if shared else contextlib.nullcontext()
    with fire:
        read_turn(str(path))  # the fire's turn is read first
        late.start()
        started = time.monotonic()
        spent = claude.usage_since(str(path), None, settle=1.0)
        late.join()
    assert spent.usage is not None and spent.usage.total == 12  # the reply written late counts
    assert 0.15 < time.monotonic() - started < 1.0
    started = time.monotonic()
    # nothing new, and it ends on a reply: no wait
    settled = claude.usage_since(str(path), spent.end, settle=1.0)
    assert settled.usage is not None and settled.usage.total == 0
    assert time.monotonic() - started < 0.1


def test_claude_waits_no_longer_than_its_settle_for_a_reply_that_never_comes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    call = {"type": "assistant", "message": {
        "id": "m1", "stop_reason": "tool_use", "usage": {"input_tokens": 5}}}  # fmt: skip
    write_lines(
        path, [{"type": "user", "message": {"content": "go"}}, call], tail=b'{"type": "assis'
    )
    started = time.monotonic()
    spent = claude.usage_since(str(path), None, settle=0.3)
    waited = time.monotonic() - started
    assert spent.usage is not None and spent.usage.total == 5  # the partial line waits its turn
    assert spent.end == path.stat().st_size - len(b'{"type": "assis')
    assert 0.25 < waited < 0.9
