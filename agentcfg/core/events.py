"""Every name the ledger holds in its `event` field, once: what kind of thing it is, the exit code
`agentcfg run` ends with when it is the run's ending, and the words a person reads for it.

The stop hook imports this module: plain constants and tuples only, nothing loaded with it.
"""

from __future__ import annotations

# the run ends: the ladder's endings (a run may still go on with new work), the person's own
COMPLETE = "complete"
BLOCKED = "blocked"
PAUSED = "paused"
RELEASED = "released"
INTERRUPTED = "interrupted"  # Ctrl-C or SIGTERM at the driver
STOPPED = "stopped"  # the person's `agentcfg stop`: the driver's ending and the hook's note of it
# the run halts: a budget spent, no progress, or what decides the ending went wrong
HALT_MAX_ITERATIONS = "halt-max-iterations"
HALT_TOKEN_BUDGET = "halt-token-budget"
HALT_WALL_CLOCK = "halt-wall-clock"
HALT_STALL = "halt-stall"
HALT_ROADMAP_ABSENT = "halt-roadmap-absent"
HALT_STATE_UNREADABLE = "halt-state-unreadable"
HALT_STATE_TAMPERED = "halt-state-tampered"
HALT_CONTRACT_CHANGED = "halt-contract-changed"
HALT_CHECK_CHANGED = "halt-check-changed"
HALT_UNPROVEN = "halt-unproven"
HALT_RESTARTS = "halt-restarts"  # `agentcfg run`'s own: the host kept ending early
HALT_UNTIL = "halt-until"  # `agentcfg run`'s own: `--until` came
# the agent hands the turn back to a person
HANDBACK_QUESTION = "handback-question"
HANDBACK_BACKGROUND = "handback-background"
# `agentcfg run` waits before it starts the host again
PAUSED_USAGE_LIMIT = "paused-usage-limit"
PAUSED_WINDOW = "paused-window"
PAUSED_QUOTA = "paused-quota"
# `agentcfg run` starts a host
RUN_START = "run-start"
RUN_RESUME = "run-resume"
RUN_FAILOVER = "run-failover"
# what the hook did at one turn end
ENGAGE = "engage"
SHADOW_ENGAGE = "shadow-engage"
DEFERRED_QUALITY_GATE = "deferred-quality-gate"
CUT_SHORT = "cut-short"
REFUSED = "refused"
YIELDED = "yielded"
# claims
CLAIMED = "claimed"
CLAIM_KEPT = "claim-kept"
CLAIM_LOST = "claim-lost"
# proofs and the workspace kept before a step
VERIFIED = "verified"
MARKED_DONE = "marked-done"
CHECK_CHANGED = "check-changed"
TRUSTED = "trusted"
REPROOF = "reproof"
REPROOF_REOPENED = "reproof-reopened"
CHECKPOINT = "checkpoint"
CHECKPOINT_FAILED = "checkpoint-failed"
ROLLED_BACK = "rolled-back"
# a person's word from outside the session
STOP_REQUESTED = "stop-requested"
RESUMED = "resumed"
# a fleet and its members
FLEET_START = "fleet-start"
FLEET_END = "fleet-end"
MEMBER_STARTED = "member-started"
MEMBER_RUN = "member-run"
WAITING = "waiting"
LEASED = "leased"
LEASE_EXPIRED = "lease-expired"
LEASE_LOST = "lease-lost"
INTEGRATED = "integrated"
REOPENED = "reopened"
MEMBERSHIP_IGNORED = "membership-ignored"
# what failed (the hook fails open, and says why here)
ERROR = "error"
CONCERN_ERROR = "concern-error"
NOTIFY_ERROR = "notify-error"

# (name, kind, the driver's exit code when it is the run's ending, the words a person reads):
# the exit code is what a CI job or a script branches on, by family
TABLE: tuple[tuple[str, str, int | None, str | None], ...] = (
    (COMPLETE, "ending", 0, "complete"),
    (BLOCKED, "ending", 10, "only blocked steps are left"),  # blocked on something outside
    (HALT_MAX_ITERATIONS, "halt", 11, None),  # a budget is spent
    (HALT_TOKEN_BUDGET, "halt", 11, None),
    (HALT_WALL_CLOCK, "halt", 11, None),
    (HALT_UNTIL, "halt", 11, None),
    (HALT_STALL, "halt", 12, None),  # the agent stopped making progress
    (HANDBACK_QUESTION, "handback", 13, "the agent asks you a question"),  # a person is needed
    (HANDBACK_BACKGROUND, "handback", 13, None),
    (PAUSED, "ending", 13, "paused at the person's request"),
    (RELEASED, "ending", 13, None),
    (STOPPED, "stop", 14, "stopped"),  # a person stopped the run
    (HALT_ROADMAP_ABSENT, "halt", 15, None),  # the roadmap or the run's state went wrong
    (HALT_CONTRACT_CHANGED, "halt", 15, None),
    (HALT_CHECK_CHANGED, "halt", 15, None),
    (HALT_STATE_UNREADABLE, "halt", 15, None),
    (HALT_STATE_TAMPERED, "halt", 15, None),
    (HALT_UNPROVEN, "halt", 15, "halted: the re-proof at the end failed"),
    (HALT_RESTARTS, "halt", 16, None),  # the host kept ending early: no restarts left
    (INTERRUPTED, "ending", 130, None),  # Ctrl-C at the driver
    (PAUSED_USAGE_LIMIT, "wait", None, "the usage limit to reset"),
    (PAUSED_WINDOW, "wait", None, "its window"),
    (PAUSED_QUOTA, "wait", None, "a usage window to reset (the reserve)"),
    (RUN_START, "driver", None, None),
    (RUN_RESUME, "driver", None, None),
    (RUN_FAILOVER, "driver", None, None),
    (ENGAGE, "turn", None, None),
    (SHADOW_ENGAGE, "turn", None, None),
    (DEFERRED_QUALITY_GATE, "turn", None, None),
    (CUT_SHORT, "turn", None, None),
    (REFUSED, "turn", None, None),
    (YIELDED, "turn", None, None),
    (CLAIMED, "claim", None, None),
    (CLAIM_KEPT, "claim", None, None),
    (CLAIM_LOST, "claim", None, None),
    (VERIFIED, "proof", None, None),
    (MARKED_DONE, "proof", None, None),
    (CHECK_CHANGED, "proof", None, None),
    (TRUSTED, "proof", None, None),
    (REPROOF, "proof", None, None),
    (REPROOF_REOPENED, "proof", None, None),
    (CHECKPOINT, "proof", None, None),
    (CHECKPOINT_FAILED, "proof", None, None),
    (ROLLED_BACK, "proof", None, None),
    (STOP_REQUESTED, "person", None, None),
    (RESUMED, "person", None, None),
    (FLEET_START, "fleet", None, None),
    (FLEET_END, "fleet", None, None),
    (MEMBER_STARTED, "fleet", None, None),
    (MEMBER_RUN, "fleet", None, None),
    (WAITING, "fleet", None, None),
    (LEASED, "fleet", None, None),
    (LEASE_EXPIRED, "fleet", None, None),
    (LEASE_LOST, "fleet", None, None),
    (INTEGRATED, "fleet", None, None),
    (REOPENED, "fleet", None, None),
    (MEMBERSHIP_IGNORED, "fleet", None, None),
    (ERROR, "problem", None, None),
    (CONCERN_ERROR, "problem", None, None),
    (NOTIFY_ERROR, "problem", None, None),
)

NAMES = frozenset(name for name, _kind, _code, _words in TABLE)
KINDS = {name: kind for name, kind, _code, _words in TABLE}
EXIT_CODES = {name: code for name, _kind, code, _words in TABLE if code is not None}
UNKNOWN_EXIT = 15  # an ending the table does not know: the run did not complete
WORDS = {name: words for name, _kind, _code, words in TABLE if words is not None}


def of_kind(*kinds: str) -> tuple[str, ...]:
    """The names of those kinds, in the table's order."""
    return tuple(name for name, kind, _code, _words in TABLE if kind in kinds)


# the run's outcome as `report` tells it (a stop is told on its own); waits of `agentcfg run`
ENDINGS = of_kind("ending", "halt")
WAITS = of_kind("wait")
HANDBACKS = of_kind("handback")


def exit_code(ending: str) -> int:
    """The exit code `agentcfg run` ends with for that ending."""
    return EXIT_CODES.get(ending, UNKNOWN_EXIT)
