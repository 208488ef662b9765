"""The package's shape: no import cycles anywhere in agentcfg/ (the layers themselves are
import-linter's contracts in pyproject.toml, run by `make lint`)."""

from __future__ import annotations

import grimp


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("agentcfg")
    loops = sorted(
        f"{module} -> {imported}"
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if graph.chain_exists(importer=imported, imported=module)
    )
    assert loops == []
