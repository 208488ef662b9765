"""`make bench`: whole-process costs of the stop hook and `roadmap status`, beside bare Python
and beside a loop stop hook in bash and jq (ralph_hook.sh).

Each case runs as a fresh process, at least RUNS times after a warm-up, with its set-up done
outside the timed part; cases that are compared run in turns, so a busy machine slows both
alike. A ratio is judged on the median of its per-turn ratios (each pair of runs taken one
right after the other), and shown beside the ratio of the two fastest runs, which a busy
machine can only worsen. The package's bytecode is compiled first, as an install does.
Prints a table and the ratios, and writes benchmarks/results.json.

BENCH_RUNS sets the runs per case; BENCH_ONLY=ratios measures only the cases the ratios need,
BENCH_ONLY=store only the hook on the largest contract and receipts the store holds.
"""

from __future__ import annotations

import compileall
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import agentcfg
from agentcfg import claims, loading, state
from agentcfg.contract import seal
from agentcfg.contract import store as contract
from agentcfg.contract.guard import Tree
from agentcfg.contract.model import Contract, Term, command_hash, text_hash
from agentcfg.core.ladder import RunState
from agentcfg.core.times import iso_ms
from agentcfg.paths import RECEIPTS
from agentcfg.workspace import Workspace

RUNS = int(os.environ.get("BENCH_RUNS", "15"))
ONLY_RATIOS = os.environ.get("BENCH_ONLY") == "ratios"
ONLY_STORE = os.environ.get("BENCH_ONLY") == "store"
STORE_STEPS = 50_000  # the roadmap whose run's contract and receipts are measured
HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
SCRIPT = str(Path(PYTHON).parent / "agentcfg")
SESSION = "bench-session"
RALPH = HERE / "ralph_hook.sh"  # the bash and jq loop hook the full decision is held against
SIZES = (("1 MiB", 1 << 20), ("64 MiB", 64 << 20))
# a case's median over another's (the two measured in turns): at most, or below, the target
RATIOS = (
    ("warm decision / bare python", "hook, engage, cache hit", "python -c pass", "<=", 3.5),
    *(
        (
            f"full decision / bash+jq hook, {label}",
            f"full decision, {label} transcript",
            f"bash+jq hook, {label} transcript",
            "<",
            1.0,
        )
        for label, _ in SIZES
    ),
)
TARGETS = {  # ratio to bare start-up, or seconds, or a ratio between two cases
    "hook, no claim": 2.0,
    "hook, engage, cache hit": 3.5,
    "hook, engage, full parse (200 steps)": 12.0,
}


def roadmap_text(steps: int) -> str:
    lines = ["---", "execution:", "  mode: autonomous", "---", "# Bench"]
    for n in range(steps):
        if n % 20 == 0:
            lines.append(f"\n## Phase {n // 20 + 1}\n")
        mark = "x" if n < steps // 2 else " "
        lines.append(
            f"- [{mark}] **{n // 20 + 1}.{n % 20 + 1}** Step {n} of the bench roadmap "
            f"<!-- verify: pytest -k step{n} -->"
        )
    lines.append("\n## Acceptance criteria\n- [ ] not a step")
    return "\n".join(lines) + "\n"


def line(data: dict[str, object]) -> str:
    return json.dumps(data, separators=(",", ":")) + "\n"


def transcript(path: Path, size: int) -> None:
    """A Claude Code shaped transcript of about `size` bytes ending in one human turn."""
    tool = line(
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "name": "Bash", "input": {"command": "make " + "x" * 400}}
                ],
            },
        }
    )
    result = line(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "content": "ok " + "y" * 400}],
            },
        }
    )
    human = line(
        {"type": "user", "promptId": "p-1", "message": {"role": "user", "content": "go on"}}
    )
    block = (tool + result) * 64
    with path.open("w") as handle:
        written = 0
        while written < size - len(block):
            if written % (len(block) * 50) == 0:
                handle.write(human)
            handle.write(block)
            written += len(block)
        handle.write(human + tool + result)
        handle.write(
            line(
                {
                    "type": "assistant",
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": "Working."}],
                    },
                }
            )
        )


class Bench:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("AGENTCFG_", "CLAUDE_", "RALPH_"))
            and k != "PYTHONDONTWRITEBYTECODE"  # an installed program reads its cached bytecode
        }
        self.env["AGENTCFG_ROOT"] = str(root)
        # the person's own state (the key that seals run records) in the bench's folder, for
        # the hook and for what this process writes alike: never the real home's
        person = str(root / "person-state")
        self.env["XDG_STATE_HOME"] = os.environ["XDG_STATE_HOME"] = person
        self.ws = Workspace(root)
        self.counter = 0

    def payload(self, transcript_path: Path, prompt: bool = True) -> bytes:
        self.counter += 1
        data = {
            "session_id": SESSION,
            "transcript_path": str(transcript_path),
            "cwd": str(self.root),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": f"Working, reply {self.counter}.",
            "background_tasks": [],
        }
        if prompt:
            data["prompt_id"] = "p-1"
        return json.dumps(data).encode()

    def fresh_run(self, slug: str) -> None:
        key = claims.session_key(SESSION)
        claims.write_run(claims.run_path(self.ws, key, slug), RunState.fresh(time.time()))

    def claim(self, slug: str) -> None:
        claims.claim(self.ws, SESSION, slug, now=time.time(), force=True)


class Case:
    """One process to time: its command, its stdin, its set-up and the exit code it must give."""

    def __init__(
        self,
        command: list[str],
        stdin: Callable[[], bytes] | None = None,
        setup: Callable[[], None] | None = None,
        expect: int = 0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.command, self.stdin, self.setup = command, stdin, setup
        self.expect, self.env = expect, env


def measure(
    command: list[str],
    stdin: Callable[[], bytes] | None = None,
    setup: Callable[[], None] | None = None,
    expect: int = 0,
    env: dict[str, str] | None = None,
    runs: int = RUNS,
) -> dict[str, float]:
    """Median and spread of a whole process's wall time; peak RSS of the runs."""
    return in_turns({"": Case(command, stdin, setup, expect, env)}, runs)[""]


def in_turns(
    cases: dict[str, Case], runs: int = RUNS, rounds: dict[str, list[float]] | None = None
) -> dict[str, dict[str, float]]:
    """Each case measured as `measure` does, the cases taking turns run by run; `rounds`, when
    given, gets each case's run times in milliseconds in the order they were taken."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    peaks: dict[str, list[float]] = {name: [] for name in cases}
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    for n in range(runs + 1):
        for name, case in cases.items():
            elapsed, peak, cpu = run_once(case)
            if n:  # the first run warms the caches
                samples[name].append(elapsed)
                peaks[name].append(peak)
                cpus[name].append(cpu)
    if rounds is not None:
        rounds.update({name: [t * 1000 for t in samples[name]] for name in cases})
    return {name: summary(samples[name], peaks[name], cpus[name]) for name in cases}


def run_once(case: Case) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MiB) and CPU seconds (user and system) of one run of the case's
    process: on a busy machine the CPU time is what the process itself cost."""
    if case.setup:
        case.setup()
    data = case.stdin() if case.stdin else b""
    started = time.perf_counter()
    proc = subprocess.Popen(
        case.command,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=case.env,
    )
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(data)
    proc.stdin.close()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != case.expect:
        raise SystemExit(f"{case.command}: exit {code}, expected {case.expect}: {err[-500:]!r}")
    return elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def guard_check(root: Path, files: int) -> dict[str, float]:
    """What `roadmap done` adds to a verify run, in process: the files of the step's check
    (a pytest check guarding `tests/**`) listed and hashed, and compared with the trusted ones."""
    project = root / "guarded"
    for n in range(files):
        path = project / "tests" / f"group{n % 10}" / f"test_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def test_{n}():\n    assert {n} == {n}\n" * 20)
    command = "python3 -m pytest -q tests"
    trusted = Tree(project).take(command, ("tests/**",))
    assert len(trusted.files) == files
    samples = []
    for n in range(RUNS + 1):
        started = time.perf_counter()
        assert Tree(project).changed(trusted) == ()
        if n:
            samples.append(time.perf_counter() - started)
    return summary(samples, [0.0])


def summary(
    samples: list[float], peaks: list[float], cpus: list[float] | None = None
) -> dict[str, float]:
    """Median, quartiles and extremes of the run times; peak RSS; median CPU time when known."""
    quartiles = statistics.quantiles(samples, n=4)
    return {
        "median_ms": statistics.median(samples) * 1000,
        "p25_ms": quartiles[0] * 1000,
        "p75_ms": quartiles[2] * 1000,
        "min_ms": min(samples) * 1000,
        "max_ms": max(samples) * 1000,
        "peak_rss_mib": max(peaks),
        "runs": len(samples),
        **({"cpu_median_ms": statistics.median(cpus) * 1000} if cpus else {}),
    }


def main() -> int:
    if shutil.which("jq") is None:
        print(
            "make bench: jq is not installed, and the bash+jq hook the stop hook is measured "
            "against (benchmarks/ralph_hook.sh) needs it: install jq (apt-get install jq)",
            file=sys.stderr,
        )
        return 1
    compileall.compile_dir(Path(agentcfg.__file__).parent, quiet=1)  # as an install does
    results: dict[str, dict[str, float]] = {}
    rounds: dict[str, list[float]] = {}  # the run times of the cases the ratios compare
    with tempfile.TemporaryDirectory(prefix="agentcfg-bench-") as folder:
        root = Path(folder)
        (root / "roadmaps").mkdir()
        (root / "roadmaps" / "r200.md").write_text(roadmap_text(200))
        for steps in (1000, 10000):
            (root / "roadmaps" / f"r{steps}.md").write_text(roadmap_text(steps))
        bench = Bench(root)
        small = root / "small.jsonl"
        transcript(small, 64 * 1024)
        hook = [SCRIPT, "hook", "stop", "--host", "claude"]  # the command `hooks install` writes

        if ONLY_STORE:
            results["python -c pass"] = measure([PYTHON, "-c", "pass"])
            results.update(store_cases(bench, hook, small))
            report(results, {})
            return 0
        bench.claim("r200")
        results.update(
            in_turns(
                {
                    "python -c pass": Case([PYTHON, "-c", "pass"]),
                    "hook, no claim": Case(
                        hook,
                        lambda: bench.payload(small).replace(SESSION.encode(), b"someone-else"),
                        env=bench.env,
                    ),
                    "hook, engage, cache hit": Case(
                        hook,
                        lambda: bench.payload(small),
                        setup=lambda: bench.fresh_run("r200"),
                        expect=2,
                        env=bench.env,
                    ),
                    "hook, engage, cache hit, host recognised": Case(
                        hook[:-2],  # no --host: every host module is loaded to ask it
                        lambda: bench.payload(small),
                        setup=lambda: bench.fresh_run("r200"),
                        expect=2,
                        env=bench.env,
                    ),
                },
                rounds=rounds,
            )
        )
        r200 = root / "roadmaps" / "r200.md"

        def touch_roadmap() -> None:
            bench.fresh_run("r200")
            with r200.open("a") as handle:
                handle.write(" ")

        if ONLY_RATIOS:
            results.update(against_bash(bench, hook, touch_roadmap, rounds))
            report(results, rounds)
            return 0
        results["hook, engage, full parse (200 steps)"] = measure(
            hook, lambda: bench.payload(small), setup=touch_roadmap, expect=2, env=bench.env
        )
        for label, size in (("1 MiB", 1 << 20), ("256 MiB", 256 << 20)):
            path = root / f"t-{label.replace(' ', '')}.jsonl"
            transcript(path, size)
            results[f"hook, engage, {label} transcript, no turn id"] = measure(
                hook,
                lambda p=path: bench.payload(p, prompt=False),  # type: ignore[misc]
                setup=lambda: bench.fresh_run("r200"),
                expect=2,
                env=bench.env,
            )
            path.unlink()
        results.update(against_bash(bench, hook, touch_roadmap, rounds))
        for steps in (1000, 10000):
            results[f"roadmap status, {steps} steps"] = measure(
                [SCRIPT, "roadmap", "status", f"r{steps}"], env=bench.env
            )
            cache = root / "state" / "cache"
            results[f"roadmap status, {steps} steps, uncached"] = measure(
                [SCRIPT, "roadmap", "status", f"r{steps}"],
                env=bench.env,
                setup=lambda c=cache: [p.unlink() for p in c.glob("roadmap-*.json")],  # type: ignore[misc]
            )
        results["roadmap done's check guard, 200 guarded files"] = guard_check(root, 200)
        ledger_lines(root / "state" / "run-continuation.jsonl", 1_000_000)
        results["report, 1,000,000 ledger lines"] = measure(
            [SCRIPT, "report", "--json"], env=bench.env, runs=max(3, RUNS // 5)
        )
        results.update(store_cases(bench, hook, small))
    report(results, rounds)
    return 0


def against_bash(
    bench: Bench,
    hook: list[str],
    touch_roadmap: Callable[[], None],
    rounds: dict[str, list[float]],
) -> dict[str, dict[str, float]]:
    """The full decision (200 steps parsed, no turn id, the transcript's tail read, shadow
    mode so every fire decides the same) and the bash+jq hook, in turns, per transcript size."""
    loop = bench.root / "ralph-loop.md"
    loop.write_text("---\niteration: 0\nmax_iterations: 0\ncompletion_promise: DONE\n---\nGo on.\n")
    shadow = {**bench.env, "AGENTCFG_MODE": "shadow"}
    bash = {**bench.env, "RALPH_STATE": str(loop)}
    results: dict[str, dict[str, float]] = {}
    for label, size in SIZES:
        path = bench.root / f"t-{label.replace(' ', '')}.jsonl"
        transcript(path, size)

        def payload(p: Path = path) -> bytes:
            return bench.payload(p, prompt=False)

        results.update(
            in_turns(
                {
                    f"full decision, {label} transcript": Case(
                        hook, payload, setup=touch_roadmap, env=shadow
                    ),
                    f"bash+jq hook, {label} transcript": Case([str(RALPH)], payload, env=bash),
                },
                rounds=rounds,
            )
        )
        path.unlink()
    return results


def receipt(
    step: str, text: str, command: str | None, at: float, code: int = 0
) -> dict[str, object]:
    """A receipt as `roadmap done` stores it (its text and verify line already hashed)."""
    return {
        "step": step, "text": text, "command": command, "exit_code": code, "duration": 0.25,
        "output": "0" * 64, "evidence": "red-green", "head": "1" * 40, "dirty": False,
        "at": iso_ms(at),
    }  # fmt: skip


def write_receipts(bench: Bench, slug: str, items: list[dict[str, object]]) -> None:
    """Receipts as `roadmap done` leaves them: each line sealed with the person's key."""
    sealed = [{**item, seal.FIELD: seal.sign(RECEIPTS, slug, item)} for item in items]
    state.write_json(contract.receipts_path(bench.ws, slug), {"receipts": sealed}, compact=True)


def store_cases(bench: Bench, hook: list[str], small: Path) -> dict[str, dict[str, float]]:
    """The hook engaging on a run whose contract and receipts are as large as they get: a
    roadmap of STORE_STEPS steps half done, each done one proven, the newest receipt of each a
    failing rerun; then a small roadmap whose contract and receipts the store's limits bound
    (every step past the roadmap's a reworded one its receipt keeps closed)."""
    results: dict[str, dict[str, float]] = {}
    key = claims.session_key(SESSION)
    road = bench.root / "roadmaps" / "big.md"
    road.write_text(roadmap_text(STORE_STEPS).replace("- [x]", "- [ ]"))
    bench.claim("big")  # the contract: every step, open when the run began
    road.write_text(roadmap_text(STORE_STEPS))
    later = time.time() + 1
    items: list[dict[str, object]] = []
    for step in loading.load(bench.ws, "big").steps:
        if step.mark == "done":
            text, command = text_hash(step.text), command_hash(step.verify)
            items += [
                receipt(step.id, text, command, later),
                receipt(step.id, text, command, later + 1, 1),
            ]
    items += [
        receipt("0.1", text_hash(f"gone {n}"), None, later) for n in range(contract.RECEIPTS_KEPT)
    ]
    write_receipts(bench, "big", items)
    label = f"hook, engage, {STORE_STEPS:,} steps, contract and receipts"
    results[label] = measure(
        hook, lambda: bench.payload(small), setup=lambda: bench.fresh_run("big"), expect=2,
        env=bench.env,
    )  # fmt: skip
    sizes = [contract.path_of(bench.ws, key, "big"), contract.receipts_path(bench.ws, "big")]
    print(f"{label}: " + ", ".join(f"{p.name} {p.stat().st_size / 2**20:.1f} MiB" for p in sizes))

    bench.claim("r200")
    made, _ = contract.read(bench.ws, key, "r200")
    assert made is not None
    later = time.time() + 1  # receipts close a step only when made after it joined the run
    example = receipt("9.99999", "0" * 64, "0" * 64, later)
    example[seal.FIELD] = seal.sign(RECEIPTS, "r200", example)  # each line carries its seal
    one = len(json.dumps(example, separators=(",", ":")))
    count = (contract.RECEIPTS_LIMIT - (64 << 10)) // (one + 1)
    gone = [Term(f"9.{n}", text_hash(f"reworded {n}"), f"echo {n}", False, made.started_at)
            for n in range(count)]  # fmt: skip
    with contract.lock(bench.ws, key, "r200"):
        contract.write(
            bench.ws, key, "r200", Contract(made.mode, made.started_at, made.terms + tuple(gone))
        )
    items = [receipt(t.id, t.text, command_hash(t.verify), later) for t in gone]
    write_receipts(bench, "r200", items)
    sizes = [contract.path_of(bench.ws, key, "r200"), contract.receipts_path(bench.ws, "r200")]
    assert sizes[0].stat().st_size < state.RECORD_LIMIT
    assert sizes[1].stat().st_size < contract.RECEIPTS_LIMIT
    label = "hook, engage, largest store (200 steps)"
    results[label] = measure(
        hook, lambda: bench.payload(small), setup=lambda: bench.fresh_run("r200"), expect=2,
        env=bench.env,
    )  # fmt: skip
    print(f"{label}: {count:,} steps past the roadmap's; " + ", ".join(
        f"{p.name} {p.stat().st_size / 2**20:.1f} MiB" for p in sizes))  # fmt: skip
    return results


def ledger_lines(path: Path, count: int) -> None:
    """A ledger of `count` lines: runs of a few engagements ending in every way."""
    endings = ("complete", "halt-stall", "blocked", "handback-question", "halt-max-iterations")
    with path.open("w") as handle:
        for n in range(count):
            run, step = divmod(n, 8)
            event = "engage" if step < 7 else endings[run % len(endings)]
            handle.write(
                json.dumps(
                    {
                        "event": event,
                        "at": f"2026-11-{1 + run % 28:02d}T10:00:{step:02d}Z",
                        "run": f"{run % 5000:032x}",
                        "slug": f"r{run % 7}",
                        "turn": f"t{run}",
                        "iterations": step,
                        "open": 9 - step,
                        "blocked": 0,
                    }
                )
                + "\n"
            )


def report(results: dict[str, dict[str, float]], rounds: dict[str, list[float]]) -> None:
    base = results["python -c pass"]["median_ms"]
    rows = []
    print(
        f"{'case':<52} {'median':>9} {'p25-p75':>15} {'x python':>9} {'peak MiB':>9} "
        f"{'cpu':>9}  target"
    )
    for name, r in results.items():
        ratio = r["median_ms"] / base
        target = TARGETS.get(name)
        verdict = "" if target is None else f"<= {target}x {'ok' if ratio <= target else 'MISSED'}"
        rows.append({"case": name, **r, "ratio": ratio, "target": target})
        cpu = f"{r['cpu_median_ms']:>7.1f}ms" if "cpu_median_ms" in r else f"{'-':>9}"
        print(
            f"{name:<52} {r['median_ms']:>7.1f}ms {r['p25_ms']:>6.1f}-{r['p75_ms']:<6.1f}ms "
            f"{ratio:>8.2f}x {r['peak_rss_mib']:>9.1f} {cpu}  {verdict}"
        )
    checks = [] if ONLY_RATIOS or ONLY_STORE else derived(results)
    for check in checks:
        print(check["text"])
    print("\npairwise (runs taken in turns): median of the per-turn ratios, and fastest / fastest")
    pairs = [] if ONLY_STORE else ratios(rounds)
    for pair in pairs:
        print(pair["text"])
    (HERE / "results.json").write_text(
        json.dumps(
            {
                "python": platform.python_version(),
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
                "runs": RUNS,
                "cases": rows,
                "checks": checks,
                "ratios": pairs,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written to {HERE / 'results.json'}")


def derived(results: dict[str, dict[str, float]]) -> list[dict[str, object]]:
    big = results["hook, engage, 256 MiB transcript, no turn id"]
    small = results["hook, engage, 1 MiB transcript, no turn id"]
    s1k = results["roadmap status, 1000 steps, uncached"]["median_ms"]
    s10k = results["roadmap status, 10000 steps, uncached"]["median_ms"]
    guarded = results["roadmap done's check guard, 200 guarded files"]["median_ms"]
    out = []
    for name, value, target, unit in (
        ("256 MiB / 1 MiB transcript", big["median_ms"] / small["median_ms"], 1.3, "x"),
        ("peak memory, 256 MiB transcript", big["peak_rss_mib"], 64, " MiB"),
        ("roadmap status, 10,000 steps, uncached", s10k / 1000, 1.5, " s"),
        ("10,000 / 1,000 steps", s10k / s1k, 12, "x"),
        ("roadmap done's check guard, 200 files", guarded, 50, " ms"),
    ):
        ok = "ok" if value <= target else "MISSED"
        out.append(
            {
                "check": name,
                "value": value,
                "target": target,
                "text": f"{name:<52} {value:>9.2f}{unit}   target <= {target}{unit} {ok}",
            }
        )
    return out


def ratios(rounds: dict[str, list[float]]) -> list[dict[str, object]]:
    """Each ratio as the median of its per-turn ratios (the two runs of a turn were taken one
    right after the other, so a load that comes and goes weighs on both), judged against its
    target; and as the ratio of the two fastest runs, the least disturbed by other work."""
    out: list[dict[str, object]] = []
    for name, case, base, comparison, target in RATIOS:
        turns = [a / b for a, b in zip(rounds[case], rounds[base], strict=True)]
        value = statistics.median(turns)
        low, high = statistics.quantiles(turns, n=4)[0], statistics.quantiles(turns, n=4)[2]
        fastest = min(rounds[case]) / min(rounds[base])
        ok = value <= target if comparison == "<=" else value < target
        out.append(
            {
                "ratio": name,
                "value": value,
                "p25": low,
                "p75": high,
                "fastest": fastest,
                "target": f"{comparison} {target}",
                "text": f"  {name:<42} {value:5.2f}x (p25-p75 {low:.2f}-{high:.2f}), "
                f"fastest {min(rounds[case]):.1f} / {min(rounds[base]):.1f} ms = {fastest:4.2f}x   "
                f"target {comparison} {target}x {'ok' if ok else 'MISSED'}",
            }
        )
    return out


if __name__ == "__main__":
    raise SystemExit(main())
