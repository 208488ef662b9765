"""The dispatcher: chain order, first block wins, crashes and timeouts, advisory and fail_closed."""

from __future__ import annotations

import time

from agentcfg.config import ChainEntry
from agentcfg.stop.dispatch import ALLOW, Verdict, reduce, run_chain


class Fixed:
    def __init__(self, name: str, verdict: Verdict | Exception, seen: list[str], sleep: float = 0):
        self.name, self.verdict, self.seen, self.sleep = name, verdict, seen, sleep

    def check(self, ctx: object, handed: object) -> Verdict:
        self.seen.append(self.name)
        time.sleep(self.sleep)
        if isinstance(self.verdict, Exception):
            raise self.verdict
        return self.verdict


def registry(**concerns: Fixed) -> dict[str, object]:
    return {name.replace("_", "-"): (lambda entry, c=c: c) for name, c in concerns.items()}


def test_every_concern_runs_in_order_and_the_first_block_wins() -> None:
    seen: list[str] = []
    reg = registry(
        a=Fixed("a", ALLOW, seen),
        b=Fixed("b", Verdict("block", "from b", "b"), seen),
        c=Fixed("c", Verdict("block", "from c", "c"), seen),
    )
    verdict, outcomes = run_chain(None, [ChainEntry("a"), ChainEntry("b"), ChainEntry("c")], reg)  # type: ignore[arg-type]
    assert seen == ["a", "b", "c"]
    assert verdict.message == "from b"
    assert [o.verdict.kind for o in outcomes] == ["allow", "block", "block"]


def test_a_crash_allows_unless_fail_closed() -> None:
    seen: list[str] = []
    reg = registry(boom=Fixed("boom", RuntimeError("x"), seen))
    verdict, outcomes = run_chain(None, [ChainEntry("boom")], reg)  # type: ignore[arg-type]
    assert verdict == ALLOW
    assert outcomes[0].error is not None and "RuntimeError" in outcomes[0].error
    closed, _ = run_chain(None, [ChainEntry("boom", fail_closed=True)], reg)  # type: ignore[arg-type]
    assert closed.kind == "block"
    assert "declared fail_closed" in closed.message


def test_a_slow_concern_is_cut_off_and_allows() -> None:
    seen: list[str] = []
    reg = registry(slow=Fixed("slow", Verdict("block", "late"), seen, sleep=5))
    started = time.monotonic()
    verdict, outcomes = run_chain(None, [ChainEntry("slow", timeout=0.2)], reg)  # type: ignore[arg-type]
    assert time.monotonic() - started < 3
    assert verdict == ALLOW
    assert outcomes[0].error is not None and "ran out of time" in outcomes[0].error


def test_the_chain_budget_bounds_every_concern_together() -> None:
    seen: list[str] = []
    reg = registry(a=Fixed("a", ALLOW, seen, sleep=5), b=Fixed("b", Verdict("block", "x"), seen))
    started = time.monotonic()
    verdict, outcomes = run_chain(None, [ChainEntry("a"), ChainEntry("b")], reg, budget=0.3)  # type: ignore[arg-type]
    assert time.monotonic() - started < 2
    assert verdict == ALLOW
    assert seen == ["a"]  # b had no time left and did not run
    assert [o.error is not None for o in outcomes] == [True, True]


def test_advisory_concerns_can_only_warn() -> None:
    seen: list[str] = []
    reg = registry(a=Fixed("a", Verdict("block", "advice", "a"), seen))
    verdict, _ = run_chain(None, [ChainEntry("a", severity="advisory")], reg)  # type: ignore[arg-type]
    assert (verdict.kind, verdict.message) == ("warn", "advice")


def test_a_non_verdict_counts_as_a_crash() -> None:
    seen: list[str] = []
    reg = registry(odd=Fixed("odd", "yes", seen))  # type: ignore[arg-type]
    verdict, outcomes = run_chain(None, [ChainEntry("odd")], reg)  # type: ignore[arg-type]
    assert verdict == ALLOW and outcomes[0].error is not None


def test_reduce() -> None:
    warn, block, told = Verdict("warn", "w"), Verdict("block", "b"), Verdict("allow", "halted")
    assert reduce([]) == ALLOW
    assert reduce([ALLOW, warn]) == warn
    assert reduce([warn, block]) == block
    assert reduce([ALLOW, told]) == told  # an allow with a line for the person keeps it
    assert reduce([told, warn]) == warn


def test_each_concern_is_built_with_its_chain_entry() -> None:
    built: list[ChainEntry] = []

    def factory(entry: ChainEntry) -> Fixed:
        built.append(entry)
        return Fixed("a", ALLOW, [])

    entry = ChainEntry("a", severity="advisory")
    run_chain(None, [entry], {"a": factory})  # type: ignore[dict-item]
    assert built == [entry]
