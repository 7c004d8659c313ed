"""`httpbench report RESULT.json [MORE.json ...] -o report.html`: the
standalone HTML report of saved results."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .common import Outputs, Parser, UsageError


def report_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="httpbench report",
        description="Write one standalone HTML report (no network, no script) of saved "
                    "results: a run's --json, compare --json, capacity --json or a pytest "
                    "session's --httpbench-save file. Several runs are set side by side, the "
                    "first the baseline: each figure's ratio to it, and the pictures "
                    "overlaid.")
    p.add_argument("files", nargs="+", metavar="RESULT.json", help="saved results, in order")
    p.add_argument("-o", "--output", default="report.html", metavar="FILE",
                   help="where the report goes (default report.html; '-': standard output)")
    p.add_argument("--title", help="the report's title (default: the files' names)")
    return p


def report_main(argv: Sequence[str]) -> int:
    from ..render.report import render
    from ..saved import load

    args = report_parser().parse_args(argv)
    try:
        docs = [load(path) for path in args.files]
        page = render(docs, args.title)
        outputs = Outputs({"-o": args.output})
    except (ValueError, UsageError) as e:
        print(f"httpbench report: {e}", file=sys.stderr)
        return 2
    out = outputs.get("-o")
    assert out is not None
    out.write(page)
    outputs.close()
    if args.output != "-":
        print(f"wrote {args.output} ({len(page.encode()):,} bytes) from "
              f"{len(docs)} result file(s)", file=sys.stderr)
    return 0
