"""The concerns a stop chain can run; adding one is a module and a line here."""

from __future__ import annotations

from agentcfg.stop.concerns.run_continuation import RunContinuation
from agentcfg.stop.concerns.turn_end_gate import TurnEndGate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentcfg.stop.dispatch import Factory

REGISTRY: dict[str, Factory] = {
    TurnEndGate.name: TurnEndGate,
    RunContinuation.name: RunContinuation,
}
