"""The plain-C tests of the parser, built and run from pytest so the
README's one test command covers them too."""

import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import tool_env

ROOT = Path(__file__).resolve().parents[2]
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
FLAGS = ["-O1", "-g", "-std=gnu11", "-Wall", "-Wextra", "-Werror"]

# (builds: each test compiles with CC as it is, no sanitizer; the fuzz stage
# builds the drivers with ASan and UBSan.)
pytestmark = [pytest.mark.skipif(CC is None, reason="no C compiler on PATH"), pytest.mark.builds]


def build(tmp_path: Path, name: str, *sources: str, defines: tuple[str, ...] = (),
          libs: tuple[str, ...] = ()) -> Path:
    out = tmp_path / name
    cmd = [CC, *FLAGS, *defines, "-o", str(out), *(str(ROOT / s) for s in sources), *libs]
    subprocess.run(cmd, check=True, capture_output=True, text=True, env=tool_env())
    return out


def unit_test(tmp_path: Path, name: str, *sources: str, libs: tuple[str, ...] = (),
              defines: tuple[str, ...] = (), minimum: int, timeout: float) -> None:
    """Builds and runs a plain-C test, which prints "N passed, N failed"."""
    exe = build(tmp_path, name, *sources, libs=libs, defines=defines)
    run = subprocess.run([exe], capture_output=True, text=True, timeout=timeout, env=tool_env())
    assert run.returncode == 0, run.stdout + run.stderr
    passed, failed = run.stdout.split()[0::2][:2]
    assert int(passed) >= minimum and failed == "0"


def test_parser_cases_whole_and_split(tmp_path):
    unit_test(tmp_path, "test_parser", "tests/c/test_parser.c", "csrc/parser.c", minimum=110,
              timeout=120)


def test_load_shape_arithmetic(tmp_path):
    unit_test(tmp_path, "test_shape", "tests/c/test_shape.c", "csrc/shape.c", libs=("-lm",),
              minimum=28, timeout=60)


def test_histogram_percentiles_are_nearest_rank(tmp_path):
    unit_test(tmp_path, "test_hist", "tests/c/test_hist.c", "csrc/hist.c", libs=("-lm",),
              minimum=12, timeout=120)


def test_the_loops_pacing_tickets_and_due_instants(tmp_path):
    unit_test(tmp_path, "test_pace", "tests/c/test_pace.c", "csrc/bench_pace.c", "csrc/shape.c",
              "csrc/scen.c", libs=("-lm",), minimum=208, timeout=60)


def test_http2_sessions_allocator_reuses_blocks_and_keeps_their_bytes(tmp_path):
    unit_test(tmp_path, "test_h2mem", "tests/c/test_h2mem.c", "csrc/h2mem.c", minimum=48,
              timeout=60)


def test_http2_responses_rules(tmp_path):
    unit_test(tmp_path, "test_h2msg", "tests/c/test_h2msg.c", "csrc/h2msg.c", "csrc/parser.c",
              minimum=55, timeout=120)


def test_http2_session_counts_request_bodies_still_going_out(tmp_path):
    unit_test(tmp_path, "test_h2sess", "tests/c/test_h2sess.c", "csrc/h2.c", "csrc/h2mem.c",
              "csrc/h2msg.c", "csrc/parser.c", "csrc/buf.c", libs=("-lnghttp2",), minimum=21,
              timeout=60)


def test_scenario_picks_and_body_check(tmp_path):
    unit_test(tmp_path, "test_scen", "tests/c/test_scen.c", "csrc/scen.c", libs=("-lm",),
              minimum=78, timeout=60)


# The timing loop and what it links (fuzz_loop and test_states build it whole).
LOOP = ["csrc/bench.c", "csrc/bench_exch.c", "csrc/bench_h1.c", "csrc/bench_h2.c",
        "csrc/bench_loop.c", "csrc/bench_pace.c", "csrc/bench_result.c", "csrc/bench_sock.c",
        "csrc/buf.c", "csrc/h2.c", "csrc/h2mem.c", "csrc/h2msg.c", "csrc/hist.c", "csrc/net.c",
        "csrc/parser.c", "csrc/rlog.c", "csrc/scen.c", "csrc/shape.c", "csrc/tls.c", "csrc/tunnel.c"]


def test_each_state_machine_walked_through_its_table(tmp_path):
    """The loop's socket with each carrier, the server's session and its
    relay: every
    table whole, every state reached from the start and able to come back,
    and an undeclared change refused (tests/c/test_states.c)."""
    server = ["csrc/srvshare.c", "csrc/h2srv.c", "csrc/head.c", "csrc/route.c",
              "tests/c/states_relay.c"]  # (relay.c, its table read in place)
    unit_test(tmp_path, "test_states", "tests/c/test_states.c", *LOOP, *server,
              libs=("-lssl", "-lcrypto", "-lnghttp2", "-lm", "-lpthread"),
              defines=("-DHB_CHECK_STATES",), minimum=150, timeout=60)


def symbols(tmp_path: Path) -> tuple[dict[str, str], dict[str, set[str]]]:
    """Each C file's object, its symbols read (nm), the glue's too: which
    file defines each symbol, and which symbols each file uses."""
    import sysconfig
    include = sysconfig.get_paths()["include"]
    defined: dict[str, str] = {}
    uses: dict[str, set[str]] = {}
    for src in sorted((ROOT / "csrc").glob("*.c")):
        obj = tmp_path / (src.stem + ".o")
        subprocess.run([CC, *FLAGS, "-I", include, "-c", "-o", str(obj), str(src)], check=True,
                       capture_output=True, text=True, env=tool_env())
        out = subprocess.run(["nm", str(obj)], check=True, capture_output=True, text=True).stdout
        uses[src.name] = set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDRBC":
                defined[parts[2]] = src.name
            elif len(parts) == 2 and parts[0] == "U":
                uses[src.name].add(parts[1])
    return defined, uses


def test_no_two_c_files_call_each_other(tmp_path):
    """Each C file's object, its symbols read (nm): the files form no
    circle, so a protocol beside another (bench_h1.c and bench_h2.c,
    session.c and h2srv.c, conn.c and conn_h2.c) is reached through a
    table of functions, never by a call back. The glue is read too."""
    defined, uses = symbols(tmp_path)
    calls = {f: {defined[s] for s in syms if s in defined and defined[s] != f}
             for f, syms in uses.items()}
    assert len(calls) > 30

    def reaches(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for g in calls[todo.pop()]:
                if g not in seen:
                    seen.add(g)
                    todo.append(g)
        return seen

    circles = sorted(f for f in calls if f in reaches(f))
    assert circles == [], {f: sorted(calls[f] & set(circles)) for f in circles}


# The timing loop's core (the run, the loop, the exchange, pacing, the
# socket) and its carriers, one file a protocol.
LOOP_CORE = ["bench.c", "bench_loop.c", "bench_exch.c", "bench_pace.c", "bench_sock.c"]
CARRIERS = ["bench_h1.c", "bench_h2.c"]


def test_the_loop_reaches_a_protocol_only_through_its_carrier(tmp_path):
    """The loop's core sits above the carriers, which sit above the
    protocol libraries: bench.c, bench_loop.c, bench_exch.c, bench_pace.c
    and bench_sock.c use no symbol of HTTP/2's library (hb_h2_*,
    nghttp2_*), HTTP/1.1's parser (hb_parse_*) or a carrier's file, but
    through the carrier table (hb_carrier); bench.c's one line that
    selects a carrier names them. And a carrier calls no read or write of
    its transport: the socket's loops do."""
    defined, uses = symbols(tmp_path)
    carried = {s for s, f in defined.items() if f in CARRIERS}
    assert {"hb_carrier_h1", "hb_carrier_h2"} <= carried
    found = {}
    for f in LOOP_CORE:
        bad = sorted(s for s in uses[f]
                     if s.startswith(("hb_h2_", "nghttp2_", "hb_parse_")) or s in carried)
        if f == "bench.c":
            bad = [s for s in bad if not s.startswith("hb_carrier_")]
        if bad:
            found[f] = bad
    assert found == {}
    selecting = [line for line in (ROOT / "csrc/bench.c").read_text().splitlines()
                 if "hb_carrier_h" in line]
    assert len(selecting) == 1, selecting
    # A carrier is sans-I/O: the socket's loops read and write for it
    # (hb_bs_read, hb_bs_write); its transport's calls appear nowhere in it.
    for f in CARRIERS:
        text = (ROOT / "csrc" / f).read_text()
        assert "tp->read" not in text and "tp->writev" not in text, f


def drivers() -> dict[str, tuple[str, list[str], list[str]]]:
    """tests/c/drivers.txt: each libFuzzer driver's corpus, sources and
    libraries, the one list .ci/run and docs/testing.md read too."""
    table = {}
    for line in (ROOT / "tests/c/drivers.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, corpus, *rest = line.split()
            table[name] = (corpus, [w for w in rest if not w.startswith("-l")],
                           [w for w in rest if w.startswith("-l")])
    return table


DRIVERS = drivers()


@pytest.mark.parametrize("driver", DRIVERS)
def test_fuzz_driver_replays_the_seed_corpus(tmp_path, driver):
    corpus, sources, libs = DRIVERS[driver]
    exe = build(tmp_path, driver, f"tests/c/{driver}.c", *sources,
                defines=("-DHB_FUZZ_MAIN", "-DHB_CHECK_STATES"), libs=tuple(libs))
    seeds = sorted((ROOT / "tests/c" / corpus).iterdir())
    assert len(seeds) >= 5
    run = subprocess.run([exe, *map(str, seeds)], capture_output=True, text=True, timeout=60,
                         env=tool_env())
    assert run.returncode == 0, run.stderr
    assert f"{len(seeds)} inputs replayed" in run.stdout


def is_glue(path: Path) -> bool:
    """The glue: module.c and the py_*.[ch] files, one per type (py_core.h
    says which). Only they include Python.h."""
    return path.name == "module.c" or path.name.startswith("py_")


def test_core_compiles_warning_free(tmp_path):
    # Every C file but the glue, alone, as the fuzzers and C tests use them.
    for src in sorted((ROOT / "csrc").glob("*.c")):
        if is_glue(src):
            continue
        subprocess.run([CC, *FLAGS, "-c", "-o", str(tmp_path / (src.stem + ".o")), str(src)],
                       check=True, capture_output=True, text=True, env=tool_env())
    assert "Python.h" not in "".join(
        p.read_text() for p in (ROOT / "csrc").glob("*.[ch]") if not is_glue(p)
    )
    assert "#include <Python.h>" in (ROOT / "csrc" / "py_core.h").read_text()


def test_the_glue_imports_no_python_module_of_ours():
    """URL, proxy and target decisions are made in Python before the call:
    the glue imports only httpbench.exceptions, once, at module init."""
    imports = []
    for src in sorted((ROOT / "csrc").glob("*.[ch]")):
        for line in src.read_text().splitlines():
            if "PyImport_" in line:
                imports.append((src.name, line.strip()))
    assert imports == [("module.c", 'PyObject *exc = PyImport_ImportModule("httpbench.exceptions");')]


def test_the_relay_meets_the_session_through_relay_h_alone(tmp_path):
    """relay.c knows nothing of hb_sess: the session lends it the client
    side and reads back its wait (relay.h); session.h does not include
    relay.h; and the relay builds and links with no session at all."""
    relay = (ROOT / "csrc" / "relay.c").read_text()
    assert '#include "session.h"' not in relay and "hb_sess" not in relay
    assert '#include "relay.h"' not in (ROOT / "csrc" / "session.h").read_text()
    # One head writer: both write their status line and Connection field
    # through head.h, and neither spells one out itself.
    for name in ("session.c", "relay.c"):
        src = (ROOT / "csrc" / name).read_text()
        assert "hb_head_status(" in src and "hb_head_end(" in src, name
        assert '"HTTP/1.1 %' not in src and '"Connection: close' not in src, name
    main = tmp_path / "main.c"
    main.write_text('#include "relay.h"\n'
                    'int main(void) {\n'
                    '    static hb_relay_config cfg;\n'
                    '    hb_relay_client client = {0};\n'
                    '    hb_relay *rl = hb_relay_new(&cfg, &client);\n'
                    '    int ok = rl != 0 && hb_relay_waits(rl)->up_fd == -1;\n'
                    '    hb_relay_free(rl);\n'
                    '    return ok ? 0 : 1;\n'
                    '}\n')
    exe = tmp_path / "relay_alone"
    subprocess.run([CC, *FLAGS, "-I", str(ROOT / "csrc"), "-o", str(exe), str(main),
                    *(str(ROOT / "csrc" / f) for f in
                      ("relay.c", "head.c", "parser.c", "buf.c", "net.c"))],
                   check=True, capture_output=True, text=True, env=tool_env())
    assert subprocess.run([str(exe)], env=tool_env(), timeout=30).returncode == 0
