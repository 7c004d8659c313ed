"""Every hint the command line prints names what the command printing it
accepts, in that mode's own letters, and runs: bare httpbench suggested
--no-pin, which it refused; hey mode's warning said --threads, which hey
mode refuses (hey's is -cpus). The hints are collected from where they
are made (httpbench.hints, each mode's WORDS) and from what the commands
print, and each flag they name is run with the command that names it."""

from __future__ import annotations

import inspect
import re
import shlex

import pytest

import httpbench
from helpers import hb
from httpbench import hints
from httpbench.cli import ab, h2load, hey, wrk
from httpbench.cli.bench import bench_parser
from httpbench.cli.capacity import capacity_parser

# Each mode: its words, its parser, and the command that runs it here.
MODES = {
    "ab": (ab.WORDS, ab.ab_parser, ["ab", "-n", "20"]),
    "hey": (hey.WORDS, hey.hey_parser, ["hey", "-n", "20", "-c", "2"]),
    "wrk": (wrk.WORDS, wrk.wrk_parser, ["wrk", "-t", "1", "-c", "2", "-d", "1"]),
    "h2load": (h2load.WORDS, h2load.h2load_parser, ["h2load", "-n", "20", "-c", "2"]),
}
# A value each flag a hint can name takes, where it takes one.
VALUES = {"-c": "2", "-cpus": "2", "-t": "2", "-s": "5", "--timeout": "5s", "--threads": "2",
          "--stage": "0.5", "--start": "50", "--cacert": None, "-h2": None, "--http2": None,
          "--insecure": None}
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def flags_in(text: str) -> list[str]:
    """The flags a hint names (within its parentheses)."""
    return [f for part in re.findall(r"\(([^)]*)\)", text) for f in FLAG.findall(part)]


def known(parser_factory) -> set[str]:
    return {o for a in parser_factory()._actions for o in a.option_strings}


def every_hint(words) -> dict[str, str]:
    return {name: hints.hint(name, words) for name in hints.HINTS}


@pytest.mark.parametrize("mode", MODES)
def test_each_modes_hints_name_only_its_own_flags_and_each_runs(tmp_path, server, mode):
    words, parser, command = MODES[mode]
    accepted = known(parser)
    named = set()
    for name, text in every_hint(words).items():
        for flag in flags_in(text):
            assert flag in accepted, (mode, name, text)
            named.add(flag)
    # Every setting a mode has words for is named by some hint.
    assert set(words.values()) <= named | {"-h2"}, (mode, words, named)
    for flag in sorted(named):
        value = VALUES[flag]
        if mode == "h2load" and flag == "-t":
            value = "1"  # (at most -c)
        url = server.url("/rnd?c=10")
        if flag == "-h2":
            with httpbench.Server(tls=True) as tls:
                r = hb(*command, flag, tls.url("/rnd?c=10"), cwd=tmp_path)
        else:
            r = hb(*command, flag, *([value] if value else []), url, cwd=tmp_path)
        assert r.returncode == 0, (mode, flag, r.stderr)


def test_the_plain_reports_hints_name_the_plain_flags_and_runs_arguments(tmp_path, server):
    """Result.report() (what `httpbench URL` prints) and CapacityResult's
    say the plain command line's flag and the Python argument: each flag
    is the command's (the run's, or capacity's for its stages), and each
    argument run()'s or capacity()'s."""
    run_args = set(inspect.signature(httpbench.run).parameters)
    capacity_args = set(inspect.signature(httpbench.capacity).parameters)
    for name, text in every_hint(hints.PLAIN).items():
        parser, args = (capacity_parser, capacity_args) if name == "stages" else \
            (bench_parser, run_args)
        for flag in flags_in(text):
            assert flag in known(parser), (name, flag)
        for arg in re.findall(r"(\w+)=", text):
            assert arg in args, (name, arg)
    for flag in ("--threads", "-c", "-s", "--insecure"):
        value = VALUES[flag]
        r = hb("-n", "20", flag, *([value] if value else []), server.url("/rnd?c=10"),
               cwd=tmp_path)
        assert r.returncode == 0, (flag, r.stderr)


def test_a_mode_prints_its_own_words_where_a_plain_report_says_the_plain_ones():
    """The same verdict, read by hey's user and by httpbench's."""
    from httpbench.bound import ClientFigures
    c = ClientFigures(busy=0.98, busy_max=0.99, cpu=0.93, bound=True, reason="cpu")
    assert "(-cpus)" in c.warning(hey.WORDS) and "--threads" not in c.warning(hey.WORDS)
    assert "(-t)" in c.warning(wrk.WORDS)
    assert "--threads" not in c.warning(ab.WORDS) and "(-" not in c.warning(ab.WORDS)
    assert "(--threads, threads=)" in c.warning() and "(--dask, cluster=)" in c.warning()


def test_the_comparisons_pin_hint_runs_where_it_is_printed(tmp_path):
    """Bare httpbench printed "--no-pin to leave the scheduler alone" and
    refused --no-pin: the hint's flag now runs with the command that
    printed it, and with httpbench compare."""
    for command in ([], ["compare", "--agents", "httpbench,http.client"]):
        r = hb(*command, "-n", "50", cwd=tmp_path, timeout=120)
        assert r.returncode == 0, r.stderr
        said = re.search(r"; (--[\w-]+) to leave the scheduler alone", r.stderr)
        assert said, r.stderr
        again = hb(*command, "-n", "50", said.group(1), cwd=tmp_path, timeout=120)
        assert again.returncode == 0, again.stderr
        assert "leave the scheduler alone" not in again.stderr
    r = hb("--no-pin", "http://127.0.0.1:1/", cwd=tmp_path)
    assert r.returncode == 2 and "--no-pin is the comparison's" in r.stderr


@pytest.mark.parametrize("args", [
    ["-t", "1", "-c", "2", "-d", "1s"],
    ["-n", "20", "-c", "2", "-t", "5", "-z", "1s"],
    ["-n", "20", "-m", "10"],
    ["-n", "10", "-T", "5"],
    ["-n", "20", "-c", "2", "-q", "10"],
    ["-h2", "-n", "10"],
], ids=" ".join)
def test_every_did_you_mean_runs(tmp_path, server, args):
    """The command line's "did you mean ..." (another tool's habit): the
    command it suggests runs as it stands."""
    url = server.url("/rnd?c=10")
    r = hb(*args, url, cwd=tmp_path)
    assert r.returncode == 2, r.stdout
    suggested = re.search(r'did you mean "([^"]+)"', r.stderr)
    assert suggested, r.stderr
    argv = shlex.split(suggested.group(1))
    assert argv[0] == "httpbench" and argv[-1] == url
    if "--http2" in argv:
        with httpbench.Server(tls=True) as tls:
            done = hb(*argv[1:-1], "--insecure", tls.url("/rnd?c=10"), cwd=tmp_path)
    else:
        done = hb(*argv[1:], cwd=tmp_path)
    assert done.returncode == 0, (argv, done.stderr)


@pytest.mark.parametrize("mode", MODES)
def test_a_refusals_advice_names_the_modes_flags_or_says_which_command_has_them(mode):
    """A refused flag's line says what to use instead: a flag of the mode's
    own, or one of the plain command line's, said so ("the plain command
    line's --window", "httpbench --scenario"), which that command takes."""
    module = {"ab": ab, "hey": hey, "wrk": wrk, "h2load": h2load}[mode]
    own, plain = known(MODES[mode][1]), known(bench_parser)
    for flag in module.FLAGS:
        if not flag.refused:
            continue
        for named in FLAG.findall(flag.here):
            if named in own:
                continue
            assert named in plain, (mode, flag.names, named)
            before = flag.here[:flag.here.index(named)]
            assert "plain command line" in before or "httpbench " in before, (mode, flag.here)
