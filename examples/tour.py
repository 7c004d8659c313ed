"""The notebook's tour as a plain script: a run, a scenario, the plots, the
clients side by side.

    python examples/tour.py [OUTDIR]   # PNGs go to OUTDIR (default: a new temporary folder)

It prints where the pictures went. It needs the plot extra (pip install
'httpbench[plot]'); the comparison puts side by side the clients
installed ('httpbench[agents]' installs the five besides http.client).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import httpbench
from httpbench import Request, Scenario


def main(outdir: Path) -> None:
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/rnd?c=2048"), duration=3, concurrency=8)
        print(r)
        mix = Scenario([Request("GET", "/rnd?c=2048", name="read", weight=4),
                        Request("POST", "/echo", body=b"x" * 2048, name="write",
                                expect_body=b"xxxx")])
        s = httpbench.run(srv.url("/"), scenario=mix, duration=2, concurrency=8)
        print(s)
        cmp = httpbench.compare(requests=2_000, duration=1)
        print(cmp.table())
    try:
        import matplotlib
    except ImportError:
        print("(pip install 'httpbench[plot]' for the pictures)")
        return
    matplotlib.use("Agg")
    outdir.mkdir(parents=True, exist_ok=True)
    for kind in ("percentiles", "histogram", "timeline"):
        ax = r.plot(kind)
        ax.figure.savefig(outdir / f"run-{kind}.png")
    cmp.plot().figure.savefig(outdir / "clients.png")
    print(f"plots written to {outdir}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="httpbench-")))
