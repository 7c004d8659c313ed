"""The pytest plugin, driven through pytest's own pytester."""

from __future__ import annotations

import json
import re

import pytest

pytest_plugins = ["pytester"]

TESTS = '''
def test_fast(httpbench_server, httpbench_run):
    r = httpbench_run(httpbench_server.url("/rnd?c=100"), requests=2000, concurrency=2)
    assert r.failed == 0
    assert r.latency.p99 < 1.0

def test_twice(httpbench_server, httpbench_run):
    for _ in range(2):
        assert httpbench_run(httpbench_server.url("/rnd?c=10"), requests=500).complete == 500

def test_plain():
    assert 1 + 1 == 2
'''


@pytest.fixture
def project(pytester):
    pytester.makepyfile(test_bench=TESTS)
    return pytester


def baseline(pytester, name="base"):
    return json.loads((pytester.path / ".httpbench" / f"{name}.json").read_text())


def test_fixtures_and_summary_table(project):
    result = project.runpytest()
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    assert "httpbench" in out and "req/s" in out and "p99 ms" in out
    assert "test_bench.py::test_fast" in out
    assert "test_bench.py::test_twice#2" in out
    assert not (project.path / ".httpbench").exists()


def test_plain_pytest_without_runs_prints_nothing_of_ours(pytester):
    pytester.makepyfile(test_x="def test_x():\n    assert 2 * 2 == 4\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert not re.search(r"=+ httpbench =+", result.stdout.str())


def test_save_then_compare(project):
    project.runpytest("--httpbench-save=base").assert_outcomes(passed=3)
    saved = baseline(project)
    assert set(saved["machine"]) >= {"node", "python", "cpus", "commit", "datetime"}
    assert set(saved["runs"]) == {"test_bench.py::test_fast", "test_bench.py::test_twice",
                                  "test_bench.py::test_twice#2"}
    assert saved["runs"]["test_bench.py::test_fast"]["complete"] == 2000
    result = project.runpytest("--httpbench-compare=base")
    result.assert_outcomes(passed=3)
    assert "base req/s" in result.stdout.str()


def test_compare_fail_passes_within_the_threshold(project):
    project.runpytest("--httpbench-save=base").assert_outcomes(passed=3)
    result = project.runpytest("--httpbench-compare=base", "--httpbench-compare-fail=rps:95%")
    result.assert_outcomes(passed=3)


# Thresholds far above run-to-run noise, values in the baseline far past them:
# only the doctored run can fail.
@pytest.mark.parametrize("metric,field,value,limit", [("rps", "rps", 1e12, 90),
                                                      ("p99", "99", 1e-9, 1000),
                                                      ("p50", "50", 1e-9, 1000)])
def test_compare_fail_fails_a_regressed_test(project, metric, field, value, limit):
    project.runpytest("--httpbench-save=base").assert_outcomes(passed=3)
    data = baseline(project)
    run = data["runs"]["test_bench.py::test_fast"]
    if field == "rps":
        run["rps"] = value
    else:
        run["latency"]["percentiles"][field] = value
    (project.path / ".httpbench" / "base.json").write_text(json.dumps(data))
    result = project.runpytest("--httpbench-compare=base",
                               f"--httpbench-compare-fail={metric}:{limit}%")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([f"*{metric} regressed*against baseline 'base'*allowed {limit}%*",
                                 "FAILED test_bench.py::test_fast*"])


@pytest.mark.parametrize("expr", ["rps", "rps:10", "latency:10%", "p99:-5%", "rps:ten%"])
def test_malformed_compare_fail_is_a_usage_error(project, expr):
    project.runpytest("--httpbench-save=base")
    result = project.runpytest("--httpbench-compare=base", f"--httpbench-compare-fail={expr}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*expected rps:N%, p50:N% or p99:N%*"])


def test_compare_fail_needs_a_baseline(project):
    result = project.runpytest("--httpbench-compare-fail=rps:10%")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*needs --httpbench-compare=NAME*"])


def test_missing_or_corrupt_baseline_names_the_file(project):
    result = project.runpytest("--httpbench-compare=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*baseline not found:*nope.json*"])
    (project.path / ".httpbench").mkdir()
    (project.path / ".httpbench" / "bad.json").write_text("{not json")
    result = project.runpytest("--httpbench-compare=bad")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*baseline*bad.json is not a saved baseline*"])


def test_under_xdist_says_so_and_still_runs(project):
    pytest.importorskip("xdist")
    result = project.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    assert "running in parallel workers" in result.stdout.str()
