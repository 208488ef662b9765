"""The table of event and ending names: every name the package writes to the ledger, or reads
back from it, is the table's constant, never a literal; the table's exit codes are the README's
and the ones the driver finishes with."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcfg import notify
from agentcfg.core import events, ladder, texts
from agentcfg.run import driver
from agentcfg.run import model as plan
from tests.conftest import REPO
from tests.helpers import nodes

PACKAGE = REPO / "agentcfg"
# the functions a ledger event is written through: `state.event`, the hook's `ctx.log`, and
# the wrappers of verify, the re-proof, the fleet and the driver; the name is one of the
# first two arguments (after the workspace, for the wrappers)
EMITTERS = frozenset({"event", "log", "_log", "_record"})


def _called(node: ast.Call) -> str | None:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _reads_event(node: ast.expr) -> bool:
    """`x.get("event")` or `x["event"]`: the name of a ledger event read back."""
    if isinstance(node, ast.Call) and _called(node) == "get" and node.args:
        key = node.args[0]
    elif isinstance(node, ast.Subscript):
        key = node.slice
    else:
        return False
    return isinstance(key, ast.Constant) and key.value == "event"


def literal_names(source: str) -> Iterator[tuple[int, str]]:
    """Each string literal the source writes to the ledger as an event's name, or compares an
    event's name read back with: (line, the literal)."""
    for node in nodes(source):
        if isinstance(node, ast.Call) and _called(node) in EMITTERS:
            for part in (part for arg in node.args[:2] for part in ast.walk(arg)):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    yield node.lineno, part.value
        if isinstance(node, ast.Compare) and any(
            _reads_event(side) for side in (node.left, *node.comparators)
        ):
            for side in (node.left, *node.comparators):
                for part in ast.walk(side):
                    if isinstance(part, ast.Constant) and part.value != "event":
                        yield node.lineno, str(part.value)


def test_no_module_writes_or_reads_an_event_name_as_a_literal() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}: {name!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, name in literal_names(path.read_text())
    ]
    assert found == [], "name these by core/events.py's constants (add a new name to its table)"


@pytest.mark.parametrize(
    "source",
    [
        'ctx.log("brand-new", reason="x")',
        'state.event("brand-new", now, key, slug)',
        '_record(ws, "brand-new" if first else events.RUN_RESUME, current, slug, clock)',
        '_record(ws, action.pause or "brand-new", current, slug, clock)',
        'log(ws, "brand-new", slug, roadmap, env, now)',
        'closed = [e for e in seen if e.get("event") == "brand-new"]',
        'if record["event"] in ("engage", "brand-new"): pass',
    ],
)
def test_a_new_literal_name_is_found(source: str) -> None:
    assert "brand-new" in {name for _line, name in literal_names(source)}


def test_a_name_from_the_table_is_not_a_literal() -> None:
    source = 'ctx.log(events.ENGAGE, step="1.1")\nif e.get("event") == events.VERIFIED: pass'
    assert list(literal_names(source)) == []


def test_each_name_is_in_the_table_once_with_a_known_kind() -> None:
    constants = {
        value for key, value in vars(events).items() if key.isupper() and isinstance(value, str)
    }
    assert len(events.TABLE) == len(events.NAMES) == len(constants)
    assert constants == events.NAMES
    kinds = {"ending", "stop", "halt", "handback", "wait", "driver", "turn", "claim", "proof"}
    assert set(events.KINDS.values()) == kinds | {"person", "fleet", "problem"}
    assert all(name.startswith("halt-") for name in events.of_kind("halt"))


def test_only_endings_have_an_exit_code() -> None:
    ending_kinds = {"ending", "stop", "halt", "handback"}
    assert {n for n, kind in events.KINDS.items() if kind in ending_kinds} == set(events.EXIT_CODES)


def test_the_names_each_part_keys_on_are_the_tables() -> None:
    assert {name for name, _reached in ladder.HALTS} <= set(events.of_kind("halt"))
    assert {*plan.LIMIT_PAUSES, events.PAUSED_WINDOW} == set(events.WAITS)
    assert set(texts.NOTES) <= events.NAMES and set(texts.PROBLEM_LIMIT) <= events.NAMES
    assert set(notify.ENDINGS) <= set(events.EXIT_CODES)
    assert set(driver.NEXT) | set(driver.AGAIN) | driver.ROLLBACK_ON <= set(events.EXIT_CODES)


def _readme_exit_codes() -> dict[str, int]:
    """The README's table of `agentcfg run`'s exit codes, ending by ending."""
    text = (REPO / "README.md").read_text()
    table = text.split("| exit | ending |", 1)[1].split("\n\n", 1)[0]
    codes: dict[str, int] = {}
    for row in table.splitlines()[2:]:
        code, told = row.strip("|").split("|", 1)
        if code.strip().isdigit():
            codes.update(dict.fromkeys(re.findall(r"`([a-z-]+)`", told), int(code)))
    return codes


def test_the_readme_tells_the_tables_exit_codes() -> None:
    assert _readme_exit_codes() == events.EXIT_CODES


@pytest.mark.parametrize("ending", sorted(events.EXIT_CODES))
def test_the_driver_finishes_each_ending_with_the_tables_exit_code(ending: str) -> None:
    told = plan.after_host(plan.Progress(starts=1), plan.Ended(0, ending), 0.0, plan.Policy())
    assert (told.kind, told.ending, told.recorded) == (
        ("reprove", None, True) if ending == events.COMPLETE else ("finish", ending, True)
    )
    assert plan.finish(ending).exit_code == _readme_exit_codes()[ending]


def test_an_ending_the_table_does_not_know_is_not_a_success() -> None:
    assert plan.finish("halt-of-tomorrow").exit_code == events.UNKNOWN_EXIT != 0


def test_the_table_loads_nothing_with_it() -> None:
    """The stop hook imports the table: it imports nothing itself."""
    tree = ast.parse(Path(events.__file__).read_text())
    imported = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert [getattr(node, "module", None) for node in imported] == ["__future__"]
