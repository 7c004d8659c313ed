"""pytest plugin: benchmark assertions and saved baselines.

    def test_rnd_is_fast(httpbench_server, httpbench_run):
        r = httpbench_run(httpbench_server.url("/rnd?c=2048"), requests=20_000, concurrency=4)
        assert r.failed == 0
        assert r.latency.p99 < 0.005

httpbench_run runs the scenario `rounds` times (5) after one warmup round
and returns the median round (by req/s); one round of a fraction of a
second is too noisy to gate on.

Options (all prefixed, so they never clash with pytest-benchmark):
  --httpbench-save=NAME          write the recorded runs to .httpbench/NAME.json
  --httpbench-compare=NAME       print each run beside that baseline ('latest': the newest)
  --httpbench-compare-fail=EXPR  fail a test whose median regressed past EXPR:
                                 rps:10%, p50:10% or p99:10% (repeatable)
  --httpbench-html=FILE          write one standalone HTML report of the session's
                                 runs (beside the baseline with --httpbench-compare)
Plain pytest with none of them runs as usual; a table of the recorded runs
is printed at the end when there are any.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import socket
import statistics
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from .figures import SCHEMA
from .noise import decide, spread
from .render.text import headline
from .result import Result
from .runner import run
from .server import Server

__all__ = ["pytest_addoption", "pytest_configure", "pytest_terminal_summary", "Rounds",
           "DEFAULT_ROUNDS"]

FAIL_FORMS = "rps:N%, p50:N% or p99:N% (e.g. rps:10%)"
DEFAULT_ROUNDS = 5
METRICS = ("rps", "p50", "p99")
_STATE = pytest.StashKey["_State"]()


class Rounds:
    """The rounds of one recorded scenario: each round's result, the median
    round (by req/s, what httpbench_run returns), the median of each figure
    over the rounds (what the gate compares: the p99 of the median-rps
    round would be as noisy as one round's), and how much the figures moved
    from round to round."""

    def __init__(self, results: Sequence[Result]) -> None:
        if not results:
            raise ValueError("no rounds")
        self.results = list(results)
        by_rps = sorted(self.results, key=lambda r: r.rps)
        self.median: Result = by_rps[(len(by_rps) - 1) // 2]

    def values(self, metric: str) -> list[float]:
        return [_figures_of(r)[metric] for r in self.results]

    def figure(self, metric: str) -> float:
        """The median of a figure over the rounds."""
        return statistics.median(self.values(metric))

    def spread(self, metric: str) -> float:
        """Round-to-round noise of a figure: httpbench.noise.spread, the
        robust spread of its rounds' logs (about the relative standard
        deviation; 0 with one round)."""
        return spread(self.values(metric))


class _State:
    def __init__(self, config: pytest.Config) -> None:
        self.runs: list[tuple[str, Rounds]] = []
        self.save: str | None = config.getoption("httpbench_save")
        self.html: str | None = config.getoption("httpbench_html")
        self.compare: str | None = config.getoption("httpbench_compare")
        self.fail = [_parse_fail(e) for e in config.getoption("httpbench_compare_fail") or []]
        self.dir = Path(config.getoption("httpbench_dir") or (config.rootpath / ".httpbench"))
        self.baseline: dict[str, dict[str, Any]] = {}
        self.baseline_path: Path | None = None
        self.warnings: dict[str, list[str]] = {}
        # xdist gives its workers' configs a workerinput; the environment
        # variable would also be inherited by a pytest started from a
        # worker's test, which is a controller of its own.
        workerinput = getattr(config, "workerinput", None)
        self.worker: str | None = workerinput["workerid"] if workerinput else None
        self.parallel = self.worker is not None or bool(
            getattr(config.option, "numprocesses", None))
        if self.fail and not self.compare:
            raise pytest.UsageError("--httpbench-compare-fail needs --httpbench-compare=NAME")
        if self.compare:
            self.baseline_path = _baseline_path(self.dir, self.compare)
            self.baseline = _load(self.baseline_path)


def _parse_fail(expr: str) -> tuple[str, float]:
    m = re.fullmatch(r"\s*(rps|p50|p99)\s*:\s*(\d+(?:\.\d+)?)\s*%\s*", expr)
    if m is None:
        raise pytest.UsageError(f"--httpbench-compare-fail={expr!r}: expected {FAIL_FORMS}")
    return m.group(1), float(m.group(2))


def _baseline_path(directory: Path, name: str) -> Path:
    """NAME's file; 'latest' is the newest saved baseline, as
    pytest-benchmark's bare --benchmark-compare takes the latest run."""
    if name != "latest":
        return directory / f"{name}.json"
    saved = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime) \
        if directory.is_dir() else []
    if not saved:
        raise pytest.UsageError(f"--httpbench-compare=latest: no saved baseline in {directory}")
    return saved[-1]


def _load(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
        runs = data["runs"]
        if not isinstance(runs, dict):
            raise TypeError("runs is not a mapping")
        return runs
    except FileNotFoundError:
        raise pytest.UsageError(f"httpbench baseline not found: {path}") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise pytest.UsageError(f"httpbench baseline {path} is not a saved baseline: {e}") from None


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("httpbench", "httpbench benchmark assertions")
    # argparse formats help strings with %: a literal one is written %%.
    g.addoption("--httpbench-save", metavar="NAME",
                help="save the recorded runs, with machine and commit, to .httpbench/NAME.json")
    g.addoption("--httpbench-compare", metavar="NAME",
                help="print each run beside the baseline .httpbench/NAME.json ('latest': the "
                     "newest saved)")
    g.addoption("--httpbench-compare-fail", metavar="EXPR", action="append",
                help="fail a test whose median regressed past EXPR: "
                     + FAIL_FORMS.replace("%", "%%"))
    g.addoption("--httpbench-html", metavar="FILE",
                help="write one standalone HTML report of the session's runs to FILE (with "
                     "--httpbench-compare, each beside the baseline's)")
    g.addoption("--httpbench-dir", metavar="DIR",
                help="where baselines live (default: .httpbench under the rootdir)")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STATE] = _State(config)


def _base_rounds(d: dict[str, Any], metric: str) -> list[float]:
    """A saved run's rounds of one figure (seconds for latencies), or its
    one result's figure when it kept no rounds."""
    rounds = d.get("rounds")
    if rounds:
        return [float(x[metric]) for x in rounds]
    if metric == "rps":
        return [float(d["rps"])]
    return [float(d["latency"]["percentiles"]["50" if metric == "p50" else "99"])]


def _figures_of(r: Result) -> dict[str, float]:
    return {"rps": r.rps, "p50": r.latency.p50, "p99": r.latency.p99}


def gate(rounds: Rounds, base: dict[str, Any], fail: Sequence[tuple[str, float]],
         name: str) -> tuple[list[str], list[str]]:
    """Holds a scenario's rounds to the baseline's by httpbench.noise's rule
    (on the log of the ratio). Returns (failures, warnings): a failure when
    the median is worse past the threshold and past the noise band of both
    sides' spreads; a warning when it is past the threshold but inside the
    band (cannot decide), or when the band is wider than the threshold (too
    noisy to judge a change of its size). The change is signed as it is,
    a fall negative, in both."""
    failures, warnings = [], []
    for metric, limit in fail:
        if metric != "rps":
            # A round that completed nothing has no latency (its figures
            # read 0): a dead server passed a p99 gate as 100% faster.
            empty = [r for r in rounds.results if not r.complete]
            if empty:
                failures.append(f"httpbench: {metric} cannot be held to baseline {name!r}: "
                                f"{len(empty)} of {len(rounds.results)} rounds completed no "
                                f"request, so their latency is unknown. {headline(empty[0])}")
                continue
            if any(x <= 0 for x in _base_rounds(base, metric)):
                warnings.append(f"{metric}: a round of the baseline completed no request (its "
                                f"{metric} is unknown): this gate cannot decide; save the "
                                "baseline again")
                continue
        v = decide(metric, rounds.values(metric), _base_rounds(base, metric), limit)
        noisy = f"; {v.too_noisy()}" if v.noisy else ""
        if v.fails:
            failures.append(f"httpbench: {metric} regressed {v.change:+.1%} against baseline "
                            f"{name!r} ({v.base:.6g} -> {v.now:.6g}, medians of "
                            f"{len(rounds.results)} rounds; allowed {limit:g}%, noise band "
                            f"{v.band_text}){noisy}")
        elif v.undecided:
            warnings.append(f"{metric}: {v.change:+.1%} is past the threshold {limit:g}% but "
                            f"inside the noise band {v.band_text} (spreads {v.s_now:.1%} now, "
                            f"{v.s_base:.1%} in the baseline): this gate cannot decide{noisy}")
        elif v.noisy:
            warnings.append(f"{metric}: {v.change:+.1%}: {v.too_noisy()}")
    return failures, warnings


@pytest.fixture(scope="session")
def httpbench_server() -> Iterator[Server]:
    """The embedded server, one for the whole session."""
    with Server() as srv:
        yield srv


@pytest.fixture
def httpbench_run(request: pytest.FixtureRequest) -> Callable[..., Result]:
    """run(url, rounds=5, warmup_rounds=1, **run_kwargs) -> the median
    round's Result (by req/s), every round recorded under the test's name
    and the median held to the baseline's thresholds when
    --httpbench-compare-fail is given."""
    state: _State = request.config.stash[_STATE]
    count = [0]

    def bench(url: str, *, rounds: int = DEFAULT_ROUNDS, warmup_rounds: int = 1,
              **kwargs: Any) -> Result:
        if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= 1000:
            raise ValueError(f"rounds must be from 1 to 1,000, not {rounds!r}")
        if isinstance(warmup_rounds, bool) or not isinstance(warmup_rounds, int) or \
                not 0 <= warmup_rounds <= 1000:
            raise ValueError(f"warmup_rounds must be from 0 to 1,000, not {warmup_rounds!r}")
        kwargs.setdefault("progress", False)

        def one() -> Result:
            # run() answers Ctrl-C by returning what it measured; here the
            # rounds after it would run on and a part of a round would be
            # recorded (and saved as a baseline): the session stops instead,
            # as pytest stops on Ctrl-C.
            r = run(url, **kwargs)
            if r.interrupted:
                raise KeyboardInterrupt("httpbench_run: interrupted during a round")
            return r
        for _ in range(warmup_rounds):
            one()
        measured = Rounds([one() for _ in range(rounds)])
        count[0] += 1
        name = request.node.nodeid + (f"#{count[0]}" if count[0] > 1 else "")
        state.runs.append((name, measured))
        base = state.baseline.get(name)
        if base is not None and state.fail:
            failures, warnings = gate(measured, base, state.fail, str(state.compare))
            if warnings:
                state.warnings[name] = warnings
            if failures:
                pytest.fail("\n".join(failures), pytrace=False)
        return measured.median

    return bench


def _commit() -> str | None:
    """The checkout's commit, or None outside a git repository (or in one
    without commits, where rev-parse would echo 'HEAD')."""
    try:
        out = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", sha) else None


def _machine() -> dict[str, Any]:
    return {
        "node": socket.gethostname(), "machine": platform.machine(),
        "system": platform.platform(), "python": platform.python_version(),
        "cpus": os.cpu_count(), "commit": _commit(),
        "datetime": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def table(runs: Sequence[tuple[str, Rounds]], baseline: dict[str, dict[str, Any]] | None,
          warnings: dict[str, list[str]]) -> list[str]:
    """The session's table: per recorded scenario the median, min, max and
    spread of req/s and the median and spread of p99 over its rounds, and
    against a baseline the change of the medians in percent."""
    head = (f"{'test':<44}{'rounds':>7}{'req/s':>11}{'min':>11}{'max':>11}{'spread':>8}"
            f"{'p99 ms':>9}{'spread':>8}{'failed':>7}")
    if baseline is not None:
        head += f"{'base req/s':>12}{'change':>9}{'base p99':>10}{'change':>9}"
    lines = [head]
    for name, rounds in runs:
        rps = rounds.values("rps")
        med_rps, med_p99 = rounds.figure("rps"), rounds.figure("p99")
        timed = all(x.complete for x in rounds.results)  # (else no p99 to show)
        line = (f"{name[-44:]:<44}{len(rps):>7}{med_rps:>11,.0f}{min(rps):>11,.0f}"
                f"{max(rps):>11,.0f}{rounds.spread('rps'):>8.1%}"
                f"{_ms(med_p99) if timed else '-':>9}"
                f"{rounds.spread('p99'):>8.1%}{sum(x.failed for x in rounds.results):>7}")
        if baseline is not None:
            base = baseline.get(name)
            if base is None:
                line += f"{'(none)':>12}"
            else:
                b = {m: statistics.median(_base_rounds(base, m)) for m in ("rps", "p99")}
                d_rps = (med_rps - b["rps"]) / b["rps"] if b["rps"] else 0.0
                d_p99 = f"{(med_p99 - b['p99']) / b['p99']:+.1%}" if timed and b["p99"] else "-"
                line += f"{b['rps']:>12,.0f}{d_rps:>+9.1%}{_ms(b['p99']):>10}{d_p99:>9}"
        lines.append(line)
        lines.extend(f"    warning: {w}" for w in warnings.get(name, []))
    return lines


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state: _State = config.stash[_STATE]
    tr = terminalreporter
    if state.parallel and state.worker is None:
        tr.section("httpbench")
        tr.write_line("running in parallel workers (pytest-xdist): the runs share the machine, "
                      "so their figures are not comparable; they are checked in each worker "
                      "but not collected here")
    if not state.runs:
        return
    tr.section("httpbench")
    for line in table(state.runs, state.baseline if state.compare else None, state.warnings):
        tr.write_line(line)
    if state.compare and state.baseline_path is not None:
        tr.write_line(f"baseline: {state.baseline_path}")
    machine = _machine()
    if state.save and exitstatus == pytest.ExitCode.INTERRUPTED:
        # A baseline of the tests that ran before Ctrl-C would stand, under
        # the name given, for the whole session (and replace one that did).
        tr.write_line(f"not saved to {state.dir / f'{state.save}.json'}: the session was "
                      "interrupted")
    elif state.save:
        state.dir.mkdir(parents=True, exist_ok=True)
        path = state.dir / f"{state.save}.json"
        runs = {}
        for name, rounds in state.runs:
            # Compact (schema 14): the histograms packed, a line a run, so a
            # baseline stays small enough to keep in a repository.
            d = rounds.median.to_dict(compact=True)
            d["rounds"] = _rounds_of(rounds)
            runs[name] = d
        path.write_text(json.dumps({"kind": "session", "schema": SCHEMA, "machine": machine,
                                    "runs": runs}, separators=(",", ":")) + "\n")
        tr.write_line(f"saved {len(state.runs)} run(s) to {path}")
    if state.html:
        from .render.report import session_doc, write
        from .saved import load
        docs = []
        if state.compare and state.baseline_path is not None:
            docs.append(load(state.baseline_path))
        docs.append(session_doc([(name, rounds.median, _rounds_of(rounds))
                                 for name, rounds in state.runs], "this session", machine))
        write(state.html, docs, "httpbench: the session's runs")
        tr.write_line(f"wrote the session's report to {state.html}")


def _rounds_of(rounds: Rounds) -> list[dict[str, float]]:
    return [_figures_of(r) for r in rounds.results]
