"""What a saved file holds, checked against the model's own type hints as
it is read back: a field of the wrong type, a number no figure can be (an
integer past 2**63, a float that is not finite) or an object where a
number belongs is a FieldError naming the field's path
("by_name.checkout.threads: an integer was expected, not 'x'"), never a
traceback from whatever first touched it. The hints are the dataclasses'
(Result, WorkerPart, CapacityResult, ...): nothing is declared twice."""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from typing import Any

__all__ = ["FieldError", "typed", "dataclass_fields", "shown", "INT_LIMIT"]

# The widest integer a figure may be (the loop's counters are 64-bit).
INT_LIMIT = 2**63


class FieldError(ValueError):
    """A saved field that is not what the model holds: `path` names it
    (dotted, "timeline[3].p99"), `why` says what is wrong."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}" if path else why)
        self.path, self.why = path, why

    def within(self, outer: str) -> FieldError:
        """The same error, its path under `outer`."""
        return FieldError(f"{outer}.{self.path}" if self.path else outer, self.why)


def shown(value: Any) -> str:
    """A value as a message shows it: short."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _number(value: Any, path: str, integer: bool) -> Any:
    what = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            (integer and not isinstance(value, int)):
        raise FieldError(path, f"{what} was expected, not {shown(value)}")
    if isinstance(value, int) and not -INT_LIMIT <= value < INT_LIMIT:
        raise FieldError(path, f"{value.bit_length()} bits is out of range for a figure")
    if isinstance(value, float) and not math.isfinite(value):
        raise FieldError(path, f"{value!r} is no figure")
    return value if integer else float(value)


def typed(value: Any, hint: Any, path: str) -> Any:
    """value as the hint says it is held (a dict's keys from JSON's
    strings when the hint's are int; a tuple from a list), checked all the
    way down; FieldError naming the path otherwise."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return typed(value, inner, path)
    if hint is Any:
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise FieldError(path, f"true or false was expected, not {shown(value)}")
        return value
    if hint in (int, float):
        return _number(value, path, hint is int)
    if hint is str:
        if not isinstance(value, str):
            raise FieldError(path, f"text was expected, not {shown(value)}")
        return value
    if origin is dict:
        if not isinstance(value, dict):
            raise FieldError(path, f"an object was expected, not {shown(value)}")
        key_type, item = args
        out = {}
        for k, v in value.items():
            key: Any = k
            if key_type is int:
                if not (isinstance(k, str) and k.isdigit() and len(k) < 19):
                    raise FieldError(f"{path}.{k}", "a number was expected as the key")
                key = int(k)
            out[key] = typed(v, item, f"{path}.{k}")
        return out
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise FieldError(path, f"a list was expected, not {shown(value)}")
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return tuple(typed(v, args[0], f"{path}[{i}]") for i, v in enumerate(value))
        if origin is tuple:
            if len(value) != len(args):
                raise FieldError(path, f"{len(args)} items were expected, not {len(value)}")
            return tuple(typed(v, a, f"{path}[{i}]") for i, (v, a) in
                         enumerate(zip(value, args, strict=True)))
        return [typed(v, args[0], f"{path}[{i}]") for i, v in enumerate(value)]
    from_dict = getattr(hint, "from_dict", None)
    if from_dict is None and isinstance(hint, type) and dataclasses.is_dataclass(hint):
        cls: type = hint

        def from_dict(d: dict[str, Any]) -> Any:
            return cls(**dataclass_fields(cls, d))
    if from_dict is not None:
        if not isinstance(value, dict):
            raise FieldError(path, f"an object was expected, not {shown(value)}")
        try:
            return from_dict(value)
        except FieldError as e:
            raise e.within(path) from None
    raise TypeError(f"{path}: no reader for {hint!r}")  # (a model field of a new kind)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def dataclass_fields(cls: type, d: Any, names: tuple[str, ...] | None = None,
                     defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """The fields of dataclass cls from the saved object d (those in names,
    else all), each checked against its hint: one absent takes its entry in
    defaults, else the dataclass's default; one absent with neither is a
    FieldError."""
    if not isinstance(d, dict):
        raise FieldError("", f"an object was expected, not {shown(d)}")
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for name in names if names is not None else tuple(fields):
        if name in d:
            out[name] = typed(d[name], hints[name], name)
        elif defaults is not None and name in defaults:
            out[name] = defaults[name]
        elif fields[name].default is dataclasses.MISSING and \
                fields[name].default_factory is dataclasses.MISSING:
            raise FieldError(name, "missing")
    return out
