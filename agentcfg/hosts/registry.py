"""The host registry: each host's module (see `base.Host`), imported on demand.

Adding a host is its module and a line in HOSTS. This module stays import-light: the stop
hook asks it which host sent a payload before it knows it has work to do.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentcfg.hosts import claude, codex, cursor, gemini
    from agentcfg.hosts.base import Host

    # mypy checks here that every host module provides the whole protocol
    _CLAUDE: Host = claude
    _CODEX: Host = codex
    _CURSOR: Host = cursor
    _GEMINI: Host = gemini

# Recognition order: the most specific payloads first; Claude Code is the fallback.
HOSTS = ("gemini", "cursor", "codex", "claude")
DEFAULT = "claude"


def adapter(name: str) -> Host:
    """The module of a host; KeyError for a name that is not one."""
    if name not in HOSTS:
        raise KeyError(name)
    package = importlib.import_module("agentcfg.hosts")
    importlib.import_module(f"agentcfg.hosts.{name}")
    module: Host = getattr(package, name)  # importing a submodule binds it on its package
    return module


def detect(payload: Mapping[str, object]) -> Host:
    """The host that sent a payload, from its event name and fields; Claude Code by default."""
    for name in HOSTS:
        host = adapter(name)
        if host.recognises(payload):
            return host
    return adapter(DEFAULT)
