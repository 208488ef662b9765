"""The host registry: each host's module, imported on demand and checked for its roles.

Adding a host is its module and a line in HOSTS. A host module plays the three roles of
`hosts/protocols.py` (`HookDialect`, `Wiring`, `Launcher`; a host that cannot start headless,
like Cursor, says so in its `headless`), and ROLES names their members: mypy checks each module
against the Protocols here, and `adapter` refuses a module that lacks a member when it is first
asked for it. This module stays import-light: the stop hook asks it which host sent a payload
before it knows it has work to do.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import ModuleType

    from agentcfg.hosts import claude, codex, copilot, cursor, gemini, opencode, qwen
    from agentcfg.hosts.protocols import Host

    # mypy checks here that every host module plays all three roles
    _CLAUDE: Host = claude
    _CODEX: Host = codex
    _COPILOT: Host = copilot
    _CURSOR: Host = cursor
    _GEMINI: Host = gemini
    _OPENCODE: Host = opencode
    _QWEN: Host = qwen

_NAMED = ("NAME", "TITLE")
# The members of each Protocol of hosts/protocols.py (tests/hosts/test_protocols.py: the same)
ROLES = {
    "HookDialect": (
        *_NAMED, "IDLE", "SESSION_ENV", "AGENT_ENV", "PROGRAMS",
        "recognises", "session_of", "cwd_of", "to_event", "block", "allow", "usage_since",
    ),
    "Wiring": (
        *_NAMED, "PROVEN", "config_path", "parse", "render", "install", "uninstall", "registered",
        "checks", "probe", "trust", "block_cap", "plugin", "store_reach",
    ),
    "Launcher": (
        *_NAMED, "BINARY", "NAMES_SESSION", "ALLOW", "ALLOW_ARGS",
        "headless", "runner", "limit_reset", "asks", "hear", "refusals",
    ),
}  # fmt: skip
_CHECKED: set[str] = set()


class HostModuleError(Exception):
    """A registered host module lacks a member of a role it plays."""


def check(module: ModuleType) -> None:
    """HostModuleError naming what the host module lacks of each role, when it lacks any."""
    lacking = [
        f"{role} {', '.join(missing)}"
        for role, members in ROLES.items()
        if (missing := [m for m in members if not hasattr(module, m)])
    ]
    if lacking:
        raise HostModuleError(f"host module {module.__name__} lacks {'; '.join(lacking)}")


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
    module = getattr(package, name)  # importing a submodule binds it on its package
    if name not in _CHECKED:
        check(module)
        _CHECKED.add(name)
    found: Host = module
    return found


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
