"""The plain-C tests of the parser, built and run from pytest so the
README's one test command covers them too."""

import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import tool_env

ROOT = Path(__file__).resolve().parent.parent
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
FLAGS = ["-O1", "-g", "-std=gnu11", "-Wall", "-Wextra", "-Werror"]

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler on PATH")


def build(tmp_path: Path, name: str, *sources: str, defines: tuple[str, ...] = (),
          libs: tuple[str, ...] = ()) -> Path:
    out = tmp_path / name
    cmd = [CC, *FLAGS, *defines, "-o", str(out), *(str(ROOT / s) for s in sources), *libs]
    subprocess.run(cmd, check=True, capture_output=True, text=True, env=tool_env())
    return out


def unit_test(tmp_path: Path, name: str, *sources: str, libs: tuple[str, ...] = (),
              minimum: int, timeout: float) -> None:
    """Builds and runs a plain-C test, which prints "N passed, N failed"."""
    exe = build(tmp_path, name, *sources, libs=libs)
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
              "csrc/scen.c", libs=("-lm",), minimum=150, timeout=60)


def test_scenario_picks_and_body_check(tmp_path):
    unit_test(tmp_path, "test_scen", "tests/c/test_scen.c", "csrc/scen.c", libs=("-lm",),
              minimum=78, timeout=60)


SESSION = ["csrc/session.c", "csrc/relay.c", "csrc/route.c", "csrc/parser.c", "csrc/buf.c",
           "csrc/net.c"]
DRIVERS = {
    "fuzz_response": ("corpus", ["csrc/parser.c"]),
    "fuzz_request": ("corpus_request", ["csrc/parser.c"]),
    "fuzz_session": ("corpus_session", SESSION),
    "fuzz_tls": ("corpus_tls", [*SESSION, "csrc/tls.c"]),
    "fuzz_relay": ("corpus_relay", SESSION),
    "fuzz_build": ("corpus_build", ["csrc/request.c", "csrc/parser.c", "csrc/buf.c"]),
}


@pytest.mark.parametrize("driver", DRIVERS)
def test_fuzz_driver_replays_the_seed_corpus(tmp_path, driver):
    corpus, sources = DRIVERS[driver]
    libs = ("-lssl", "-lcrypto") if "csrc/tls.c" in sources else ()
    exe = build(tmp_path, driver, f"tests/c/{driver}.c", *sources, defines=("-DHB_FUZZ_MAIN",),
                libs=libs)
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
