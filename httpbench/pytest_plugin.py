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
                                 rps:10%, p50:10% or p99:10% (repeatable); and
                                 one whose share of failed or non-2xx requests
                                 rose past the baseline's by more than 1 point
                                 (errors:N% sets it)
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

from ._typed import FieldError, typed
from .figures import SCHEMA
from .noise import decide, spread
from .render.text import headline
from .result import Result
from .runner import run
from .server import Server

__all__ = ["pytest_addoption", "pytest_configure", "pytest_terminal_summary", "Rounds",
           "DEFAULT_ROUNDS"]

FAIL_FORMS = "rps:N%, p50:N%, p99:N% or errors:N% (e.g. rps:10%)"
DEFAULT_ROUNDS = 5
METRICS = ("rps", "p50", "p99", "errors")
# The errors gate's threshold, in points of the share of requests that
# failed or were answered outside 2xx, where --httpbench-compare-fail
# names other metrics only: an endpoint gone from 200s to 500s answers as
# fast as ever, and the latency and rate gates alone passed it.
ERRORS_POINTS = 1.0
# What each round of a saved baseline holds (and `errors`, in those saved
# since the errors gate: an older baseline's share is its saved run's).
ROUND_KEYS = ("rps", "p50", "p99")
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
    m = re.fullmatch(r"\s*(rps|p50|p99|errors)\s*:\s*(\d+(?:\.\d+)?)\s*%\s*", expr)
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
    """The saved runs of a baseline, every one read through the model's
    type checks (httpbench._typed) and its rounds' figures checked: a
    UsageError naming the file and the field, in one line, for anything
    the gate could not judge by (a NaN or a negative figure, a missing
    key, a run that is not a mapping), before any test runs."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise pytest.UsageError(f"httpbench baseline not found: {path}") from None
    except (OSError, ValueError) as e:
        raise pytest.UsageError(f"httpbench baseline {path} is not a saved baseline: {e}") from None
    try:
        return check_baseline(data)
    except ValueError as e:
        raise pytest.UsageError(f"httpbench baseline {path.stem!r} ({path}) is not a saved "
                                f"baseline: {e}") from None


def check_baseline(data: Any) -> dict[str, dict[str, Any]]:
    """A baseline's runs (its JSON's `runs`), each a Result by the model's
    type checks with rounds of figures no lower than 0; ValueError (a
    FieldError where a field is wrong) naming what is not."""
    if not isinstance(data, dict):
        raise FieldError("", "a JSON object was expected")
    schema = data.get("schema", SCHEMA)
    if isinstance(schema, bool) or not isinstance(schema, int) or schema > SCHEMA:
        raise FieldError("schema", f"{schema!r}: this httpbench reads schemas up to {SCHEMA}")
    runs = typed(data.get("runs"), dict[str, Any], "runs")
    for name, r in runs.items():
        at = f"runs[{name!r}]"
        typed(r, Result, at)  # (an object, else a FieldError)
        rounds = typed(r.get("rounds"), list[dict[str, float]] | None, f"{at}.rounds")
        for i, x in enumerate(rounds or []):
            for key in ROUND_KEYS + tuple(k for k in ("errors",) if k in x):
                where = f"{at}.rounds[{i}].{key}"
                if key not in x:
                    raise FieldError(where, "missing")
                if x[key] < 0 or (key == "errors" and x[key] > 1):
                    raise FieldError(where, f"{x[key]!r} is out of range for a figure")
    return {name: dict(r) for name, r in runs.items()}


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
                     + FAIL_FORMS.replace("%", "%%") + "; the share of failed or non-2xx "
                     "requests is held within 1 point of the baseline's unless errors:N%% "
                     "sets it")
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


def _base_errors(d: dict[str, Any]) -> float | None:
    """A saved run's share of failed or non-2xx requests: the median of its
    rounds' where they kept it, else its saved run's; None when it issued
    nothing (no share to hold a test to)."""
    rounds = d.get("rounds")
    if rounds and all("errors" in x for x in rounds):
        return float(statistics.median(float(x["errors"]) for x in rounds))
    issued = int(d.get("issued", 0))
    if not issued:
        return None
    return (int(d.get("failed", 0)) + int(d.get("non_2xx", 0))) / issued


def errors_share(r: Result) -> float:
    """The share of a run's requests that failed or were answered outside
    2xx (0 when it issued none)."""
    return (r.failed + r.non_2xx) / r.issued if r.issued else 0.0


def _figures_of(r: Result) -> dict[str, float]:
    return {"rps": r.rps, "p50": r.latency.p50, "p99": r.latency.p99, "errors": errors_share(r)}


def gate(rounds: Rounds, base: dict[str, Any], fail: Sequence[tuple[str, float]],
         name: str) -> tuple[list[str], list[str]]:
    """Holds a scenario's rounds to the baseline's by httpbench.noise's rule
    (on the log of the ratio). Returns (failures, warnings): a failure when
    the median is worse past the threshold and past the noise band of both
    sides' spreads; a warning when it is past the threshold but inside the
    band (cannot decide), or when the band is wider than the threshold (too
    noisy to judge a change of its size). The change is signed as it is,
    a fall negative, in both. The share of failed or non-2xx requests is
    held too, at ERRORS_POINTS where `fail` does not name `errors`. A
    metric the gate cannot judge (a baseline's round that completed
    nothing) is a failure when `fail` names it, else a warning: it is
    never passed in silence."""
    failures: list[str] = []
    warnings: list[str] = []
    named = {metric for metric, _ in fail}
    checks = list(fail) + ([] if "errors" in named else [("errors", ERRORS_POINTS)])
    for metric, limit in checks:
        cannot = failures if metric in named else warnings
        if metric == "errors":
            _hold_errors(rounds, base, limit, name, cannot, failures)
            continue
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
            cannot.append(f"httpbench: {metric} cannot be held to baseline {name!r}: a round "
                          f"of the baseline completed no request (its {metric} is unknown); "
                          "save the baseline again")
            continue
        v = decide(metric, rounds.values(metric), _base_rounds(base, metric), limit)
        noisy = f"; {v.too_noisy()}" if v.noisy else ""
        if v.fails:
            failures.append(f"httpbench: {metric} regressed {v.ratio_text} against baseline "
                            f"{name!r} ({v.base:.6g} -> {v.now:.6g}, medians of "
                            f"{len(rounds.results)} rounds): past the threshold "
                            f"{v.limit_text} and outside the noise band {v.band_text}{noisy}")
        elif v.undecided:
            warnings.append(f"{metric}: {v.ratio_text} is past the threshold {v.limit_text} but "
                            f"inside the noise band {v.band_text} (spreads {v.s_now:.1%} now, "
                            f"{v.s_base:.1%} in the baseline): this gate cannot decide{noisy}")
        elif v.noisy:
            warnings.append(f"{metric}: {v.ratio_text}: {v.too_noisy()}")
    return failures, warnings


def _hold_errors(rounds: Rounds, base: dict[str, Any], points: float, name: str,
                 cannot: list[str], failures: list[str]) -> None:
    """The errors gate: the median share of failed or non-2xx requests over
    the rounds against the baseline's, failing a rise past `points`
    percentage points (an absolute rule: a share is 0 at its best, where
    no ratio can be taken)."""
    was = _base_errors(base)
    if was is None:
        cannot.append(f"httpbench: errors cannot be held to baseline {name!r}: its run issued "
                      "no request; save the baseline again")
        return
    now = float(statistics.median(rounds.values("errors")))
    if now - was > points / 100 + 1e-12:
        failures.append(f"httpbench: errors rose to {now:.1%} of requests (failed or non-2xx) "
                        f"from {was:.1%} in baseline {name!r} (medians of "
                        f"{len(rounds.results)} rounds; allowed {points:g} points more)")


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
    spread of req/s, the median and spread of p99 over its rounds and the
    shares of its requests that failed and that were answered outside 2xx
    (over all its rounds), and against a baseline the change of the
    medians in percent and the baseline's share of both together."""
    head = (f"{'test':<44}{'rounds':>7}{'req/s':>11}{'min':>11}{'max':>11}{'spread':>8}"
            f"{'p99 ms':>9}{'spread':>8}{'failed':>8}{'non-2xx':>8}")
    if baseline is not None:
        head += f"{'base req/s':>12}{'change':>9}{'base p99':>10}{'change':>9}{'base err':>9}"
    lines = [head]
    for name, rounds in runs:
        rps = rounds.values("rps")
        med_rps, med_p99 = rounds.figure("rps"), rounds.figure("p99")
        timed = all(x.complete for x in rounds.results)  # (else no p99 to show)
        line = (f"{name[-44:]:<44}{len(rps):>7}{med_rps:>11,.0f}{min(rps):>11,.0f}"
                f"{max(rps):>11,.0f}{rounds.spread('rps'):>8.1%}"
                f"{_ms(med_p99) if timed else '-':>9}"
                f"{rounds.spread('p99'):>8.1%}{_share(rounds, 'failed'):>8}"
                f"{_share(rounds, 'non_2xx'):>8}")
        if baseline is not None:
            base = baseline.get(name)
            if base is None:
                line += f"{'(none)':>12}"
            else:
                b = {m: statistics.median(_base_rounds(base, m)) for m in ("rps", "p99")}
                d_rps = (med_rps - b["rps"]) / b["rps"] if b["rps"] else 0.0
                d_p99 = f"{(med_p99 - b['p99']) / b['p99']:+.1%}" if timed and b["p99"] else "-"
                was = _base_errors(base)
                line += (f"{b['rps']:>12,.0f}{d_rps:>+9.1%}{_ms(b['p99']):>10}{d_p99:>9}"
                         f"{'-' if was is None else f'{was:.1%}':>9}")
        lines.append(line)
        lines.extend(f"    warning: {w}" for w in warnings.get(name, []))
    return lines


def _share(rounds: Rounds, field: str) -> str:
    """The share of the rounds' requests counted in `field` (failed or
    non_2xx), as the table shows it."""
    issued = sum(r.issued for r in rounds.results)
    return f"{sum(getattr(r, field) for r in rounds.results) / issued:.1%}" if issued else "-"


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
