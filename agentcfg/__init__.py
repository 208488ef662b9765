"""agentcfg keeps an AI coding agent working on the roadmap it claimed, bounded and fail-open."""

__version__ = "0.1.0"
