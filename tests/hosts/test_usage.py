"""Tokens per fire read from each host's transcript: the captured sessions of the real binaries,
replayed fire by fire, and synthetic ones at the edges every host shares (a tail out of reach,
unknown usage); each host's own edges are in its test module."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcfg.hosts import claude, codex, cursor, gemini
from agentcfg.transcript import NOT_READ, Spent
from tests.hosts.shared import NO_WAIT, assistant, write_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentcfg.hosts.protocols import HookDialect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CAPTURES = {
    "claude": FIXTURES / "claude-code-2.1.197" / "transcript.jsonl",
    "codex": FIXTURES / "codex-0.169.0" / "transcript.jsonl",
    "gemini": FIXTURES / "gemini-cli-0.61.0" / "transcript.jsonl",
}
HOSTS: dict[str, HookDialect] = {"claude": claude, "codex": codex, "gemini": gemini}
# Every model call of the captures reported 10 input and 5 output tokens.
TWO_CALLS = {"input": 20, "output": 10, "cache_read": 0, "cache_write": 0, "total": 30}


def replay(
    host: HookDialect, source: Path, cuts: list[int], folder: Path, mark: int | None = None
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


def test_unknown_is_none_never_zero(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_lines(path, [{"type": "user", "message": {"content": "go"}},
                 {"type": "assistant", "message": {"id": "m1", "content": []}}])  # fmt: skip
    spent = claude.usage_since(str(path), None, NO_WAIT)
    assert spent.usage is None and spent.end == path.stat().st_size  # read, but no usage in it
    assert claude.usage_since(str(tmp_path / "missing"), None, NO_WAIT) == NOT_READ
    assert cursor.usage_since(str(path), None, NO_WAIT) == NOT_READ


def test_a_segment_longer_than_the_tail_is_unknown(tmp_path: Path) -> None:
    from agentcfg.transcript import read_segment

    path = tmp_path / "t.jsonl"
    filler = [{"type": "progress", "pad": "x" * 100}] * 50
    write_lines(path, [assistant("m1", input_tokens=1), *filler, assistant("m2", input_tokens=2)])
    cut = read_segment(str(path), 0, lambda line: False, tail=1024)
    assert cut is not None and cut.lines is None and cut.end == path.stat().st_size
    near = read_segment(str(path), path.stat().st_size - 100, lambda line: False, tail=1024)
    assert near is not None and near.lines is not None
