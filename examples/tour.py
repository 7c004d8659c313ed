"""The notebook's tour as a plain script: a run, its plots, the clients side by side.

    python examples/tour.py [OUTDIR]      # PNGs go to OUTDIR (default: the current directory)
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpbench


def main(outdir: Path) -> None:
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/rnd?c=2048"), duration=3, concurrency=8)
        print(r)
        cmp = httpbench.compare(requests=2_000, duration=1)
        print(cmp.table())
    try:
        import matplotlib
    except ImportError:
        print("(pip install 'httpbench[plot]' for the pictures)")
        return
    matplotlib.use("Agg")
    for kind in ("percentiles", "histogram", "timeline"):
        ax = r.plot(kind)
        ax.figure.savefig(outdir / f"run-{kind}.png")
    cmp.plot().figure.savefig(outdir / "clients.png")
    print(f"plots written to {outdir}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd())
