"""The seed's four documents: the average time per GET of each, by client.

    python examples/four_documents.py [REPETITIONS]      # 500, as the seed

The seed that compared HttpClient 3.0 with HttpCommon timed four documents
of Apache's manual (GET /docs/, /docs/mod/quickreference.html,
/docs/misc/perf-tuning.html, /docs/platform/windows.html), 500 repetitions
each over one keep-alive connection, and printed the average nanoseconds
per request. Here the embedded server serves four static files of about
those documents' sizes (by sendfile), and each is fetched REPETITIONS times
by httpbench's C loop and by every Python client installed (compare() with
its get scenario), one connection each, server and clients on one CPU.
"""

from __future__ import annotations

import os
import sys
import tempfile

import httpbench

# The documents and sizes of about what Apache 2.0's manual served.
DOCUMENTS = [
    ("docs/index.html", "/docs/", 7_612),
    ("docs/mod/quickreference.html", "/docs/mod/quickreference.html", 97_336),
    ("docs/misc/perf-tuning.html", "/docs/misc/perf-tuning.html", 48_108),
    ("docs/platform/windows.html", "/docs/platform/windows.html", 33_890),
]


def main(repetitions: int = 500) -> None:
    # Server and clients on one CPU, as the seed's single-connection runs:
    # across CPUs every request pays a wake-up that hides the differences.
    # Set before the server starts, so its threads and the loop's inherit it.
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    with tempfile.TemporaryDirectory() as root:
        for path, _, size in DOCUMENTS:
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "wb") as f:
                f.write(bytes(33 + b % 94 for b in os.urandom(size)))
        with httpbench.Server(static_dir=root) as srv:
            for path, name, size in DOCUMENTS:
                url = srv.url("/static/" + path)
                loop = httpbench.run(url, requests=repetitions, progress=False)
                cmp = httpbench.compare(url, scenarios=("get",), requests=repetitions, pin=False)
                print(f"GET {name} ({size:,} bytes), {repetitions} repetitions")
                # httpbench's C loop, then each agent of compare(): httpbench's
                # own there is Connection.request in a Python loop.
                times = {"run() (the C loop)": loop}
                times.update({agent: r for (agent, _), r in cmp.results.items()})
                for agent, r in times.items():
                    # Each request timed on its own, as the seed averaged them.
                    ns = r.latency.mean * 1e9 if r.complete else float("nan")
                    print(f"  {agent:<22}{ns:>12,.0f} ns per request (average)"
                          + (f", {r.failed} failed" if r.failed else ""))
                for note in cmp.notes:
                    print(f"  ({note})")
                print()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
