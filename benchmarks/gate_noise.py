"""Does a 20% gate hold on an unchanged scenario? The pytest plugin's
--httpbench-compare-fail, run again and again against its own baseline.

    python benchmarks/gate_noise.py [--runs 10] [--threshold 20] [--rounds 5] [--metrics rps]

Saves a baseline of one scenario against the embedded server (the plugin's
default rounds: 5 after a warmup round, the medians compared), then runs
the same, unchanged test --runs times with --httpbench-compare-fail=M:T%
for each metric M (rps; p50 and p99 on request), and prints how many of
them the gate failed, with each run's medians, spreads and changes. A gate
that fails unchanged code will be switched off: the answer should be 0 of N.

One baseline may happen to be a slow or a fast run, so each run's rounds
are saved too, and httpbench.noise's rule is then applied to every ordered
pair of runs (each one as the baseline of each other): the share of pairs
it fails is its false-failure rate on unchanged code at that threshold.

    python benchmarks/gate_noise.py --power [--runs 8] [--threshold 20]

Its power: the embedded server's /delay?ms=2 on 8 connections (4,000
req/s), and the same made 1.25x, 2x and 25x slower (/delay?ms=2.5, 4,
50), each measured as the plugin measures (a warmup round, then --rounds
rounds of 0.3 s, the medians compared) --runs times, quiet and beside a
Python busy loop on each CPU (the baseline and the new run under the same
condition). The rule is applied to every pair of an unchanged run as the
baseline and a run of each slowdown as the new one (unchanged: every
ordered pair of two different unchanged runs), and the share that fail is
printed: the goal, at most 5% unchanged, at least 95% at 2x and 25x.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TEST = '''
def test_rnd(httpbench_server, httpbench_run):
    r = httpbench_run(httpbench_server.url("/rnd?c=2048"), requests={requests},
                      concurrency={concurrency}, rounds={rounds})
    assert r.failed == 0
'''


def pytest_run(workdir: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "-p", "no:benchmark", *options, "test_gate.py"],
                          capture_output=True, text=True, cwd=workdir)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threshold", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--metrics", default="rps", help="comma-separated, of rps, p50, p99")
    ap.add_argument("--power", action="store_true",
                    help="the gate's power against slowdowns of 1.25x, 2x and 25x, quiet and "
                         "beside busy loops, instead of pytest sessions of unchanged code")
    args = ap.parse_args()
    if args.power:
        power(args.runs if args.runs != 10 else 8, args.rounds, args.threshold)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "test_gate.py").write_text(TEST.format(requests=args.requests,
                                                       concurrency=args.concurrency,
                                                       rounds=args.rounds))
        saved = pytest_run(work, "--httpbench-save=base")
        if saved.returncode != 0:
            print(saved.stdout[-2000:], saved.stderr[-2000:])
            return 1
        metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
        gate = [f"--httpbench-compare-fail={m}:{args.threshold:g}%" for m in metrics]
        failed = undecided = 0
        print(f"{args.runs} unchanged runs, {args.rounds} rounds each, gate {', '.join(metrics)} "
              f"at {args.threshold:g}% against the first run's baseline")
        for i in range(args.runs):
            r = pytest_run(work, "--httpbench-compare=base", f"--httpbench-save=run{i}", *gate)
            row = next((line for line in r.stdout.splitlines()
                        if line.startswith("test_gate.py::test_rnd")), "")
            cells = row.split()
            if r.returncode != 0:
                failed += 1
            if "cannot decide" in r.stdout:
                undecided += 1
            verdict = "FAILED" if r.returncode != 0 else "passed"
            # test, rounds, req/s, min, max, spread, p99, spread, failed, base, change, ...
            def cell(k: int, cells: list[str] = cells) -> str:
                return cells[k] if len(cells) > k else "?"

            print(f"  run {i + 1:>2}: {verdict}  median {cell(2)} req/s (spread {cell(5)}), "
                  f"change {cell(10)}; p99 {cell(6)} ms, change {cell(12)}")
            for line in r.stdout.splitlines():
                if re.search(r"regressed|cannot decide", line):
                    print(f"          {line.strip()}")
        print(f"the gate failed {failed} of {args.runs} unchanged runs "
              f"({undecided} said they could not decide)")
        pairwise(work, args.runs, metrics, args.threshold)
    return 0


def rounds_of(url: str, rounds: int) -> list[float]:
    """req/s of each round, as the plugin runs them: a warmup round left
    out, then `rounds` rounds of 0.3 s on 8 connections."""
    import httpbench
    out = []
    for i in range(rounds + 1):
        r = httpbench.run(url, duration=0.3, concurrency=8, progress=False)
        if i:
            out.append(r.rps)
    return out


def power(runs: int, rounds: int, threshold: float) -> None:
    """The share of gates that fail, by slowdown and condition."""
    import os

    import httpbench
    from httpbench.noise import decide
    slowdowns = {1.0: 2.0, 1.25: 2.5, 2.0: 4.0, 25.0: 50.0}  # factor: /delay ms
    print(f"rps gate at {threshold:g}%, {rounds} rounds of 0.3 s a run, {runs} runs of each; "
          f"the share of gates failing:")
    for condition in ("quiet", "burner"):
        burners = []
        if condition == "burner":
            burners = [subprocess.Popen(["taskset", "-c", str(c), sys.executable, "-c",
                                         "while True: pass"])
                       for c in sorted(os.sched_getaffinity(0))]
        try:
            with httpbench.Server() as srv:
                got = {k: [rounds_of(srv.url(f"/delay?ms={ms:g}"), rounds) for _ in range(runs)]
                       for k, ms in slowdowns.items()}
        finally:
            for b in burners:
                b.kill()
                b.wait()
        cells = []
        for k in slowdowns:
            pairs = [(now, base) for i, base in enumerate(got[1.0]) for j, now in enumerate(got[k])
                     if k != 1.0 or i != j]
            fails = sum(decide("rps", now, base, threshold).fails for now, base in pairs)
            cells.append(f"{'unchanged' if k == 1.0 else f'{k:g}x'} {fails}/{len(pairs)} "
                         f"({fails / len(pairs):.0%})")
        print(f"  {condition:>6}: " + ", ".join(cells), flush=True)


def pairwise(work: Path, runs: int, metrics: list[str], threshold: float) -> None:
    """The rule over every ordered pair of the saved runs."""
    from httpbench.noise import decide

    rounds = []
    for i in range(runs):
        data = json.loads((work / ".httpbench" / f"run{i}.json").read_text())
        (run,) = data["runs"].values()
        rounds.append(run["rounds"])
    for metric in metrics:
        fails = undecided = pairs = 0
        for now, base in itertools.permutations(rounds, 2):
            v = decide(metric, [x[metric] for x in now], [x[metric] for x in base], threshold)
            pairs += 1
            fails += v.fails
            undecided += v.undecided
        print(f"{metric} at {threshold:g}% over every ordered pair of the {runs} runs: failed "
              f"{fails} of {pairs} ({fails / pairs:.1%}), could not decide {undecided}")


if __name__ == "__main__":
    sys.exit(main())
