"""The stop chain's concerns by name, in their default order: the config file, the concern
registry, the ledger and the hook's own texts all use these names."""

from __future__ import annotations

TURN_END_GATE = "turn-end-gate"
RUN_CONTINUATION = "run-continuation"
CHAIN = (TURN_END_GATE, RUN_CONTINUATION)
