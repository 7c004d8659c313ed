"""The comparison's model: the results of several agents through the same
scenarios, their rows and notes, with their JSON (httpbench.compare runs
the agents; render/ draws it)."""

from __future__ import annotations

import os
from typing import Any

from ._typed import typed
from ._view import draw
from .figures import SCHEMA
from .result import Result

__all__ = ["Comparison"]


class Comparison:
    """The results of several agents through the same scenarios."""

    def __init__(self, results: dict[tuple[str, str], Result], notes: list[str],
                 agents: list[str], scenarios: list[str], interrupted: bool = False) -> None:
        self.results = results
        self.notes = notes
        self.agents = agents
        self.scenarios = scenarios
        # Ctrl-C stopped the comparison: in a run (that result is
        # interrupted too) or between two; the runs after it did not run.
        self.interrupted = interrupted

    def rows(self) -> list[dict[str, Any]]:
        """One row per agent and scenario, with the ratio to the fastest agent
        in that scenario."""
        best = {s: max((r.rps for (a, sc), r in self.results.items() if sc == s), default=0.0)
                for s in self.scenarios}
        out = []
        for (agent, scenario), r in self.results.items():
            timed = r.latency.count > 0  # (else None: no latency to show)
            out.append({
                "agent": agent, "version": r.agent_version, "scenario": scenario,
                "requests": r.issued, "rps": r.rps,
                "mean_ms": r.latency.mean * 1e3 if timed else None,
                "p99_ms": r.latency.p99 * 1e3 if timed else None,
                "failed": r.failed, "non_2xx": r.non_2xx,
                "reconnects": r.reconnects,
                "of_fastest": r.rps / best[scenario] if best[scenario] else None,
            })
        return out

    def table(self) -> str:
        """The side-by-side table as text: agent, version, scenario,
        requests, req/s, mean and p99 ms, failures, reconnects and the ratio
        to the fastest."""
        text: str = draw("comparison_text", self)
        return text

    def warnings(self) -> list[str]:
        """What the table's figures do not say by themselves: a run whose
        answers were all (or partly) not 2xx measured errors, not pages."""
        out = []
        for (agent, scenario), r in self.results.items():
            if r.non_2xx and r.non_2xx == r.complete:
                codes = ", ".join(f"{c}: {n}" for c, n in sorted(r.status_counts.items()))
                out.append(f"{agent} {scenario}: every response was non-2xx ({codes}); "
                           "'failed 0' counts transport failures only")
            elif r.non_2xx:
                out.append(f"{agent} {scenario}: {r.non_2xx} of {r.complete} responses were "
                           "non-2xx")
        return out

    def report(self, reports: bool = True) -> str:
        """The side-by-side table and notes, after each agent's ab report
        when `reports` (the command line leaves them out unless asked), as
        text: print() it, as a bare value at a REPL shows it quoted with
        its newlines escaped. print(cmp) prints report(); a notebook shows
        the comparison as an HTML table by itself."""
        text: str = draw("comparison_report", self, reports)
        return text

    __str__ = report

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        """IPython's text display: the side-by-side table and the notes."""
        p.text("<Comparison>" if cycle else draw("comparison_summary", self))

    def to_markdown(self) -> str:
        """The side-by-side table in Markdown."""
        text: str = draw("comparison_markdown", self)
        return text

    def to_pandas(self) -> Any:
        """The rows as a DataFrame (pandas is imported only here)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_pandas() needs pandas: pip install pandas") from None
        return pd.DataFrame(self.rows())

    def plot(self, ax: Any = None) -> Any:
        """Bars of req/s per agent and scenario on a log scale (on a linear
        one the Python clients would vanish beside the C loop), each
        labelled at its foot with its ratio to the fastest; p99 as points
        over each bar on a second axis, in us, ms or s as fits, held above
        the labels. Returns the Axes (matplotlib is imported only here)."""
        return draw("comparison_plot", self, ax)

    def _repr_html_(self) -> str:
        text: str = draw("comparison_table", self)
        return text

    def to_dict(self) -> dict[str, Any]:
        """Every result by "agent scenario", with the agents, scenarios and
        notes (compare --json writes this; docs/schema.md)."""
        return {"kind": "comparison", "schema": SCHEMA, "agents": self.agents,
                "scenarios": self.scenarios, "notes": self.notes,
                "interrupted": self.interrupted,
                "results": {f"{a} {s}": r.to_dict() for (a, s), r in self.results.items()}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Comparison:
        """A Comparison from to_dict()'s layout, or from the bare "agent
        scenario" mapping compare --json wrote before schema 11."""
        new = d.get("kind") == "comparison"
        results = typed(d["results"] if new else d, dict[str, Result], "results")
        out: dict[tuple[str, str], Result] = {}
        for key, r in results.items():
            agent, _, scenario = key.rpartition(" ")
            out[agent, scenario] = r
        rest = {name: typed(d.get(name, []) if new else [], list[str], name)
                for name in ("notes", "agents", "scenarios")}
        return cls(out, rest["notes"],
                   rest["agents"] or list(dict.fromkeys(a for a, _ in out)),
                   rest["scenarios"] or list(dict.fromkeys(s for _, s in out)),
                   typed(d.get("interrupted", False) if new else False, bool, "interrupted"))

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """The standalone HTML report of the comparison (the table, bars
        per agent, each run in full), written to path when given; returns
        its text."""
        text: str = draw("comparison_page", self, path)
        return text
