"""The advice a report gives, each setting it names said as its reader says
it. A report printed by a drop-in mode names the mode's own flags, in the
tool's letters (hey's -cpus, wrk's -t), and leaves out what the mode has
no flag for (ab has none for threads: its advice names none); the plain
report (Result.report(), the plain command line) names the plain command
line's flag and run()'s argument together. Each hint is one template,
each mode one table of words: a test renders every hint in every mode's
words and runs every flag it names with that mode."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["Words", "PLAIN", "HINTS", "hint"]

# A setting (run()'s or capacity()'s name) -> how the reader says it. A
# setting the table lacks has no word there: the template's parenthesis
# for it is left out.
Words = Mapping[str, str]

# The plain command line's flag and the Python argument, for a report that
# both read (Result.report() is what `httpbench URL` prints).
PLAIN: Words = {
    "threads": "--threads, threads=",
    "concurrency": "-c, concurrency=",
    "cluster": "--dask, cluster=",
    "timeout": "-s, timeout=",
    "verify": "--insecure, verify=False; -k is ab's keep-alive here",
    "cafile": "--cacert FILE, cafile=",
    "http2": "--http2, http2=True",
    "stage_s": "--stage, stage_s=",
    "start": "--start, start=",
}

# Each hint: its words, a {setting} where the setting's words go, in
# parentheses (" (--threads)"), or nowhere when the reader's table has none.
HINTS = {
    "cpu": "give it more threads{threads}, another machine, or spread it over a "
           "cluster{cluster}",
    "connections": "give it more connections{concurrency} for an open loop that keeps its "
                   "schedule",
    "schedule": "run the client on a quieter machine or CPU, or give it more threads{threads}",
    "tls": "Skipping the server's verification{verify}, as curl's -k does, or trusting its CA "
           "instead{cafile}, lets the run go on.",
    "timeout": "Giving each request longer{timeout} may let it be answered.",
    "http2": "The server speaks no HTTP/2 over TLS: leave out HTTP/2{http2}.",
    "stages": "give the stages more time{stage_s} or start at a higher rate{start}",
}


class _Said(dict[str, str]):
    def __init__(self, words: Words) -> None:
        super().__init__()
        self.words = words

    def __missing__(self, key: str) -> str:
        said = self.words.get(key)
        return f" ({said})" if said else ""


def hint(name: str, words: Words = PLAIN) -> str:
    """The hint `name` of HINTS, each setting in it said in words."""
    return HINTS[name].format_map(_Said(words))
