"""Roadmap slugs: what names a roadmap file inside roadmaps/ and nothing else."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from agentcfg.workspace import is_slug

SLUG = r"[A-Za-z0-9][A-Za-z0-9._-]*"  # the rule as a pattern


@given(st.from_regex(SLUG, fullmatch=True) | st.text(alphabet="aZ09._-/\\ é٣\n", max_size=12))
@example("")
@example("..")
@example("-demo")
@example("demo\n")
@example("démo")
@example("٣")
def test_a_slug_is_what_the_pattern_of_the_rule_takes(text: str) -> None:
    assert is_slug(text) == (re.fullmatch(SLUG, text) is not None)
