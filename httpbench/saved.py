"""Saved results read back by what they are: a run's JSON, a comparison's,
a capacity search's or a pytest session's baseline, told apart by their
`kind` (and, for files written before kinds, by their keys), as the
report's inputs (render.report.Doc)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from ._typed import FieldError, typed
from .capacity import CapacityResult
from .compare import Comparison
from .figures import SCHEMA
from .render.report import Doc, capacity_doc, comparison_doc, run_doc, session_doc
from .result import Result

__all__ = ["load", "MAX_BYTES"]

# The largest saved file read: a ten-minute run's result is about 55 KB, a
# long pytest session's baseline a few MB; past this it is not one.
MAX_BYTES = 1 << 30


def _read(p: Path) -> Any:
    """The file's JSON, read only from a regular file of at most MAX_BYTES
    (a character device or a FIFO never ends), refused whole otherwise."""
    try:
        with open(p, "rb", opener=lambda f, flags: os.open(f, flags | os.O_NONBLOCK)) as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ValueError(f"{p}: not a regular file (a saved result is one)")
            if st.st_size > MAX_BYTES:
                raise ValueError(f"{p}: {st.st_size:,} bytes, over the 1 GiB a saved result "
                                 "may be")
            data = f.read(MAX_BYTES + 1)
    except OSError as err:
        raise ValueError(f"{p}: cannot read it ({err.strerror or err})") from None
    if len(data) > MAX_BYTES:
        raise ValueError(f"{p}: over the 1 GiB a saved result may be")
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"{p}: cannot read it as JSON (nested too deeply)") from None
    except (UnicodeDecodeError, ValueError) as err:  # (JSONDecodeError, an integer's digits)
        raise ValueError(f"{p}: cannot read it as JSON ({err})") from None


def load(path: str | os.PathLike[str]) -> Doc:
    """A saved JSON file as a Doc, told apart by its `kind` (and, for files
    written before kinds, by its keys): a run's result (--json), a
    comparison's (compare --json), a capacity search's (capacity --json)
    or a pytest session's baseline (--httpbench-save). ValueError naming
    the file (and the field, where one is wrong) for anything else,
    before anything of it is drawn: a file that is not a regular one, one
    over MAX_BYTES, or whose figures are not what the model holds."""
    p = Path(path)
    d = _read(p)
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
            if isinstance(schema, bool) or not isinstance(schema, int) or schema > SCHEMA:
                raise ValueError(f"a session of schema {schema!r}")
            runs = [(name, typed(r, Result, f"runs.{name}"),
                     typed(r.get("rounds"), list[dict[str, float]] | None,
                           f"runs.{name}.rounds"))
                    for name, r in typed(d.get("runs"), dict[str, dict[str, Any]],
                                         "runs").items()]
            return session_doc(runs, label, typed(d.get("machine"), dict[str, Any] | None,
                                                  "machine"))
    except FieldError as err:
        raise ValueError(f"{p}: {err} (not a result httpbench reads)") from None
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{p}: not a result httpbench reads ({err})") from None
    raise ValueError(f"{p}: not a result httpbench reads: no known kind "
                     f"({kind!r}; run, comparison, capacity or session)")
