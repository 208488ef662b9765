"""The small YAML reader answers only where it reads exactly as ruamel.yaml does."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from agentcfg.core.yamlload import load_yaml, plain_mapping


def ruamel(source: str) -> Any:
    return YAML(typ="safe", pure=True).load(source)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("execution:\n  mode: autonomous\n", {"execution": {"mode": "autonomous"}}),
        ("title: Demo — a small roadmap", {"title": "Demo — a small roadmap"}),
        ("execution: {mode: autonomous}", {"execution": {"mode": "autonomous"}}),
        ("title: Ship it\n# a note\nmode: enforce\n", {"title": "Ship it", "mode": "enforce"}),
        ("title: 'A: b'\nlimit: 40\nempty:\n", {"title": "A: b", "limit": 40, "empty": None}),
        ("marks:\n    x: done\n    z: blocked\n", {"marks": {"x": "done", "z": "blocked"}}),
    ],
)
def test_the_common_shapes_are_read_without_ruamel(source: str, expected: object) -> None:
    assert plain_mapping(source) == expected == ruamel(source)


@pytest.mark.parametrize(
    "source",
    [
        "",
        "a: true",
        "a: No",
        "a: b # note",
        "a: 1.5",
        "a: 012",
        "a: {}",
        "a: b\na: c",
        "a: b\n  c: d",
        "a:\n    b: c\n  d: e",
        "- a",
        "---\na: b",
        "a: 'it''s'",
        'a: "x\\ty"',
        "a: &x b",
        "a: b\r\nc: d",
        "\ufeffa: b",
        "a:\tb",
    ],
)
def test_anything_else_is_left_to_ruamel(source: str) -> None:
    assert plain_mapping(source) is None


WORDS = st.sampled_from(
    ["mode", "a", "b", "true", "No", "on", "null", "y", "x y", "x  y", "x,y", "ü", "é-1", "A.b"]
)
VALUES = st.one_of(
    WORDS,
    st.sampled_from(["0", "7", "012", "1e3", ".inf", "~", "-", "- a", "{a: b}", "{a: b, c: d}"]),
    st.sampled_from(["{a: b,}", "{a: on}", "{a: x y}", "{}", "'x: y'", '"x"', "'it''s'", "&a b"]),
    st.text(alphabet="ab :#'\"{},-!?*&|>\\.0\t", max_size=8),
    st.text(max_size=4),
)
LINES = st.lists(
    st.tuples(
        st.sampled_from(["", " ", "  ", "    "]),
        st.one_of(WORDS, st.text(alphabet="ab-_:#", min_size=1, max_size=3)),
        st.sampled_from([": ", ":", ":  ", " : "]),
        VALUES,
        st.sampled_from(["", " ", " # c", "\n# c", "\n"]),
    ),
    min_size=1,
    max_size=6,
)


KEYS = st.sampled_from(["k", "k-2", "K_3", "mode", "title", "Yes", "nul"])
PLAIN = st.sampled_from(
    [
        "autonomous",
        "x y",
        "Ship it, now",
        "a.b/c (d)",
        "ä",
        "Demo — a roadmap",
        "x\u00a0y",
        "x\u2028y",
        "x\x85y",
        "0",
        "40",
        "'q'",
    ]
)


@st.composite
def documents(draw: st.DrawFn, depth: int = 0) -> list[str]:
    """The lines of a nested block mapping, mostly inside the subset, its scalars drawn from
    words near YAML's booleans, nulls and numbers."""
    indent = draw(st.sampled_from(["  ", "    ", " "])) if depth else ""
    lines: list[str] = []
    for key in draw(
        st.lists(st.one_of(KEYS, KEYS, KEYS, WORDS), min_size=1, max_size=4, unique=True)
    ):
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(["# note", "", "  # x", "#"])))
        if depth < 2 and draw(st.integers(0, 3)) == 0:
            lines.append(f"{key}:")
            lines += [indent + line for line in draw(documents(depth + 1))]
            continue
        value = draw(st.one_of(PLAIN, PLAIN, PLAIN, PLAIN, PLAIN, WORDS, VALUES))
        lines.append(f"{key}:{draw(st.sampled_from([' ', '  ']))}{value}")
    return lines


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(
    st.one_of(
        LINES.map(lambda ls: "\n".join("".join(parts) for parts in ls)), documents().map("\n".join)
    )
)
@example("a: b\n  c:")
def test_whenever_the_small_reader_answers_ruamel_agrees(source: str) -> None:
    answer = plain_mapping(source)
    if answer is None:
        return
    expected = ruamel(source)
    assert repr(answer) == repr(expected)  # repr tells 1 from True and "1" from 1
    assert load_yaml(source) == expected
