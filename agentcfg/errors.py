"""The errors a command turns into one line on stderr."""

from __future__ import annotations


class AgentcfgError(Exception):
    """Base of every error a user can cause; the CLI prints it as one line and exits 1."""

    exit_code = 1

    def to_json(self) -> dict[str, object]:
        """The error as `--json` prints it."""
        return {"error": str(self)}


class RoadmapError(AgentcfgError):
    """A roadmap cannot be found, read or decoded."""


class StateError(AgentcfgError):
    """Runtime state cannot be read, locked or written."""


class ClaimError(AgentcfgError):
    """A claim cannot be made or released."""


class CheckpointError(AgentcfgError):
    """A checkpoint cannot be taken, found or restored."""


class InstallError(AgentcfgError):
    """A host's config file cannot be read or changed safely."""


class StepError(AgentcfgError):
    """A step cannot be found, verified or marked."""


class UntrustedError(StepError):
    """Verify lines that no person trusted (or that changed since) would have to run."""

    def __init__(self, slug: str, lines: list[dict[str, str]]) -> None:
        shown = ", ".join(f"{line['step']} {line['reason']}" for line in lines[:8])
        more = ", ..." if len(lines) > 8 else ""
        super().__init__(
            f"roadmap `{slug}` has verify lines no person has trusted ({shown}{more}); "
            f"review them with `agentcfg roadmap trust {slug}`"
        )
        self.lines = lines

    def to_json(self) -> dict[str, object]:
        return {**super().to_json(), "untrusted": self.lines}


class CheckChangedError(StepError):
    """The files a step's check reads changed since a person trusted it."""

    def __init__(self, slug: str, step: str, files: tuple[str, ...]) -> None:
        shown = ", ".join(files[:8]) + (", ..." if len(files) > 8 else "")
        super().__init__(
            f"the check of step {step} changed since a person trusted it: {shown}; "
            f"the box stays open until a person reviews it with `agentcfg roadmap trust {slug}`"
        )
        self.files = files

    def to_json(self) -> dict[str, object]:
        return {**super().to_json(), "files": list(self.files)}


class LeaseError(AgentcfgError):
    """A step lease cannot be read, taken or given back."""


class LeaseHeld(LeaseError):
    """Every step asked for is another member's for now: once its lease runs out it may not be."""


class IntegrationError(AgentcfgError):
    """A fleet member's branch cannot be merged into the fleet's branch."""
