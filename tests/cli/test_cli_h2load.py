"""`httpbench h2load ...`: h2load 1.52's command line and report layout.
Side by side with the real h2load against nginx (h2c, h2 over TLS,
HTTP/1.1) and the embedded server: the same requests, statuses and bytes
for the same count-bounded command line; every line a script greps parsed
by one pattern from both; the flags it cannot honour refused."""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import httpbench
from h2peer import H2Server
from helpers import OK, free_port, grep_each, hb, nginx, side_by_side, tool_env, wait_for_port
from httpbench.cli.flags import markdown
from httpbench.cli.h2load import FLAGS
from httpbench.render.h2load import dtos, format_duration, utos_funit

H2LOAD = shutil.which("h2load")
needs_h2load = pytest.mark.skipif(H2LOAD is None, reason="h2load not installed "
                                                         "(apt-get install nghttp2-client)")

PATTERNS = {
    "finished": r"^finished in ([\d.]+\w+), ([\d.]+) req/s, ([\d.]+\w?)B/s$",
    "requests": r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                r"(\d+) failed, (\d+) errored, (\d+) timeout$",
    "status": r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx$",
    "traffic": r"^traffic: [\d.]+\w?B \((\d+)\) total, [\d.]+\w?B \((\d+)\) headers \(space "
               r"savings ([\d.]+)%\), [\d.]+\w?B \((\d+)\) data$",
    "request": r"^time for request:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+",
    "connect": r"^time for connect:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+",
    "ttfb": r"^time to 1st byte:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+",
    "rps": r"^req/s\s+:\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+",
}


def parse(out: str) -> dict[str, tuple[str, ...]]:
    return grep_each(PATTERNS, out)


def both(args: list[str], url: str, cwd: Path, counted: bool = True) -> tuple[str, str]:
    """h2load's and httpbench's outputs; where their bytes are compared
    (counted), a count-bounded run within a wall-clock second, so that both
    read the server's Date once a connection (HPACK's bytes for a new one
    would differ otherwise)."""
    return side_by_side("h2load", args, url, cwd, ours_ok=(0, 1),
                        one_second=counted and "-D" not in args)


def exact(real: str, ours: str, headers: bool = True, frames: bool = True) -> None:
    """The requests line, the status codes and the traffic's bytes equal;
    headers False: not the header bytes (HTTP/1.1's, counted otherwise);
    frames False: not the total, whose control frames differ by timing
    (nginx resets a stream it answered 405 before reading its body, or
    not, as the body's bytes race the answer)."""
    fr, fo = parse(real), parse(ours)
    assert fr["requests"] == fo["requests"] and fr["status"] == fo["status"], (real, ours)
    total_r, head_r, _, data_r = fr["traffic"]
    total_o, head_o, _, data_o = fo["traffic"]
    assert data_r == data_o, (real, ours)
    if frames:
        assert total_r == total_o, (real, ours)
    if headers:
        assert head_r == head_o, (real, ours)


# Count-bounded command lines from h2load's manual, each honoured flag once.
H2C = [
    ["-n", "1000", "-c", "4", "-m", "10"],
    ["-n", "500", "-c", "2"],
    ["--requests=300", "--clients=3", "--max-concurrent-streams=5", "--threads=1"],
    ["-n", "200", "-c", "2", "-m", "4", "-H", "x-test: 1", "-H", "accept: */*"],
    ["-n", "100", "-c", "1", "-d", "{body}"],
    ["-n", "400", "-c", "4", "-m", "2", "-t", "2"],
    ["-n", "200", "-c", "2", "-p", "h2c"],
]
H1 = [
    ["--h1", "-n", "300", "-c", "3"],
    ["-n", "200", "-c", "2", "-p", "http/1.1", "-m", "4"],
    ["--h1", "-n", "100", "-c", "1", "-d", "{body}"],
]


@pytest.mark.timing
@needs_h2load
@pytest.mark.parametrize("args", H2C + H1, ids=" ".join)
def test_requests_statuses_and_bytes_equal_h2loads_against_nginx(tmp_path, args):
    """h2c by prior knowledge, and HTTP/1.1 (--h1, -p http/1.1), on a
    route that answers 200 and one that answers 404 (POSTs: 405): the
    requests, status codes and bytes h2load prints, exactly (HTTP/1.1's
    header bytes aside: h2load counts names and values only)."""
    h1 = args in H1
    (tmp_path / "body").write_bytes(b"q" * 700)
    args = [a.format(body=tmp_path / "body") for a in args]
    with nginx(h2c_port=(h2c := free_port())) as up:
        if up is None:
            pytest.skip("nginx not installed")
        port = up[0] if h1 else h2c
        for path in ("/rnd", "/missing"):
            real, ours = both(args, f"http://127.0.0.1:{port}{path}", tmp_path)
            exact(real, ours, headers=not h1, frames=h1 or "-d" not in args)


@pytest.mark.timing
@needs_h2load
def test_over_tls_and_on_the_embedded_server(tmp_path, pki):
    tls = (f"ssl_certificate {pki['server']}; ssl_certificate_key {pki['server_key']};")
    with nginx(tls=tls, http2=True) as up, httpbench.Server() as srv:
        if up is None:
            pytest.skip("nginx not installed")
        for args in (["-n", "300", "-c", "3", "-m", "5"],
                     ["-n", "200", "-c", "2", "--ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256",
                      "--tls13-ciphers", "TLS_AES_128_GCM_SHA256"],
                     ["--h1", "-n", "100", "-c", "2"]):
            real, ours = both(args, f"https://127.0.0.1:{up[0]}/rnd", tmp_path)
            exact(real, ours, headers="--h1" not in args)
        for args, path in ((["-n", "500", "-c", "5", "-m", "8"], "/rnd?c=2048"),
                           (["-n", "200", "-c", "2"], "/status/503")):
            real, ours = both(args, srv.url(path), tmp_path)
            exact(real, ours)


@pytest.mark.timing
@needs_h2load
def test_a_tls_server_of_http11_alone_is_run_over_http11_as_h2load_runs_it(tmp_path, pki):
    """h2load offers h2 and http/1.1 by ALPN and speaks what the server
    chooses: against nginx's TLS port without http2 and the embedded
    server's TLS without HTTP/2 it runs HTTP/1.1 (-m the pipeline's depth),
    where offering h2 alone failed every request (nginx's alert: no
    application protocol)."""
    tls = (f"ssl_certificate {pki['server']}; ssl_certificate_key {pki['server_key']};")
    with nginx(tls=tls) as up, httpbench.Server(tls=True, http2=False) as srv:
        if up is None:
            pytest.skip("nginx not installed")
        for url in (f"https://127.0.0.1:{up[0]}/rnd", srv.url("/rnd?c=2048")):
            real, ours = both(["-n", "100", "-c", "2", "-m", "4"], url, tmp_path)
            assert "Application protocol: http/1.1" in real
            assert "Application protocol: http/1.1" in ours
            exact(real, ours, headers=False)
            assert parse(ours)["requests"][3] == "100"


def test_the_alpn_probe_that_cannot_connect_leaves_no_socket_open(tmp_path):
    """A Unix socket that is not there, a refused port: (False, None), the
    run left to report it, and no socket left for the collector."""
    import gc
    import warnings

    from httpbench.cli.h2load import server_alpn
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert server_alpn("https://localhost/", str(tmp_path / "none.sock"), None) == \
            (False, None)
        assert server_alpn(f"https://127.0.0.1:{free_port()}/", None, None) == (False, None)
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


@pytest.mark.timing
@needs_h2load
@pytest.mark.skipif(shutil.which("nghttpd") is None, reason="apt-get install nghttp2-server")
@pytest.mark.parametrize("extra", [["-b", "255"], ["--trailer", "x-t: 1"], ["-w", "10"]],
                         ids=" ".join)
def test_padding_trailers_and_small_windows_count_as_h2loads(tmp_path, extra):
    """nghttpd padding every frame (-b), sending trailers, or granting a
    1 KiB window: the header bytes and their space savings are the
    response heads' blocks as h2load counts them (no padding, no
    trailers); the loop had counted every HEADERS payload whole, padding
    and trailers too (255 bytes a response more under -b 255)."""
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "rnd").write_bytes(os.urandom(2048))
    port = free_port()
    proc = subprocess.Popen(["nghttpd", "--no-tls", "-d", str(tmp_path / "www"), *extra,
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=tool_env())
    try:
        wait_for_port(port, proc)
        real, ours = both(["-n", "400", "-c", "2", "-m", "5"], f"http://127.0.0.1:{port}/rnd",
                          tmp_path)
    finally:
        proc.terminate()
        proc.wait(10)
    exact(real, ours)
    assert parse(real)["traffic"][2] == parse(ours)["traffic"][2], (real, ours)  # savings


def seconds(text: str) -> float:
    """h2load's format_duration read back: 482us, 30.44ms, 1.20s."""
    for unit, scale in (("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale
    raise AssertionError(text)


@needs_h2load
def test_time_to_1st_byte_is_each_clients_from_its_connect_as_h2loads(tmp_path):
    """h2load's `time to 1st byte` is each client's, from its connect's
    start to its first response byte: never less than its connect (a TLS
    handshake included), and one a connection. Over TLS against the
    embedded server (HTTP/2 and --h1) and on a route that answers after
    30 ms, beside the real h2load; each request's own wait for its first
    byte (tens of microseconds here) would be under the connect."""
    with httpbench.Server(tls=True) as srv:
        for args, path in ((["-n", "40", "-c", "4", "-m", "2"], "/rnd?c=100"),
                           (["--h1", "-n", "40", "-c", "4"], "/rnd?c=100"),
                           (["-n", "8", "-c", "2"], "/delay?ms=30")):
            for out in both(args, srv.url(path), tmp_path):
                f = parse(out)
                connect, ttfb = [[seconds(x) for x in f[k]] for k in ("connect", "ttfb")]
                assert ttfb[0] >= connect[0] and ttfb[2] >= connect[2], out
                if "delay" in path:
                    assert ttfb[0] >= 0.030, out


@pytest.mark.parametrize("args", [[], ["--h1"]], ids=["h2", "h1"])
def test_time_for_request_is_from_its_send_not_its_connect_as_h2loads(tmp_path, args):
    """h2load's `time for request` runs from the request's HEADERS (over
    HTTP/1.1 its write), once the connection is made (h2load.cc's
    record_request_time, in before_frame_send_callback): a connection's
    first request does not carry its connect and TLS handshake, which
    httpbench's own latency counts (ab's habit). Over TLS, on a route that
    answers after 30 ms: the row is the run's processing (total less
    connect), not its latency from the connect's start."""
    with httpbench.Server(tls=True) as srv:
        r = hb("h2load", *args, "-n", "8", "-c", "2", "--json", "r.json",
               srv.url("/delay?ms=30"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = httpbench.Result.from_json((tmp_path / "r.json").read_text())
    assert d.complete == 8 and d.connects == 2 and d.connect_time.max > 0
    row = parse(r.stdout)["request"][:3]
    assert row == tuple(format_duration(x) for x in (d.processing.min, d.processing.max,
                                                     d.processing.mean)), r.stdout
    assert d.processing.min >= 0.030


@needs_h2load
def test_each_clients_req_s_is_over_its_own_time_as_h2loads(tmp_path):
    """h2load's `req/s` row is each client's responses over its own time,
    from its connect to its disconnect: five requests of 50 ms over two
    connections make one of three and one of two, each 20 a second of its
    own time (over the run's 150 ms the second's would be 13.3)."""
    with httpbench.Server() as srv:
        outs = both(["-n", "5", "-c", "2"], srv.url("/delay?ms=50"), tmp_path)
    for out in outs:
        lo, hi, mean, _ = (float(x) for x in parse(out)["rps"])
        assert 17.0 <= lo <= mean <= hi <= 20.1, out



@needs_h2load
def test_under_d_a_clients_time_runs_to_the_durations_end_as_h2loads(tmp_path):
    """h2load -D stops its clients at the duration's end, so a client's
    time runs from its connect to it, though its last answer came before:
    `-D 1 --rps 10` is 10 answers, the last at 0.9 s, over 1 s: 10.00 a
    second, or a little more for a connect that began late (a slow start:
    7 ms under the sanitizer read 10.07). The mode ended a connection's
    time at the run's last answer (11.1 a second), as it would for a
    server that had gone quiet near the end. Its figure is held to its own
    connect's start, from the per-request log (a connection's first
    request starts at its connect, ab's habit)."""
    args = ["-D", "1", "-c", "1", "--rps", "10"]
    with httpbench.Server() as srv:
        real = subprocess.run(["h2load", *args, srv.url("/rnd?c=10")], capture_output=True,
                              text=True, env=tool_env(), timeout=120)
        ours = hb("h2load", *args, "--log", "l.csv", srv.url("/rnd?c=10"), cwd=tmp_path)
    assert real.returncode == 0 and ours.returncode == 0, (real.stderr, ours.stderr)
    for out in (real.stdout, ours.stdout):
        lo, hi, mean, _ = (float(x) for x in parse(out)["rps"])
        assert parse(out)["requests"][2] == "10", out
        assert lo == mean == hi, out
    assert 9.9 <= float(parse(real.stdout)["rps"][0]) <= 10.05, real.stdout
    began = min(x.start for x in httpbench.read_log(tmp_path / "l.csv"))
    assert 0 <= began < 0.1
    assert float(parse(ours.stdout)["rps"][0]) == pytest.approx(10 / (1.0 - began), abs=0.006)

@needs_h2load
def test_progress_and_application_protocol_lines_are_h2loads(tmp_path):
    """Under -n, "progress: P% done" at each tenth of the requests (each
    one below ten: 8%, 16%, ... for 25), and the first connection's
    "Application protocol" (h2c, or http/1.1 with --h1) as it opens, before
    the progress lines (httpbench printed it with the report, after them):
    the same lines in the same order as h2load's with one thread, the whole
    start of the output (a run of 20,000 lasts past the first progress
    call); under -D none of these (its clients' lines instead), as h2load."""
    with httpbench.Server() as srv:
        url = srv.url("/rnd?c=100")
        for args in (["-n", "1000", "-c", "2", "-m", "2"], ["-n", "25", "-c", "2"],
                     ["--h1", "-n", "300", "-c", "3"], ["-n", "20000", "-c", "1"]):
            real, ours = (out.split("finished in")[0]
                          for out in both(args, url, tmp_path, counted=False))
            assert ours == real and real.count("\n") > 12, (args, real, ours)
            assert real.splitlines()[2].startswith("Application protocol: "), real
        timed = hb("h2load", "-D", "1", "-c", "2", url, cwd=tmp_path).stdout
    assert "% done" not in timed and "Application protocol: h2c" in timed, timed


def start_lines(out: str) -> list[str]:
    """What h2load prints before its report but the Application protocol
    line (printed as the first connection is made, so among the others)."""
    return [line for line in out.split("finished in")[0].splitlines()
            if line and not line.startswith("Application protocol:")]


@needs_h2load
def test_spawning_and_phase_lines_are_h2loads(tmp_path):
    """h2load's "spawning thread" line for each thread (its clients and its
    share of -n), its first thread's progress lines for its own share, and
    under -D the phases' lines: warm-up started, the clients started, the
    warm-up's and the main duration's ends. The same lines as h2load's,
    in its order where its threads do not race (-t 1)."""
    with httpbench.Server() as srv:
        url = srv.url("/rnd?c=100")
        for args in (["-t", "2", "-c", "5", "-n", "11"], ["-c", "25", "-D", "500ms"],
                     ["-c", "3", "-D", "1", "--warm-up-time", "1"],
                     ["-D", "0", "-n", "30", "-c", "3"]):
            real, ours = (start_lines(out) for out in both(args, url, tmp_path, counted=False))
            assert ours == real and len(real) > 3, (args, real, ours)
        # h2load's threads print their phases' lines at once (on a busy
        # machine one line inside another): its spawning lines, printed
        # before they start, and the phases' lines in h2load's order.
        args = ["-t", "2", "-c", "3", "-D", "1", "--warm-up-time", "1"]
        real, ours = (start_lines(out) for out in both(args, url, tmp_path, counted=False))
        assert ours[:3] == real[:3], (real, ours)
        assert ours[3:] == [
            "Warm-up started for thread #0.", "Warm-up started for thread #1.",
            "progress: 50% of clients started", "progress: 100% of clients started",
            "Warm-up phase is over for thread #0.",
            "Main benchmark duration is started for thread #0.",
            "Warm-up phase is over for thread #1.",
            "Main benchmark duration is started for thread #1.",
            "Main benchmark duration is over for thread #0. Stopping all clients.",
            "Stopped all clients for thread #0",
            "Main benchmark duration is over for thread #1. Stopping all clients.",
            "Stopped all clients for thread #1"], ours


@needs_h2load
def test_durations_and_threads_are_read_as_h2load_reads_them(tmp_path):
    """-D and --warm-up-time are h2load's <DURATION>: a whole number of
    seconds or with a unit (s, ms, m, h); a fraction, a compound, another
    unit or a number past int64 (which crashed the mode's float) is refused
    in h2load's words, as h2load refuses it. -c below -t is
    refused, as h2load refuses it."""
    url = "http://127.0.0.1:9/"
    for args in (["-D", "0.5"], ["-D", "1m30s"], ["-D", "10us"], ["-D", "1.5s"],
                 ["-D", "1", "--warm-up-time", "0.5"], ["-D", "-1"], ["-D", "s"],
                 ["-D", "9" * 400], ["-D", "9" * 5000 + "s"], ["-D", "9223372036854775808"]):
        real = subprocess.run([H2LOAD, *args, url], capture_output=True, text=True,
                              timeout=30)
        ours = hb("h2load", *args, url, cwd=tmp_path)
        flag = args[-2]
        assert real.returncode == 1 and f"{flag}: value error {args[-1]}" in real.stderr, real
        assert ours.returncode == 2 and f"{flag}: value error {args[-1]}" in ours.stderr, ours
        assert ours.stdout == "", ours.stdout
    real = subprocess.run([H2LOAD, "-t", "2", "-c", "1", url], capture_output=True, text=True,
                          timeout=30)
    ours = hb("h2load", "-t", "2", "-c", "1", url, cwd=tmp_path)
    assert "the number of clients must be greater than or equal to the number of threads" in (
        real.stderr) and real.returncode == 1, real
    assert "the number of clients must be greater than or equal to the number of threads" in (
        ours.stderr) and ours.returncode == 2, ours
    # More threads than CPUs: h2load's warning, and the run.
    with httpbench.Server() as srv:
        args = ["-t", str((os.cpu_count() or 1) + 1), "-c", "4", "-n", "4"]
        real = subprocess.run([H2LOAD, *args, srv.url("/rnd?c=10")], capture_output=True,
                              text=True, timeout=60)
        ours = hb("h2load", *args, srv.url("/rnd?c=10"), cwd=tmp_path)
    warning = "-t: warning: the number of threads is greater than hardware cores.\n"
    assert real.stderr == warning and real.returncode == 0, real
    assert ours.stderr == warning and ours.returncode == 0, ours


TLS_LINES = ("TLS Protocol: ", "Cipher: ", "Server Temp Key: ", "Application protocol: ")


def tls_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(TLS_LINES)]


@needs_h2load
def test_over_tls_it_negotiates_what_h2load_negotiates_and_says_so(tmp_path, pki):
    """h2load's cipher lists are its own (AES-128-GCM first over TLS 1.2,
    where httpbench's default is OpenSSL's, AES-256-GCM first): nginx, which
    takes the client's first over TLS 1.2, gave the two different ciphers,
    and so different work. The mode offers h2load's lists unless told, and
    prints h2load's four lines of the first handshake."""
    tls = (f"ssl_certificate {pki['server']}; ssl_certificate_key {pki['server_key']};")
    with nginx(tls=tls, http2=True) as up, httpbench.Server(
            tls=True, certfile=pki["server"], keyfile=pki["server_key"]) as srv:
        if up is None:
            pytest.skip("nginx not installed")
        for url in (f"https://127.0.0.1:{up[0]}/rnd", srv.url("/rnd")):
            for args in (["-n", "20", "-c", "2"], ["--h1", "-n", "20", "-c", "2"],
                         ["-n", "20", "-c", "2", "--ciphers", "ECDHE-ECDSA-AES256-GCM-SHA384",
                          "--tls13-ciphers", "TLS_AES_256_GCM_SHA384"]):
                real, ours = both(args, url, tmp_path)
                assert len(tls_lines(real)) == 4 and tls_lines(ours) == tls_lines(real), (
                    url, args, real, ours)
                # In h2load's place: as the first connection opens, before
                # the progress lines (httpbench's came with the report).
                start = [out.split("finished in")[0] for out in (real, ours)]
                assert start[0] == start[1], (url, args, real, ours)
        # (The defaults are h2load's: AES-128 over nginx's TLS 1.2; the
        # plain command line keeps OpenSSL's order there.)
        real, _ = both(["-n", "2"], f"https://127.0.0.1:{up[0]}/rnd", tmp_path)
        if "TLS Protocol: TLSv1.2" not in tls_lines(real):
            return  # (an nginx with TLS 1.3: both orders start with AES-128 there)
        assert "Cipher: ECDHE-ECDSA-AES128-GCM-SHA256" in tls_lines(real)
        plain = httpbench.run(f"https://127.0.0.1:{up[0]}/rnd", requests=2, verify=False,
                              progress=False)
        assert plain.tls_protocol.split(",")[1] == "ECDHE-ECDSA-AES256-GCM-SHA384"


@pytest.mark.timing
@needs_h2load
def test_a_duration_agrees_per_response(tmp_path):
    with httpbench.Server() as srv:
        real, ours = both(["-D", "1", "-c", "2", "-m", "4"], srv.url("/rnd?c=2048"), tmp_path)
        fr, fo = parse(real), parse(ours)
        per = [int(f["traffic"][3]) / int(f["requests"][3]) for f in (fr, fo)]
        assert per[0] == per[1] == 2048, (real, ours)



@needs_h2load
def test_finished_in_holds_the_warm_up_as_h2loads(tmp_path):
    """h2load's "finished in" is its wall time from start to stop, the
    warm-up's included, where its req/s is over -D's duration alone. The
    mode printed the duration alone (`finished in 1.00s` where h2load
    said 2.00s). The traffic is the measured part's: h2load's headers and
    data count the warm-up's bytes too, though its total does not (docs/
    h2load.md says so); here data is each done response's 2,048 bytes."""
    with httpbench.Server() as srv:
        real, ours = both(["-D", "1", "--warm-up-time", "1", "-c", "2"],
                          srv.url("/rnd?c=2048"), tmp_path)
    fr, fo = parse(real), parse(ours)
    for f in (fr, fo):
        assert 2.0 <= seconds(f["finished"][0]) < 2.3, (real, ours)
    assert fo["finished"][1] == f"{int(fo['requests'][3]):.2f}", ours
    assert int(fo["traffic"][3]) == 2048 * int(fo["requests"][2]), ours


@needs_h2load
def test_its_requests_carry_h2loads_fields(tmp_path, scripted):
    """h2load's requests carry Host (or :authority) and a user-agent, no
    accept: the mode's carry the same fields (its user-agent httpbench's),
    where it added httpbench's Accept: */*, which the server then reads in
    every request (over HTTP/2 a sixth field nghttp2 checks: 4.27 to 4.47
    us of the embedded server's CPU a request, docs/benchmarks.md)."""
    names = []
    for cmd in ([H2LOAD], [sys.executable, "-m", "httpbench", "h2load"]):
        srv = scripted([("recv",), ("send", OK)])
        subprocess.run([*cmd, "--h1", "-n1", "-c1", f"http://127.0.0.1:{srv.port}/h"],
                       capture_output=True, cwd=tmp_path, timeout=60)
        head = srv.requests[0].split(b"\r\n\r\n")[0].split(b"\r\n")
        names.append(sorted(line.split(b":")[0].lower() for line in head[1:]))
    assert names[0] == names[1] == [b"host", b"user-agent"], names

def test_h2loads_formats():
    assert format_duration(33e-6) == "33us" and format_duration(5.234e-3) == "5.23ms"
    assert format_duration(1.2) == "1.20s" and utos_funit(2076316) == "1.98M"
    assert utos_funit(10172) == "9.93K" and utos_funit(900) == "900"
    # util::dtos rounds the hundredths half away from zero (llround), where
    # Python's format rounds 0.125 to 0.12.
    assert dtos(0.125) == "0.13" and dtos(100.0) == "100.00" and dtos(66.666) == "66.67"
    assert dtos(0.0) == "0.00" and dtos(0.004) == "0.00" and dtos(12.5) == "12.50"


TABLE = ("                     min", "time for request:", "time for connect:",
         "time to 1st byte:", "req/s           :")


def columns(out: str) -> list[list[int]]:
    """Where each word of the table's lines ends: h2load sets each cell
    right-aligned in its own columns, so the ends are the layout."""
    rows = [line for line in out.splitlines() if line.startswith(TABLE)]
    assert len(rows) == 5, out
    return [[m.end() for m in re.finditer(r"\S+", line)] for line in rows]


@needs_h2load
def test_the_table_is_set_in_h2loads_columns(tmp_path, server):
    """The min/max/mean/sd/+/- sd table in h2load 1.52's columns (the +/- sd
    cell was a column short), and the req/s row's +/- sd is the share of
    connections within one deviation of the mean, as h2load's (it printed
    - before): one connection or two are always within it (100.00%)."""
    url = server.url("/rnd?c=100")
    for args in (["-c", "3", "-n", "300"], ["-c", "1", "-n", "50"], ["-c", "2", "-n", "100"],
                 ["-c", "4", "-n", "400", "-m", "4"]):
        real, ours = both(args, url, tmp_path)
        assert columns(real) == columns(ours), (real, ours)
        within = [line.split()[-1] for line in (real, ours)
                  for line in line.splitlines() if line.startswith("req/s ")]
        assert all(re.fullmatch(r"\d+\.\d\d%", w) for w in within), within
        if args[1] in ("1", "2"):
            assert within == ["100.00%", "100.00%"], (real, ours)


@needs_h2load
@pytest.mark.parametrize("fails", ["connect", "handshake"])
def test_a_request_whose_connection_never_opened_was_not_started_as_h2loads(tmp_path, server,
                                                                           fails):
    """No server on the port, or a TLS URL at a server that answers its
    ClientHello in plain HTTP: h2load counts its clients' requests failed
    and errored, never started nor done; httpbench counted them started and
    done (after a failed handshake until the `unopened` count), and printed
    progress lines for them. The start of the output (no progress line, no
    Application protocol), the report's requests line and its table now
    equal h2load's."""
    url = f"http://127.0.0.1:{free_port()}/" if fails == "connect" else \
        server.url("/").replace("http:", "https:")
    for args in (["-n", "10", "-c", "2"], ["-n", "7", "-c", "3", "-m", "4"]):
        real, ours = both(args, url, tmp_path)
        lines = [[line for line in out.splitlines() if line.startswith(("requests:", *TABLE))]
                 for out in (real, ours)]
        assert lines[0] == lines[1], (real, ours)
        assert real.split("finished in")[0] == ours.split("finished in")[0], (real, ours)
        n = args[1]
        assert f"requests: {n} total, 0 started, 0 done, 0 succeeded, {n} failed, {n} errored" \
            in ours, ours


@needs_h2load
@pytest.mark.parametrize("delay_ms,done", [(300, 3), (5000, 0)])
@pytest.mark.parametrize("protocol", [[], ["--h1"]], ids=["h2c", "h1"])
def test_what_is_in_flight_at_the_end_of_d_is_started_not_done_as_h2loads(tmp_path, protocol,
                                                                         delay_ms, done):
    """h2load -D stops its clients at the main duration's end: a request in
    flight then was started, not done, nor in the total, and the run took
    the duration. The h2load mode gave it the loop's second of grace:
    `finished in 1.20s, 3.33 req/s` and `4 total, 4 started, 4 done` where
    h2load says `1.00s, 3.00 req/s` and `3 total, 4 started, 3 done`; with
    none answered it said `finished in 0us`."""
    args = ["-D", "1", "-c", "1", *protocol]
    # (A server of its own: the answers left behind come after the run,
    # where the next test counts the shared one's requests.)
    with httpbench.Server() as srv:
        real, ours = both(args, srv.url(f"/delay?ms={delay_ms}"), tmp_path)
    fr, fo = parse(real), parse(ours)
    assert fr["requests"] == fo["requests"] == (
        str(done), str(done + 1), str(done), str(done), "0", "0", "0"), (real, ours)
    # h2load's req/s is over -D's duration, its "finished in" the wall
    # time to its workers' stop, which on a loaded machine reads 1.01s.
    assert fo["finished"][:2] == ("1.00s", f"{done:.2f}"), (real, ours)
    assert fr["finished"][1] == f"{done:.2f}", (real, ours)
    assert fr["finished"][0].endswith("s") and 1.0 <= float(fr["finished"][0][:-1]) < 1.1, real
    # Each client's connect is timed though none of its requests was done
    # (the mode printed 0us there, from the requests' connect times).
    assert fr["connect"][0] != "0us" and fo["connect"][0] != "0us", (real, ours)


@needs_h2load
@pytest.mark.parametrize("protocol", [[], ["--h1"]], ids=["h2c", "h1"])
def test_an_answer_just_after_the_end_of_d_is_not_done_as_h2loads(tmp_path, protocol):
    """h2load stops at -D's end to the instant: each client's request in
    flight then was started, not done, though its answer came a moment
    later, and the req/s is over the duration. The h2load mode counted an
    answer that came before the loop's next look (its 50 ms tick): `68
    total, 68 started, 68 done` where h2load says `66 total, 68 started,
    66 done`. (Each run's done is its own: a 45 ms answer's time varies.
    Each client has one request in flight at the end, unless its answer
    came just before it and its next was not yet sent: on one loaded CPU
    a run read `44 started, 43 done`, so one or two are started, not done;
    the mode's are its cancelled ones, exactly.)"""
    with httpbench.Server() as srv:
        real, ours = both(["-D", "1", "-c", "2", *protocol], srv.url("/delay?ms=45"), tmp_path)
    for out in (real, ours):
        fields = parse(out)
        total, started, done, ok = (int(x) for x in fields["requests"][:4])
        assert total == done == ok > 0 and started - done in (1, 2), (real, ours)
        assert fields["finished"][1] == f"{done:.2f}", (real, ours)
    total, started, done, _ = (int(x) for x in parse(ours)["requests"][:4])
    assert f"Cancelled requests: {started - done} (in flight when the run ended)" in ours, ours
    assert parse(ours)["finished"][0] == "1.00s", ours


@needs_h2load
@pytest.mark.parametrize("args", [["-n", "12", "-c", "2", "-m", "3"], ["--h1", "-n", "9", "-c", "3"]],
                         ids=" ".join)
def test_several_uris_are_each_clients_in_turn_as_h2loads(tmp_path, server, args):
    """h2load's URIs: each client's requests go through them in order, the
    first URI's scheme, host and port for all (another's are ignored, as
    h2load ignores them; a bare path is taken). h2load gives each client
    -n/-c requests, where a connection here takes the next request as it
    can send one, so the URIs' counts may differ from h2load's by the
    turns then under way: the requests and status codes equal h2load's,
    and the log has each connection's requests in the URIs' order, its
    bytes the data's."""
    uris = [server.url("/rnd?c=1"), "http://elsewhere.invalid:9/rnd?c=20", "/rnd?c=300"]
    real, ours = both([*args, *uris[:2]], uris[2], tmp_path, counted=False)
    assert parse(real)["requests"] == parse(ours)["requests"]
    assert parse(real)["status"] == parse(ours)["status"]
    r = hb("h2load", *args, "--log", "l.csv", *uris, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    turns: dict[int, list[str]] = {}
    log = sorted(httpbench.read_log(tmp_path / "l.csv"), key=lambda x: x.start)
    for rec in log:
        turns.setdefault(rec.connection, []).append(rec.name)
    names = ["GET /rnd?c=1", "GET /rnd?c=20", "GET /rnd?c=300"]
    assert len(log) == int(args[args.index("-n") + 1])
    assert all(seq == (names * 9)[:len(seq)] for seq in turns.values()), turns
    sizes = {"GET /rnd?c=1": 1, "GET /rnd?c=20": 20, "GET /rnd?c=300": 300}
    assert int(parse(r.stdout)["traffic"][3]) == sum(sizes[x.name] for x in log)
    r = hb("h2load", "-n", "4", "--h1", "-m", "2", *uris, cwd=tmp_path)
    assert r.returncode == 2 and "not supported with several URIs" in r.stderr


def test_h2loads_defaults(tmp_path, server):
    r = hb("h2load", "--json", "r.json", server.url("/rnd?c=100"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert (d["requests"], d["concurrency"], d["threads"], d["http_version"]) == (1, 1, 1, "2")
    r = hb("h2load", "-D", "1", "--warm-up-time", "500ms", "-c", "2", "--rps", "100", "--json",
           "r.json", "--log", "l.csv", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["requests"] is None and d["rate"] == 200 and 170 <= d["issued"] <= 215
    assert len(httpbench.read_log(tmp_path / "l.csv")) == d["issued"]


@pytest.mark.parametrize("args,words", [
    (["-n", "2", "-c", "4"], "greater than or equal to the clients"),
    (["-p", "h3"], "-p takes h2c or http/1.1"),
    (["--warm-up-time", "1"], "--warm-up-time goes with -D"),
    (["-m", "x"], "-m takes a whole number"),
    (["--rps", "fast"], "--rps takes"),
    (["--rps", "nan"], "--rps takes a finite rate"),
    (["--rps=-inf"], "--rps takes a finite rate"),
])
def test_bad_values_are_usage_errors_with_nothing_sent(tmp_path, server, args, words):
    before = server.stats()["requests"]
    r = hb("h2load", *args, server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert server.stats()["requests"] == before


REFUSED = [f for f in FLAGS if f.refused]


@pytest.mark.parametrize("flag", REFUSED, ids=lambda f: f.names[-1])
def test_a_flag_h2load_has_and_httpbench_cannot_honour_is_refused(tmp_path, server, flag):
    before = server.stats()["requests"]
    r = hb("h2load", flag.names[-1], "1", "-n", "5", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 2, r.stdout
    assert flag.names[0] in r.stderr and flag.here in r.stderr, r.stderr
    assert server.stats()["requests"] == before


def test_the_flags_refused():
    assert {"-T", "-N", "-r", "--rate-period", "-i", "--timing-script-file", "-f", "-w", "-W",
            "--header-table-size", "--encoder-header-table-size", "--npn-list",
            "--connect-to"} <= {f.names[0] for f in REFUSED}
    assert "--log-file" not in {f.names[0] for f in REFUSED}


LOG_LINE = re.compile(r"^(\d{16})\t(-1|\d{3})\t(\d+)$")


def log_lines(path: Path) -> list[tuple[int, int, int]]:
    """An h2load --log-file's lines, each held to h2load's form: the send
    in microseconds since the epoch, the status or -1, the microseconds to
    the response's end."""
    out = []
    for line in path.read_text().splitlines():
        m = LOG_LINE.match(line)
        assert m is not None, line
        out.append((int(m[1]), int(m[2]), int(m[3])))
    return out


@needs_h2load
@pytest.mark.parametrize("args", [["-n", "30", "-c", "3", "-m", "2"], ["--h1", "-n", "30", "-c", "3"]],
                         ids=["h2c", "h1"])
def test_log_file_is_h2loads_three_columns_a_response(tmp_path, args):
    """--log-file writes h2load's per-request lines: one a response, its
    send (microseconds since the epoch), its status, its time from the send
    to its end, in the order the responses ended; beside the real h2load's
    on a route that answers after 20 ms: the same count, statuses and
    columns, every time over 20 ms and under the run's, every send within
    the run. A connection's first request is timed from its send, not its
    connect (as h2load: its `time for request`). The file is appended to, as
    h2load appends: a second run adds its lines after the first's."""
    temp = tmp_path / "temp"  # (where the mode's own log goes, and is removed)
    temp.mkdir()
    with httpbench.Server() as srv:
        url = srv.url("/delay?ms=20")
        for name, cmd in (("real", [H2LOAD]), ("ours", [sys.executable, "-m", "httpbench",
                                                          "h2load"])):
            path = tmp_path / f"{name}.log"
            for run in (1, 2):
                began = time.time()
                env = tool_env() if name == "real" else dict(os.environ)
                r = subprocess.run([*cmd, *args, "--log-file", str(path), url],
                                   capture_output=True, text=True, cwd=tmp_path,
                                   env={**env, "TMPDIR": str(temp)}, timeout=60)
                ended = time.time()
                assert r.returncode == 0, r.stderr
                lines = log_lines(path)
                assert len(lines) == 30 * run, (name, lines)
                mine = lines[30 * (run - 1):]
                assert {status for _, status, _ in mine} == {200}, (name, mine)
                for sent, _, us in mine:
                    assert began * 1e6 - 2000 <= sent <= sent + us <= ended * 1e6 + 2000, \
                        (name, began, ended, mine)
                    assert 20_000 <= us < (ended - began) * 1e6, (name, mine)
                ends = [sent + us for sent, _, us in mine]
                # (One thread's lines in the order its responses ended; two
                # ended by one read share an end, less a microsecond's rounding.)
                assert all(b >= a - 1 for a, b in zip(ends, ends[1:], strict=False)), \
                    (name, mine)
    assert list(temp.iterdir()) == []


def test_log_file_beside_log_is_made_from_its_records(tmp_path, server):
    """With --log (httpbench's own record a request, any of its formats) the
    h2load lines are made from it: a line per record, its send the record's
    start plus its connect (each connection's first request's connect, the
    others' 0), its time the record's end less the send; a 404 is logged
    with its status, as h2load logs any answer."""
    for log in ("requests.csv", "requests.jsonl", "requests.db"):
        h2 = tmp_path / f"{log}.h2"
        r = hb("h2load", "-n", "12", "-c", "3", "--log", log, "--log-file", str(h2),
               "--json", "r.json", server.url("/status/404"), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        res = httpbench.Result.from_json((tmp_path / "r.json").read_text())
        recs = httpbench.read_log(tmp_path / log)
        assert len(recs) == 12 and sum(x.connect > 0 for x in recs) == 3, recs
        base = datetime.datetime.fromisoformat(res.start_time).timestamp()
        sent = [(x.start + x.connect, x.intended_start + x.latency) for x in recs]
        want = [(round((base + s) * 1e6), 404, round((end - s) * 1e6)) for s, end in sent]
        got = log_lines(h2)
        assert sorted(got) == sorted(want) and [g[1] for g in got] == [404] * 12, (got, want)


def test_log_file_leaves_out_what_a_failed_connection_took_as_h2load(tmp_path, scripted):
    """No server on the port, or a response cut short (its Content-Length
    100, 10 bytes and a close): h2load counts the requests failed and logs
    none of them (its client's streams are dropped with the connection);
    the file is made, empty."""
    for name, cmd in (("real", [H2LOAD]), ("ours", [sys.executable, "-m", "httpbench",
                                                      "h2load"])):
        srv = scripted([("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
                                           b"0123456789"), ("close",)])
        for url in (f"http://127.0.0.1:{free_port()}/", f"http://127.0.0.1:{srv.port}/"):
            path = tmp_path / f"{name}.log"
            r = subprocess.run([*cmd, "--h1", "-n1", "-c1", "--log-file", str(path), url],
                               capture_output=True, text=True, cwd=tmp_path,
                               env=tool_env() if name == "real" else None, timeout=60)
            assert "1 failed" in r.stdout and path.read_text() == "", (name, url, r.stdout)


@needs_h2load
def test_log_file_has_minus_1_for_a_stream_the_server_reset_as_h2load(tmp_path):
    """An HTTP/2 stream closed by the server's RST_STREAM: h2load logs it,
    status -1; every second stream reset, beside the real h2load."""
    got = []
    for cmd, env in (([H2LOAD], tool_env()), ([sys.executable, "-m", "httpbench", "h2load"], None)):
        path = tmp_path / "reset.log"
        path.unlink(missing_ok=True)
        with H2Server("reset", every=2, code=8) as s:
            r = subprocess.run([*cmd, "-n6", "-c1", "--log-file", str(path),
                                f"http://127.0.0.1:{s.port}/"], capture_output=True, text=True,
                               cwd=tmp_path, env=env, timeout=60)
        assert "3 succeeded, 3 failed" in r.stdout, r.stdout
        got.append(sorted(status for _, status, _ in log_lines(path)))
    assert got[0] == got[1] == [-1, -1, -1, 200, 200, 200], got


def test_log_file_that_cannot_be_written_is_said_before_anything_is_sent(tmp_path, server):
    before = server.stats()["requests"]
    r = hb("h2load", "-n", "5", "--log-file", str(tmp_path / "no" / "such.log"),
           server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 2 and "--log-file: cannot write" in r.stderr, r.stderr
    # A FIFO no one reads is said at once (h2load's open would wait for a
    # reader for ever).
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    r = hb("h2load", "-n", "5", "--log-file", str(fifo), server.url("/rnd?c=10"), cwd=tmp_path,
           timeout=30)
    assert r.returncode == 2 and "a FIFO that no one reads" in r.stderr, r.stderr
    assert server.stats()["requests"] == before


def test_the_manual_page_holds_the_table_made_from_the_flags():
    page = (Path(__file__).parents[2] / "docs" / "h2load.md").read_text()
    assert markdown(FLAGS, "h2load") in page, markdown(FLAGS, "h2load")
