"""The three roles a host module plays, each a `Protocol` its callers type against:

- `HookDialect`: the stop hook's side, how the host's payloads read and how it takes an
  answer; with `usage_since`, since the hook reads the transcript the payload names;
- `Wiring`: the host's own files, as `hooks install`, `doctor` and a run's checks read and
  write them (its hook, trust, plugin, block cap and sandbox);
- `Launcher`: how `agentcfg run` starts the host headless and reads what it printed.

`Host` is all three: what the registry hands out (`hosts/registry.py`, whose `ROLES` names
the members of each, checked at import; `tests/hosts/test_protocols.py` holds them equal).
Only type checking and tests load this module: the stop hook does not pay for `typing`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from agentcfg.hosts import base
    from agentcfg.run.runners import Runner
    from agentcfg.transcript import Spent


class Named(Protocol):
    """What every role names the host by."""

    @property
    def NAME(self) -> str: ...  # the --host value
    @property
    def TITLE(self) -> str: ...  # how a person calls it


class HookDialect(Named, Protocol):
    """The host's stop payload and the answers it takes, and its agent's shell as the hook and
    `sessions` see it."""

    @property
    def IDLE(self) -> str: ...  # what the hook prints when it allows with nothing to say
    @property
    def SESSION_ENV(self) -> tuple[str, ...]: ...  # the session id in the agent's shell
    @property
    def AGENT_ENV(self) -> tuple[str, ...]: ...  # set in the agent's shell, id or not
    @property
    def PROGRAMS(self) -> tuple[str, ...]: ...  # its process's name, or its package's path

    def recognises(self, payload: Mapping[str, object]) -> bool: ...
    def session_of(self, payload: Mapping[str, object]) -> str: ...
    def cwd_of(self, payload: Mapping[str, object]) -> str: ...
    def to_event(self, payload: Mapping[str, object]) -> base.StopEvent: ...
    def block(self, text: str) -> base.Answer: ...
    def allow(self, note: str) -> base.Answer: ...
    def usage_since(self, path: str, start: int | None, settle: float) -> Spent:
        """Tokens spent since offset `start` of the transcript at `path`; a host that may
        fire before its reply is written waits at most `settle` seconds for it."""


class Wiring(Named, Protocol):
    """The host's config files: our hook in them, what else they must say for it to run, and
    what they say of the host's sandbox."""

    @property
    def PROVEN(self) -> bool: ...  # driven by its real binary in `make e2e`

    def config_path(self, scope: str, root: Path, home: Path, env: Mapping[str, str]) -> Path: ...
    def parse(self, raw: bytes) -> dict[str, Any]: ...  # the config file as a document
    def render(self, document: dict[str, Any]) -> bytes: ...
    def install(self, document: dict[str, Any], command: str) -> dict[str, Any]: ...
    def uninstall(self, document: dict[str, Any]) -> dict[str, Any]: ...
    def registered(self, document: Mapping[str, Any]) -> list[str]: ...
    def checks(
        self, path: Path, root: Path, home: Path, env: Mapping[str, str]
    ) -> list[base.Finding]: ...
    def probe(self, cwd: str) -> base.Probe: ...
    def trust(
        self,
        document: Mapping[str, Any],
        path: Path,
        root: Path,
        home: Path,
        env: Mapping[str, str],
        grant: bool,
    ) -> base.TrustEdit | None: ...
    def block_cap(self, root: Path, home: Path, env: Mapping[str, str]) -> tuple[int, str] | None:
        """How many blocks one prompt takes before the host ends it, and how a person can go
        further; None when the host has no such cap."""

    def plugin(self, root: Path, home: Path, env: Mapping[str, str]) -> base.Plugin | None: ...
    def store_reach(
        self, root: Path, home: Path, env: Mapping[str, str], store: Path, extra: Sequence[str]
    ) -> base.Reach:
        """Whether the host's sandbox, as its configuration (and `extra`, the person's own
        arguments to a headless run) sets it, keeps the agent from writing `store`, the
        person's own state (the seal key, the trust store)."""


class Launcher(Named, Protocol):
    """The host started headless by `agentcfg run`, and what its output tells."""

    @property
    def BINARY(self) -> str: ...  # the program `agentcfg run` starts
    @property
    def NAMES_SESSION(self) -> bool: ...  # a headless start takes a session id of ours
    @property
    def ALLOW(self) -> str: ...  # how a person lets a headless run's agent run commands
    @property
    def ALLOW_ARGS(self) -> tuple[str, ...]: ...  # the arguments that do it; () if settings do

    def headless(
        self, prompt: str, session: str | None, resume: bool, extra: Sequence[str]
    ) -> list[str] | None:
        """The arguments after BINARY for one headless run sending `prompt`: a new session
        (named `session` where NAMES_SESSION), or with `resume` the session `session`
        carried on; `extra` are the person's own arguments. None: the host cannot do that."""

    def runner(self, binary: str, root: Path, env: Mapping[str, str]) -> Runner | None:
        """What starts the host for the whole run when one process per start built from
        `headless` is not enough (a server kept for the run); None: it is enough."""

    def limit_reset(self, output: str, now: float) -> float | None:
        """When the host process ended on a usage or rate limit (`output`: its stdout and
        stderr), the epoch seconds of the reset it announced (`now` or earlier: a limit
        whose reset it did not tell); None when it did not end on a limit."""

    def asks(
        self, root: Path, home: Path, env: Mapping[str, str], extra: Sequence[str]
    ) -> list[str]:
        """What keeps a headless start (with the person's `extra` arguments) from running
        the agent's commands, as the host's configuration says before it starts: one line
        each (approvals nobody is there to give, an allowlist the host will ignore)."""

    def hear(self, line: bytes) -> list[Any]:
        """What one line of a headless start's stdout tells as it comes (Claude Code's
        stream-json records, `hosts/stream.py`); [] for a host that prints none."""

    def refusals(self, stdout: str, stderr: str) -> base.Refused:
        """What a headless start's output tells of the agent's tool calls the host refused
        for lack of permission, the last ones that failed, and what the host said of its
        own settings."""


class Host(HookDialect, Wiring, Launcher, Protocol):
    """A host module in all three roles, as the registry hands it out."""
