"""The interpreter-private fast paths (agentcfg/_speed.py) give what their plain forms give,
and `AGENTCFG_SPEED=plain` makes the package, the stop hook included, use the plain forms."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcfg import _speed
from agentcfg.core.records import Record
from tests.conftest import fire, fixture_payload, hook_env, run_cli

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@pytest.fixture(params=["fast", "plain"])
def form(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test run once with the private forms and once with the plain ones."""
    monkeypatch.setattr(
        _speed, "PLAIN", frozenset(_speed.NAMES if request.param == "plain" else ())
    )
    yield request.param


@contextmanager
def forms(plain: frozenset[str]) -> Iterator[None]:
    """`plain` for the block, then the process's own forms again (a property test cannot
    take the monkeypatch fixture)."""
    before, _speed.PLAIN = _speed.PLAIN, plain
    try:
        yield
    finally:
        _speed.PLAIN = before


@given(value=JSON, pad=st.sampled_from(["", " ", "\n\t "]))
def test_loads_reads_what_json_reads(value: object, pad: str) -> None:
    text = pad + json.dumps(value) + pad
    for plain in (frozenset(), frozenset(_speed.NAMES)):
        with forms(plain):
            assert _speed.loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ["", "{", '{"a": 1} x', "[" * 100_000, "nope", '"\\x"'])
def test_loads_refuses_what_json_refuses(form: str, text: str) -> None:
    with pytest.raises(ValueError):
        _speed.loads(text)


@given(data=st.binary(), key=st.binary(max_size=100))
def test_sha256_and_compare_are_hashlibs_and_hmacs(data: bytes, key: bytes) -> None:
    for plain in (frozenset(), frozenset(_speed.NAMES)):
        with forms(plain):
            assert _speed.sha256()(data).hexdigest() == hashlib.sha256(data).hexdigest()
            mark = hmac.new(key, data, "sha256").hexdigest()
            assert _speed.compare_digest()(mark, mark)
            assert not _speed.compare_digest()(mark, mark[::-1] if mark != mark[::-1] else "")


def test_the_fast_forms_are_the_private_ones_and_the_plain_ones_public(form: str) -> None:
    fast = form == "fast"
    assert (_speed.signals().__name__ == "_signal") is fast
    assert _speed.sha256().__module__ in (("_sha2", "_sha256") if fast else ("_hashlib", "hashlib"))
    assert (type(_speed.field_getter(0, "")) is property) is not fast
    assert _speed.exit_waits() is (not fast or _speed.exit_waits())  # plain: always waits
    signals = _speed.signals()
    assert signals.SIGALRM and signals.ITIMER_REAL is not None


def test_records_built_either_way_behave_as_namedtuples(form: str) -> None:
    class Point(Record):
        x: int
        y: int = 2

        @property
        def total(self) -> int:
            return self.x + self.y

    made = Point(1)
    assert made == (1, 2) and made.x == 1 and made.y == 2 and made.total == 3
    assert Point(y=5, x=4) == (4, 5) and Point._make([7, 8]) == (7, 8)
    assert made._replace(y=9) == (1, 9) and made._asdict() == {"x": 1, "y": 2}
    assert repr(made) == "Point(x=1, y=2)" and type(Point.__new__).__name__ == "function"
    assert Point.__new__.__qualname__ == "Point.__new__"
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    assert made.__getnewargs__() == (1, 2)  # what pickling a record of a module's keeps
    with pytest.raises(TypeError, match="at most"):
        Record.__class__(
            "Wide",
            (Record,),
            {  # type: ignore[call-arg]
                "__module__": __name__,
                "__qualname__": "Wide",
                "__annotations__": {f"f{n}": "int" for n in range(_speed.MAX_FIELDS + 1)},
            },
        )


def loaded_after(code: str, speed: str | None) -> set[str]:
    """The modules a fresh interpreter has loaded after `code`, with AGENTCFG_SPEED `speed`."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTCFG_SPEED"}
    if speed is not None:
        env["AGENTCFG_SPEED"] = speed
    shown = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\nprint(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    return set(shown.split())


def test_the_variable_turns_the_private_forms_off_in_a_process_of_its_own() -> None:
    code = (
        "from agentcfg import _speed\n"
        "_speed.loads('{}'); _speed.signals(); _speed.sha256(); _speed.import_pathlib()"
    )
    fast, plain = loaded_after(code, None), loaded_after(code, "plain")
    assert {"json", "signal", "hashlib"} <= plain and not {"json", "signal", "hashlib"} & fast
    only_json = loaded_after(code, "plain:json")
    assert "json" in only_json and "signal" not in only_json
    if sys.version_info < (3, 13):  # pathlib loads urllib.parse up to 3.12, unless stood in for
        assert "urllib.parse" in plain and "urllib.parse" not in fast


@pytest.mark.parametrize("speed", ["", "plain", "plain:compare"])
def test_the_hook_decides_the_same_with_the_plain_forms(ws: Path, speed: str) -> None:
    (ws / "transcript.jsonl").write_text(
        (
            Path(__file__).parent / "fixtures" / "claude-code-2.1.197" / "transcript.jsonl"
        ).read_text()
    )
    assert run_cli("roadmap", "trust", "demo").exit_code == 0
    assert (
        run_cli(
            "sessions", "claim", "demo", "--session", fixture_payload(1, ws)["session_id"]
        ).exit_code
        == 0
    )
    result = fire(ws, fixture_payload(1, ws), env=hook_env(ws, AGENTCFG_SPEED=speed), process=True)
    assert result.returncode == 2 and "Next step: **1.2**" in result.stderr, result.stderr
