"""Every use of the interpreter's private modules and functions, each beside its plain form.

The stop hook runs as a process of its own on every turn end, so what its imports and first
calls cost is most of what it costs (docs/architecture.md, section 4). The few places where
a private part of CPython saves a measurable share of a fire are kept here, and only here,
each with a fallback written with public APIs alone that gives the same result.

`AGENTCFG_SPEED=plain` in the environment makes every function here take its plain form
(the test suite runs that way too, so the fallbacks are held to the same tests);
`AGENTCFG_SPEED=plain:json,sha256` only the named ones.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

NAMES = ("tuple", "json", "signal", "sha256", "compare", "exit", "pathlib")


def _plain() -> frozenset[str]:
    said = os.environ.get("AGENTCFG_SPEED", "")
    if said == "plain":
        return frozenset(NAMES)
    if said.startswith("plain:"):
        return frozenset(said[6:].split(","))
    return frozenset()


PLAIN = _plain()  # read once, when the process starts: the forms never change mid-process


def fast(name: str) -> bool:
    """The private form of `name` is used (CPython has it and it is not turned off)."""
    return name not in PLAIN and sys.implementation.name == "cpython"


# -- records: a field getter and a constructor per number of fields -----------------------


def field_getter(index: int, doc: str) -> Any:
    """A class attribute reading item `index` of a tuple, as namedtuple's fields do."""
    if fast("tuple"):
        from _collections import _tuplegetter  # type: ignore[import-not-found, unused-ignore]

        return _tuplegetter(index, doc)
    from operator import itemgetter

    return property(itemgetter(index), doc=doc)


def constructor(name: str, fields: tuple[str, ...], defaults: tuple[object, ...]) -> Any:
    """`__new__` for a tuple class taking `fields` by position or name, as namedtuple's does.

    Fast: a copy of a constructor written out below with the fields' names put in its code
    (nothing compiled per class). Plain: compiled from its text, as namedtuple compiles it."""
    if fast("tuple") and len(fields) < len(_CONSTRUCTORS):
        from types import FunctionType

        code = _CONSTRUCTORS[len(fields)].__code__
        code = code.replace(co_varnames=("_cls", *fields), co_name="__new__")
        if sys.version_info >= (3, 11):  # a traceback names it by its code's qualified name
            code = code.replace(co_qualname=f"{name}.__new__")
        made = FunctionType(code, _GLOBALS, "__new__", defaults or None)
        made.__qualname__ = f"{name}.__new__"
        return made
    items = "".join(f"{field}, " for field in fields)
    text = f"lambda {', '.join(('_cls', *fields))}: _tuple_new(_cls, ({items}))"
    made = eval(text, dict(_GLOBALS))  # the fields are names a class statement declared
    made.__name__ = "__new__"
    made.__qualname__ = f"{name}.__new__"
    made.__defaults__ = defaults or None
    return made


_tuple_new = tuple.__new__
_GLOBALS = {"_tuple_new": _tuple_new, "__builtins__": {}}
# the constructor of a record of each number of fields, its arguments named by each class;
# written out rather than compiled for each class (an engaged fire defines some forty)
# fmt: off
_CONSTRUCTORS = (
    lambda _cls: _tuple_new(_cls, ()),
    lambda _cls, f0: _tuple_new(_cls, (f0,)),
    lambda _cls, f0, f1: _tuple_new(_cls, (f0, f1)),
    lambda _cls, f0, f1, f2: _tuple_new(_cls, (f0, f1, f2)),
    lambda _cls, f0, f1, f2, f3: _tuple_new(_cls, (f0, f1, f2, f3)),
    lambda _cls, f0, f1, f2, f3, f4: _tuple_new(_cls, (f0, f1, f2, f3, f4)),
    lambda _cls, f0, f1, f2, f3, f4, f5: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7, f8: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7, f8)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7, f8, f9)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18)),
    lambda _cls, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19: _tuple_new(_cls, (f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19)),
)
# fmt: on
MAX_FIELDS = len(_CONSTRUCTORS) - 1


# -- JSON: the stop hook reads its payload without loading the json package ---------------


class _Decoding:
    # the attributes _json's scanner reads; the json package (and its re) is not loaded
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float
    memo: dict[str, str] = {}  # noqa: RUF012  # the scanner's key memo, kept between calls


def loads(text: str) -> object:
    """json.loads for a JSON text, ValueError when it is not one."""
    if not fast("json"):
        import json

        try:
            return json.loads(text)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None
    from _json import make_scanner  # the C scanner json.loads uses, without json's imports

    start = len(text) - len(text.lstrip())
    try:
        value, end = make_scanner(_Decoding)(text, start)  # type: ignore[arg-type]
    except StopIteration:
        raise ValueError("not JSON") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if text[end:].strip():
        raise ValueError("extra data after JSON")
    return value


# -- signals: `signal` wraps `_signal` in enums, whose building costs a fire ---------------


def signals() -> Any:
    """The module with `signal`, `setitimer`, `SIGALRM` and `ITIMER_REAL`."""
    if fast("signal"):
        import _signal  # type: ignore[import-not-found, unused-ignore]

        return _signal
    import signal

    return signal


# -- sha256: `hashlib` loads OpenSSL, which the lean path does without --------------------


def sha256() -> Callable[[bytes], Any]:
    """sha256's constructor: the interpreter's builtin module (`_sha2` from Python 3.12,
    `_sha256` before), else hashlib's. Look it up once: a failed import is not remembered."""
    if fast("sha256"):
        try:
            from _sha2 import sha256 as found  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            try:
                from _sha256 import sha256 as found  # type: ignore[import-not-found, no-redef, unused-ignore]
            except ImportError:  # pragma: no cover - a build without either
                from hashlib import sha256 as found
        return found  # type: ignore[no-any-return, unused-ignore]
    from hashlib import sha256 as plain

    return plain


def compare_digest() -> Callable[[str, str], bool]:
    """A comparison in constant time: `_operator`'s, which `hmac` wraps after loading hashlib."""
    if fast("compare"):
        from _operator import _compare_digest

        return _compare_digest
    from hmac import compare_digest as plain

    return plain


# -- the end of a hook process ------------------------------------------------------------


def exit_waits() -> bool:
    """Something waits to run at the interpreter's exit (a coverage tracer does): the process
    must then end the ordinary way. Plain: it cannot be told, so the answer is yes."""
    if fast("exit"):
        import atexit

        return bool(atexit._ncallbacks())
    return True


# -- pathlib without urllib.parse ---------------------------------------------------------


def import_pathlib() -> None:
    """Import pathlib without urllib.parse and ipaddress (a tenth of a warm fire).

    Up to Python 3.12, pathlib imports `urllib.parse.quote_from_bytes` at import time for
    `Path.as_uri` alone (3.13 imports it there, when called). While pathlib loads, a stand-in
    module gives it a function that imports the real one on its first call."""
    if (
        not fast("pathlib")
        or sys.version_info >= (3, 13)
        or "pathlib" in sys.modules
        or "urllib.parse" in sys.modules
    ):
        import pathlib

        return

    def quote_from_bytes(*args: object, **kwargs: object) -> str:
        from urllib.parse import quote_from_bytes as real

        return real(*args, **kwargs)  # type: ignore[arg-type]

    stand_in = type(sys)("urllib.parse")
    stand_in.quote_from_bytes = quote_from_bytes  # type: ignore[attr-defined]
    sys.modules["urllib.parse"] = stand_in
    try:
        import pathlib  # noqa: F401
    finally:
        if sys.modules.get("urllib.parse") is stand_in:
            del sys.modules["urllib.parse"]
