"""Reading the current turn from a transcript's bounded tail."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agentcfg.transcript import UNKNOWN, read_turn
from tests.conftest import FIXTURES


def test_fixture_transcript() -> None:
    info = read_turn(str(FIXTURES / "transcript.jsonl"))
    assert info.turn == "turn-2"  # two real human turns; hook feedback and tool results are not
    assert info.tools_ran is True
    assert info.final_message == "reply 14: done for now."


def test_a_turn_with_no_command(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "first"}},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash"}]}},
        {"type": "user", "message": {"role": "user", "content": "second"}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "All done."}]}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    info = read_turn(str(path))
    assert (info.turn, info.tools_ran, info.final_message) == ("turn-2", False, "All done.")


def test_a_long_turn_reads_its_closing_words_and_its_tools(tmp_path: Path) -> None:
    """The replies after the closing words are found only matter for a tool call in them."""
    text = {
        "type": "assistant",
        "message": {"content": [{"type": "text", "text": 'say "tool_use"'}]},
    }
    tool = {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash"}]}}
    last = {"type": "assistant", "message": {"content": [{"type": "text", "text": "All done."}]}}
    human = {"type": "user", "message": {"role": "user", "content": "go"}}
    for lines, ran in (
        ([human, tool, *[text] * 50, last], True),
        ([human, *[text] * 50, last], False),
    ):
        path = tmp_path / "t.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        info = read_turn(str(path))
        assert (info.turn, info.tools_ran, info.final_message) == ("turn-1", ran, "All done.")


def test_an_oversize_transcript_never_yields_a_false_ordinal(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    human = {"type": "user", "promptId": "p-last", "message": {"content": "go"}}
    filler = json.dumps({"type": "progress", "pad": "x" * 1000}) + "\n"
    with path.open("w") as handle:
        for _ in range(3):
            handle.write(json.dumps({"type": "user", "message": {"content": "early"}}) + "\n")
        handle.write(filler * 300)
        handle.write(json.dumps(human) + "\n")
        handle.write(filler * 10)
    info = read_turn(str(path), tail=64 * 1024)
    assert info.turn == "prompt-p-last"
    lost = read_turn(str(path), tail=4 * 1024)  # the last human line is out of reach
    assert lost.turn == ""


def test_odd_paths_read_as_unknown(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for path in (None, "", str(tmp_path), str(tmp_path / "fifo"), str(tmp_path / "loop"), "/dev/zero",
                 str(tmp_path / "missing"), "bad\x00path"):  # fmt: skip
        assert read_turn(path) == UNKNOWN


def test_one_huge_line_is_not_parsed(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text('{"type": "user", "message": {"content": "' + "x" * 200_000 + '"}}')
    info = read_turn(str(path), tail=64 * 1024)
    assert info.turn == "" and info.final_message is None
