"""The progress a run shows while it lasts, read from Python a few times a
second outside the timed path: a tqdm bar, a live line, ab's lines, or a
function of the caller's."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any, Literal

__all__ = ["Milestones", "Progress", "Reporter", "check_progress"]

# True, False, "auto", or a function called with (complete, failed) a few
# times a second while the run lasts and once as it ends.
Progress = bool | Literal["auto"] | Callable[[int, int], None]


def check_progress(progress: object) -> None:
    """A ValueError naming `progress` unless it is one of Progress's."""
    if not (progress is True or progress is False or progress == "auto" or callable(progress)):
        raise ValueError(f"progress: True, False, 'auto' or a function of (complete, failed), "
                         f"not {progress!r}")


class Milestones:
    """A line at every `every` requests done, up to `total` (None: no
    bound), each made by `line` from its count and written to `out`: ab's
    "Completed N requests", h2load's "progress: P% done". Called with the
    counts, as a progress function is."""

    def __init__(self, every: int, total: int | None, line: Callable[[int], str],
                 out: IO[str]) -> None:
        self.every, self.total, self.line, self.out = every, total, line, out
        self.next = every

    def __call__(self, complete: int, failed: int) -> None:
        while self.next <= complete + failed and (self.total is None or self.next <= self.total):
            self.out.write(self.line(self.next) + "\n")
            self.next += self.every
        self.out.flush()


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    ip = getattr(shell, "get_ipython", lambda: None)() if shell else None
    return ip is not None and "IPKernelApp" in getattr(ip, "config", {})


class Reporter:
    """Progress outside the timed path, read from Python a few times a
    second while the C loop runs: a tqdm bar in a notebook or on a terminal
    when tqdm is installed, else a live line on a terminal, and ab's
    "Completed N requests" lines elsewhere; or, given a function, that
    function with the counts (the drop-in modes print their tools' lines
    so). The bar's total is what was planned: the requests, or for a run by
    duration alone its seconds."""

    def __init__(self, mode: Progress, total: int | None, seconds: float | None,
                 stream: IO[str]) -> None:
        self.call = mode if callable(mode) else None
        # A function with an `opened` method of (tls_protocol, tls_temp_key)
        # has it called once, when the run's first connection opens (the
        # TLS figures empty over plain TCP): a drop-in mode prints its tool's
        # lines then (h2load's "Application protocol").
        self.on_open: Callable[[str, str], None] | None = getattr(self.call, "opened", None)
        if callable(mode):
            mode = False
        tty = stream.isatty()
        self.bar: Any = None
        # A run by duration alone is measured in seconds on the bar.
        self.seconds = seconds if total is None else None
        if mode == "auto" and (tty or _in_notebook()):
            try:
                from tqdm.auto import tqdm
            except ImportError:
                pass
            else:
                if self.seconds is not None:
                    self.bar = tqdm(total=round(self.seconds, 1), unit="s", file=stream,
                                    dynamic_ncols=True, bar_format="{l_bar}{bar}| {n:.1f}/"
                                    "{total:.1f} s [{elapsed}<{remaining}{postfix}]")
                else:
                    self.bar = tqdm(total=total, unit="req", file=stream, dynamic_ncols=True)
        self.done = 0
        self.live = self.bar is None and (mode is True or (mode == "auto" and tty))
        lines = mode == "auto" and not tty and total is not None and total >= 10
        self.lines = Milestones(max(1, (total or 0) // 10), total,
                                lambda n: f"Completed {n} requests", stream) if lines else None
        self.total, self.stream = total, stream
        self.t0 = time.monotonic()
        self.last = (self.t0, 0)

    def update(self, complete: int, failed: int) -> None:
        done = complete + failed
        if self.call is not None:
            self.call(complete, failed)
        elif self.bar is not None:
            now = time.monotonic()
            if self.seconds is not None:
                # The bar counts seconds: the rate and the count go beside it.
                since = now - self.t0
                self.bar.set_postfix_str(
                    f"{done:,} done, {complete / since if since > 0 else 0:,.0f} req/s, "
                    f"{failed:,} failed", refresh=False)
            else:
                # tqdm's own line has the count and the rate: failures alone.
                self.bar.set_postfix_str(f"{failed:,} failed", refresh=False)
            if self.seconds is not None:
                self.bar.n = round(min(now - self.t0, self.seconds), 1)
                self.bar.refresh()
            else:
                self.bar.update(done - self.done)
            self.done = done
        elif self.live:
            now = time.monotonic()
            t, n = self.last
            rps = (complete - n) / (now - t) if now > t else 0.0
            self.last = (now, complete)
            total = f"/{self.total}" if self.total else ""
            self.stream.write(f"\r{done}{total} done, {rps:,.0f} req/s, {failed} failed   ")
            self.stream.flush()
        elif self.lines is not None:
            self.lines(complete, failed)

    def close(self, complete: int, failed: int) -> None:
        if self.call is not None:
            self.call(complete, failed)
            return
        if self.bar is not None:
            self.update(complete, failed)
            self.bar.close()
            return
        if self.live:
            self.stream.write("\r" + " " * 60 + "\r")
        elif self.lines is not None:
            self.lines(complete, failed)
            self.stream.write(f"Finished {complete + failed} requests\n")
        self.stream.flush()
