"""The command line's errors: one line and a status, framing that disagrees
with the body refused before anything is sent, output files written after
the run and never left behind by one that never began."""

from __future__ import annotations

import json
import time

import pytest

import httpbench
from helpers import OK, hb


URL = "http://127.0.0.1:1/"


@pytest.mark.parametrize("headers,body,error", [
    ({"Content-Length": "5"}, b"abc", "Content-Length given does not match"),
    ({"Content-Length": "1"}, b"abc", "Content-Length given does not match"),
    ({"Content-Length": "3x"}, b"abc", "Content-Length given does not match"),
    ([("Content-Length", "3"), ("Content-Length", "4")], b"abc", "does not match"),
    ({"Content-Length": "5"}, None, "does not match the body's 0 bytes"),
    ({"Transfer-Encoding": "chunked"}, b"0\r\n\r\n", "Transfer-Encoding cannot be given"),
    ({"transfer-encoding": "gzip"}, b"abc", "Transfer-Encoding cannot be given"),
])
def test_framing_headers_that_disagree_with_the_body_are_refused_before_sending(
        scripted, headers, body, error):
    """Item 18: a Content-Length unlike the body's length smuggles a second
    request inside the body; a Transfer-Encoding has the server read the
    body as something other than what is sent."""
    srv = scripted([("recv",), ("send", OK)])
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        with pytest.raises(ValueError, match=error):
            conn.request("POST", "/", headers=headers, body=body)
        assert conn.bytes_sent == 0
    with pytest.raises(ValueError, match=error):
        httpbench.run(f"http://127.0.0.1:{srv.port}/", "POST", body, headers, requests=1,
                      progress=False)
    assert srv.requests == []


def test_command_line_header_that_disagrees_with_the_body_exits_2(tmp_path):
    post = tmp_path / "body"
    post.write_bytes(b"abc")
    r = hb("-n", "1", "-p", str(post), "-H", "Content-Length: 9", URL, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "Content-Length given does not match" in r.stderr and r.stdout == ""


@pytest.mark.parametrize("args,status,error", [
    (["-n", "3", "http://nonexistent.invalid/"], 1, "cannot resolve nonexistent.invalid"),
    (["-n", "3", "--threads", "99999999999", URL], 2, "--threads must be"),
    (["-n", "3", "-e", "/nonexistent/dir/x.csv", URL], 2, "-e: cannot write"),
    (["-n", "3", "--json", "/nonexistent/dir/x.json", URL], 2, "--json: cannot write"),
    (["compare", "--json", "/nonexistent/dir/x.json", URL], 2, "--json: cannot write"),
    (["compare", "-c", "0", URL], 2, "-c must be"),
])
def test_command_line_errors_are_one_line_and_a_status(tmp_path, args, status, error):
    """Item 19: these printed tracebacks, and the output files were opened
    only after the whole run."""
    t0 = time.monotonic()
    r = hb(*args, cwd=tmp_path)
    assert r.returncode == status, r.stderr
    assert r.stderr.count("\n") == 1 and error in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and time.monotonic() - t0 < 20


def test_output_files_are_written_after_the_run_and_left_out_when_it_never_began(tmp_path):
    with httpbench.Server() as srv:
        r = hb("-q", "-n", "50", "-e", "p.csv", "--json", "r.json", srv.url("/rnd?c=5"),
               cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p.csv").read_text().startswith("Percentage served,Time in ms\n0,")
    assert json.loads((tmp_path / "r.json").read_text())["complete"] == 50
    r = hb("-n", "3", "-e", "never.csv", "http://nonexistent.invalid/", cwd=tmp_path)
    assert r.returncode == 1 and not (tmp_path / "never.csv").exists()


def test_t_beside_d_is_wrks_habit_and_a_usage_error(tmp_path):
    r = hb("-t", "1", "-d", "2s", "http://127.0.0.1:1/", cwd=tmp_path)
    assert r.returncode == 2 and 'did you mean "httpbench wrk -t 1 -d 2s' in r.stderr


@pytest.mark.parametrize("command", [[], ["compare"], ["capacity"]])
@pytest.mark.parametrize("flags,error", [
    (["-c", "0"], "-c must be"),
    (["--concurrency", "-3"], "-c must be"),
    (["-n", "0"], "-n must be"),
    (["--threads", "0"], "--threads must be"),
    (["-s", "soon"], "-s takes a time like 10, 10s"),
    (["-s", "nan"], "-s must be"),
    (["-H", "no colon"], "-H takes 'Name: value'"),
])
def test_the_shared_flags_mean_and_check_the_same_in_every_subcommand(tmp_path, command, flags,
                                                                      error):
    """-c, -n, --threads, -s and -H are defined once (cli/common.py's
    COMMON) and checked once, so each subcommand that has one refuses a bad
    value with the same words; one that lacks it says so, naming the flag."""
    from httpbench.cli.bench import bench_parser
    from httpbench.cli.capacity import capacity_parser
    from httpbench.cli.compare import compare_parser
    parser = {(): bench_parser, ("compare",): compare_parser,
              ("capacity",): capacity_parser}[tuple(command)]()
    has = {o for a in parser._actions for o in a.option_strings}
    r = hb(*command, *flags, URL, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    if flags[0] in has:
        assert r.stderr.count("\n") == 1 and error in r.stderr, r.stderr
    else:
        assert f"unrecognized flag {flags[0]}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("command,wrong,right", [
    ([], "--treads", "--threads"),
    ([], "--josn", "--json"),
    ([], "-Q", "-q"),
    (["wrk"], "--conections", "--connections"),
    (["wrk"], "--latancy", "--latency"),
    (["ab"], "--josn", "--json"),
    (["hey"], "--cpus", "-cpus"),
    (["h2load"], "--requets", "--requests"),
    (["compare"], "--agnets", "--agents"),
    (["capacity"], "--stages", "--stage"),
    (["report"], "--ouput", "--output"),
    (["serve"], "--prot", "--port"),
])
def test_a_misspelt_flag_is_named_with_the_closest_flag(tmp_path, command, wrong, right):
    """argparse printed its whole usage block (7 to 17 lines), then
    "unrecognized arguments" and no suggestion: now a line naming the flag
    and the closest one the command has, and where the rest are listed."""
    r = hb(*command, wrong, "5", URL, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    prog = " ".join(["httpbench", *command])
    assert r.stderr.splitlines() == [
        f"{prog}: unrecognized flag {wrong}: did you mean {right}?",
        f"{prog}: {prog} --help lists every flag"], r.stderr
    assert not r.stdout


def test_help_says_none_in_words(tmp_path):
    """--help showed Python's None ("None: wide open"): the command line
    says what not giving the flag means."""
    for command in ([], ["ab"], ["wrk"], ["hey"], ["h2load"], ["capacity"], ["compare"],
                    ["serve"], ["report"]):
        r = hb(*command, "--help", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "None" not in r.stdout, (command, [x for x in r.stdout.splitlines()
                                                  if "None" in x])
    assert "(not given: wide open" in " ".join(hb("--help", cwd=tmp_path).stdout.split())


def test_the_shared_flags_are_defined_once():
    """No subcommand defines a shared flag of its own."""
    from httpbench.cli.bench import bench_parser
    from httpbench.cli.capacity import capacity_parser
    from httpbench.cli.common import COMMON
    from httpbench.cli.compare import compare_parser
    shared = {dest: flags for dest, (flags, _) in COMMON.items()}
    for make in (bench_parser, compare_parser, capacity_parser):
        for action in make()._actions:
            for dest, flags in shared.items():
                if set(action.option_strings) & set(flags):
                    assert action.dest == dest and tuple(action.option_strings) == flags, (
                        make.__name__, action.option_strings)


def test_an_output_fifo_without_a_reader_or_an_endless_body_is_refused_at_once(tmp_path):
    """The log's FIFO (issue 34) had cousins: --json to a FIFO no one reads
    held the run before it began, and -p /dev/zero read for ever. Each is
    exit 2 in well under the time they took; a pipe that is read (--json
    >(jq .), here a /dev/fd path) is written to, as a file would be."""
    import os
    import subprocess
    import sys
    os.mkfifo(tmp_path / "out.json")
    with httpbench.Server() as srv:
        url = srv.url("/rnd?c=10")
        for args, said in ((["--json", "out.json"], "a FIFO that no one reads"),
                           (["-p", "/dev/zero"], "over the 256 MiB"),
                           (["-u", "/dev/zero"], "over the 256 MiB")):
            t = time.monotonic()
            r = hb("-q", "-n", "5", *args, url, cwd=tmp_path, timeout=30)
            assert r.returncode == 2 and said in r.stderr, r.stderr
            assert time.monotonic() - t < 20
        assert srv.stats()["requests"] == 0
        (tmp_path / "huge").write_bytes(b"")
        os.truncate(tmp_path / "huge", (256 << 20) + 1)
        r = hb("-q", "-n", "5", "-p", "huge", url, cwd=tmp_path)
        assert r.returncode == 2 and "over the 256 MiB" in r.stderr
        read, write = os.pipe()
        child = subprocess.Popen([sys.executable, "-m", "httpbench", "-q", "-n", "5", "--json",
                                  f"/dev/fd/{write}", url], pass_fds=(write,), cwd=tmp_path,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        os.close(write)
        with os.fdopen(read) as pipe:
            got = pipe.read()
        assert child.wait(60) == 0, child.stderr.read() if child.stderr else ""
        assert json.loads(got)["complete"] == 5


def test_every_time_flag_reads_units(tmp_path):
    """`capacity --stage 2s` was refused while every other time flag took
    "2s": every flag that takes a time is a TIME, read by the one parser
    (cli.common.parse_time), and says so in the same words when wrong."""
    from httpbench.cli.bench import bench_parser
    from httpbench.cli.capacity import capacity_parser
    from httpbench.cli.compare import compare_parser
    from httpbench.cli.serve import serve_parser
    times = []
    for name, parser in (("", bench_parser()), ("compare", compare_parser()),
                         ("capacity", capacity_parser()), ("serve", serve_parser())):
        for a in parser._actions:
            if a.metavar in ("SECONDS", "TIME", "N|TIME") or "seconds" in (a.help or ""):
                assert a.metavar != "SECONDS" and a.type is None, (name, a.option_strings)
                times.append((name, tuple(a.option_strings)))
    assert ("capacity", ("--stage",)) in times and ("serve", ("--upstream-timeout",)) in times
    for command, names in times:
        args = [command] if command else []
        if "--metrics-linger" in names:
            args.extend(["--metrics", "127.0.0.1:9464"])
        if "--upstream-timeout" in names:
            args.extend(["--proxy", "--port", "0"])
        r = hb(*args, names[-1], "2x", *([] if command == "serve" else [URL]), cwd=tmp_path)
        assert r.returncode == 2 and any(f"{n} takes a time like 10, 10s, 500ms" in r.stderr
                                         for n in names), (command, names, r.stderr)
    with httpbench.Server() as srv:
        r = hb("capacity", "--stage", "300ms", "--start", "50", "--slo", "p99<1s", "-c", "2",
               "--no-confirm", srv.url("/rnd?c=10"), cwd=tmp_path, timeout=120)
        # (A search it ran: exit 1 only if the client could not keep up, as
        # a sanitizer build's may not.)
        assert r.returncode in (0, 1) and r.stderr == "" and "capacity: " in r.stdout
        stages = [x for x in r.stdout.splitlines() if x.strip()[:1].isdigit()]
        assert stages and all(s.split()[0] != "0" for s in stages)


def test_serves_missing_files_are_named_by_their_flags(tmp_path):
    """A wrong --static, --cert or --key: exit 2 and the flag named, where
    the server's own errors named its argument (static_dir) or none."""
    (tmp_path / "f.txt").write_text("x")
    for args, words in ((["--static", "nonexist"], "--static: not a directory: nonexist"),
                        (["--static", "f.txt"], "--static: not a directory: f.txt"),
                        (["--tls", "--cert", "nonexist"], "--cert: no such file: nonexist"),
                        (["--tls", "--cert", "f.txt", "--key", "nokey"],
                         "--key: no such file: nokey")):
        r = hb("serve", "--port", "0", *args, cwd=tmp_path, timeout=30)
        assert r.returncode == 2 and r.stderr == f"httpbench serve: {words}\n", (args, r.stderr)


def test_a_reader_that_goes_away_gets_no_traceback(tmp_path, server):
    """`httpbench ab ... | head -3` printed a BrokenPipeError traceback:
    the rest of the report goes nowhere, quietly, exit status 1, and the
    files asked for are written all the same."""
    import os
    import shlex
    import subprocess
    import sys

    from helpers import tool_env
    # The banner, read whole by the second reader before it goes: the
    # report's first write then finds no reader (a `head -1` could go
    # between the banner's two lines, and the run not start).
    banner = ("This is httpbench, in ApacheBench 2.3's mode (httpbench ab)\n"
              "Benchmarking 127.0.0.1 (be patient)")
    whole = shlex.join([sys.executable, "-c",
                        f"import sys; sys.stdin.buffer.read({len(banner.encode())})"])
    for reader in ("true", whole):
        # (true is gone before the banner is written, or while it is.)
        (tmp_path / "r.json").unlink(missing_ok=True)
        # (bash and the reader without a sanitizer run's runtime, httpbench
        # with it.)
        kept = [f"{k}={os.environ[k]}" for k in ("LD_PRELOAD", "ASAN_OPTIONS")
                if k in os.environ]
        cmd = shlex.join(["env", *kept, sys.executable, "-m", "httpbench", "ab", "-q", "-n",
                          "2000", "--json", "r.json", server.url("/rnd?c=10")])
        done = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd} | {reader}"],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path,
                              env=tool_env())
        assert done.returncode == 1, done.stderr
        assert done.stderr == "", done.stderr
        if reader == whole:  # (the run was over when the report's reader went)
            import json
            assert json.loads((tmp_path / "r.json").read_text())["complete"] == 2000
