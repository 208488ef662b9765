"""Frozen records that cost the stop hook next to nothing to define.

A record is declared as a `typing.NamedTuple` is (fields as annotations, trailing
defaults, then methods and properties), and that is what a type checker sees. At run time
the same class statement builds a `collections.namedtuple`: neither `typing` nor
`dataclasses` (which loads `inspect` and compiles several methods for each class) is
imported, which matters to a process that lives for one stop fire
(docs/architecture.md, section 4).
"""

from __future__ import annotations

__all__ = ["Record"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as Record
else:
    from collections import namedtuple

    _OWN = frozenset(("__module__", "__qualname__", "__annotations__"))

    class _RecordType(type):
        def __new__(mcs, name, bases, namespace):
            if not bases:  # Record itself
                return super().__new__(mcs, name, bases, namespace)
            if "__classcell__" in namespace:
                raise TypeError(f"{name}: a record's methods cannot use super() or __class__")
            fields = tuple(namespace.get("__annotations__", ()))
            defaulted = [field in namespace for field in fields]
            if defaulted != sorted(defaulted):
                raise TypeError(f"{name}: a field without a default follows one with a default")
            made = namedtuple(
                name,
                fields,
                defaults=[namespace[field] for field in fields if field in namespace],
                module=namespace["__module__"],
            )
            made.__qualname__ = namespace["__qualname__"]
            made.__annotations__ = namespace.get("__annotations__", {})
            for key, value in namespace.items():
                if key not in _OWN and key not in fields:
                    setattr(made, key, value)
            return made

    class Record(metaclass=_RecordType):
        """The base a record names; the class it makes is a `collections.namedtuple`."""
