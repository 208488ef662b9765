"""`did you mean`: the close names a mistyped one could be, in one short clause."""

from __future__ import annotations

from agentcfg.core.suggest import did_you_mean


def test_one_close_name_is_suggested() -> None:
    assert did_you_mean("wordz", ["demo", "wordy", "other"]) == "; did you mean `wordy`?"


def test_several_close_names_are_listed_best_first_at_most_three() -> None:
    assert did_you_mean("1.9", ["1.1", "1.2", "1.3", "2.1", "2.2"]) == (
        "; did you mean `1.1`, `1.2` or `1.3`?"
    )
    assert did_you_mean("fleet", ["feet", "fleets", "demo"]) == (
        "; did you mean `fleets` or `feet`?"
    )


def test_case_does_not_hide_a_name_and_the_name_is_shown_as_it_is() -> None:
    assert did_you_mean("t0001", ["T001", "T002"]) == "; did you mean `T001` or `T002`?"


def test_nothing_close_says_nothing() -> None:
    assert did_you_mean("zzz", ["demo", "wordy"]) == ""
    assert did_you_mean("demo", []) == ""
    assert did_you_mean("", ["demo"]) == ""
