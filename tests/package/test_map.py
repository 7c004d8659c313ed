"""docs/design.md's map of the parts cannot go stale: every source file is
placed by one row, and no module imports a part its row forbids (imports
of every kind, as grimp reads them)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("model", "settings", "runners", "drawing", "adapter", "interfaces", "C core")


def read_map() -> list[tuple[str, list[str], set[str], set[str]]]:
    """(part, file patterns, parts it may import, parts it must never)."""
    text = (ROOT / "docs" / "design.md").read_text()
    table = text.split("<!-- map:", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in table.splitlines()[3:]:
        part, files, may, never = (c.strip() for c in line.strip("|").split("|"))
        patterns, folder = [], ""
        for f in re.findall(r"`([^`]+)`", files):
            if f.startswith(("httpbench/", "csrc/")):
                folder = f.rsplit("/", 1)[0] + "/"
                patterns.append(f)
            else:  # (beside the row's last full path)
                patterns.append(folder + f)
        def parts(cell: str) -> set[str]:
            if cell == "all":
                return set(PARTS)
            return {p.strip() for p in cell.split(",") if p.strip() in PARTS}
        rows.append((part, patterns, parts(may), parts(never)))
    return rows


def sources() -> list[str]:
    found = [p for p in (ROOT / "httpbench").rglob("*.py")]
    found += [p for p in (ROOT / "csrc").glob("*.[ch]")]
    return sorted(str(p.relative_to(ROOT)) for p in found)


def part_of(path: str, rows: list[tuple[str, list[str], set[str], set[str]]]) -> list[str]:
    return [part for part, patterns, _, _ in rows
            if any(fnmatch.fnmatch(path, pat) for pat in patterns)]


def test_the_map_has_every_part_once():
    assert [row[0] for row in read_map()] == list(PARTS)


def test_every_source_file_is_placed_by_one_row():
    rows = read_map()
    unplaced = [p for p in sources() if len(part_of(p, rows)) != 1]
    assert unplaced == [], f"place these in docs/design.md's map: {unplaced}"


def test_no_module_imports_what_its_row_forbids():
    grimp = pytest.importorskip("grimp")
    rows = read_map()
    graph = grimp.build_graph("httpbench", include_external_packages=False,
                              exclude_type_checking_imports=False)

    def part(module: str) -> str | None:
        base = module.replace(".", "/")
        for path in (f"{base}.py", f"{base}/__init__.py"):
            if (ROOT / path).exists():
                return part_of(path, rows)[0]
        return None  # the C extension, _core

    never = {p: n for p, _, _, n in rows}
    bad = []
    for module in sorted(graph.modules):
        mine = part(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported == "httpbench" and all(
                    "_core" in d["line_contents"]
                    for d in graph.get_import_details(importer=module, imported=imported)):
                continue  # `from . import _core`: the C extension, no .py of its own
            theirs = part(imported)
            if mine and theirs and theirs in never[mine]:
                bad.append(f"{module} ({mine}) imports {imported} ({theirs})")
    assert bad == [], bad


def test_every_c_file_is_named_in_one_room():
    """The C core's rooms (design.md's cmap table) name every file in
    csrc/ once, and name no file that is not there."""
    text = (ROOT / "docs" / "design.md").read_text()
    table = text.split("<!-- cmap:", 1)[1].split("\n\n", 1)[0]
    named: list[str] = []
    for line in table.splitlines()[3:]:
        named += re.findall(r"`([^`]+)`", line.strip("|").split("|")[1])
    files = sorted(p.name for p in (ROOT / "csrc").iterdir() if p.suffix in (".c", ".h"))
    assert sorted(named) == files


def test_the_map_test_sees_a_stray_file_and_a_forbidden_import():
    rows = read_map()
    assert part_of("httpbench/nowhere.py", rows) == []
    assert part_of("httpbench/render/new.py", rows) == ["drawing"]
    never = {p: n for p, _, _, n in rows}
    assert "drawing" in never["model"] and "runners" in never["settings"]
