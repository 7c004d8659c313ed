"""Helpers the benchmark scripts share: pinning, the floor, nginx.

See benchmarks/README.md: one connection pins client and server to the
same CPU; ratios between programs measured in the same run are what count.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("HTTPBENCH_SHARED", ROOT.parent / "shared"))

# nginx, pinning and ports, shared with the tests.
sys.path.insert(0, str(ROOT / "tests"))
from helpers import find_nginx, free_port, nginx, pinned, tool_env, wait_for_port  # noqa: E402

__all__ = ["ROOT", "SHARED", "find_nginx", "free_port", "nginx", "pinned", "tool_env",
           "wait_for_port", "python_child", "CHILD_CWD", "build_floor", "run_floor_many",
           "run_floor", "embedded", "arguments", "server_port"]


def arguments(doc: str, requests: int = 100_000,
              rounds: int | None = 3) -> argparse.ArgumentParser:
    """A script's parser: its docstring's first paragraph, --requests and
    --rounds (none for a script that measures once: rounds=None); the
    script adds its own."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=requests)
    if rounds is not None:
        ap.add_argument("--rounds", type=int, default=rounds)
    return ap


@contextmanager
def server_port(name: str, start: Callable[[], Any]) -> Iterator[int | None]:
    """The port of the server `start()` runs (nginx's helper yields (port,
    root), embedded's the port); None, with a skip line, if it could not."""
    with start() as handle:
        if handle is None:
            print(f"{name}: skipped", file=sys.stderr)
            yield None
        else:
            yield handle[0] if isinstance(handle, tuple) else handle


def python_child(code: str, *args: str) -> list[str]:
    """argv for a child Python running code. Run it with cwd="/" (as
    CHILD_CWD): from the repository's root, `python -c` would import the
    source tree's httpbench, which has no built _core."""
    return [sys.executable, "-c", code, *args]


CHILD_CWD = "/"


def build_floor(workdir: Path, name: str = "floor") -> Path | None:
    """Compiles ../shared/bench/NAME.c (floor.c or floor_many.c); None, with
    a skip line, if it cannot."""
    src = SHARED / "bench" / f"{name}.c"
    cc = shutil.which("cc") or shutil.which("gcc")
    if not src.exists() or cc is None:
        print(f"{name}: skipped ({src} or a C compiler is missing)", file=sys.stderr)
        return None
    out = workdir / name
    subprocess.run([cc, "-O2", "-o", str(out), str(src)], check=True)
    return out


def run_floor_many(floor_many: Path, cpu: int | None, port: int, target: str, conns: int,
                   count: int) -> tuple[float, float]:
    """(req/s, CPU us per request) of one floor_many.c run."""
    out = subprocess.run(pinned(cpu, [str(floor_many), "127.0.0.1", str(port), target,
                                      str(conns), str(count)]),
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"= (\d+) req/s, CPU ([\d.]+) us/req", out)
    if m is None:
        raise RuntimeError(f"unexpected floor_many output: {out!r}")
    return float(m.group(1)), float(m.group(2))


def run_floor(floor: Path, cpu: int | None, port: int, target: str, count: int) -> float:
    """req/s of one floor.c run."""
    out = subprocess.run(pinned(cpu, [str(floor), "127.0.0.1", str(port), target, str(count)]),
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"= (\d+) req/s", out)
    if m is None:
        raise RuntimeError(f"unexpected floor output: {out!r}")
    return float(m.group(1))


@contextmanager
def embedded(cpu: int | None, *options: str) -> Iterator[int]:
    """`httpbench serve` on a free port, pinned to cpu, with extra options;
    with --unix-socket PATH among them, on that socket instead (0 yielded)."""
    where: int | str
    if "--unix-socket" in options:
        where, port_args = options[options.index("--unix-socket") + 1], []
    else:
        where = free_port()
        port_args = ["--port", str(where)]
    argv = [sys.executable, "-m", "httpbench", "serve", *port_args, *options]
    proc = subprocess.Popen(pinned(cpu, argv), stdout=subprocess.DEVNULL, cwd="/")
    try:
        wait_for_port(where, proc)
        yield where if isinstance(where, int) else 0
    finally:
        proc.terminate()
        proc.wait(10)
