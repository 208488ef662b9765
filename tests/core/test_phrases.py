"""The gate's reading of final messages: promises, completion claims, deference, real questions."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

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


# The person reads these and must answer: the run hands back (run-continuation rung 2).
HANDS_BACK = [
    "Which should we use: PostgreSQL or SQLite? Let me know which you prefer.",
    "Should the cache live in Redis? Thanks!",
    "The schema has two readings. Which one is right? I left both behind a flag for now.",
    "Is the API key meant to live in the vault? I could not find it in the repository.",
    "Let me know which database you prefer.",
    "Let me know whether the old endpoint can go.",
    "Please confirm that dropping the legacy table is fine.",
    "Both designs work. Your call.",
    "It is up to you whether we keep the shim.",
    "Which do you prefer, tabs or spaces?",
    "Which one would you rather ship first?",
    "I need your decision on the retry policy before going further.",
    "Awaiting your approval for the migration.",
    "Let me know if you'd prefer MySQL instead.",
    "Do you want the logs in JSON or in plain text?",
    "Should failed jobs be retried, or dropped?",
    "Can you share the staging credentials?",
    "Step 1.2 is done.\n\nBefore 1.3: should the parser accept tabs? The spec is silent.",
    "Which approach do you prefer?\n\n- a queue\n- a cron job",
    "I compared both options.\n\nWhat should the default timeout be? 30 s or 60 s?",
    "**Question:** is Python 3.10 still supported?",
    "Please advise on the licence header.",
    "Could you confirm the target region?",
    "Is it OK to delete `build/` from the repository?",
    "Why did the CI job get disabled?",
    "Which port should the server use? I defaulted to 8080 for now.",
]
# These do not: the run goes on, or the gate refuses a request for leave (deference).
GOES_ON = [
    "Shall I continue?",
    "Would you like me to proceed with step 1.3?",
    "Let me know if you'd like me to continue.",
    "Do you want me to keep going?",
    "Step 1.2 is done. Should I go ahead and implement the cache next?",
    "Why did it fail? The fixture was stale, so I regenerated it.",
    "What changed? The parser now keeps list items in order.",
    "Let me know if you have any questions.",
    "Let me run the test suite:",
    "Fixed the parser. Now I'll run the tests.",
    "The function `is_valid?` is Ruby style; I renamed it.",
    "```\nwhat?\n```\nRenamed the helper.",
    "Asked myself whether it was worth it. It was.",
    "See https://example.invalid/search?q=agentcfg for the notes.",
    "Which port should the server use?\n\nI picked 8080 and documented it in the README, with the reasons for it.",
    "Closed 1.2 and 1.3.",
]


@pytest.mark.parametrize("message", HANDS_BACK)
def test_a_question_or_decision_request_hands_back(message: str) -> None:
    assert phrases.question(message)
    assert phrases.deference(message) is None
    assert phrases.promise(message) is None  # "Let me know" promises nothing


@pytest.mark.parametrize("message", GOES_ON)
def test_no_question_for_the_person(message: str) -> None:
    assert phrases.question(message) is None


def test_the_table_is_large_enough_both_ways() -> None:
    assert len(HANDS_BACK) + len(GOES_ON) >= 40
    assert min(len(HANDS_BACK), len(GOES_ON)) >= 15


@pytest.mark.parametrize(
    ("prompt", "wants"),
    [
        ("stop", "pause"),
        ("Stop!", "pause"),
        ("STOP.", "pause"),
        ("pause the roadmap", "pause"),
        ("Please pause the run for now.", "pause"),
        ("hold on", "pause"),
        ("Hold on, I need to check something first.", "pause"),
        ("wait", "pause"),
        ("Wait - that is the wrong branch.", "pause"),
        ("don't continue", "pause"),
        ("Do not continue until I review the schema.", "pause"),
        ("ok, stop here", "pause"),
        ("Let's stop the roadmap; I'll look at it tomorrow.", "pause"),
        ("go on", "resume"),
        ("Continue.", "resume"),
        ("ok, carry on", "resume"),
        ("Resume the roadmap please", "resume"),
        ("don't stop", "resume"),
        ("Stop using tabs in the parser.", None),
        ("Wait for the build to finish, then merge.", None),
        ("Fix the README typo.", None),
        ("What does step 1.3 mean?", None),
        ("", None),
        (None, None),
    ],
)
def test_what_the_persons_prompt_asks_of_the_run(prompt: str | None, wants: str | None) -> None:
    assert phrases.intent(prompt) == wants


# what each pattern matches and nearly matches, in several cases, with prose around it
FRAGMENTS = [
    "would you like me to continue", "Do you want me to start", "shall I proceed",
    "Should I go ahead", "let me know if you'd like me to continue", "ready for me to tackle",
    "want me to do the next", "ok to proceed?", "Good for me to continue?", "proceed?",
    "Continue?", "let me know which", "please confirm", "your call", "up to you",
    "which one would you prefer", "I need your decision", "waiting on your approval", "why",
    "What", "so, how", "Where", "you", "we", "our", "ok", "I'll", "I will", "I am going to",
    "I'm going to", "let me", "Let's", "I need to", "stop", "wait", "leave it", "hand it back",
    "all tests pass", "10 tests passed", "tests are green", "it is done", "they are complete",
    "it's working", "I've fixed", "I have implemented", "CI is green", "the build is now green",
    "done", "All done!", "not", "no", "never", "cannot", "isn't", "please stop", "hold on",
    "hold off", "hang on", "freeze", "enough", "halt", "don't continue", "do not carry on",
    "pause the roadmap", "stop working", "don't stop", "never wait", "go on", "carry on",
    "resume", "keep going", "unpause", "start again", "restart the run", "okay,", "now",
    "Working", "reply 3", "STOP", "Go On", "GREEN", "TESTS PASS", "me", "to", "I", "the run",
    "\u00e9t\u00e9", "\u017ftop", "\u212aeep going", "`code?`", "- item", "**bold**",
    "it isn't done", "the tests can't pass", "How did it fail? The cache was cold",
    "Why? A cold cache", "I won't stop", "Should I continue", "Let me know your preference",
]  # fmt: skip
SEPARATORS = [" ", ", ", ". ", "? ", "! ", ": ", "\n", "\n\n", ""]
TEXTS = st.lists(
    st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(SEPARATORS)), max_size=12
).map(lambda parts: "".join(fragment + separator for fragment, separator in parts))


@settings(max_examples=400, deadline=None)
@given(TEXTS)
@example("hold off, please")
@example("How did it fail? The cache was cold.")
@example("It isn't done.")
def test_screening_by_words_changes_no_reading(text: str) -> None:
    """A pattern is skipped for a text without any of its words (`_NEEDS`): every reading
    comes out as the patterns alone give it."""
    readings = (phrases.deference, phrases.question, phrases.promise, phrases.completion)
    screened = [read(text) for read in readings] + [phrases.intent(text)]
    saved = dict(phrases._NEEDS)
    phrases._NEEDS.clear()
    try:
        assert [read(text) for read in readings] + [phrases.intent(text)] == screened
    finally:
        phrases._NEEDS.update(saved)


def test_a_message_with_none_of_the_words_searches_no_pattern_of_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nor compiles it: `re` compiles a pattern given as text when it is first searched."""
    asked: list[str] = []
    real = re.search

    def search(pattern: str, text: str) -> re.Match[str] | None:
        asked.append(pattern)
        return real(pattern, text)

    monkeypatch.setattr(re, "search", search)
    for read in (phrases.deference, phrases.question, phrases.promise, phrases.completion):
        assert read("Reading the logs.") is None
    assert phrases.intent("Fix the parser.") is None
    assert asked == []


# what the sentence reader replaced: a split at these, then each part stripped of this
SENTENCE_END = r"(?<=[.!?])\s+|\n+"
DECORATION = r"^[\s>*_#`-]+|[\s*_`]+$"
MARKUP = st.sampled_from(list(".!?>*_#`-\n\r\t \x0b\x0c\x1c\x85\u00a0\u2028\u3000ab"))


@settings(max_examples=1000, deadline=None)
@given(st.text(MARKUP | st.characters(), max_size=80) | TEXTS)
@example("Done.  Next!\tThird?\u00a0Fourth")
@example("**Step 1.2 is done.**\r\n\n> - Shall I go on?  ")
@example("a. . b?! c.")
def test_sentences_are_read_as_the_patterns_they_replace(text: str) -> None:
    parts = (re.sub(DECORATION, "", part) for part in re.split(SENTENCE_END, text))
    assert phrases._sentences(text) == [part for part in parts if part]
