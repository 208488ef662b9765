"""The errors a command turns into one line on stderr."""

from __future__ import annotations


class AgentcfgError(Exception):
    """Base of every error a user can cause; the CLI prints it as one line and exits 1."""

    exit_code = 1


class UsageError(AgentcfgError):
    """The command line itself is wrong."""

    exit_code = 2


class RoadmapError(AgentcfgError):
    """A roadmap cannot be found, read or decoded."""


class StateError(AgentcfgError):
    """Runtime state cannot be read, locked or written."""


class ClaimError(AgentcfgError):
    """A claim cannot be made or released."""


class ConfigError(AgentcfgError):
    """The configuration file is unreadable."""


class InstallError(AgentcfgError):
    """A host's config file cannot be read or changed safely."""


class StepError(AgentcfgError):
    """A step cannot be found, verified or marked."""
