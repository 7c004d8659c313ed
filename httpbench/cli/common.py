"""What the subcommands share: the TLS and certificate flags, time and size
parsing, headers, the proxy flags, scenario files, one-line errors."""

from __future__ import annotations

import argparse
import difflib
import errno
import os
import re
import runpy
import stat
import sys
import urllib.parse
import urllib.request
from collections.abc import Collection, Mapping
from typing import IO, Any, NoReturn

from .. import _check
from .._settings import SettingError, flag_help
from .._url import split_proxy, split_url
from ..runner import basic_auth, with_header
from ..scenario import Scenario
from ..spec import SETTINGS, check_settings

class Parser(argparse.ArgumentParser):
    """argparse's parser for every subcommand, whose refusal of what it
    does not know names the closest flag it does know ("--conections:
    did you mean --connections?"), a line each, where argparse prints its
    whole usage block and no suggestion."""

    def error(self, message: str) -> NoReturn:
        prefix = "unrecognized arguments: "
        if not message.startswith(prefix):
            super().error(message)
        tokens = message[len(prefix):].split()
        # (What follows an unknown flag may be its value: said only when
        # no flag was unknown.)
        flags = [t for t in tokens if t.startswith("-") and t != "-"]
        lines = [self._unknown(token) for token in flags or tokens]
        lines.append(f"{self.prog}: {self.prog} --help lists every flag")
        self.exit(2, "\n".join(lines) + "\n")

    def _unknown(self, token: str) -> str:
        if not token.startswith("-") or token == "-":
            return f"{self.prog}: unexpected argument {token!r}"
        name = token.partition("=")[0]
        known = [o for action in self._actions for o in action.option_strings]
        same = [o for o in known if o.lower() == name.lower()]
        close = same or difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        guess = f": did you mean {close[0]}?" if close else ""
        return f"{self.prog}: unrecognized flag {token}{guess}"


# The flags the subcommands share, each defined once: (its flags, argparse's
# keywords). A run setting's flag, help and type are its declaration's
# (httpbench/spec.py); _GRAMMAR gives those whose value the command line
# writes its own way (a time: 30s, 500ms), _OWN the flags that are the
# command line's alone. A subcommand takes those it has with add_common,
# changing a default or a help text where its meaning there needs saying,
# and check_common checks their values by the declaration's checks,
# naming the flags.
_GRAMMAR: dict[str, dict[str, object]] = {
    "warmup": {"metavar": "N|TIME",
               "help": "requests (N) or a time (2s, 1m) to run first, uncounted"},
    "timeout": {"default": "30", "metavar": "TIME",
                "help": "time each request may take: 30, 30s, 500ms (default 30s)"},
    "grace": {"default": "1", "metavar": "TIME",
              "help": "time the requests in flight get to finish once the duration ends or "
                      "Ctrl-C stops the run; those still in flight are then cancelled "
                      "(default 1s; 0: at once, as wrk and h2load stop)"},
    "metrics_linger": {"default": "0", "metavar": "TIME",
                       "help": "with --metrics: keep serving the final figures this long after "
                               "the run (default 0), so a scraper catches the end"},
}
_OWN: dict[str, tuple[tuple[str, ...], dict[str, object]]] = {
    "headers": (("-H",), {
        "action": "append", "default": [], "metavar": "'Name: value'",
        "help": "a header added to every request (repeatable)"}),
    "quiet": (("-q",), {"action": "store_true", "help": "no progress"}),
    "json": (("--json",), {"metavar": "FILE", "help": "write the result as JSON to FILE"}),
    "html": (("--html",), {
        "metavar": "FILE",
        "help": "write a standalone HTML report to FILE: one file that opens from disk with no "
                "network (see also: httpbench report)"}),
    "hgrm": (("--hgrm",), {
        "metavar": "FILE",
        "help": "write HdrHistogram's percentile distribution (values in ms) to FILE ('-': "
                "standard output)"}),
}
# Each run setting by its first flag, as messages name it.
FLAGS = {name: meta.named for name, _, meta in SETTINGS if meta.named}
COMMON: dict[str, tuple[tuple[str, ...], dict[str, object]]] = {
    **{name: (meta.flags, {"help": flag_help(meta.help, lambda n: FLAGS.get(n, n)),
                           **(meta.cli or {}), **_GRAMMAR.get(name, {})})
       for name, _, meta in SETTINGS if meta.cli is not None or name in _GRAMMAR},
    **_OWN,
}


def add_common(p: argparse._ActionsContainer, *dests: str,
               **changes: dict[str, object]) -> None:
    """Adds the shared flags named (COMMON's keys) to p, in that order; a
    keyword named after one changes its argparse keywords (a default, a
    help text)."""
    for dest in dests:
        flags, kwargs = COMMON[dest]
        p.add_argument(*flags, dest=dest, **{**kwargs, **changes.get(dest, {})})  # type: ignore[arg-type]


def check_common(args: argparse.Namespace, max_concurrency: int = _check.MAX_CONCURRENCY) -> None:
    """The shared flags' values read (a time to seconds, -H lines to
    pairs), then checked by their settings' declarations (the checks and
    RULES run() applies) and converted in place; a bad one is a
    UsageError naming its flag. Flags the subcommand does not have are
    skipped."""
    given = vars(args)
    if isinstance(given.get("timeout"), str):
        args.timeout = parse_time("-s", args.timeout)
    for name in ("grace", "metrics_linger"):  # (0 too: their checks say)
        if isinstance(given.get(name), str):
            setattr(args, name, parse_time(FLAGS[name], given[name], checked=False))
    if isinstance(given.get("warmup"), str):
        args.warmup = parse_warmup(args.warmup)
    if "headers" in given:
        args.headers = parse_headers(args.headers)
    # (None from a flag not given, where the setting's default is not None,
    # is the subcommand's own default: run() takes the declaration's.)
    values = {name: given[name] for name, default, meta in SETTINGS
              if name in given and name in COMMON and (given[name] is not None or
                                                       default is None)}
    try:
        check_settings(values)
    except SettingError as e:
        raise UsageError(e.said(FLAGS)) from None
    for name, value in values.items():
        setattr(args, name, value)
    if given.get("log") is not None:
        # (run() opens it only when it starts: a usage error now.)
        if not os.access(os.path.dirname(os.path.abspath(args.log)), os.W_OK):
            raise UsageError(f"--log: cannot write {args.log} (no such folder, or not writable)")
    if given.get("concurrency") is not None and args.concurrency > max_concurrency:
        raise UsageError(f"-c must be from 1 to {max_concurrency:,}, not {args.concurrency}")


def run_settings(args: argparse.Namespace) -> dict[str, object]:
    """run()'s settings that flags give one to one (COMMON's, checked by
    check_common), by name: what a subcommand passes on as they are."""
    given = vars(args)
    return {name: given[name] for name, _, _ in SETTINGS if name in COMMON and name in given}


def request_parts(args: argparse.Namespace, type_alone: bool = True
                  ) -> tuple[str, bytes | None, list[tuple[str, str]]]:
    """The method, body and headers ab's letters ask for (-m, -i, -p, -u,
    -T, -A, -C; args.headers already pairs): with type_alone False, -T
    without a body sends nothing, as ab sends a Content-Type only with one."""
    headers = list(args.headers)
    body = None
    method = args.method
    if args.head:
        if args.postfile or args.putfile:
            raise UsageError("-i (HEAD) sends no body: not with -p or -u")
        method = method or "HEAD"
    if args.putfile is not None and args.postfile is not None:
        raise UsageError("-p and -u: give one body")
    for flag, path, verb in (("-p", args.postfile, "POST"), ("-u", args.putfile, "PUT")):
        if path is not None:
            body = read_body_file(flag, path)
            method = method or verb
    if args.content_type and (type_alone or body is not None):
        headers.append(("Content-Type", args.content_type))
    elif body is not None and not any(k.lower() == "content-type" for k, _ in headers):
        headers.append(("Content-Type", "text/plain"))  # ab's default for -p and -u
    if args.auth is not None:
        user, sep, password = args.auth.partition(":")
        if not sep:
            raise UsageError(f"-A takes user:password, not {args.auth!r}")
        headers.append(("Authorization", basic_auth(user, password)))
    if args.cookies:
        for c in args.cookies:
            if "=" not in c:
                raise UsageError(f"-C takes name=value, not {c!r}")
        headers.append(("Cookie", "; ".join(args.cookies)))
    return method or "GET", body, headers


def add_tls_arguments(p: argparse._ActionsContainer) -> None:
    """curl's words for how an https:// server is checked."""
    p.add_argument("--insecure", dest="verify", action="store_false",
                   help="do not verify the server's certificate or name (as curl -k; ab, wrk "
                        "and hey never verify)")
    p.add_argument("--cacert", metavar="FILE",
                   help="verify the server against the CA certificates in FILE (PEM), not the "
                        "system's")
    add_cert_arguments(p, "a client certificate")


def add_cert_arguments(p: argparse._ActionsContainer, what: str) -> None:
    """--cert and --key, curl's names, for the server's and the client's."""
    p.add_argument("--cert", metavar="FILE", help=f"{what} (PEM)")
    p.add_argument("--key", metavar="FILE",
                   help="its private key (PEM; default: in --cert's file)")


# ab's -f: TLS1.2 and TLS1.3 exactly, ALL what OpenSSL allows from 1.2 up.
PROTOCOLS = {"TLS1.2": ("1.2", "1.2"), "TLS1.3": ("1.3", "1.3"), "ALL": ("1.2", None)}


class UsageError(Exception):
    pass


def tls_options(args: argparse.Namespace) -> dict[str, object]:
    """run()'s TLS arguments from the flags."""
    protocol = (args.protocol or "ALL").upper().replace("TLSV", "TLS")
    if protocol not in PROTOCOLS:
        raise UsageError(f"-f takes TLS1.2, TLS1.3 or ALL, not {args.protocol!r} (SSLv3, TLS 1.0 "
                         "and 1.1 are not offered)")
    lo, hi = PROTOCOLS[protocol]
    opts: dict[str, object] = {"verify": args.verify, "cafile": args.cacert,
                               "certfile": args.cert, "keyfile": args.key, "ciphers": args.ciphers,
                               "ciphersuites": args.ciphersuites, "tls_resume": args.tls_resume}
    if args.protocol is not None:
        opts.update(tls_min=lo, tls_max=hi)
    return opts


def proxy_option(args: argparse.Namespace) -> str | None:
    """run()'s proxy from -X, -P and --proxy-from-env."""
    proxy: str | None = args.proxy
    if proxy is None and args.proxy_from_env and args.url is not None:
        target = split_url(args.url)
        # As curl and urllib read them: http_proxy, https_proxy, no_proxy.
        proxies: dict[str, str] = urllib.request.getproxies()
        if not bool(urllib.request.proxy_bypass(target.host)):
            proxy = proxies.get(target.scheme)
    if args.proxy_auth is not None:
        if proxy is None:
            raise UsageError("-P: the proxy's credentials need a proxy (-X)")
        user, sep, password = args.proxy_auth.partition(":")
        if not sep:
            raise UsageError(f"-P takes user:password, not {args.proxy_auth!r}")
        via = split_proxy(proxy)
        quoted = f"{urllib.parse.quote(user, safe='')}:{urllib.parse.quote(password, safe='')}"
        proxy = f"http://{quoted}@{via}"
    if proxy is not None:
        split_proxy(proxy)  # a bad one is bad usage, before anything is sent
    return proxy


_UNIT_SECONDS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


_TIME_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h)")


def parse_time(flag: str, text: str, checked: bool = True) -> float:
    """A time as people write it to ab, wrk and hey: seconds (10, 2.5), or
    with units (10s, 500ms, 2m, 1h, 1m30s); checked: above 0 and at most
    a year (False: any number, for the setting's own check)."""
    t = text.strip().lower()
    try:
        value = float(t)
    except ValueError:
        parts = _TIME_PART.findall(t)
        if not parts or "".join(n + u for n, u in parts) != t:
            raise UsageError(f"{flag} takes a time like 10, 10s, 500ms or 2m, "
                             f"not {text!r}") from None
        value = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    return _check.seconds(flag, value) if checked else value


def parse_warmup(text: str | None) -> int | float | None:
    """N requests, or a time with a unit (2s, 500ms, 1m)."""
    if text is None:
        return None
    t = text.strip()
    if t.lstrip("+-").isdigit():
        try:
            return _check.warmup(int(t))
        except ValueError as e:
            raise UsageError(f"--{e}") from None
    if not t[-1:].isalpha():
        raise UsageError(f"--warmup takes a count or a time like 2s, not {text!r}")
    return parse_time("--warmup", t)


def parse_headers(lines: list[str]) -> list[tuple[str, str]]:
    out = []
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"-H takes 'Name: value', not {line!r}")
        out.append((name.strip(), value.strip()))
    return out


def without_added(headers: list[tuple[str, str]], *names: str) -> list[tuple[str, Any]]:
    """headers with each of names (fields a run adds: User-Agent, Accept)
    left out unless headers give it: a drop-in mode's requests carry what
    its tool's carry."""
    out: list[tuple[str, Any]] = list(headers)
    for name in names:
        out = with_header(out, name, None)
    return out


def one_line(prog: str, e: BaseException) -> str:
    """`prog: what went wrong`; an OSError by its words and file, without
    str()'s "[Errno 98] " before them."""
    text = str(e) or type(e).__name__
    if isinstance(e, OSError) and e.errno is not None and e.strerror:
        text = e.strerror + (f": {e.filename}" if e.filename else "")
    return f"{prog}: {text}"


def load_scenario(path: str) -> tuple[Scenario, str | None]:
    """The Scenario a Python file names `scenario`, and its `url` if it
    gives one (run as a locustfile is: the file is the user's code)."""
    try:
        names = runpy.run_path(path, run_name="httpbench_scenario")
    except FileNotFoundError:
        raise UsageError(f"--scenario: no such file: {path}") from None
    except SystemExit as e:  # (the command ended with the file's status, saying nothing)
        raise UsageError(f"--scenario: {path} called sys.exit({e.code!r}) while loading; it "
                         "is to define `scenario`, an httpbench.Scenario") from None
    except Exception as e:  # the file's own error (a SyntaxError, a ValueError): say so
        raise UsageError(f"--scenario: {path}: {type(e).__name__}: {e}") from None
    scenario, url = names.get("scenario"), names.get("url")
    if not isinstance(scenario, Scenario):
        raise UsageError(f"--scenario: {path} must define `scenario`, an httpbench.Scenario "
                         f"(found {type(scenario).__name__})")
    if url is not None and not isinstance(url, str):
        raise UsageError(f"--scenario: {path}'s `url` must be a string")
    return scenario, url


def one_file_each(paths: Mapping[str, str | os.PathLike[str] | None]) -> None:
    """UsageError when two flags name one file: the same path, or one file
    by two names (a link, a relative path beside an absolute one), before
    anything is opened or sent. One output overwrote the other (--json F
    --html F kept the HTML alone; ab -g F --log F failed after the run
    and left F empty). A character device (/dev/null) may take several."""
    seen: list[tuple[str, str, tuple[int, int] | None]] = []
    for flag, given in paths.items():
        if given is None or given == "-":
            continue
        path = os.fspath(given)
        try:
            st = os.stat(path)
        except OSError:
            ident = None
        else:
            if stat.S_ISCHR(st.st_mode):
                continue
            ident = (st.st_dev, st.st_ino)
        real = os.path.realpath(path)
        for other, other_real, other_ident in seen:
            if real == other_real or (ident is not None and ident == other_ident):
                raise UsageError(f"{other} and {flag} both name {path}: one file cannot hold "
                                 "both; give each its own")
        seen.append((flag, real, ident))


class Outputs:
    """Output files, opened before the run so that a bad path is a usage
    error at once, not a traceback after a long run. A file the run never
    wrote to is removed again if it did not exist before."""

    def __init__(self, paths: Mapping[str, str | None], appended: Collection[str] = (),
                 also: Mapping[str, str | None] | None = None) -> None:
        """appended: the flags whose files are added to, not emptied (h2load's
        --log-file); also: files that something else writes (the run's
        --log), which no output may name too."""
        self.files: dict[str, tuple[str, IO[str], bool]] = {}
        self.appended = frozenset(appended)
        to_stdout = [flag for flag, path in paths.items() if path == "-"]
        if len(to_stdout) > 1:  # (they went out one after the other, mixed)
            raise UsageError(f"{' and '.join(to_stdout)} both ask for standard output (-): "
                             "give all but one a file")
        one_file_each({**paths, **(also or {})})
        for flag, path in paths.items():
            if path is None:
                continue
            if path == "-":
                self.files[flag] = (path, sys.stdout, True)
                continue
            existed = os.path.exists(path)
            try:
                # Never blocking: a FIFO with no reader would hold the run
                # before it began (a pipe with one, `--json >(jq .)`, is
                # written as it was).
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK, 0o644)
            except OSError as e:
                self.discard()
                why = "a FIFO that no one reads" if e.errno == errno.ENXIO else e.strerror
                raise UsageError(f"{flag}: cannot write {path}: {why}") from None
            os.set_blocking(fd, True)
            self.files[flag] = (path, os.fdopen(fd, "a"), existed)

    def get(self, flag: str) -> IO[str] | None:
        """The file for flag, emptied for writing (unless appended to); None
        when not asked for."""
        if flag not in self.files:
            return None
        path, f, _ = self.files[flag]
        if path != "-" and flag not in self.appended and stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            f.seek(0)
            f.truncate()
        return f

    def close(self) -> None:
        for path, f, _ in self.files.values():
            if path == "-":
                f.flush()
            else:
                f.close()

    def discard(self) -> None:
        for path, f, existed in self.files.values():
            if path == "-":
                continue
            f.close()
            if not existed:
                os.unlink(path)
        self.files = {}


# The largest request body a command line reads from a file (-p, -u): a
# character device such as /dev/zero, or an endless pipe, never ends.
MAX_BODY_FILE = 256 << 20


def read_body_file(flag: str, path: str) -> bytes:
    """The body in path (a file, or a pipe: `-p <(make-body)`), read to at
    most MAX_BODY_FILE bytes; UsageError naming the flag otherwise."""
    over = f"{flag}: {path} is over the 256 MiB a request body may be"
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size > MAX_BODY_FILE:
                raise UsageError(over)
            body = f.read(MAX_BODY_FILE + 1)
    except OSError as e:
        raise UsageError(f"{flag}: cannot read {path}: {e.strerror or e}") from None
    if len(body) > MAX_BODY_FILE:
        raise UsageError(over)
    return body
