"""Every example the command line shows (`httpbench --help`, each mode's
help, `serve`'s start-up line) runs against the embedded server, its
counts and durations cut short, and most of its answers are 2xx."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import httpbench
from helpers import hb, wait_for_port, free_port

SHOP = """\
import httpbench
scenario = httpbench.Scenario([httpbench.Request("GET", "/rnd?c=100"),
                               httpbench.Request("POST", "/echo", body=b"abc")])
"""

# Cut short: a count or a time as the example gives it -> what the test runs.
_SHORT = {"-n": "300", "-d": "1s", "-t": "1", "--duration": "1s", "-z": "1s", "-D": "1",
          "--warm-up-time": "200ms"}
# Which of them are a count or a time in each mode (hey's -D is a file, wrk's
# -t its threads, h2load's -d a file).
_SHORTENED = {"plain": {"-n", "-d", "-t", "--duration", "-z"}, "ab": {"-n", "-t"},
              "wrk": {"-d", "--duration"}, "hey": {"-n", "-z"},
              "h2load": {"-n", "-D", "--warm-up-time"}}


def examples(help_text: str) -> list[list[str]]:
    """The example command lines in a help text: each line that starts with
    `httpbench`, without its trailing comment in parentheses."""
    found = []
    for line in help_text.splitlines():
        line = line.strip()
        if line.startswith("httpbench ") and "://" in line:
            line = re.sub(r"\s{2,}\(.*\)$", "", line)
            found.append(shlex.split(line)[1:])
    return found


def shortened(words: list[str], url_of: dict[str, str], cafile: str) -> list[str]:
    out: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        m = re.fullmatch(r"(-[a-zA-Z]|--duration|--warm-up-time)(\d.*)?", word)
        mode = words[0] if words[0] in _SHORTENED else "plain"
        if m and m.group(1) in _SHORTENED[mode]:
            out += [m.group(1), _SHORT[m.group(1)]]
            skip = m.group(2) is None and i + 1 < len(words)
            continue
        for old, new in url_of.items():
            word = word.replace(old, new)
        out.append(cafile if word == "ca.pem" else word)
    return out


@pytest.fixture(scope="module")
def servers():
    with httpbench.Server(threads=2) as plain, httpbench.Server(tls=True) as tls:
        yield {"http://127.0.0.1:8080": plain.url().rstrip("/"),
               "https://127.0.0.1:8443": tls.url().rstrip("/"),
               "URL": plain.url("/rnd?c=2048")}, str(tls.cafile)


def _help(*mode: str) -> str:
    # (Run outside the source tree: in a clone's root its httpbench/ folder,
    # without the built core, would shadow the installed package.)
    return subprocess.run([sys.executable, "-m", "httpbench", *mode, "--help"],
                          capture_output=True, text=True, check=True, cwd="/").stdout


HELPS = {"plain": (), "ab": ("ab",), "wrk": ("wrk",), "hey": ("hey",), "h2load": ("h2load",)}


def test_every_help_has_examples_and_they_target_a_route_that_answers_200():
    for mode in HELPS.values():
        lines = examples(_help(*mode))
        assert len(lines) >= 3, mode
        for words in lines:
            urls = [w for w in words if "://" in w]
            assert urls and all("/rnd?c=" in u or u.endswith("/echo") or u.endswith(":8080")
                                for u in urls), words


def _run_example(words: list[str], servers, tmp_path: Path) -> None:
    url_of, cafile = servers
    (tmp_path / "body.json").write_text('{"a": 1}')
    (tmp_path / "shop.py").write_text(SHOP)
    args = shortened(words, url_of, cafile)
    if "--json" in args:
        args[args.index("--json") + 1] = "r.json"
    else:
        args += ["--json", "r.json"]
    r = hb(*args, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    d = json.loads((tmp_path / "r.json").read_text())
    ok = sum(n for code, n in d["status_counts"].items() if 200 <= int(code) < 300)
    assert d["complete"] > 0 and ok > d["complete"] / 2, (args, d["status_counts"])


@pytest.mark.parametrize("mode", HELPS)
def test_each_example_in_the_help_runs_and_answers_2xx(tmp_path, servers, mode):
    for words in examples(_help(*HELPS[mode])):
        _run_example(([mode] if mode != "plain" else []) + words
                     if words[0] not in HELPS else words, servers, tmp_path)


def test_serves_start_up_line_is_an_example_that_answers_200(tmp_path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "httpbench", "serve", "--port", str(port)],
                            stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        wait_for_port(port, proc)
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        tries = [line for line in lines if line.startswith("try: httpbench ")]
        assert tries, lines
        words = shlex.split(tries[0][len("try: httpbench "):])
        _run_example(words, ({}, ""), tmp_path)
    finally:
        proc.terminate()
        proc.wait(10)


def test_slash_is_404_and_its_body_lists_the_routes():
    import urllib.error
    import urllib.request
    with httpbench.Server() as srv:
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(srv.url("/"), timeout=5)
        assert e.value.code == 404
        body = e.value.read().decode()
    for route in ("/rnd?c=N", "/echo", "/status/CODE", "/delay?ms=N"):
        assert route in body, body
