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
    args = ap.parse_args()
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
