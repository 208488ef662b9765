"""Texts the agent reads: continuations and refusals, pinned by snapshots."""

from __future__ import annotations

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg.core.roadmap import Step
from agentcfg.core.texts import REFUSALS, continuation, refusal


def step(verify: str | None = "pytest -k phases", text: str = "Scope checkboxes to phases") -> Step:
    return Step("1.2", "open", text, verify, None, 14, "1")


def test_with_verify_and_blocked(snapshot: SnapshotAssertion) -> None:
    assert continuation("long-horizon", 3, 1, step(), 2, 25) == snapshot


def test_without_verify(snapshot: SnapshotAssertion) -> None:
    assert continuation("long-horizon", 3, 0, step(verify=None), 1, 25) == snapshot


def test_one_open_step(snapshot: SnapshotAssertion) -> None:
    text = continuation("demo", 1, 0, step(), 25, 25)
    assert "has 1 open step —" in text
    assert text == snapshot


def test_long_step_text_is_cut_at_240(snapshot: SnapshotAssertion) -> None:
    text = continuation("demo", 2, 0, step(text="very long step " * 40), 3, 25)
    named = text.splitlines()[1].removeprefix("Next step: **1.2** ")
    assert len(named) == 240 and named.endswith("...")
    assert text == snapshot


QUOTES = {
    "deference": "Would you like me to continue?",
    "promissory-closing": "Now I'll run the tests.",
    "unverified-completion": "All tests pass.",
    "unproven-step": "",
}


@pytest.mark.parametrize("detector", sorted(REFUSALS))
def test_refusal_texts(detector: str, snapshot: SnapshotAssertion) -> None:
    text = refusal(detector, QUOTES[detector], slug="demo", step="1.2", command="pytest -k x")
    assert text.startswith("turn-end-gate: ")
    assert "\n" not in text  # one short paragraph
    assert text == snapshot
