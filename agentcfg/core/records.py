"""Frozen records that cost the stop hook next to nothing to define.

A record is declared as a `typing.NamedTuple` is (fields as annotations, trailing
defaults, then methods and properties), and that is what a type checker sees. At run time
the same class statement builds a tuple class with what `collections.namedtuple` gives one
(fields by name, defaults, `_fields`, `_field_defaults`, `_make`, `_replace`, `_asdict`, its
repr, pickling), without loading `typing` or `dataclasses` (which loads `inspect` and
compiles several methods for each class), and without compiling a constructor for each
class as `namedtuple` does (agentcfg/_speed.py: each class gets a copy of a constructor's
code with its own field names). That matters to a process that lives for one stop fire
(docs/architecture.md, section 4).
"""

from __future__ import annotations

__all__ = ["Record"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as Record
else:
    import sys

    from agentcfg import _speed

    _OWN = frozenset(("__module__", "__qualname__", "__annotations__"))
    # what namedtuple's `_replace` raises for a name it lacks: TypeError from Python 3.13
    _REPLACE_ERROR = TypeError if sys.version_info >= (3, 13) else ValueError

    def _constructor(name, fields, defaults):
        """`__new__` taking the fields by position or name, as namedtuple's does."""
        if len(fields) > _speed.MAX_FIELDS:
            raise TypeError(f"{name}: a record has at most {_speed.MAX_FIELDS} fields")
        return _speed.constructor(name, fields, tuple(defaults))

    @classmethod
    def _make(cls, iterable):
        made = tuple.__new__(cls, iterable)
        if len(made) != len(cls._fields):
            raise TypeError(f"Expected {len(cls._fields)} arguments, got {len(made)}")
        return made

    def _replace(self, /, **changes):
        made = self._make(map(changes.pop, self._fields, self))
        if changes:
            raise _REPLACE_ERROR(f"Got unexpected field names: {list(changes)!r}")
        return made

    def _asdict(self):
        return dict(zip(self._fields, self, strict=True))

    def __repr__(self):
        shown = ", ".join(
            f"{field}={value!r}" for field, value in zip(self._fields, self, strict=True)
        )
        return f"{type(self).__name__}({shown})"

    def __getnewargs__(self):
        return tuple(self)

    class _RecordType(type):
        def __new__(mcs, name, bases, namespace):
            if not bases:  # Record itself
                return super().__new__(mcs, name, bases, namespace)
            if "__classcell__" in namespace:
                raise TypeError(f"{name}: a record's methods cannot use super() or __class__")
            fields = tuple(map(sys.intern, namespace.get("__annotations__", ())))
            defaulted = [field in namespace for field in fields]
            if defaulted != sorted(defaulted):
                raise TypeError(f"{name}: a field without a default follows one with a default")
            defaults = {field: namespace[field] for field in fields if field in namespace}
            own = {
                "__doc__": f"{name}({', '.join(fields)})",
                "__slots__": (),
                "_fields": fields,
                "_field_defaults": defaults,
                "__match_args__": fields,
                "__new__": _constructor(name, fields, defaults.values()),
                "_make": _make,
                "_replace": _replace,
                "_asdict": _asdict,
                "__repr__": __repr__,
                "__getnewargs__": __getnewargs__,
                "__module__": namespace["__module__"],
                "__qualname__": namespace["__qualname__"],
                "__annotations__": namespace.get("__annotations__", {}),
            }
            for index, field in enumerate(fields):
                own[field] = _speed.field_getter(index, f"Alias for field number {index}")
            for key, value in namespace.items():
                if key not in _OWN and key not in fields:
                    own[key] = value
            return type(name, (tuple,), own)

    class Record(metaclass=_RecordType):
        """The base a record names; the class it makes is a tuple class of its own."""
