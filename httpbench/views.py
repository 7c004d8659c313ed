"""The adapter between the model and its drawing: the one module through
which Result, Comparison and CapacityResult's convenience methods (report(),
to_html(), plot(), _repr_html_(), ...) reach render/. The model calls
httpbench._view.draw(name, ...); this module, imported by the package last,
names each drawing. Each imports its render module when first called, so
importing httpbench loads no drawing code (and no matplotlib)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ._view import register

if TYPE_CHECKING:
    from ._core import Histogram
    from .capacity_result import CapacityResult
    from .comparison import Comparison
    from .result import Result

__all__: list[str] = []

Path = str | os.PathLike[str] | None


def _hgrm(h: Histogram, scale: float, ticks_per_half: int) -> str:
    from .render.hgrm import hgrm
    return hgrm(h, scale, ticks_per_half)


def _report(r: Result) -> str:
    from .render.text import report
    return report(r)


def _headline(r: Result) -> str:
    from .render.text import headline
    return headline(r)


def _summary(r: Result) -> str:
    from .render.html import summary
    return summary(r)


def _run_page(r: Result, path: Path) -> str:
    from .render.report import page, run_doc
    return page(run_doc(r), path)


def _by_name_rows(r: Result) -> list[dict[str, Any]]:
    from .render.text import by_name_rows
    return by_name_rows(r)


def _percent_label(p: float) -> str:
    from .render.text import percent_label
    return percent_label(p)


def _plot(r: Result, kind: str, ax: Any) -> Any:
    from .render.plots import plot
    return plot(r, kind, ax)


def _comparison_table(c: Comparison) -> str:
    from .render.html import comparison_table
    return comparison_table(c)


def _comparison_page(c: Comparison, path: Path) -> str:
    from .render.report import comparison_doc, page
    return page(comparison_doc(c), path)


def _comparison_plot(c: Comparison, ax: Any) -> Any:
    from .render.plots import comparison_plot
    return comparison_plot(c, ax)


def _capacity_page(c: CapacityResult, path: Path) -> str:
    from .render.report import capacity_doc, page
    return page(capacity_doc(c), path)


def _capacity_plot(c: CapacityResult, ax: Any) -> Any:
    from .render.plots import capacity_plot
    return capacity_plot(c, ax)


def _comparison_text(c: Comparison) -> str:
    from .render.tables import comparison_text
    return comparison_text(c)


def _comparison_summary(c: Comparison) -> str:
    from .render.tables import comparison_summary
    return comparison_summary(c)


def _comparison_report(c: Comparison, reports: bool) -> str:
    from .render.tables import comparison_report
    return comparison_report(c, reports)


def _comparison_markdown(c: Comparison) -> str:
    from .render.tables import comparison_markdown
    return comparison_markdown(c)


def _capacity_report(c: CapacityResult) -> str:
    from .render.tables import capacity_report
    return capacity_report(c)


register(hgrm=_hgrm, report=_report, headline=_headline, summary=_summary, run_page=_run_page,
         by_name_rows=_by_name_rows, percent_label=_percent_label, plot=_plot,
         comparison_table=_comparison_table, comparison_page=_comparison_page,
         comparison_plot=_comparison_plot, capacity_page=_capacity_page,
         capacity_plot=_capacity_plot, comparison_text=_comparison_text,
         comparison_summary=_comparison_summary, comparison_report=_comparison_report,
         comparison_markdown=_comparison_markdown, capacity_report=_capacity_report)
