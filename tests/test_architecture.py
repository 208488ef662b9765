"""The package's shape: no import cycles anywhere in agentcfg/, every module in a layer of
import-linter's contracts (pyproject.toml, run by `make lint`), the wings' models held pure,
docs/architecture.md's layer table as the contract states it, and no module-level state but
the caches named here."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

import grimp
import tomlkit

from tests.conftest import REPO
from tests.helpers import nodes, parsed


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("agentcfg")
    loops = sorted(
        f"{module} -> {imported}"
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if graph.chain_exists(importer=imported, imported=module)
    )
    assert loops == []


def _contracts() -> list[dict[str, object]]:
    data = tomlkit.parse((REPO / "pyproject.toml").read_text()).unwrap()
    contracts: list[dict[str, object]] = data["tool"]["importlinter"]["contracts"]
    return contracts


def layers() -> list[list[str]]:
    """The layers contract's layers, top first, each its module names relative to agentcfg."""
    (contract,) = [c for c in _contracts() if c["type"] == "layers"]
    assert contract["containers"] == ["agentcfg"]
    return [
        [name.strip() for name in re.split(r"[:|]", str(layer))]
        for layer in contract["layers"]  # type: ignore[attr-defined]
    ]


def _placed(module: str, names: set[str]) -> bool:
    parts = module.split(".")[1:]
    return any(".".join(parts[:n]) in names for n in range(1, len(parts) + 1))


def test_every_module_is_in_a_layer() -> None:
    graph = grimp.build_graph("agentcfg")
    names = {name for layer in layers() for name in layer}
    # a package's __init__ that imports nothing is a folder's name, not a room of its own
    unplaced = sorted(
        module
        for module in graph.modules
        if module != "agentcfg"
        and not _placed(module, names)
        and not (
            graph.find_children(module) and not graph.find_modules_directly_imported_by(module)
        )
    )
    assert unplaced == [], "name these in the layers contract of pyproject.toml"


def test_a_module_missing_from_the_layers_is_found() -> None:
    names = {name for layer in layers() for name in layer}
    assert _placed("agentcfg.run.driver", names)
    assert _placed("agentcfg.stop.concerns.turn_end_gate", names)
    assert not _placed("agentcfg.run.elsewhere", names)
    assert not _placed("agentcfg.nowhere", names)


def test_the_wings_models_are_kept_pure_by_a_contract() -> None:
    (pure,) = [c for c in _contracts() if c["type"] == "forbidden"]
    models = {"agentcfg." + name for layer in layers() for name in layer if name.endswith("model")}
    assert len(models) >= 3
    assert models | {"agentcfg.core"} <= set(pure["source_modules"])  # type: ignore[arg-type]
    assert {"os", "subprocess", "pathlib", "agentcfg.state", "agentcfg.workspace"} <= set(
        pure["forbidden_modules"]  # type: ignore[arg-type]
    )


def test_the_architecture_table_states_the_layers_in_order() -> None:
    """docs/architecture.md's layer table names every layer's modules, in the contract's order:
    a row holds one layer or several in a row, never part of one."""
    text = (REPO / "docs" / "architecture.md").read_text()
    section = text.split("## 1. Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    assert rows, "docs/architecture.md has a layer table"
    row_of: dict[str, int] = {}
    for n, row in enumerate(rows):
        cells = row.split("|")
        for name in re.findall(r"`([\w.]+)`", cells[2]):
            assert name not in row_of, f"{name} is in two rows"
            row_of[name] = n
    stated = layers()
    named = {name for layer in stated for name in layer}
    assert sorted(set(row_of) - named) == [], "the table names modules no layer holds"
    assert sorted(named - set(row_of)) == [], "the table misses modules of the contract"
    at = [{row_of[name] for name in layer} for layer in stated]
    assert all(len(rows_) == 1 for rows_ in at), "a layer is split over rows"
    order = [min(rows_) for rows_ in at]
    assert order == sorted(order), "the table's rows are not in the contract's order"


# a module-level name a function changes is state that outlives a call: only these caches,
# each filled on first use and read again within one process
CACHES = {
    "agentcfg.contract.seal._KEYS": "the person's key, by path, read once per process",
    "agentcfg.core.digest._SHA256": "the sha256 constructor, found on first use",
    "agentcfg.core.digest._PADS": "an HMAC key's padded digests, by key",
    "agentcfg.core.roadmap._COMPILED": "compiled patterns, by pattern",
    "agentcfg.fleet.integrate._IDENTIFIED": "whether git knows a committer, by checkout and env",
    "agentcfg.fleet.leases._OPENED": "the lease stores opened, by repository and remote",
    "agentcfg.hosts.registry._CHECKED": "the host modules checked for their roles, once each",
    "agentcfg.transcript._READ": "a transcript's tail, read once per fire",
}
MUTATORS = {"append", "extend", "update", "add", "setdefault", "pop", "popitem", "clear", "insert"}


def in_functions(tree: ast.AST) -> Iterator[ast.AST]:
    """Each node in the body of a function of `tree` (a nested function's too), once."""
    stack = [(tree, False)]
    while stack:
        node, inside = stack.pop()
        if inside:
            yield node
        inner = inside or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def changed_globals(source: str) -> set[str]:
    """Module-level names of `source` that a function rebinds (`global`) or changes in place."""
    tree = parsed(source)
    top = {
        target.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    found: set[str] = set()
    for node in in_functions(tree):
        if isinstance(node, ast.Global):
            found.update(node.names)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            found.update(
                t.value.id
                for t in targets
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
            )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
            and isinstance(node.func.value, ast.Name)
        ):
            found.add(node.func.value.id)
    return found & top


def test_no_module_level_state_but_the_documented_caches() -> None:
    state = sorted(
        ".".join(("agentcfg", *path.relative_to(REPO / "agentcfg").with_suffix("").parts, name))
        for path in (REPO / "agentcfg").rglob("*.py")
        for name in changed_globals(path.read_text())
    )
    assert [name for name in state if name not in CACHES] == []


def test_module_level_state_is_found() -> None:
    source = (
        "A = {}\nB = []\nC = 0\nD = {}\n"
        "def f():\n    global C\n    A['x'] = 1\n    B.append(2)\n    C = 3\n    return D.get('y')\n"
    )
    assert changed_globals(source) == {"A", "B", "C"}


def test_the_tests_are_laid_out_as_the_package() -> None:
    """Each folder of the package has its folder of tests, and no test module at the top
    names a folder's module (`test_fleet_run.py` for `fleet/drive.py` belongs in tests/fleet/)."""
    package = REPO / "agentcfg"
    folders = {p.parent.name for p in package.glob("*/__init__.py")}
    tests = REPO / "tests"
    assert {f for f in folders if not (tests / f / "__init__.py").exists()} == set()
    top = {p.stem.removeprefix("test_") for p in tests.glob("test_*.py")}
    assert {t for t in top if t.split("_")[0] in folders} == set()


# the one module that reads the wall clock (CONTRIBUTING.md): everything else is handed `now`,
# or `wall_clock` itself as a clock to read again after a wait
CLOCK_MODULE = "agentcfg/core/times.py"
WALL_CLOCKS = {("time", "time"), ("time", "time_ns"), ("datetime", "now"), ("datetime", "utcnow"),
               ("datetime", "today"), ("date", "today")}  # fmt: skip
OURS = ("times", "wall_clock")


def wall_clock_reads(source: str, pure: bool = False) -> list[int]:
    """The lines of `source` that read the wall clock by another way than `wall_clock`
    (`time.time()`, `datetime.now()` and their kin, called or handed on); with `pure`, the
    lines that take `wall_clock` too (imported, or as `times.wall_clock`)."""
    found: list[int] = []
    for node in nodes(source):
        if isinstance(node, ast.Attribute):
            owner = node.value.attr if isinstance(node.value, ast.Attribute) else None
            owner = node.value.id if isinstance(node.value, ast.Name) else owner
            if (owner, node.attr) in WALL_CLOCKS or (pure and (owner, node.attr) == OURS):
                found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom):
            taken = {(node.module, alias.name) for alias in node.names}
            if taken & WALL_CLOCKS or (pure and ("agentcfg.core.times", "wall_clock") in taken):
                found.append(node.lineno)
    return sorted(found)


def test_the_wall_clock_is_read_in_one_module_and_never_by_a_pure_one() -> None:
    package = REPO / "agentcfg"
    pure = [package / "core", *package.glob("*/model.py"), *package.glob("*/*_model.py")]
    found = {
        str(path.relative_to(REPO)): lines
        for path in sorted(package.rglob("*.py"))
        if str(path.relative_to(REPO)) != CLOCK_MODULE
        for lines in [
            wall_clock_reads(path.read_text(), any(path == p or p in path.parents for p in pure))
        ]
        if lines
    }
    assert found == {}


def test_a_read_of_the_wall_clock_is_found() -> None:
    source = (
        "import time\nimport datetime as dt\nfrom time import time_ns\n"
        "from agentcfg.core.times import wall_clock\n"
        "a = time.time()\nb = dt.datetime.now()\nclock = time.time\nc = time.monotonic()\n"
        "d = wall_clock()\ne = times.wall_clock()\nf = caps.wall_clock\n"
    )
    assert wall_clock_reads(source) == [3, 5, 6, 7]
    assert wall_clock_reads(source, pure=True) == [3, 4, 5, 6, 7, 10]


# a record's JSON is its own: `to_json(self)` and the classmethod `from_json(cls, data)`,
# None for data of the wrong shape (CONTRIBUTING.md); any other name for either is flagged
OTHER_SERIALISERS = {"as_dict", "to_dict", "from_dict", "as_json", "asdict", "dict_of"}
FILES_JSON = {"read_json", "write_json", "emit_json"}  # a file's or stdout's JSON, no record's
SERIALISERS_LEFT = {
    # the waiting steps of a roadmap with what each waits for: pairs of records, no record
    "agentcfg/core/order.py:waits_json",
}


def other_serialisers(source: str) -> list[str]:
    """The functions of `source` that turn a record into JSON or back by another name or shape
    than the convention: a module-level `to_json`/`from_json`, a `from_json` that is no
    classmethod, any other `*_json` but FILES_JSON, and the names of OTHER_SERIALISERS."""
    found = [
        node.name
        for node in parsed(source).body
        if isinstance(node, ast.FunctionDef) and node.name in ("to_json", "from_json")
    ]
    for node in nodes(source):
        if not isinstance(node, ast.FunctionDef):
            continue
        name = node.name
        named = name in OTHER_SERIALISERS or (
            name.endswith("_json") and name not in ("to_json", "from_json", *FILES_JSON)
        )
        classmethod_ = any(
            isinstance(d, ast.Name) and d.id == "classmethod" for d in node.decorator_list
        )
        if named or (name == "from_json" and not classmethod_):
            found.append(name)
    return sorted(set(found))


def test_records_serialise_by_one_convention() -> None:
    found = {
        f"{path.relative_to(REPO)}:{name}"
        for path in sorted((REPO / "agentcfg").rglob("*.py"))
        for name in other_serialisers(path.read_text())
    }
    assert found == SERIALISERS_LEFT


def test_a_serialiser_of_another_convention_is_found() -> None:
    source = (
        "def to_json(x): ...\n"
        "def lease_from_json(data): ...\n"
        "def step_json(step): ...\n"
        "def read_json(path): ...\n"
        "class A:\n"
        "    def to_json(self): ...\n"
        "    @classmethod\n"
        "    def from_json(cls, data): ...\n"
        "class B:\n"
        "    def as_dict(self): ...\n"
        "    def from_json(self, data): ...\n"
    )
    found = other_serialisers(source)
    assert found == ["as_dict", "from_json", "lease_from_json", "step_json", "to_json"]


def locale_decoded(source: str) -> list[int]:
    """The lines of `source` that read a process's output in the locale's encoding
    (`text=True` or `universal_newlines=True`): what git, ps and a check print is read as UTF-8
    (`encoding="utf-8"`), as every file is, so a locale of another encoding changes nothing."""
    return sorted(
        node.lineno
        for node in nodes(source)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "subprocess"
        for keyword in node.keywords
        if keyword.arg in ("text", "universal_newlines")
        and not (isinstance(keyword.value, ast.Constant) and keyword.value.value is False)
    )


def test_no_process_output_is_read_in_the_locales_encoding() -> None:
    found = {
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted((REPO / "agentcfg").rglob("*.py"))
        for line in locale_decoded(path.read_text())
    }
    assert found == set()


def test_output_read_in_the_locales_encoding_is_found() -> None:
    source = (
        "subprocess.run(a, text=True)\nsubprocess.run(a, encoding='utf-8')\n"
        "subprocess.Popen(\n    a, universal_newlines=flag)\nsubprocess.run(a, text=False)\n"
        "step._replace(text=True)\n"
    )
    assert locale_decoded(source) == [1, 3]
