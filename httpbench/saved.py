"""Saved results read back by what they are: a run's JSON, a comparison's,
a capacity search's or a pytest session's baseline, told apart by their
`kind` (and, for files written before kinds, by their keys), as the
report's inputs (render.report.Doc)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .capacity import CapacityResult
from .compare import Comparison
from .figures import SCHEMA
from .render.report import Doc, capacity_doc, comparison_doc, run_doc, session_doc
from .result import Result

__all__ = ["load"]


def load(path: str | os.PathLike[str]) -> Doc:
    """A saved JSON file as a Doc, told apart by its `kind` (and, for files
    written before kinds, by its keys): a run's result (--json), a
    comparison's (compare --json), a capacity search's (capacity --json)
    or a pytest session's baseline (--httpbench-save). ValueError naming
    the file for anything else."""
    p = Path(path)
    try:
        d = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{p}: cannot read it as JSON ({err})") from None
    if not isinstance(d, dict):
        raise ValueError(f"{p}: not a result (a JSON object was expected)")
    kind = d.get("kind")
    if kind is None:
        if "runs" in d and "machine" in d:
            kind = "session"
        elif "steps" in d and "slo" in d:
            kind = "capacity"
        elif "url" in d and "latency" in d:
            kind = "run"
        elif d and all(isinstance(v, dict) and "latency" in v for v in d.values()):
            kind = "comparison"
    label = p.stem
    try:
        if kind == "run":
            return run_doc(Result.from_dict(d), label)
        if kind == "comparison":
            return comparison_doc(Comparison.from_dict(d), label)
        if kind == "capacity":
            return capacity_doc(CapacityResult.from_dict(d), label)
        if kind == "session":
            schema = d.get("schema", SCHEMA)
            if not isinstance(schema, int) or schema > SCHEMA:
                raise ValueError(f"a session of schema {schema!r}")
            runs = [(name, Result.from_dict(r), r.get("rounds"))
                    for name, r in d["runs"].items()]
            return session_doc(runs, label, d.get("machine"))
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{p}: not a result httpbench reads ({err})") from None
    raise ValueError(f"{p}: not a result httpbench reads: no known kind "
                     f"({kind!r}; run, comparison, capacity or session)")
