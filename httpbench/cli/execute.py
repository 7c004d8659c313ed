"""One run from a command line, in every mode (plain, ab, wrk): the output
files opened first, run(), the report in the mode's layout, then the files
written. What went wrong before anything was measured is one line and an
exit status: 2 for settings nothing could run with, 1 when the run could
not start (a name that did not resolve, no threads or descriptors)."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import IO, Any

from .._settings import SettingError
from ..exceptions import HttpbenchError, TLSError
from ..reqlog import LogRecord, iter_log
from ..result import Result
from ..runner import preflight, run
from .common import FLAGS, Outputs, UsageError, one_line, run_settings

__all__ = ["execute", "execute_mode", "Banner", "output_options", "write_csv", "OUTPUT_FLAGS",
           "logged_records"]

# The output files every mode takes, as long options the tools do not have.
OUTPUT_FLAGS = ("json", "html", "log", "log_sample", "hgrm", "metrics", "metrics_run",
                "metrics_linger")


def output_options(args: Any) -> dict[str, Any]:
    """run()'s arguments from the output options every mode takes (those
    that are run settings), by name."""
    return {name: v for name, v in run_settings(args).items() if name in OUTPUT_FLAGS}


def write_csv(result: Result, f: IO[str]) -> None:
    """ab's -e file: the time in ms within which each percentage was served."""
    f.write("Percentage served,Time in ms\n")
    for p in range(101):
        f.write(f"{p},{result.latency.percentile(p) * 1e3:.3f}\n")


# A mode's own output file, by its flag: its path (None when not asked
# for) and what writes it once the run is over.
ModeFiles = Mapping[str, tuple[str | None, Callable[[Result, IO[str]], None]]]


def output_paths(args: Any, csv: str | None = None,
                 files: ModeFiles | None = None) -> dict[str, str | None]:
    """The files every mode's output options name (and ab's -e CSV, and a
    mode's own files), by flag: execute()'s paths."""
    paths = {"-e": csv, "--json": args.json, "--hgrm": args.hgrm, "--html": args.html}
    paths.update({flag: path for flag, (path, _) in (files or {}).items()})
    return paths


def report_stream(paths: Mapping[str, str | None]) -> IO[str]:
    """Where the report, and all a mode prints around it (its banner, its
    tool's progress lines on stdout), go: standard error when an output
    goes to standard output (--json -, --html -, ...), so that stays that
    output alone."""
    return sys.stderr if "-" in paths.values() else sys.stdout


# A mode's banner (ab's "Benchmarking HOST (be patient)", wrk's "Running
# 2s test @ URL"): it writes to the report's stream once the settings are
# checked, and says whether it left its line open (ab's, until "...done").
Banner = Callable[[IO[str]], bool]


def execute(prog: str, url: str, kwargs: dict[str, Any], paths: dict[str, str | None],
            write_report: Callable[[Result, IO[str]], None],
            flags: Mapping[str, str] = FLAGS, files: ModeFiles | None = None,
            appended: Collection[str] = (), banner: Banner | None = None) -> Result | int:
    """Runs run(url, **kwargs) and writes its report with write_report (to
    standard error when an output goes to standard output) and the files
    paths names ("-e": ab's CSV, "--json", "--hgrm", "--html", and a mode's
    own files, each by its writer; those whose flags are in appended are
    added to, not emptied). The Result, or the exit status when nothing
    was measured. A setting run() refuses is named by its flag in flags
    (httpbench's own, unless a mode gives its tool's), before the banner
    is written; an error after it starts a line of its own."""
    report = report_stream(paths)
    line_open = False
    try:
        outputs = Outputs(paths, appended, also={"--log": kwargs.get("log")})
    except UsageError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    try:
        preflight(url, **kwargs)
        if banner is not None:
            line_open = banner(report)
            report.flush()
        r = run(url, **kwargs)
    except BrokenPipeError:
        outputs.discard()
        raise  # (the reader went away: the command line's to end quietly)
    except Exception as e:
        outputs.discard()
        if line_open:
            print(file=report, flush=True)
        status = _refused(prog, e, flags)
        if status is None:
            raise
        return status
    gone = None
    try:
        write_report(r, report)
        report.flush()
    except BrokenPipeError as e:
        gone = e  # (the report's reader went away: the files are written all the same)
    for flag, text in (("-e", None), ("--json", r.to_json()),
                       ("--hgrm", r.latency.to_hgrm()),
                       ("--html", r.to_html() if paths.get("--html") else "")):
        out = outputs.get(flag)
        if out is None:
            continue
        if text is None:
            write_csv(r, out)
        else:
            out.write(text if text.endswith("\n") else text + "\n")
    for flag, (_, write) in (files or {}).items():
        out = outputs.get(flag)
        if out is not None:
            write(r, out)
    outputs.close()
    if gone is not None:
        raise gone
    return r


def _refused(prog: str, e: Exception, flags: Mapping[str, str]) -> int | None:
    """The exit status for what stopped a run before it measured anything,
    its one line said on stderr; None for what is not such a thing."""
    if isinstance(e, SettingError):
        print(f"{prog}: {e.said(flags)}", file=sys.stderr)
        return 2
    if isinstance(e, (ValueError, FileNotFoundError, TLSError, ImportError)):
        # Settings nothing could run with: a file, a cipher list OpenSSL
        # does not know (a handshake's failure is counted, not raised).
        print(one_line(prog, e), file=sys.stderr)
        return 2
    if isinstance(e, (HttpbenchError, OSError)):
        # Nothing ran: the name did not resolve, or the system refused the
        # run its threads or descriptors.
        print(one_line(prog, e), file=sys.stderr)
        return 1
    return None


def execute_mode(prog: str, url: str, kwargs: dict[str, Any], args: Any,
                 write_report: Callable[[Result, IO[str]], None], csv: str | None = None,
                 flags: Mapping[str, str] = FLAGS, files: ModeFiles | None = None,
                 appended: Collection[str] = (), banner: Banner | None = None) -> int:
    """A drop-in mode's run: execute() with the output options every mode
    takes (and ab's -e CSV, and the mode's own files), and httpbench's exit
    status: 0 when no request failed, 1 when some did or nothing could
    start, 2 for bad settings."""
    r = execute(prog, url, kwargs, output_paths(args, csv, files), write_report, flags, files,
                appended, banner)
    if isinstance(r, int):
        return r
    return 0 if r.ok else 1


@contextlib.contextmanager
def logged_records(kwargs: dict[str, Any]) -> Iterator[Callable[[], Iterator[LogRecord]]]:
    """For a mode's per-request output (h2load's --log-file, ab's -g,
    hey's -o csv), made from httpbench's per-request log: run()'s `log` in
    kwargs, --log's file when given, else a temporary CSV removed after.
    Yields what reads its records, one at a time in the log's order, once
    the run is over (none when it wrote none)."""
    with tempfile.TemporaryDirectory(prefix="httpbench-records-") as tmp:
        if kwargs.get("log") is None:
            kwargs["log"] = os.path.join(tmp, "requests.csv")
        path = kwargs["log"]
        yield lambda: iter_log(path) if os.path.exists(path) else iter(())
