"""SVG charts for the HTML reports (grouped bars, step lines, lines with shaded intervals), written by hand.

Reports are single self-contained files that open offline; a plotting library would have to embed
its JavaScript runtime (megabytes) in every report to stay that way, for the three chart types used
here. What a library would otherwise give is done here explicitly, and checked in a real browser by
the tests: labels never overlap (long names are shortened where they stay distinct: the suffix they all
share, then the middle, where names of one workload differ least; the full name is the label's tooltip;
labels are turned upright when they would collide), charts with hundreds of categories show
the largest ones and fold the rest into "others", counts get whole-number ticks, and a baseline drawn
under a changed series stays visible where both coincide.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1")
#: the colour of the instants a step chart marks (preemptions)
MARK_COLOR = "#b00020"
WIDTH = 720
PLOT_HEIGHT = 194
LEFT, RIGHT, TOP = 60, 20, 36
CHAR_W = 6.2  # average advance of an 11px sans-serif character
MAX_LABEL = 24  # characters of a category label
MAX_GROUPS = 40  # categories drawn one by one; beyond, the largest MAX_GROUPS - 1 and "others"


def shorten(text: str, limit: int = MAX_LABEL) -> str:
    """``text`` cut to ``limit`` characters in the middle: names of one workload share their start
    and differ at the end (``web-7d4b9c-x2k9p``), so both ends are kept."""
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    tail = limit - 1 - head
    return text[:head] + "…" + text[-tail:]


#: where a name's parts meet: a shared suffix is cut only at one of these
SEPARATORS = "./-_:"


def _common_suffix(names: list[str]) -> int:
    """The length of the suffix every one of ``names`` ends with, starting at a separator and
    shorter than each name (``.us-west-2.compute.internal`` of EKS node names); 0 for one name."""
    if len(names) < 2:
        return 0
    first, shortest = names[0], min(len(n) for n in names)
    size = 0
    while size < shortest - 1 and all(n[-1 - size] == first[-1 - size] for n in names):
        size += 1
    while size and first[-size] not in SEPARATORS:
        size -= 1
    return size


def _shortened(name: str, limit: int, suffix: int) -> str:
    """``name`` in ``limit`` characters: without the ``suffix`` characters it shares with the others
    (``…`` in their place), then cut in the middle as :func:`shorten` cuts."""
    if len(name) <= limit:
        return name
    if suffix:
        head = name[:-suffix]
        return (head if len(head) < limit else shorten(head, max(limit - 1, 3))) + "…"
    return shorten(name, limit)


def shorten_distinct(names: list[str], limit: int) -> list[str]:
    """``names`` shortened to ``limit`` characters where that keeps them apart: the suffix they all
    share goes first (node names that differ only in their start, ``ip-10-0-1-17.us-west-2.compute.
    internal``), then the middle (names of one workload, which differ at their end). A name whose
    shortened form another name has too is kept whole: rows that read alike are worse than a long one."""
    if all(len(n) <= limit for n in names):
        return list(names)
    unique = list(dict.fromkeys(names))
    suffix = _common_suffix(unique)
    short = {n: _shortened(n, limit, suffix) for n in unique}
    seen: dict[str, int] = {}
    for text in short.values():
        seen[text] = seen.get(text, 0) + 1
    return [short[n] if seen[short[n]] == 1 else n for n in names]


def nice_ticks(top: float, integer: bool = False, count: int = 4) -> list[float]:
    """Tick values from 0 to at least ``top`` at a 1-2-5 step (whole numbers when ``integer``)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    if integer:
        step = max(1.0, math.ceil(step))
    n = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) for i in range(n + 1)]


def _label_extent(labels: list[str], slanted: bool) -> float:
    longest = max((len(label) for label in labels), default=0) * CHAR_W
    return longest + 10 if slanted else 12.0


def _legend(names: list[str], top: float) -> tuple[list[str], float]:
    """Legend entries, wrapped onto as many rows as they need; returns the parts and their height."""
    parts: list[str] = []
    x, y = float(LEFT), top
    for i, name in enumerate(names):
        label = shorten(name, 40)
        width = 24 + CHAR_W * len(label)
        if x + width > WIDTH - RIGHT and x > LEFT:
            x, y = float(LEFT), y + 16
        color = PALETTE[i % len(PALETTE)]
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{x + 14:.1f}" y="{y + 9:.1f}">{escape(label)}</text>')
        x += width
    return parts, (y - top + 16) if names else 0.0


def _svg(title: str, height: float, body: list[str]) -> str:
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
            f'viewBox="0 0 {WIDTH} {height:.0f}" font-family="sans-serif" font-size="11" role="img">',
            f'<title>{escape(title)}</title>',
            f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">{escape(title)}</text>']
    return "\n".join([*head, *body, "</svg>"])


def _y_axis(ticks: list[float], y_label: str) -> list[str]:
    parts = []
    top = ticks[-1]
    for value in ticks:
        y = TOP + PLOT_HEIGHT - PLOT_HEIGHT * value / top
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{value:g}</text>')
    mid = TOP + PLOT_HEIGHT / 2
    parts.append(f'<text x="14" y="{mid}" transform="rotate(-90 14 {mid})" text-anchor="middle">{escape(y_label)}</text>')
    return parts


def fold_groups(groups: list[str], series: dict[str, list[float]],
                limit: int = MAX_GROUPS) -> tuple[list[str], dict[str, list[float]]]:
    """At most ``limit`` categories: the largest ``limit - 1`` (by their largest value, in their
    order) and ``others (n)`` holding the mean of the rest."""
    if len(groups) <= limit:
        return groups, series
    size = [max(values[i] for values in series.values()) for i in range(len(groups))]
    keep = sorted(sorted(range(len(groups)), key=lambda i: -size[i])[:limit - 1])
    rest = [i for i in range(len(groups)) if i not in set(keep)]
    folded = {name: [values[i] for i in keep] + [sum(values[i] for i in rest) / len(rest)]
              for name, values in series.items()}
    return [groups[i] for i in keep] + [f"others ({len(rest)}, mean)"], folded


def bar_chart(title: str, groups: list[str], series: dict[str, list[float]], y_label: str = "",
              integer: bool = False, errors: dict[str, list[float]] | None = None) -> str:
    """Grouped bars: one group per category, one bar per series (``integer``: counts). ``errors``:
    for a series, each bar's half-width of its interval, drawn as a whisker with caps from the value
    less it to the value plus it (none where it is 0, nor on a folded "others" bar)."""
    names = list(groups)
    groups, series = fold_groups(groups, series)
    halves = {name: [dict(zip(names, values, strict=True)).get(g, 0.0) for g in groups]
              for name, values in (errors or {}).items()}
    tops = [v + halves.get(name, [0.0] * len(values))[i] for name, values in series.items() for i, v in enumerate(values)]
    ticks = nice_ticks(max(tops, default=0), integer)
    plot_w = WIDTH - LEFT - RIGHT
    n_groups, n_series = max(len(groups), 1), max(len(series), 1)
    group_w = plot_w / n_groups
    labels = shorten_distinct(groups, MAX_LABEL)
    slanted = any(len(label) * CHAR_W > group_w - 4 for label in labels)
    parts = _y_axis(ticks, y_label)
    bar_w = group_w * 0.8 / n_series
    base = TOP + PLOT_HEIGHT
    for g, group in enumerate(groups):
        gx = LEFT + g * group_w + group_w * 0.1
        for s, (name, values) in enumerate(series.items()):
            value = values[g]
            h = PLOT_HEIGHT * value / ticks[-1]
            parts.append(f'<rect x="{gx + s * bar_w:.1f}" y="{base - h:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                         f'fill="{PALETTE[s % len(PALETTE)]}"><title>{escape(group)} {escape(name)}: '
                         f'{value:.4g}</title></rect>')
            half = halves.get(name, [0.0] * len(groups))[g]
            if half > 0:
                parts.append(_whisker(gx + (s + 0.5) * bar_w, value, half, ticks[-1], bar_w,
                                      f"{group} {name}: {value:.4g} ± {half:.2g} (95 % interval)"))
        cx = LEFT + g * group_w + group_w / 2
        if slanted:
            parts.append(f'<text class="category" x="{cx + 4:.1f}" y="{base + 8}" text-anchor="end" '
                         f'transform="rotate(-90 {cx + 4:.1f} {base + 8})">{escape(labels[g])}<title>{escape(group)}'
                         '</title></text>')
        else:
            parts.append(f'<text class="category" x="{cx:.1f}" y="{base + 14}" text-anchor="middle">'
                         f'{escape(labels[g])}<title>{escape(group)}</title></text>')
    legend_top = base + _label_extent(labels, slanted) + 12
    legend, legend_h = _legend(list(series), legend_top)
    return _svg(title, legend_top + legend_h + 6, parts + legend)


def _whisker(x: float, value: float, half: float, top: float, bar_w: float, tip: str) -> str:
    """An interval's whisker over a bar: a vertical line from ``value - half`` (not below the axis)
    to ``value + half``, a cap at each end."""
    base = TOP + PLOT_HEIGHT
    low, high = (base - PLOT_HEIGHT * max(0.0, v) / top for v in (value - half, value + half))
    cap = min(6.0, bar_w / 3)
    path = (f"M{x:.1f},{low:.1f}V{high:.1f}M{x - cap:.1f},{high:.1f}H{x + cap:.1f}"
            f"M{x - cap:.1f},{low:.1f}H{x + cap:.1f}")
    return (f'<path class="interval" d="{path}" stroke="#222" stroke-width="1.2" fill="none">'
            f'<title>{escape(tip)}</title></path>')


def step_chart(title: str, series: dict[str, list[tuple[float, float]]], x_label: str = "", y_label: str = "",
               x_end: float | None = None, integer: bool = False, emphasise_first: bool = False,
               marks: Sequence[tuple[float, str, str | None]] = ()) -> str:
    """Step lines (values hold until the next point, or ``x_end``): counts over simulated time.
    ``emphasise_first``: the first series (a baseline) is drawn wide and pale under the others, so
    it shows where they coincide. ``marks``: instants marked across the plot as (x, what happened
    then, a link or None), such as preemptions."""
    x_last = max([x for points in series.values() for x, _ in points] + [x for x, _, _ in marks] + [x_end or 0.0])
    x_ticks = nice_ticks(x_last, integer=x_last >= 4)
    x_max = x_ticks[-1]
    y_ticks = nice_ticks(max((y for points in series.values() for _, y in points), default=0), integer)
    plot_w = WIDTH - LEFT - RIGHT
    base = TOP + PLOT_HEIGHT

    def sx(x: float) -> float:
        return LEFT + plot_w * x / x_max

    def sy(y: float) -> float:
        return base - PLOT_HEIGHT * y / y_ticks[-1]

    parts = _y_axis(y_ticks, y_label)
    for s, (name, points) in enumerate(series.items()):
        if not points:
            continue
        path = [f"M{sx(points[0][0]):.1f},{sy(points[0][1]):.1f}"]
        for x1, y1 in points[1:]:
            path.append(f"H{sx(x1):.1f}V{sy(y1):.1f}")
        path.append(f"H{sx(x_last if x_last > 0 else x_max):.1f}")
        style = 'stroke-width="7" stroke-opacity="0.35"' if emphasise_first and s == 0 else 'stroke-width="2"'
        parts.append(f'<path d="{"".join(path)}" fill="none" stroke="{PALETTE[s % len(PALETTE)]}" {style}>'
                     f'<title>{escape(name)}</title></path>')
    for x, what, href in marks:
        mark = (f'<line class="mark" x1="{sx(x):.1f}" y1="{TOP}" x2="{sx(x):.1f}" y2="{base}" stroke="{MARK_COLOR}" '
                f'stroke-dasharray="3,2"><title>{escape(what)}</title></line>'
                f'<path d="M{sx(x) - 5:.1f},{TOP - 8}h10l-5,8z" fill="{MARK_COLOR}"><title>{escape(what)}</title></path>')
        parts.append(f'<a href="{escape(href)}">{mark}</a>' if href else mark)
    for x in x_ticks:
        parts.append(f'<text x="{sx(x):.1f}" y="{base + 14}" text-anchor="middle">{x:g}</text>')
    axis = x_label + (" (the run ended at t=0)" if x_last == 0 else "")
    parts.append(f'<text x="{LEFT + plot_w / 2}" y="{base + 30}" text-anchor="middle">{escape(axis)}</text>')
    legend, legend_h = _legend(list(series), base + 42)
    return _svg(title, base + 42 + legend_h + 6, parts + legend)


def band_chart(title: str, xs: list[float], series: dict[str, list[tuple[float, float, float] | None]],
               x_label: str = "", y_label: str = "") -> str:
    """Lines over a numeric axis, each point a mean with its interval (low, mean, high) shaded
    around the line: a metric against a swept value, one line per configuration. A point that is
    None (no value there) breaks its line."""
    x_min, x_max = min(xs, default=0.0), max(xs, default=1.0)
    pad = (x_max - x_min) * 0.05 or 1.0  # the swept values span the axis; the first and last stay clear of its ends
    x_min, x_max = x_min - pad, x_max + pad
    highs = [p[2] for points in series.values() for p in points if p is not None]
    y_ticks = nice_ticks(max(highs, default=0.0))
    plot_w = WIDTH - LEFT - RIGHT
    base = TOP + PLOT_HEIGHT

    def sx(x: float) -> float:
        return LEFT + plot_w * (x - x_min) / ((x_max - x_min) or 1)

    def sy(y: float) -> float:
        return base - PLOT_HEIGHT * y / y_ticks[-1]

    parts = _y_axis(y_ticks, y_label)
    for s, (name, points) in enumerate(series.items()):
        color = PALETTE[s % len(PALETTE)]
        runs: list[list[tuple[float, tuple[float, float, float]]]] = [[]]
        for x, point in zip(xs, points):
            if point is None:
                runs.append([])
            else:
                runs[-1].append((x, point))
        for run in (r for r in runs if r):
            upper = " ".join(f"{sx(x):.1f},{sy(hi):.1f}" for x, (_, _, hi) in run)
            lower = " ".join(f"{sx(x):.1f},{sy(lo):.1f}" for x, (lo, _, _) in reversed(run))
            parts.append(f'<polygon points="{upper} {lower}" fill="{color}" fill-opacity="0.18" stroke="none"/>')
            line = " ".join(f"{sx(x):.1f},{sy(mean):.1f}" for x, (_, mean, _) in run)
            parts.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="2">'
                         f'<title>{escape(name)}</title></polyline>')
            for x, (lo, mean, hi) in run:
                parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(mean):.1f}" r="3" fill="{color}"><title>'
                             f'{escape(name)} at {x:g}: {mean:.4g} ({lo:.4g} to {hi:.4g})</title></circle>')
    for x in sorted(set(xs)):
        parts.append(f'<text x="{sx(x):.1f}" y="{base + 14}" text-anchor="middle">{x:g}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2}" y="{base + 30}" text-anchor="middle">{escape(x_label)}</text>')
    legend, legend_h = _legend(list(series), base + 42)
    return _svg(title, base + 42 + legend_h + 6, parts + legend)
