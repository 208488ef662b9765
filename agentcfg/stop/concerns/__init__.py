"""The concerns a stop chain can run; adding one is a module and a line here."""

from __future__ import annotations

from collections.abc import Callable

from agentcfg.stop.concerns.run_continuation import RunContinuation
from agentcfg.stop.concerns.turn_end_gate import TurnEndGate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentcfg.stop.dispatch import Concern

REGISTRY: dict[str, Callable[[], Concern]] = {
    TurnEndGate.name: TurnEndGate,
    RunContinuation.name: RunContinuation,
}
