"""Charts as inline SVG, for the standalone report and the notebook: lines
and points on linear or log axes, and grouped bars. No script, no font
beyond the page's, colours that read in print and for the colour-blind
(Okabe and Ito's palette).

Every series is a <g class="series"> with data-series (its label) and
data-count (how many points it draws), so a test or a reader can check a
plot without reading pixels."""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Callable, Sequence

__all__ = ["Axis", "Series", "chart", "bars", "PALETTE", "time_unit", "nice_ticks",
           "log_ticks"]

# Okabe and Ito's colour-blind safe palette, black first.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442")

_FONT = 11  # px: the labels' size; the SVG scales with the page


@dataclasses.dataclass
class Axis:
    """An axis: its label, log or linear, its bounds (from the data when
    None) and, when given, its ticks as (value, label); fmt labels the
    ticks found otherwise."""

    label: str
    log: bool = False
    lo: float | None = None
    hi: float | None = None
    ticks: Sequence[tuple[float, str]] | None = None
    fmt: Callable[[float], str] = lambda v: f"{v:,.6g}"


@dataclasses.dataclass
class Series:
    """A line (style "line" or "dash"), points alone ("dots", "crosses"),
    or a vertical mark at each x ("marks", labelled by `notes`)."""

    label: str
    xs: Sequence[float]
    ys: Sequence[float]
    style: str = "line"
    color: int = 0
    notes: Sequence[str] = ()
    right: bool = False  # on the second (right-hand) y axis


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About n round values (1, 2 or 5 times a power of ten apart) from lo
    to hi."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten from lo to hi, with 2 and 5 between them when fewer
    than three decades are spanned."""
    if not (lo > 0 and hi > lo):
        return [lo] if lo > 0 else []
    subs = (1, 2, 5) if math.log10(hi / lo) < 3 else (1,)
    out = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        out += [m * 10.0 ** e for m in subs if lo * 0.999 <= m * 10.0 ** e <= hi * 1.001]
    return out


def time_unit(seconds: float) -> tuple[float, str]:
    """The factor and name of a readable unit for times up to `seconds`:
    microseconds below a millisecond, milliseconds below a second, else
    seconds."""
    if seconds < 1e-3:
        return 1e6, "us"
    if seconds < 1.0:
        return 1e3, "ms"
    return 1.0, "s"


# A value axis reaches past its largest value by this share at least, to
# its next tick: no curve touches the frame, and a tick stands near the peak.
_HEADROOM = 0.04


class _Scale:
    def __init__(self, axis: Axis, values: Sequence[float], a: float, b: float,
                 headroom: bool = False) -> None:
        self.log = axis.log
        vals = [v for v in values if math.isfinite(v) and (v > 0 or not self.log)]
        lo = axis.lo if axis.lo is not None else min(vals, default=0.0 if not self.log else 1.0)
        hi = axis.hi if axis.hi is not None else max(vals, default=1.0)
        if self.log:
            lo = max(lo, 1e-12)
            hi = max(hi, lo * 10) if hi <= lo else hi
        elif hi <= lo:
            hi = lo + (abs(lo) or 1.0)
        if headroom and axis.hi is None and axis.ticks is None:
            hi = _to_tick(lo, hi * (1 + _HEADROOM), self.log)
        self.lo, self.hi, self.a, self.b = lo, hi, a, b
        if axis.ticks is not None:
            self.ticks = [(v, t) for v, t in axis.ticks if lo - 1e-12 <= v <= hi * (1 + 1e-9)]
        else:
            vs = log_ticks(lo, hi) if self.log else nice_ticks(lo, hi)
            self.ticks = [(v, axis.fmt(v)) for v in vs]

    def __call__(self, v: float) -> float:
        if self.log:
            v = max(v, self.lo)
            f = (math.log(v) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo))
        else:
            f = (v - self.lo) / (self.hi - self.lo)
        return self.a + f * (self.b - self.a)


def _to_tick(lo: float, hi: float, log: bool) -> float:
    """The first tick at or above hi, of the ticks such an axis draws."""
    if log:
        return next((t for t in log_ticks(lo, hi * 10) if t >= hi * (1 - 1e-9)), hi)
    ticks = nice_ticks(lo, hi)
    if len(ticks) < 2:
        return hi
    step = ticks[1] - ticks[0]
    return ticks[0] + math.ceil((hi - ticks[0]) / step - 1e-9) * step


def _width(s: str, size: int = _FONT) -> float:
    """A label's width, estimated (0.58 of the font's size a character, the
    system sans's mean; chromium's boxes are within it)."""
    return 0.58 * size * len(s)


def _inside(x: float, s: str, width: float, anchor: str = "middle") -> tuple[float, str]:
    """A label's x and anchor moved, if need be, so that it stays within
    0..width (an axis's last tick label at the right-hand edge)."""
    w = _width(s)
    if anchor == "middle" and x + w / 2 > width - 2:
        return width - 2, "end"
    if anchor == "middle" and x - w / 2 < 2:
        return 2, "start"
    return x, anchor


def _text(x: float, y: float, s: str, anchor: str = "middle", size: int = _FONT,
          extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"'
            f'{extra}>{html.escape(s)}</text>')


def _frame(title: str, width: int, height: int, body: str, legend: list[tuple[str, str, int]],
           kind: str) -> str:
    """The <svg>: its title, the plot's body and a legend below it, in as
    many rows as it needs (the picture grows to hold them)."""
    rows: list[list[tuple[float, str, str, int]]] = [[]]
    x = 50.0
    for label, style, color in legend:
        w = 28 + 6.2 * len(label)
        if x + w > width - 10 and rows[-1]:
            rows.append([])
            x = 50.0
        rows[-1].append((x, label, style, color))
        x += w
    extra = 14 * (len(rows) - 1)
    items = []
    for r, row in enumerate(rows):
        y = height - 12 + 14 * r
        for x, label, style, color in row:
            c = PALETTE[color % len(PALETTE)]
            if style == "bars":
                mark = f'<rect x="{x:.1f}" y="{y - 8:.1f}" width="10" height="10" fill="{c}"/>'
            elif style in ("dots", "crosses"):
                mark = f'<circle cx="{x + 5:.1f}" cy="{y - 3:.1f}" r="3.5" fill="{c}"/>'
            else:
                dash = ' stroke-dasharray="6 3"' if style in ("dash", "marks") else ""
                mark = (f'<line x1="{x:.1f}" y1="{y - 3:.1f}" x2="{x + 16:.1f}" '
                        f'y2="{y - 3:.1f}" stroke="{c}" stroke-width="2"{dash}/>')
            items.append(mark + _text(x + 20, y + 1, label, "start"))
    h = height + extra
    return (f'<svg class="chart" data-kind="{kind}" viewBox="0 0 {width} {h}" '
            f'width="{width}" height="{h}" role="img" xmlns="http://www.w3.org/2000/svg">'
            f'<title>{html.escape(title)}</title>'
            + _text(width / 2, 16, title, size=13, extra=' font-weight="600"')
            + body + "".join(items) + "</svg>")


def chart(title: str, series: Sequence[Series], x: Axis, y: Axis, y2: Axis | None = None,
          width: int = 760, height: int = 320, hlines: Sequence[tuple[float, str, int]] = (),
          kind: str = "line") -> str:
    """Series over x and y (and y2 for those with right=True); hlines are
    horizontal reference lines (value on y, label, colour)."""
    top, bottom = 28, 64
    ys = [v for s in series if not s.right and s.style != "marks" for v in s.ys]
    ys += [v for v, _, _ in hlines]
    sy = _Scale(y, ys, height - bottom, top, headroom=True)
    sy2 = _Scale(y2, [v for s in series if s.right for v in s.ys], height - bottom, top,
                 headroom=True) if y2 else None
    # Room for the widest tick label beside the rotated axis label.
    left = max(64, round(28 + max((_width(t) for _, t in sy.ticks), default=0)))
    right = max(64, round(28 + max((_width(t) for _, t in sy2.ticks), default=0))) \
        if sy2 is not None else 20
    xs = [v for s in series for v in s.xs]
    sx = _Scale(x, xs, left, width - right)
    out = [f'<rect x="{left}" y="{top}" width="{width - left - right}" '
           f'height="{height - top - bottom}" fill="none" stroke="#999"/>']
    for v, label in sx.ticks:
        px = sx(v)
        out.append(f'<line x1="{px:.1f}" y1="{top}" x2="{px:.1f}" y2="{height - bottom}" '
                   'stroke="#ddd"/>')
        # (Below the y axis's lowest label, and within the picture.)
        out.append(_text(*_position(px, height - bottom + 17, label, width)))
    for v, label in sy.ticks:
        py = sy(v)
        out.append(f'<line x1="{left}" y1="{py:.1f}" x2="{width - right}" y2="{py:.1f}" '
                   'stroke="#ddd"/>')
        out.append(_text(left - 4, py + 4, label, "end"))
    if sy2 is not None and y2 is not None:
        for v, label in sy2.ticks:
            out.append(_text(width - right + 4, sy2(v) + 4, label, "start"))
        out.append(_text(width - 12, (top + height - bottom) / 2, y2.label,
                         extra=f' transform="rotate(90 {width - 12} '
                               f'{(top + height - bottom) / 2})"'))
    out.append(_text((left + width - right) / 2, height - bottom + 33, x.label))
    out.append(_text(14, (top + height - bottom) / 2, y.label,
                     extra=f' transform="rotate(-90 14 {(top + height - bottom) / 2})"'))
    # A reference line's label over its left end, inside the frame (the data
    # of a knee rises to the right); one above another when two are close.
    placed: list[float] = []
    for v, label, color in sorted(hlines, key=lambda h: -sy(h[0])):
        c = PALETTE[color % len(PALETTE)]
        py = sy(v)
        ly = py - 4
        while any(abs(ly - other) < _FONT + 2 for other in placed):
            ly -= _FONT + 2
        ly = max(ly, top + _FONT)
        placed.append(ly)
        out.append(f'<g class="hline" data-value="{v!r}"><line x1="{left}" y1="{py:.1f}" '
                   f'x2="{width - right}" y2="{py:.1f}" stroke="{c}" stroke-dasharray="6 3"/>'
                   + _text(left + 4, ly, label, "start") + "</g>")
    for s in series:
        out.append(_series(s, sx, sy2 if s.right and sy2 is not None else sy, top,
                           height - bottom))
    legend = [(s.label, s.style, s.color) for s in series]
    legend += [(label, "dash", color) for _, label, color in hlines]
    return _frame(title, width, height, "".join(out), legend, kind)


def _position(x: float, y: float, s: str, width: float) -> tuple[float, float, str, str]:
    """_text's x, y, label and anchor for a tick label kept inside."""
    px, anchor = _inside(x, s, width)
    return px, y, s, anchor


def _series(s: Series, sx: _Scale, sy: _Scale, top: float, bottom: float) -> str:
    c = PALETTE[s.color % len(PALETTE)]
    pts = [(sx(a), sy(b)) for a, b in zip(s.xs, s.ys, strict=True)
           if math.isfinite(a) and math.isfinite(b)]
    head = (f'<g class="series" data-series="{html.escape(s.label)}" data-style="{s.style}" '
            f'data-count="{len(pts) if s.style != "marks" else len(s.xs)}">'
            f'<title>{html.escape(s.label)}</title>')
    if s.style == "marks":
        body = "".join(
            f'<line x1="{sx(a):.1f}" y1="{top}" x2="{sx(a):.1f}" y2="{bottom}" stroke="{c}" '
            f'stroke-width="1.5" stroke-dasharray="4 3"/>'
            + (_text(sx(a) + 3, top + 12, s.notes[i], "start") if i < len(s.notes) else "")
            for i, a in enumerate(s.xs))
    elif s.style == "dots":
        body = "".join(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3.5" fill="{c}"/>' for a, b in pts)
    elif s.style == "crosses":
        body = "".join(f'<path d="M{a - 4:.1f},{b - 4:.1f}l8,8m0,-8l-8,8" stroke="{c}" '
                       'stroke-width="2"/>' for a, b in pts)
    else:
        dash = ' stroke-dasharray="6 3"' if s.style == "dash" else ""
        points = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
        body = (f'<polyline points="{points}" fill="none" stroke="{c}" stroke-width="1.8" '
                f'stroke-linejoin="round"{dash}/>')
    return head + body + "</g>"


def bars(title: str, categories: Sequence[str], groups: Sequence[tuple[str, Sequence[float]]],
         ylabel: str, log: bool = False, notes: Sequence[Sequence[str]] = (),
         fmt: Callable[[float], str] = lambda v: f"{v:,.6g}", width: int = 760,
         height: int = 320) -> str:
    """Grouped bars: a group per (label, value per category); notes[g][i]
    is written over the bar (its ratio, say)."""
    left, right, top, bottom = 72, 20, 28, 84
    vals = [v for _, vs in groups for v in vs]
    lo = None
    if log:
        pos = [v for v in vals if v > 0]
        lo = min(pos) / 2 if pos else 1.0
    sy = _Scale(Axis(ylabel, log=log, lo=lo if log else 0.0,
                     hi=max(vals, default=1.0) * (1.6 if log else 1.1) or 1.0, fmt=fmt),
                vals, height - bottom, top)
    n = max(1, len(categories))
    slot = (width - left - right) / n
    bw = slot * 0.8 / max(1, len(groups))
    out = [f'<rect x="{left}" y="{top}" width="{width - left - right}" '
           f'height="{height - top - bottom}" fill="none" stroke="#999"/>']
    for v, label in sy.ticks:
        py = sy(v)
        out.append(f'<line x1="{left}" y1="{py:.1f}" x2="{width - right}" y2="{py:.1f}" '
                   'stroke="#ddd"/>' + _text(left - 4, py + 4, label, "end"))
    for i, cat in enumerate(categories):
        cx = left + slot * (i + 0.5)
        out.append(_text(*_position(cx, height - bottom + 17, cat, width)))
    for g, (label, vs) in enumerate(groups):
        rects = []
        for i, v in enumerate(vs):
            x0 = left + slot * i + slot * 0.1 + g * bw
            y0 = sy(v) if v > 0 or not log else height - bottom
            rects.append(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{bw * 0.92:.1f}" '
                         f'height="{max(0.0, height - bottom - y0):.1f}" '
                         f'fill="{PALETTE[g % len(PALETTE)]}" data-value="{v!r}"/>')
            if g < len(notes) and i < len(notes[g]) and notes[g][i]:
                rects.append(_text(x0 + bw / 2, y0 - 3, notes[g][i], size=10))
        out.append(f'<g class="series" data-series="{html.escape(label)}" data-style="bars" '
                   f'data-count="{len(vs)}"><title>{html.escape(label)}</title>'
                   + "".join(rects) + "</g>")
    out.append(_text(14, (top + height - bottom) / 2, ylabel,
                     extra=f' transform="rotate(-90 14 {(top + height - bottom) / 2})"'))
    legend = [(label, "bars", g) for g, (label, _) in enumerate(groups)]
    return _frame(title, width, height, "".join(out), legend, "bars")
