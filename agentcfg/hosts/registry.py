"""The host registry: each host's module (see `base.Host`), imported on demand.

Adding a host is its module and a line in HOSTS. This module stays import-light: the stop
hook asks it which host sent a payload before it knows it has work to do.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentcfg.hosts import claude, codex, copilot, cursor, gemini, opencode, qwen
    from agentcfg.hosts.base import Host

    # mypy checks here that every host module provides the whole protocol
    _CLAUDE: Host = claude
    _CODEX: Host = codex
    _COPILOT: Host = copilot
    _CURSOR: Host = cursor
    _GEMINI: Host = gemini
    _OPENCODE: Host = opencode
    _QWEN: Host = qwen

# Recognition order: the most specific payloads first; Claude Code is the fallback. Qwen's and
# Copilot's Claude-style payloads carry fields of their own, so they come before Claude's.
HOSTS = ("gemini", "cursor", "codex", "opencode", "qwen", "copilot", "claude")
DEFAULT = "claude"


def adapter(name: str) -> Host:
    """The module of a host; KeyError for a name that is not one."""
    if name not in HOSTS:
        raise KeyError(name)
    # the import statement's own function: importlib (and the warnings it loads) stays unloaded
    package = __import__(f"agentcfg.hosts.{name}").hosts
    module: Host = getattr(package, name)  # importing a submodule binds it on its package
    return module


def detect(payload: Mapping[str, object]) -> Host:
    """The host that sent a payload, from its event name and fields; Claude Code by default."""
    for name in HOSTS:
        host = adapter(name)
        if host.recognises(payload):
            return host
    return adapter(DEFAULT)


def session_env() -> tuple[str, ...]:
    """The variables that give the agent's shell its session id, every host's. When several are
    set the first wins: Claude Code's, then the others in reverse recognition order."""
    return tuple(variable for name in reversed(HOSTS) for variable in adapter(name).SESSION_ENV)


def host_of(env: Mapping[str, str]) -> Host | None:
    """The host whose session variable the environment sets (the first, as `session_env`)."""
    for name in reversed(HOSTS):
        host = adapter(name)
        if any(env.get(variable) for variable in host.SESSION_ENV):
            return host
    return None
