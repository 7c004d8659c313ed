"""How a run setting is declared once and what follows from it.

A setting is a field of RunSpec (httpbench/spec.py) made by `setting()`:
its name, type and default are the field's; its check, its command-line
flags, its argparse keywords and its one line of help are the field's
metadata. From that one declaration follow run()'s checks (check_values),
the command line's flags (add_flags) and its words in errors (each
message is a template that names settings, rendered with argument names
for run() and with flags for the command line), and the manual's table
(markdown_table, which tests/loop/test_settings.py holds docs/arguments.md to).
What goes together or not is RULES, data beside the fields.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["Setting", "SettingError", "Rule", "setting", "declared", "check_values",
           "add_flags", "markdown_table"]

# A check: (the setting's name, its value, the values checked so far, in
# declaration order) -> the value as the run keeps it; a ValueError whose
# text begins with the name otherwise.
Check = Callable[[str, Any, Mapping[str, Any]], Any]


@dataclasses.dataclass(frozen=True)
class Setting:
    """What a RunSpec field's metadata holds (see setting())."""

    help: str
    check: Check | None
    flags: tuple[str, ...]
    cli: Mapping[str, Any] | None
    feeds: tuple[str, ...]
    named: str  # the flag a message names ("" when there is none)


def setting(default: Any, help: str, *, check: Check | None = None,
            flags: tuple[str, ...] = (), cli: Mapping[str, Any] | None = None,
            feeds: tuple[str, ...] | None = None, named: str | None = None) -> Any:
    """A RunSpec field declared whole. help is one line, naming other
    settings as {name} (rendered as `name` in the manual, as a flag on the
    command line). check checks and converts a value (None: the value is
    checked where it is built, said in help). flags are the command
    line's (the first is the one its messages name); cli, argparse's
    keywords when the flag maps onto the setting one to one (dest is the
    setting's name; None when the command line's grammar makes the value,
    as -t and -d make duration). feeds names the _core._Bench settings
    the loop's config takes from it (default: its own name; () for
    none). named is the flag a message names, when not the first (the
    one a user of that flag types most: --rate, whose -R comes first in
    the help as wrk2 writes it)."""
    meta = Setting(help, check, flags, cli, feeds if feeds is not None else ("",),
                   named if named is not None else (flags[0] if flags else ""))
    return dataclasses.field(default=default, metadata={"setting": meta})


def declared(cls: type) -> list[tuple[str, Any, Setting]]:
    """(name, default, Setting) of each declared field of cls, in order;
    a feeds left to its default is the field's name."""
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get("setting")
        if meta is None:
            continue
        if meta.feeds == ("",):
            meta = dataclasses.replace(meta, feeds=(f.name,))
        out.append((f.name, f.default, meta))
    return out


class SettingError(ValueError):
    """A value out of range, or settings that do not go together. str()
    names run()'s arguments; said(flags) names them as a command line
    does. `argument` is the setting at fault.

    The message is a template: {name} a setting, {given} the settings
    at fault, {add_name} how to give a setting it needs ("pass log=FILE"
    to run(), "add --log FILE" on a command line; values, the example
    each takes)."""

    def __init__(self, argument: str, template: str, given: Iterable[str] = (),
                 values: Mapping[str, str] | None = None) -> None:
        self.argument = argument
        self.template = template
        self.given = tuple(given)
        self.values = dict(values or {})
        super().__init__(self.said({}))

    def said(self, flags: Mapping[str, str]) -> str:
        """The message, each setting named as flags maps it (its own name
        where flags holds none, or where flags is empty: run()'s words)."""
        def say(name: str) -> str:
            return flags.get(name, name)

        def add(name: str) -> str:
            value = self.values.get(name, "")
            if not flags:
                return f"pass {name}={value or 'True'}"
            return f"add {say(name)}" + (f" {value}" if value else "")
        return self.template.format_map(_Names(say, add, " or ".join(map(say, self.given))))


class _Names(dict[str, str]):
    def __init__(self, say: Callable[[str], str], add: Callable[[str], str],
                 given: str) -> None:
        super().__init__(given=given)
        self.say, self.add = say, add

    def __missing__(self, key: str) -> str:
        return self.add(key[4:]) if key.startswith("add_") else self.say(key)


@dataclasses.dataclass(frozen=True)
class Rule:
    """Settings that need or exclude others: when `name` is given (not
    its default) and, for "excludes", any of `others` is given too, or,
    for "needs", none of them is. text names settings as {name} and the
    offending ones as {given}."""

    name: str
    kind: str  # "excludes" or "needs"
    others: tuple[str, ...]
    text: str


def check_values(fields: list[tuple[str, Any, Setting]], rules: Iterable[Rule],
                 values: dict[str, Any]) -> None:
    """Each value in values checked by its setting's check, in declaration
    order, and replaced by what the check returns; then the rules among
    the settings values holds. A SettingError names the first fault."""
    defaults = {name: default for name, default, _ in fields}
    for name, _, meta in fields:
        if name not in values or meta.check is None:
            continue
        try:
            values[name] = meta.check(name, values[name], values)
        except SettingError:
            raise
        except ValueError as e:
            raise _as_setting_error(name, str(e)) from None

    def given(n: str) -> bool:
        return n in values and values[n] is not defaults[n] and values[n] != defaults[n]

    examples = {name: str(meta.cli.get("metavar", "")) for name, _, meta in fields
                if meta.cli is not None}
    for rule in rules:
        if not given(rule.name):
            continue
        present = [n for n in rule.others if given(n)]
        if rule.kind == "excludes" and present:
            raise SettingError(rule.name, rule.text, present, examples)
        if rule.kind == "needs" and not present and all(n in values for n in rule.others):
            raise SettingError(rule.name, rule.text, rule.others, examples)


def _as_setting_error(name: str, text: str) -> SettingError:
    """A check's ValueError, whose text begins with the setting's name, as
    a SettingError naming it by a placeholder."""
    escaped = text.replace("{", "{{").replace("}", "}}")
    if escaped.startswith(name):
        return SettingError(name, "{" + name + "}" + escaped[len(name):])
    return SettingError(name, "{" + name + "}: " + escaped)


def render_help(text: str, say: Callable[[str], str]) -> str:
    """A help line, each {name} said by say."""
    return text.format_map(_Names(say, say, ""))


def flag_help(text: str, say: Callable[[str], str]) -> str:
    """A flag's help line (argparse's, with its % doubled), each {name}
    said by say, and Python's None said as a command line says it: the
    flag not given ("None: wide open" is "not given: wide open")."""
    return render_help(text, say).replace("None:", "not given:").replace("%", "%%")


def add_flags(p: argparse._ActionsContainer, fields: list[tuple[str, Any, Setting]],
              *names: str, **changes: Mapping[str, Any]) -> None:
    """Adds the flags of the settings named to p, in that order, from their
    declaration (dest the setting's name, help rendered with flags); a
    keyword named after one changes its argparse keywords (a default, a
    help text)."""
    by_name = {n: (d, m) for n, d, m in fields}
    flags = {n: m.flags[0] for n, (_, m) in by_name.items() if m.flags}
    for name in names:
        _, meta = by_name[name]
        if meta.cli is None:
            raise KeyError(f"{name}'s flag is the command line's own grammar")
        kwargs: dict[str, Any] = {"help": flag_help(meta.help, lambda n: flags.get(n, n)),
                                  **meta.cli, **changes.get(name, {})}
        p.add_argument(*meta.flags, dest=name, **kwargs)


def markdown_table(fields: list[tuple[str, Any, Setting]], rules: Iterable[Rule]) -> str:
    """The manual's table of run()'s settings (argument, default, flag,
    meaning), then the rules between them, one line each, in run()'s
    words (docs/arguments.md ends with it; a test keeps them equal)."""
    rows = ["| argument | default | flag | meaning |", "|---|---|---|---|"]
    for name, default, meta in fields:
        shown = "`None`" if default is None else f"`{default!r}`"
        flag = ", ".join(f"`{f}`" for f in meta.flags) or "-"
        text = render_help(meta.help, lambda n: f"`{n}`").replace("|", "\\|")
        rows.append(f"| `{name}` | {shown} | {flag} | {text} |")
    rows += ["", "What goes together and what does not:", ""]
    examples = {name: str(meta.cli.get("metavar", "")) for name, _, meta in fields
                if meta.cli is not None}
    for rule in rules:
        said = SettingError(rule.name, rule.text, rule.others, examples).said({})
        rows.append(f"- `{rule.name}` {rule.kind} {', '.join(f'`{n}`' for n in rule.others)}: "
                    f"{said}")
    return "\n".join(rows) + "\n"
