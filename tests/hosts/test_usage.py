"""Tokens per fire read from each host's transcript: the captured sessions of the real binaries,
replayed fire by fire, and synthetic ones at the edges (a message cut in two, a tail out of reach,
unknown usage)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcfg.hosts import claude, codex, cursor, gemini
from agentcfg.transcript import NOT_READ, Spent
from tests.hosts.shared import write_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentcfg.hosts.base import Host

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CAPTURES = {
    "claude": FIXTURES / "claude-code-2.1.197" / "transcript.jsonl",
    "codex": FIXTURES / "codex-0.169.0" / "transcript.jsonl",
    "gemini": FIXTURES / "gemini-cli-0.61.0" / "transcript.jsonl",
}
HOSTS: dict[str, Host] = {"claude": claude, "codex": codex, "gemini": gemini}
# Every model call of the captures reported 10 input and 5 output tokens.
TWO_CALLS = {"input": 20, "output": 10, "cache_read": 0, "cache_write": 0, "total": 30}
NO_WAIT = 0.0  # a transcript that does not grow while it is read: no fire waits for a reply


def replay(
    host: Host, source: Path, cuts: list[int], folder: Path, mark: int | None = None
) -> list[Spent]:
    """Grow a transcript line by line as the host wrote it, and read a fire after each cut."""
    lines = source.read_bytes().splitlines(keepends=True)
    path = folder / "transcript.jsonl"
    path.write_bytes(b"")
    spent, written = [], 0
    for cut in cuts:
        with path.open("ab") as handle:
            handle.write(b"".join(lines[written:cut]))
        written = cut
        found = host.usage_since(str(path), mark, NO_WAIT)
        spent.append(found)
        mark = found.end
    return spent


@pytest.mark.parametrize(
    ("name", "cuts"),
    [
        # Claude Code: three fires of the first prompt, one of the second (`claude -c`)
        ("claude", [8, 12, 16, 23]),
        # Codex: a fire before each continuation came back, and the last one
        ("codex", [18, 29, 40, 52]),
        # Gemini: a fire after each reply
        ("gemini", [11, 20, 29, 38]),
    ],
)
def test_captured_sessions_fire_by_fire(name: str, cuts: list[int], tmp_path: Path) -> None:
    spent = replay(HOSTS[name], CAPTURES[name], cuts, tmp_path)
    assert [s.usage.to_json() if s.usage else None for s in spent] == [TWO_CALLS] * 4
    assert spent[-1].end == (tmp_path / "transcript.jsonl").stat().st_size


@pytest.mark.parametrize(
    ("name", "since_turn"),
    [("claude", TWO_CALLS), ("codex", {**TWO_CALLS, "input": 80, "output": 40, "total": 120}),
     ("gemini", {**TWO_CALLS, "input": 80, "output": 40, "total": 120})],
)  # fmt: skip
def test_without_a_mark_the_segment_starts_at_the_human_turn(
    name: str, since_turn: dict[str, int]
) -> None:
    """Claude's capture holds two prompts; Codex's and Gemini's one (continuations are not)."""
    spent = HOSTS[name].usage_since(str(CAPTURES[name]), None, NO_WAIT)
    assert spent.usage is not None and spent.usage.to_json() == since_turn
    whole = HOSTS[name].usage_since(str(CAPTURES[name]), 0, NO_WAIT)
    assert whole.usage is not None and whole.usage.total == 120


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(CAPTURES)),
    cuts=st.lists(st.integers(1, 60), min_size=1, max_size=8),
)
def test_any_fires_add_up_to_the_whole_session(name: str, cuts: list[int]) -> None:
    """Wherever the fires fall, each model call is counted once: the segments sum to the whole."""
    import tempfile

    size = len(CAPTURES[name].read_bytes().splitlines())
    with tempfile.TemporaryDirectory() as folder:
        points = [*sorted({min(cut, size) for cut in cuts}), size]
        spent = replay(HOSTS[name], CAPTURES[name], points, Path(folder), mark=0)
    assert sum(s.usage.total for s in spent if s.usage is not None) == 120
    assert all(s.usage is not None for s in spent)


def assistant(ident: str, **usage: int) -> dict[str, object]:
    return {"type": "assistant", "message": {"id": ident, "content": [], "usage": usage}}


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


def test_unknown_is_none_never_zero(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_lines(path, [{"type": "user", "message": {"content": "go"}},
                 {"type": "assistant", "message": {"id": "m1", "content": []}}])  # fmt: skip
    spent = claude.usage_since(str(path), None, NO_WAIT)
    assert spent.usage is None and spent.end == path.stat().st_size  # read, but no usage in it
    assert claude.usage_since(str(tmp_path / "missing"), None, NO_WAIT) == NOT_READ
    assert cursor.usage_since(str(path), None, NO_WAIT) == NOT_READ


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


def test_a_segment_longer_than_the_tail_is_unknown(tmp_path: Path) -> None:
    from agentcfg.transcript import read_segment

    path = tmp_path / "t.jsonl"
    filler = [{"type": "progress", "pad": "x" * 100}] * 50
    write_lines(path, [assistant("m1", input_tokens=1), *filler, assistant("m2", input_tokens=2)])
    cut = read_segment(str(path), 0, lambda line: False, tail=1024)
    assert cut is not None and cut.lines is None and cut.end == path.stat().st_size
    near = read_segment(str(path), path.stat().st_size - 100, lambda line: False, tail=1024)
    assert near is not None and near.lines is not None


def test_a_replaced_transcript_is_read_from_its_human_turn(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_lines(
        path, [{"type": "user", "message": {"content": "go"}}, assistant("m1", input_tokens=5)]
    )
    spent = claude.usage_since(str(path), 10**6, NO_WAIT)  # the mark lies past the end of this file
    assert spent.usage is not None and spent.usage.total == 5


def test_claude_waits_a_moment_for_the_reply_it_stopped_on(tmp_path: Path) -> None:
    import threading
    import time

    path = tmp_path / "t.jsonl"
    call = {**assistant("m1", input_tokens=5), "message": {
        "id": "m1", "stop_reason": "tool_use", "usage": {"input_tokens": 5}}}  # fmt: skip
    result = {"type": "user", "message": {"content": [{"type": "tool_result", "content": "ok"}]}}
    write_lines(path, [{"type": "user", "message": {"content": "go"}}, call, result])
    late = threading.Timer(0.2, lambda: path.open("a").write(json.dumps(assistant("m2", output_tokens=7)) + "\n"))  # fmt: skip
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
    import time

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
