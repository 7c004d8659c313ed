"""pytest plugin: benchmark assertions and saved baselines.

    def test_rnd_is_fast(httpbench_server, httpbench_run):
        r = httpbench_run(httpbench_server.url("/rnd?c=2048"), requests=20_000, concurrency=4)
        assert r.failed == 0
        assert r.latency.p99 < 0.005

Options (all prefixed, so they never clash with pytest-benchmark):
  --httpbench-save=NAME          write the recorded runs to .httpbench/NAME.json
  --httpbench-compare=NAME       print each run beside that baseline
  --httpbench-compare-fail=EXPR  fail a test whose figure regressed past EXPR:
                                 rps:10%, p50:10% or p99:10% (repeatable)
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
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .result import Result
from .runner import run
from .server import Server

__all__ = ["pytest_addoption", "pytest_configure", "pytest_terminal_summary"]

FAIL_FORMS = "rps:N%, p50:N% or p99:N% (e.g. rps:10%)"
_STATE = pytest.StashKey["_State"]()


class _State:
    def __init__(self, config: pytest.Config) -> None:
        self.runs: list[tuple[str, Result]] = []
        self.save: str | None = config.getoption("httpbench_save")
        self.compare: str | None = config.getoption("httpbench_compare")
        self.fail = [_parse_fail(e) for e in config.getoption("httpbench_compare_fail") or []]
        self.dir = Path(config.getoption("httpbench_dir") or (config.rootpath / ".httpbench"))
        self.baseline: dict[str, dict[str, Any]] = {}
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
            self.baseline = _load(self.dir / f"{self.compare}.json")


def _parse_fail(expr: str) -> tuple[str, float]:
    m = re.fullmatch(r"\s*(rps|p50|p99)\s*:\s*(\d+(?:\.\d+)?)\s*%\s*", expr)
    if m is None:
        raise pytest.UsageError(f"--httpbench-compare-fail={expr!r}: expected {FAIL_FORMS}")
    return m.group(1), float(m.group(2))


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
    g.addoption("--httpbench-save", metavar="NAME",
                help="save the recorded runs, with machine and commit, to .httpbench/NAME.json")
    g.addoption("--httpbench-compare", metavar="NAME",
                help="print each run beside the baseline .httpbench/NAME.json")
    g.addoption("--httpbench-compare-fail", metavar="EXPR", action="append",
                help=f"fail a test whose figure regressed past EXPR: {FAIL_FORMS}")
    g.addoption("--httpbench-dir", metavar="DIR",
                help="where baselines live (default: .httpbench under the rootdir)")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STATE] = _State(config)


def _figures(d: dict[str, Any]) -> dict[str, float]:
    """rps, p50 and p99 (seconds) from a saved result dict."""
    pct = d["latency"]["percentiles"]
    return {"rps": float(d["rps"]), "p50": float(pct["50"]), "p99": float(pct["99"])}


def _regression(metric: str, now: float, base: float) -> float:
    """How much worse now is than base, as a fraction (positive: worse)."""
    if base <= 0:
        return 0.0
    return (base - now) / base if metric == "rps" else (now - base) / base


@pytest.fixture(scope="session")
def httpbench_server() -> Iterator[Server]:
    """The embedded server, one for the whole session."""
    with Server() as srv:
        yield srv


@pytest.fixture
def httpbench_run(request: pytest.FixtureRequest) -> Callable[..., Result]:
    """run(url, **kwargs) -> Result, recorded under the test's name and held
    to the baseline's thresholds when --httpbench-compare-fail is given."""
    state: _State = request.config.stash[_STATE]
    count = [0]

    def bench(url: str, **kwargs: Any) -> Result:
        kwargs.setdefault("progress", False)
        result = run(url, **kwargs)
        count[0] += 1
        name = request.node.nodeid + (f"#{count[0]}" if count[0] > 1 else "")
        state.runs.append((name, result))
        base = state.baseline.get(name)
        if base is not None and state.fail:
            now = _figures(result.to_dict())
            then = _figures(base)
            for metric, limit in state.fail:
                worse = _regression(metric, now[metric], then[metric])
                if worse * 100 > limit:
                    pytest.fail(f"httpbench: {metric} regressed {worse:.1%} against baseline "
                                f"{state.compare!r} ({then[metric]:.6g} -> {now[metric]:.6g}; "
                                f"allowed {limit:g}%)", pytrace=False)
        return result

    return bench


def _machine() -> dict[str, Any]:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=5).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "node": socket.gethostname(), "machine": platform.machine(),
        "system": platform.platform(), "python": platform.python_version(),
        "cpus": os.cpu_count(), "commit": commit,
        "datetime": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }


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
    head = f"{'test':<50}{'req/s':>12}{'p50 ms':>10}{'p99 ms':>10}{'failed':>8}"
    if state.compare:
        head += f"{'base req/s':>12}{'base p99':>10}"
    tr.write_line(head)
    for name, r in state.runs:
        line = (f"{name[-50:]:<50}{r.rps:>12,.0f}{r.latency.p50 * 1e3:>10.3f}"
                f"{r.latency.p99 * 1e3:>10.3f}{r.failed:>8}")
        if state.compare:
            base = state.baseline.get(name)
            if base is None:
                line += f"{'(none)':>12}"
            else:
                b = _figures(base)
                line += f"{b['rps']:>12,.0f}{b['p99'] * 1e3:>10.3f}"
        tr.write_line(line)
    if state.save:
        state.dir.mkdir(parents=True, exist_ok=True)
        path = state.dir / f"{state.save}.json"
        path.write_text(json.dumps({"machine": _machine(),
                                    "runs": {n: r.to_dict() for n, r in state.runs}}, indent=1))
        tr.write_line(f"saved {len(state.runs)} run(s) to {path}")
