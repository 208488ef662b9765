"""The gate's reading of final messages: promises, completion claims, deference, real questions."""

from __future__ import annotations

import pytest

from agentcfg.core import phrases


@pytest.mark.parametrize(
    "message",
    [
        "Step 1.2 is done. Would you like me to continue with 1.3?",
        "Shall I proceed?",
        "Everything compiles.\n\nShould I go ahead and implement the cache next?",
        "Let me know if you'd like me to continue.",
        "Do you want me to keep going?",
        "**Want me to start on phase 2?**",
    ],
)
def test_deference(message: str) -> None:
    assert phrases.deference(message)
    assert phrases.question(message) is None  # deference is not a real question


@pytest.mark.parametrize(
    "message",
    [
        "Which database should the cache use, Postgres or SQLite?",
        "The spec contradicts itself on retries. Should failed jobs be retried, or dropped?",
    ],
)
def test_real_questions(message: str) -> None:
    assert phrases.deference(message) is None
    assert phrases.question(message)


@pytest.mark.parametrize(
    "message",
    [
        "I fixed the parser. Now I'll run the tests.",
        "Next, I will wire the cache.",
        "Let me run the test suite:",
        "I'm going to refactor the ladder next.",
    ],
)
def test_promises(message: str) -> None:
    assert phrases.promise(message)


@pytest.mark.parametrize(
    "message",
    [
        "I'll stop here and wait for your review.",
        "Ran the tests; 42 passed.",
        "I'll need your decision on the schema?",
        "",
        "reply 8: done for now.",
    ],
)
def test_not_promises(message: str) -> None:
    assert phrases.promise(message) is None


@pytest.mark.parametrize(
    "message",
    [
        "All tests pass.",
        "The feature is now complete.",
        "I've implemented the cache and everything is green.",
        "Done.",
        "Fixed the bug; the 12 tests passed.",
    ],
)
def test_completion_claims(message: str) -> None:
    assert phrases.completion(message)


@pytest.mark.parametrize(
    "message",
    [
        "The tests do not pass yet.",
        "It isn't done.",
        "Working on step 2.",
        "reply 8: done for now.",
    ],
)
def test_not_completion_claims(message: str) -> None:
    assert phrases.completion(message) is None
