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
from ..runner import run
from .common import FLAGS, Outputs, UsageError, one_line, run_settings

__all__ = ["execute", "execute_mode", "output_options", "write_csv", "OUTPUT_FLAGS",
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


def execute(prog: str, url: str, kwargs: dict[str, Any], paths: dict[str, str | None],
            write_report: Callable[[Result, IO[str]], None],
            flags: Mapping[str, str] = FLAGS, files: ModeFiles | None = None,
            appended: Collection[str] = ()) -> Result | int:
    """Runs run(url, **kwargs) and writes its report with write_report (to
    standard error when an output goes to standard output) and the files
    paths names ("-e": ab's CSV, "--json", "--hgrm", "--html", and a mode's
    own files, each by its writer; those whose flags are in appended are
    added to, not emptied). The Result, or the exit status when nothing
    was measured. A setting run() refuses is named by its flag in flags
    (httpbench's own, unless a mode gives its tool's)."""
    try:
        outputs = Outputs(paths, appended, also={"--log": kwargs.get("log")})
    except UsageError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    try:
        r = run(url, **kwargs)
    except SettingError as e:
        outputs.discard()
        print(f"{prog}: {e.said(flags)}", file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError, TLSError, ImportError) as e:
        # Settings nothing could run with: a file, a cipher list OpenSSL
        # does not know (a handshake's failure is counted, not raised).
        outputs.discard()
        print(one_line(prog, e), file=sys.stderr)
        return 2
    except (HttpbenchError, OSError) as e:
        # Nothing ran: the name did not resolve, or the system refused the
        # run its threads or descriptors.
        outputs.discard()
        print(one_line(prog, e), file=sys.stderr)
        return 1
    report = report_stream(paths)
    write_report(r, report)
    report.flush()
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
    return r


def execute_mode(prog: str, url: str, kwargs: dict[str, Any], args: Any,
                 write_report: Callable[[Result, IO[str]], None], csv: str | None = None,
                 flags: Mapping[str, str] = FLAGS, files: ModeFiles | None = None,
                 appended: Collection[str] = ()) -> int:
    """A drop-in mode's run: execute() with the output options every mode
    takes (and ab's -e CSV, and the mode's own files), and httpbench's exit
    status: 0 when no request failed, 1 when some did or nothing could
    start, 2 for bad settings."""
    r = execute(prog, url, kwargs, output_paths(args, csv, files), write_report, flags, files,
                appended)
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
