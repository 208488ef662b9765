"""Times as files write them: `iso` and `parse_iso` read and write what `datetime` would."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from hypothesis import example, given
from hypothesis import strategies as st

from agentcfg.core.times import _our_form, iso, iso_ms, parse_iso

EPOCHS = st.floats(min_value=0, max_value=253402300799.0, allow_nan=False)  # to 9999-12-31
MOMENTS = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31))


def by_datetime(text: str) -> float | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.replace(tzinfo=moment.tzinfo or timezone.utc).timestamp()


@given(EPOCHS)
@example(1.9999996)  # rounds up to the next second
@example(0.0009996)  # rounds up to the next millisecond
def test_iso_writes_what_datetime_writes(epoch: float) -> None:
    moment = datetime.fromtimestamp(epoch, timezone.utc)
    assert iso(epoch) == moment.isoformat(timespec="seconds").replace("+00:00", "Z")
    assert iso_ms(epoch) == moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@given(MOMENTS, st.sampled_from(["seconds", "milliseconds", "microseconds", "minutes"]))
def test_parse_iso_reads_what_datetime_reads(moment: datetime, timespec: str) -> None:
    for text in (moment.isoformat(timespec=timespec) + "Z", moment.isoformat(timespec=timespec)):
        assert parse_iso(text) == by_datetime(text)
    offset = moment.replace(tzinfo=timezone(timedelta(hours=5, minutes=30)))
    assert parse_iso(offset.isoformat()) == by_datetime(offset.isoformat())


@given(
    st.from_regex(
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{3})?Z", fullmatch=True
    )
)
def test_parse_iso_takes_only_real_dates_in_its_own_form(text: str) -> None:
    assert parse_iso(text) == by_datetime(text)


OUR_FORM = r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{3}))?Z"


@given(
    st.from_regex(OUR_FORM, fullmatch=True)
    | st.text(alphabet="0123456789٣-T:.Z ", min_size=19, max_size=25)
)
@example("2026-11-30T15:45:35Z123Z")
@example("2026-11-30T15:45:35.12Z")
def test_our_form_is_read_as_its_pattern_reads_it(text: str) -> None:
    found = re.fullmatch(OUR_FORM, text)
    assert _our_form(text) == (
        None if found is None else tuple(int(g or 0) for g in found.groups())
    )


def test_parse_iso_refuses_what_is_not_a_time() -> None:
    for text in (
        "2023-02-29T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-12-01T24:00:00Z",
        "yesterday",
    ):
        assert parse_iso(text) is None
    assert parse_iso(1796136751) is None
    assert parse_iso("2024-02-29T23:59:59.250Z") == 1709251199.25
