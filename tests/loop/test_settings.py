"""Each run setting is declared once (httpbench/spec.py's RunSpec fields):
run()'s signature, the command line's flags, the manual's table and the
glue's table follow from it or are held to it here, and a setting's name
is written in few places besides."""

from __future__ import annotations

import ast
import collections
import inspect
import pathlib
import shutil
import subprocess
import threading
import time

import pytest

import httpbench
from httpbench import _core
from httpbench._settings import SettingError, markdown_table
from httpbench.cli.bench import bench_parser
from httpbench.cli.common import COMMON, FLAGS
from httpbench.spec import RULES, SETTINGS, RunSpec
from helpers import hb

ROOT = pathlib.Path(__file__).resolve().parents[2]
NAMES = [name for name, _, _ in SETTINGS]
# run()'s arguments that are not run settings: how progress is shown, where
# the run goes, and the cluster's own plumbing.
NOT_SETTINGS = {"url", "progress", "stream", "cluster", "workers", "_coordinator", "_endpoint"}


def test_runs_signature_is_the_declaration():
    """The same names in the same order, the same defaults."""
    params = [p for p in inspect.signature(httpbench.run).parameters.values()
              if p.name not in NOT_SETTINGS]
    assert [p.name for p in params] == NAMES
    for p, (name, default, _) in zip(params, SETTINGS, strict=True):
        assert p.default == default, name
    assert [f.name for f in RunSpec.__dataclass_fields__.values()] == ["url", "target", *NAMES]


def test_run_passes_every_setting_by_name_not_through_locals():
    source = inspect.getsource(httpbench.run)
    assert "locals()" not in source
    call = next(n for n in ast.walk(ast.parse(inspect.cleandoc("\n" + source)))
                if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "from_arguments")
    assert [(k.arg, k.value.id) for k in call.keywords] == [(n, n) for n in NAMES]


def test_the_command_lines_flags_are_the_declarations():
    """A setting with a flag has it, and its dest is the setting's name, in
    COMMON and in httpbench's own parser; its help is the declaration's."""
    actions = {o: a for a in bench_parser()._actions for o in a.option_strings}
    for name, _, meta in SETTINGS:
        if meta.cli is None:
            continue
        assert COMMON[name][0] == meta.flags, name
        assert FLAGS[name] == meta.named and meta.named in meta.flags
        for flag in meta.flags:
            assert actions[flag].dest == name, flag


def test_the_manual_holds_the_declarations_table_and_rules():
    page = (ROOT / "docs" / "arguments.md").read_text()
    table = markdown_table(SETTINGS, RULES)
    assert page.endswith(table), "docs/arguments.md: print markdown_table(SETTINGS, RULES) " \
                                 "again (the page says how)"
    for name in NAMES:
        assert f"| `{name}` |" in table


def test_what_each_setting_feeds_is_the_glues():
    """Every _Bench setting a declaration feeds is one the glue reads, and
    every one the glue reads is fed by a declaration or made by the run
    itself (named here with why)."""
    glue = set(_core.BENCH_SETTINGS)
    fed = {f for _, _, meta in SETTINGS for f in meta.feeds}
    assert fed <= glue, fed - glue
    made_by_the_run = {
        "seed", "sequence", "turns",        # from the scenario (its order, its seed)
        "idempotent",                       # and its Requests
        "prepared",                         # a warmup or a cluster's start
    }
    assert glue - fed == made_by_the_run


def test_a_setting_error_names_the_argument_or_the_flag(tmp_path):
    with pytest.raises(SettingError) as e:
        httpbench.run("http://127.0.0.1:1/", pipeline=2, rate=10, progress=False)
    assert e.value.argument == "pipeline" and isinstance(e.value, ValueError)
    assert str(e.value).startswith("pipeline with rate is not supported")
    assert e.value.said(FLAGS).startswith("--pipeline with --rate is not supported")
    with pytest.raises(SettingError) as e:
        httpbench.run("http://127.0.0.1:1/", requests=0, progress=False)
    assert e.value.argument == "requests" and str(e.value).startswith("requests must be")
    assert e.value.said(FLAGS).startswith("-n must be")
    r = hb("-q", "--pipeline", "2", "-R", "10", "http://127.0.0.1:1/", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("httpbench: --pipeline with --rate is"), \
        r.stderr


# Where a run setting's name is written outside its declaration (spec.py),
# the manual and the tests, counted as code (names, attributes, keywords,
# parameters and strings equal to it; not words in comments or
# docstrings). The goal is the declaration, the loop's config and C; today
# run()'s signature and its call by name (runner.py, held to the
# declaration above), the TLS context and request builders (_request.py),
# the drop-in modes' own grammars and the Result's fields of the same name
# write some too. The counts may fall, never rise: a new place fails here.
# (Settings whose names mean nothing else; "rate" or "timeout" is also a
# Result's field, a Connection's argument.)
BUDGET = {"log_sample": 6, "metrics_run": 13, "metrics_linger": 17, "tls_resume": 10,
          "server_hostname": 10, "ciphersuites": 16, "tls_min": 10, "tls_max": 12,
          "window": 9, "lengths_vary": 23}


def _places() -> dict[str, collections.Counter[str]]:
    found: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for path in (ROOT / "httpbench").rglob("*.py"):
        if path.name in ("spec.py", "_settings.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            word = (node.attr if isinstance(node, ast.Attribute) else
                    node.arg if isinstance(node, (ast.keyword, ast.arg)) else
                    node.id if isinstance(node, ast.Name) else
                    node.value if isinstance(node, ast.Constant) else None)
            if word in NAMES:
                found[word][str(path.relative_to(ROOT / "httpbench"))] += 1
    return found


def test_a_settings_name_is_written_in_no_more_places_than_counted():
    places = _places()
    over = {name: dict(places[name]) for name, most in BUDGET.items()
            if sum(places[name].values()) > most}
    assert not over, over
    # And the one the review named: log_sample, 15 times across httpbench/
    # and csrc/ before, is now run()'s, the loop's config's and the flag
    # lists' (which flags a parser takes, which are output flags).
    assert set(places["log_sample"]) == {"runner.py", "local.py", "cli/bench.py",
                                         "cli/execute.py"}


# The recipe's trial: socket_buffer (ab's -b) was added by CONTRIBUTING.md's
# steps alone; these say it works the way each kind of user reaches it.
SS = shutil.which("ss")


@pytest.mark.skipif(SS is None, reason="ss (iproute2) is not installed")
def test_socket_buffer_sizes_each_connections_buffers(server):
    """The kernel doubles what SO_SNDBUF and SO_RCVBUF are given (socket(7));
    20,000 is no size the kernel picks itself (tcp_rmem's 131,072)."""
    address = server.url("/").split("/")[2]
    out: dict[str, httpbench.Result] = {}

    def go() -> None:
        out["r"] = httpbench.run(server.url("/rnd?c=100"), duration=2.0, concurrency=2,
                                 threads=1, socket_buffer=20000, progress=False)

    t = threading.Thread(target=go)
    t.start()
    seen = ""
    deadline = time.monotonic() + 1.5
    while seen.count("rb40000,") < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
        seen = subprocess.run([SS, "-tmnH", "state", "established", f"dst {address}"],
                              capture_output=True, text=True).stdout
    t.join()
    assert seen.count("rb40000,") == 2 and seen.count("tb40000,") == 2, seen
    assert out["r"].complete > 0 and out["r"].failed == 0


def test_socket_buffer_is_checked_by_its_declaration_everywhere(tmp_path):
    for bad in (0, -1, 2**31, 1.5, True):
        with pytest.raises(SettingError, match="socket_buffer"):
            httpbench.run("http://127.0.0.1:1/", socket_buffer=bad, progress=False)
    r = hb("--socket-buffer", "0", "http://127.0.0.1:1/", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("httpbench: --socket-buffer must be"), \
        r.stderr
    r = hb("ab", "-b", "0", "-n", "1", "http://127.0.0.1:1/", cwd=tmp_path)
    assert r.returncode == 2 and "-b must be" in r.stderr, r.stderr


def test_abs_b_is_honoured(tmp_path, server):
    r = hb("ab", "-b", "20000", "-n", "50", "-k", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0 and "Complete requests:      50" in r.stdout, r.stderr
