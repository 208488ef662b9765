"""Records behave at run time as the NamedTuple a type checker sees, without loading typing."""

from __future__ import annotations

import copy
import pickle
from collections import namedtuple

import pytest

from agentcfg.core.records import Record
from tests.conftest import python_prints


class Point(Record):
    """A point with a name."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = ()

    @property
    def far(self) -> bool:
        return abs(self.x) + abs(self.y) > 10

    @classmethod
    def origin(cls) -> Point:
        return cls(0)

    def moved(self, dx: int) -> Point:
        return self._replace(x=self.x + dx)


def test_fields_defaults_and_methods() -> None:
    point = Point(3)
    assert (point.x, point.y, point.tags) == (3, 0, ())
    assert Point._fields == ("x", "y", "tags")
    assert Point._field_defaults == {"y": 0, "tags": ()}
    assert Point.origin() == Point(0, 0, ())
    assert point.moved(9).far and not point.far
    assert point._replace(y=2) == Point(x=3, y=2)
    assert point._asdict() == {"x": 3, "y": 0, "tags": ()}


class Pair(Record):
    left: int
    right: str = "r"


PAIR = namedtuple("Pair", ("left", "right"), defaults=("r",))  # what a record stands for


def test_a_record_is_built_and_read_as_its_namedtuple() -> None:
    for made, twin in (
        (Pair(1), PAIR(1)),
        (Pair(1, "x"), PAIR(1, "x")),
        (Pair(right="y", left=2), PAIR(right="y", left=2)),
        (Pair._make([3, "z"]), PAIR._make([3, "z"])),
        (Pair(4)._replace(right="w"), PAIR(4)._replace(right="w")),
    ):
        assert tuple(made) == tuple(twin) and repr(made) == repr(twin)
        assert made._asdict() == twin._asdict()
        assert pickle.loads(pickle.dumps(made)) == made
        assert copy.deepcopy(made) == made and type(copy.copy(made)) is Pair
    assert Pair.__match_args__ == PAIR.__match_args__ == ("left", "right")
    assert Pair._field_defaults == PAIR._field_defaults
    assert isinstance(Pair(1), tuple) and Pair(1) == (1, "r")


def test_a_record_refuses_what_its_namedtuple_refuses() -> None:
    for call in (
        lambda kind: kind(),
        lambda kind: kind(1, "x", 2),
        lambda kind: kind(1, other=2),
        lambda kind: kind(1, left=2),
        lambda kind: kind._make([1]),
    ):
        for kind in (Pair, PAIR):
            with pytest.raises(TypeError):
                call(kind)
    raised = []
    for kind in (Pair, PAIR):
        with pytest.raises((TypeError, ValueError), match="unexpected field names") as caught:
            kind(1)._replace(middle=2)
        raised.append(caught.type)
    assert raised[0] is raised[1]  # as namedtuple on this Python: ValueError, from 3.13 TypeError


def test_a_record_is_frozen_and_compared_by_value() -> None:
    point = Point(1, 2)
    with pytest.raises(AttributeError):
        point.x = 5  # type: ignore[misc]
    assert point == Point(1, 2) and point != Point(2, 1)
    assert hash(point) == hash(Point(1, 2))


def test_a_record_shows_itself_and_its_class() -> None:
    assert repr(Point(1)) == "Point(x=1, y=0, tags=())"
    assert (Point.__name__, Point.__qualname__, Point.__module__) == (
        "Point",
        "Point",
        __name__,
    )
    assert Point.__doc__ == "A point with a name."


def test_a_field_without_a_default_cannot_follow_one_with_a_default() -> None:
    with pytest.raises(TypeError, match="follows one with a default"):

        class Bad(Record):  # type: ignore[misc]
            a: int = 0
            b: int


def record(name: str, fields: tuple[str, ...]) -> type[Record]:
    """A record class with these fields, as a class statement would make it."""
    namespace = {"__module__": __name__, "__qualname__": name}
    namespace["__annotations__"] = dict.fromkeys(fields, "int")
    made: type[Record] = type(Record)(name, (Record,), namespace)
    return made


def test_a_record_of_each_number_of_fields_is_built_as_its_namedtuple() -> None:
    for count in range(21):
        names = tuple(f"field{n}" for n in range(count))
        made = record("Made", names)
        twin = namedtuple("Made", names)
        values = tuple(range(count))
        assert tuple(made(*values)) == tuple(twin(*values)) == values
        assert made(**dict(zip(names, values, strict=True))) == values
        with pytest.raises(TypeError):
            made(*values, 99)
    with pytest.raises(TypeError, match="at most 20 fields"):
        record("Wide", tuple("abcdefghijklmnopqrstu"))


def test_a_record_method_cannot_use_super() -> None:
    with pytest.raises(TypeError, match="super"):

        class Bad(Record):
            a: int

            def __repr__(self) -> str:
                return super().__repr__()


def test_defining_records_loads_neither_typing_nor_dataclasses() -> None:
    probe = (
        "import sys\n"
        "import agentcfg.core.ladder, agentcfg.core.roadmap\n"
        "print(sorted(m for m in ('typing', 'dataclasses', 'inspect') if m in sys.modules))"
    )
    assert python_prints(probe).strip() == "[]"
