"""The drop-in modes' flags (`httpbench ab`, `httpbench wrk`): one table a
tool, each row a flag of that tool, its meaning there, and how httpbench
honours it (what it becomes in run()) or why it is refused and what to use
instead. The mode's parser, its refusals and its manual page's table are
all made from the row, so the three cannot drift apart."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

__all__ = ["Flag", "mode_parser", "refusal", "checked", "whole", "rate_per", "markdown",
           "given_last", "given_order"]


@dataclasses.dataclass(frozen=True)
class Flag:
    """One flag of a tool. names: its spellings ("-c", "--connections");
    value: its argument's name as the tool's help writes it ("" for a
    switch); meaning: the tool's own words; here: how httpbench honours it
    (onto run()), or for a refused flag why not and what to use instead;
    repeat: it may be given again (-H); default: the tool's default,
    as text the mode's parser reads."""

    names: tuple[str, ...]
    value: str
    meaning: str
    here: str
    refused: bool = False
    repeat: bool = False
    default: str | None = None

    @property
    def dest(self) -> str:
        """The Namespace attribute: the longest spelling, dashes as
        underscores, "opt_" before it (-c and -C stay apart)."""
        name = max(self.names, key=len).lstrip("-").replace("-", "_")
        return f"opt_{name}"

    @property
    def usage(self) -> str:
        """As the tool's help writes it: "-n requests", "-c, --connections N"."""
        return ", ".join(self.names) + (f" {self.value}" if self.value else "")


class _Given(argparse.Action):
    """A mode's flag: its value kept as argparse's store, store_true or
    append would keep it (kind "value", "switch", "repeat"), and its dest
    added to the namespace's `given` (a tuple), so a mode reads the order
    the flags came in as argparse itself saw them: "-kt 1" is -k then -t,
    as getopt reads it."""

    def __init__(self, option_strings: Sequence[str], dest: str, kind: str = "value",
                 **kwargs: object) -> None:
        if kind == "switch":
            kwargs["nargs"] = 0
        super().__init__(option_strings, dest, **kwargs)  # type: ignore[arg-type]
        self.kind = kind

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        if self.kind == "switch":
            values = True
        elif self.kind == "repeat":
            values = [*getattr(namespace, self.dest), values]
        setattr(namespace, self.dest, values)
        namespace.given = (*getattr(namespace, "given", ()), self.dest)


def mode_parser(prog: str, description: str, epilog: str, table: Sequence[Flag],
                url: str, many: bool = False) -> argparse.ArgumentParser:
    """A parser that takes exactly the table's flags (the tool's help flag,
    -h, is argparse's own), their values as text for the mode to read, the
    URL (its metavar as the tool writes it; with many, any number of them:
    args.url a list), and httpbench's output files as long options;
    refused flags parse too, so that refusal() can name them."""
    from .common import Parser, add_common
    from .execute import OUTPUT_FLAGS
    p = Parser(prog=prog, description=description, epilog=epilog,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    tool = p.add_argument_group(f"{prog.split()[-1]}'s flags")
    for flag in table:
        if "-h" in flag.names:
            continue
        help_text = f"{flag.meaning}" + (f" (refused: {flag.here})" if flag.refused else "")
        help_text = help_text.replace("%", "%%")
        if not flag.value:
            tool.add_argument(*flag.names, dest=flag.dest, action=_Given, kind="switch",
                              default=False, help=help_text)
        elif flag.repeat:
            tool.add_argument(*flag.names, dest=flag.dest, action=_Given, kind="repeat",
                              default=[], metavar=flag.value, help=help_text)
        else:
            tool.add_argument(*flag.names, dest=flag.dest, action=_Given, default=flag.default,
                              metavar=flag.value, help=help_text)
    p.set_defaults(given=())
    p.add_argument("url", nargs="*" if many else "?", metavar=url)
    outputs = p.add_argument_group(f"httpbench's outputs ({prog.split()[-1]} has none of these)")
    add_common(outputs, *OUTPUT_FLAGS)
    return p


def refusal(prog: str, args: argparse.Namespace, table: Sequence[Flag]) -> str:
    """The line that refuses the first refused flag given, or ""."""
    for flag in table:
        if flag.refused and getattr(args, flag.dest, None) not in (None, False, []):
            return (f"{prog}: {flag.names[0]} ({flag.meaning[0].lower()}{flag.meaning[1:]}) "
                    f"is not honoured: {flag.here}")
    return ""


def checked(prog: str, args: argparse.Namespace, table: Sequence[Flag],
            settings: Callable[[], T]) -> T | int:
    """A mode's settings, read by settings() once no refused flag was given
    and the shared flags' values are checked; or exit status 2, its one
    line said, nothing sent."""
    from .common import UsageError, check_common
    line = refusal(prog, args, table)
    if line:
        print(line, file=sys.stderr)
        return 2
    try:
        check_common(args)
        return settings()
    except (UsageError, ValueError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2


def whole(flag: str, text: str, low: int, high: int) -> int:
    """A whole number as the tools read one (digits only), from low to high;
    a UsageError or ValueError naming the flag otherwise."""
    from .. import _check
    from .common import UsageError
    if not text.strip().isdigit():
        raise UsageError(f"{flag} takes a whole number, not {text!r}")
    return _check.count(flag, int(text), low, high)


def rate_per(flag: str, text: str, connections: int) -> float | None:
    """A rate given per connection (hey's -q, h2load's --rps) as the run's
    rate: the number times the connections; 0 is no limit (None), as in
    both tools. NaN, infinite, negative or not a number: a UsageError
    naming the flag, or a ValueError naming it when the total is out of
    range."""
    import math

    from .. import _check
    from .common import UsageError
    try:
        each = float(text)
    except ValueError:
        raise UsageError(f"{flag} takes requests per second per connection, not "
                         f"{text!r}") from None
    if not math.isfinite(each) or each < 0:
        raise UsageError(f"{flag} takes a finite rate of 0 or more, not {text!r}")
    if each == 0:
        return None
    try:
        return _check.rate(each * connections, connections)
    except ValueError as e:
        raise UsageError(f"{flag} {text} x {connections} connections: {e}") from None


def given_order(args: argparse.Namespace, flags: Sequence[str]) -> list[str]:
    """The mode's flags among `flags` ("-n", "-t") in the order the
    command line gave them (a flag given twice, twice), as argparse read
    them: combined short flags ("-kt 1") included."""
    by_dest = {f"opt_{name.lstrip('-')}": name for name in flags}
    return [by_dest[dest] for dest in args.given if dest in by_dest]


def given_last(args: argparse.Namespace, flags: Sequence[str]) -> str | None:
    """Of `flags` ("-n", "-t"), the one given last (ab lets the later of
    -n and -t set the count); None when none is."""
    order = given_order(args, flags)
    return order[-1] if order else None


def markdown(table: Sequence[Flag], tool: str) -> str:
    """The manual's table of a mode's flags, made from its rows."""
    lines = [f"| {tool}'s flag | in {tool} | in httpbench {tool} |", "|---|---|---|"]
    for flag in table:
        here = f"**refused**: {flag.here}" if flag.refused else flag.here
        usage = flag.usage.replace("|", "\\|")
        lines.append(f"| `{usage}` | {flag.meaning} | {here.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"
