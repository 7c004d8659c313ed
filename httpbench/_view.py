"""Where the model's convenience methods find their drawing.

Result.report(), .to_html(), .plot() and their kin (and a Comparison's, a
CapacityResult's) call draw(name, ...): the model imports no drawing
module, not even inside a function, so the model can be read, typed and
tested without render/. httpbench/views.py, which the package imports
last, fills the table from render/ (the adapter docs/design.md's map
names).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["register", "draw"]

_VIEWS: dict[str, Callable[..., Any]] = {}


def register(**views: Callable[..., Any]) -> None:
    """Names each drawing function the model's methods call by."""
    _VIEWS.update(views)


def draw(name: str, *args: Any, **kwargs: Any) -> Any:
    """What the drawing registered as name makes of args."""
    try:
        view = _VIEWS[name]
    except KeyError:
        raise RuntimeError(f"no drawing named {name!r}: import httpbench (its views module "
                           "registers them)") from None
    return view(*args, **kwargs)
