"""The httpbench command line.

    httpbench                                   the comparison on the embedded server
    httpbench compare [--agents a,b] [-n N] [-c C] [URL]
    httpbench [-n N] [-c C] [-t SECONDS] [-k] [-p POSTFILE] [-u PUTFILE] [-T TYPE]
              [-H 'Name: value']... [-m METHOD] [-s TIMEOUT] [-q] [-l] [-e CSVFILE]
              [--json FILE] [--rate R] [--threads T] [--warmup N|Ss] [URL [URL2 ...]]
    httpbench [-n N] [-c C] ... --scenario FILE.py [URL]
    httpbench capacity URL [--slo 'p99<5ms'] [--max-error-rate F] [--start R] [--stage S] [-c C]
    httpbench report RESULT.json [MORE.json ...] [-o report.html]
    httpbench serve [--host H] [--port P] [--mode epoll|threads] [--threads T] [--static DIR]
                    [--tls [--cert FILE --key FILE]] [--unix-socket PATH]
                    [--proxy [--allow HOST[:PORT]]... [--upstream-timeout S]]

https:// URLs speak TLS, verifying the server unless --insecure (curl's
word; -k stays ab's keep-alive); --cacert, --cert, --key as curl's; ab's -f
PROTOCOL and -Z CIPHERSUITE.

As ab: the same letters, the same report. Keep-alive is on unless
--no-keepalive (-k is accepted from habit). With no URL, the seed's client
comparison runs on the embedded server (`httpbench compare`). Exit status 0
only when every request completed without failure; 2 for bad usage.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from .ab import ab_main
from .bench import bench
from .capacity import capacity_main
from .compare import compare_main
from .h2load import h2load_main
from .hey import hey_main
from .report import report_main
from .serve import serve
from .wrk import wrk_main

def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM (timeout(1), a service manager) and SIGHUP (a closed terminal)
    # end a run as Ctrl-C does: what was measured is printed and written,
    # and the status is a stopped run's (1). serve installs its own.
    stops = (signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.getsignal(sig) for sig in stops}
    try:
        if args and args[0] == "serve":
            return serve(args[1:])
        if args and args[0] == "report":
            return report_main(args[1:])
        for sig in stops:
            signal.signal(sig, _as_interrupt)
        if args and args[0] == "capacity":
            return capacity_main(args[1:])
        if args and args[0] == "compare":
            return compare_main(args[1:])
        if args and args[0] == "ab":
            return ab_main(args[1:])
        if args and args[0] == "wrk":
            return wrk_main(args[1:])
        if args and args[0] == "hey":
            return hey_main(args[1:])
        if args and args[0] == "h2load":
            return h2load_main(args[1:])
        return bench(args)
    except BrokenPipeError:
        # The reader went away (`| head`): the rest goes nowhere, with no
        # traceback (the signal module's note on SIGPIPE), and the status
        # says the output was not all written.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        # Ctrl-C outside a run (a run reports what it measured): no
        # traceback, the shell's status for SIGINT.
        print("httpbench: interrupted", file=sys.stderr)
        return 130
    finally:
        for sig, handler in previous.items():
            if handler is not None:  # None: set from C, not ours to restore
                signal.signal(sig, handler)


__all__ = ["main"]
