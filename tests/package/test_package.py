"""The package as a user installs and imports it."""

import json
import shutil
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import httpbench
from httpbench import exceptions


def test_public_names():
    for name in httpbench.__all__:
        assert hasattr(httpbench, name), name
    assert httpbench.Connection.__module__ == "httpbench"
    assert httpbench.__version__ == httpbench._core.__version__


def test_exception_hierarchy():
    assert issubclass(httpbench.ConnectError, httpbench.HttpbenchError)
    assert issubclass(httpbench.ConnectError, ConnectionError)
    assert issubclass(httpbench.Timeout, httpbench.HttpbenchError)
    assert issubclass(httpbench.Timeout, TimeoutError)
    assert issubclass(httpbench.ProtocolError, httpbench.HttpbenchError)
    assert issubclass(httpbench.IncompleteResponse, httpbench.ProtocolError)
    assert httpbench.ProtocolError is exceptions.ProtocolError


def test_typing_files_ship_with_the_package():
    pkg = Path(httpbench.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "_core.pyi").exists()


IMPORT_PROBE = """
import os, signal, sys, threading
fds = set(os.listdir('/proc/self/fd'))
threads = threading.active_count()
handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGPIPE, signal.SIGTERM)}
import httpbench
assert threading.active_count() == threads, 'import started a thread'
assert set(os.listdir('/proc/self/fd')) <= fds | {str(max(map(int, fds)) + 1)}, 'import left a file open'
assert handlers == {s: signal.getsignal(s) for s in handlers}, 'import changed a signal handler'
"""


def test_import_has_no_side_effects(tmp_path):
    # From an empty directory, so the installed package is the one imported.
    run = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "" and run.stderr == ""


def test_stub_matches_the_extension():
    """_core.pyi and the extension name the same things: every public name
    of the module (types, functions, constants) is in the stub and every
    name the stub gives the module exists; each type's public methods and
    attributes are its stub class's, both ways. (httpbench.Connection adds
    from_url in Python, typed there; the core's own names are the stub's.)"""
    import ast
    core = httpbench._core
    stub = ast.parse((Path(httpbench.__file__).parent / "_core.pyi").read_text())
    top: dict[str, ast.AST] = {}
    for node in stub.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top[node.target.id] = node
        elif isinstance(node, ast.Assign):
            top.update((t.id, node) for t in node.targets if isinstance(t, ast.Name))
    runtime = {n for n in dir(core) if not (n.startswith("__") and n != "__version__")}
    assert runtime <= set(top), sorted(runtime - set(top))
    helpers = {n for n, node in top.items()
               if n.startswith("_") and not isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    assert set(top) - helpers - {"TLSInfo"} <= runtime, sorted(set(top) - helpers - runtime)
    types = [n for n, node in top.items() if isinstance(node, ast.ClassDef) and n in runtime]
    assert {"Connection", "Response", "_ServerCore", "Histogram", "_Bench", "_TLS"} <= set(types)
    for name in types:
        node = top[name]
        assert isinstance(node, ast.ClassDef)
        stubbed = {m.name for m in node.body if isinstance(m, ast.FunctionDef)}
        stubbed |= {m.target.id for m in node.body
                    if isinstance(m, ast.AnnAssign) and isinstance(m.target, ast.Name)}
        public = {n for n in dir(getattr(core, name)) if not n.startswith("_")}
        assert public <= stubbed, (name, sorted(public - stubbed))
        assert {n for n in stubbed if not n.startswith("_")} <= public, \
            (name, sorted({n for n in stubbed if not n.startswith("_")} - public))


@pytest.mark.builds
def test_mypy_strict_on_the_package_and_examples(tmp_path):
    api = pytest.importorskip("mypy.api")
    root = Path(__file__).resolve().parents[2]
    out, err, status = api.run(["--config-file", str(root / "pyproject.toml"), "--strict",
                                "--no-incremental", "--cache-dir", str(tmp_path),
                                str(root / "httpbench"), str(root / "examples")])
    assert status == 0, out + err


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.builds
def test_the_built_package_holds_every_module(tmp_path):
    """pyproject.toml lists the packages one by one: a new subpackage left
    out of the list builds a wheel without it (or, today, with it as data
    and a warning). setuptools' build_py
    copies what a wheel's Python part is made of; it must hold every module
    and stub of the source tree."""
    if not (ROOT / "setup.py").exists():
        pytest.skip("not in a source tree")
    out = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib",
                          str(tmp_path)], cwd=ROOT, check=True, capture_output=True, text=True)
    # (setuptools still copies a package left out of the list, as data, and
    # says so; a later setuptools will not.)
    assert "absent from the `packages` configuration" not in out.stderr, out.stderr

    def modules(top: Path) -> set[str]:
        return {str(p.relative_to(top)) for p in (top / "httpbench").rglob("*")
                if p.suffix in (".py", ".pyi") or p.name == "py.typed"}
    assert modules(ROOT) == modules(tmp_path), modules(ROOT) ^ modules(tmp_path)
    assert "httpbench/agents/base.py" in modules(tmp_path)


@pytest.mark.builds
def test_the_sdist_carries_what_its_tests_need(tmp_path):
    """An unpacked sdist runs its own suite: the tests, their helpers (the
    benchmarks' _support, the C tests and corpora), the examples the tests
    execute, and the LICENSE."""
    if not (ROOT / "setup.py").exists():
        pytest.skip("not in a source tree")
    subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path)], cwd=ROOT,
                   check=True, capture_output=True)
    (sdist,) = tmp_path.glob("httpbench-*.tar.gz")
    import tarfile

    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    tracked = subprocess.run(["git", "ls-files", "tests", "benchmarks", "examples"], cwd=ROOT,
                             capture_output=True, text=True).stdout.split()
    needed = set(tracked) or {"tests/conftest.py", "benchmarks/_support.py"}
    needed |= {"LICENSE", "README.md", "setup.py", "pyproject.toml", "csrc/module.c"}
    assert needed <= names, sorted(needed - names)


@pytest.mark.builds
def test_the_sdist_builds_with_an_spdx_licence_and_no_deprecation(tmp_path):
    """A licence given as a TOML table is deprecated, and setuptools stops
    building such a project on 2027-02-18: the SPDX expression instead."""
    if not (ROOT / "setup.py").exists():
        pytest.skip("not in a source tree")
    pytest.importorskip("build")
    # From a copy of the tree: built in the tree itself, it raced another
    # build there (its egg-info) and failed beside one.
    out = subprocess.run([sys.executable, "-m", "build", "--sdist", "-o", str(tmp_path),
                          str(source_copy(tmp_path))], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    said = (out.stdout + out.stderr).lower()
    assert "deprecat" not in said and "license" in said
    (sdist,) = tmp_path.glob("httpbench-*.tar.gz")
    import tarfile

    with tarfile.open(sdist) as tar:
        info = tar.extractfile(f"{sdist.name[:-len('.tar.gz')]}/PKG-INFO").read().decode()
    assert "License-Expression: Apache-2.0" in info and "License-File: LICENSE" in info


def source_copy(tmp_path: Path) -> Path:
    """The source tree as a clone has it: no core built in it."""
    copy = tmp_path / "clone"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(
        "*.so", "build", "*.egg-info", "__pycache__", ".git", "site", ".httpbench"))
    return copy


def installed_alone(tmp_path: Path, extra: str) -> tuple[Path, set[str]]:
    """A fresh venv with the source tree installed with `extra` and nothing
    else (pip from the package index); its path and the names pip lists
    there, lower-cased. Skipped outside a source tree."""
    if not (ROOT / "setup.py").exists():
        pytest.skip("not in a source tree")
    copy = source_copy(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"{copy}[{extra}]"],
                         capture_output=True, text=True, timeout=1200)
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    listed = subprocess.run([str(venv / "bin" / "pip"), "list", "--format=json"],
                            capture_output=True, text=True, timeout=120, check=True)
    return venv, {p["name"].lower() for p in json.loads(listed.stdout)}


def test_importing_the_source_tree_without_a_core_says_what_to_do(tmp_path):
    """In the clone's root the source folder shadows the installed package:
    an ImportError saying what happened and what to do, not a bare
    ModuleNotFoundError for httpbench._core. (-S: no site-packages, so no
    installed or editable httpbench can answer instead.)"""
    if not (ROOT / "setup.py").exists():
        pytest.skip("not in a source tree")
    copy = source_copy(tmp_path)
    out = subprocess.run([sys.executable, "-S", "-c", "import httpbench"], cwd=copy,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: httpbench's C core (httpbench._core) is not built in "
                           f"{copy / 'httpbench'}"), out.stderr
    assert "Run from another directory" in last and "pip install -e ." in last
    assert "ModuleNotFoundError" not in out.stderr


@pytest.mark.builds
def test_pip_install_editable_then_works_from_the_clones_root(tmp_path):
    if not (ROOT / "setup.py").exists():
        pytest.skip("not in a source tree")
    copy = source_copy(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "-e", "."],
                         cwd=copy, capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    code = ("import httpbench\n"
            "with httpbench.Server() as s:\n"
            "    r = httpbench.run(s.url('/rnd?c=10'), requests=100, progress=False)\n"
            "print(httpbench.__file__, r.complete)")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=copy,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(copy / "httpbench" / "__init__.py"), "100"]


def test_license_is_apache_2():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_the_readme_tells_a_newcomer_what_they_meet():
    """What a first reader tripped on: a pointer out of the repository,
    "the seed" unexplained, no word of Linux, and wrk/wrk2/hey examples at
    `/`, which the embedded server answers with 404."""
    if not (ROOT / "README.md").exists():
        pytest.skip("not in a source tree")
    text = (ROOT / "README.md").read_text()
    assert "../shared" not in text
    assert "Linux only" in text and "2010 HttpComponents benchmark" in text
    import re

    for line in text.splitlines():
        m = re.match(r"httpbench .*(http://127\.0\.0\.1:8080/\S*)\s+# (wrk2?|hey)$", line)
        if m:
            assert urlsplit(m.group(1)).path not in ("", "/"), line
    assert (ROOT / "benchmarks" / "README.md").exists()


def test_the_tests_check_the_accounting_rule_through_one_helper():
    """helpers.exact() is the rule (and each failure in its class) for a
    Result; a test that writes it out inline for one drifts from it. Only
    test_stopping.py writes it over the live progress counters, which are
    no Result."""
    inline = re.compile(r"\.issued == \w+\.complete \+ \w+\.failed \+ \w+\.cancelled")
    tests = Path(__file__).parents[1]
    found = sorted(p.name for p in tests.rglob("test_*.py")
                   if p.name != "test_package.py" and inline.search(p.read_text()))
    assert found == [], found
    assert inline.search((tests / "helpers.py").read_text())
