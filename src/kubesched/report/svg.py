"""Minimal SVG charts (grouped bars, step lines). Hand-written to keep reports dependency-free."""

from __future__ import annotations

from html import escape

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1")
WIDTH, HEIGHT = 720, 300
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 36, 70


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** len(str(int(value))) / 10
    for step in (1, 2, 5, 10):
        if value <= step * magnitude:
            return float(step * magnitude)
    return float(value)


def _frame(title: str, y_max: float, y_label: str) -> list[str]:
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
        f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    plot_h = HEIGHT - TOP - BOTTOM
    for i in range(5):
        value = y_max * i / 4
        y = TOP + plot_h - plot_h * i / 4
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{value:g}</text>')
    parts.append(f'<text x="14" y="{TOP + plot_h / 2}" transform="rotate(-90 14 {TOP + plot_h / 2})" '
                 f'text-anchor="middle">{escape(y_label)}</text>')
    return parts


def _legend(names: list[str]) -> list[str]:
    parts = []
    x = LEFT
    for i, name in enumerate(names):
        color = PALETTE[i % len(PALETTE)]
        parts.append(f'<rect x="{x}" y="{HEIGHT - 18}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{x + 14}" y="{HEIGHT - 9}">{escape(name)}</text>')
        x += 24 + 7 * len(name)
    return parts


def bar_chart(title: str, groups: list[str], series: dict[str, list[float]], y_label: str = "") -> str:
    """Grouped bars: one group per category, one bar per series."""
    y_max = _nice_max(max((v for values in series.values() for v in values), default=0))
    parts = _frame(title, y_max, y_label)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n_groups, n_series = max(len(groups), 1), max(len(series), 1)
    group_w = plot_w / n_groups
    bar_w = group_w * 0.8 / n_series
    for g, group in enumerate(groups):
        gx = LEFT + g * group_w + group_w * 0.1
        for s, values in enumerate(series.values()):
            value = values[g]
            h = plot_h * value / y_max
            x = gx + s * bar_w
            parts.append(f'<rect x="{x:.1f}" y="{TOP + plot_h - h:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                         f'fill="{PALETTE[s % len(PALETTE)]}"><title>{escape(group)}: {value:g}</title></rect>')
        label_x = LEFT + g * group_w + group_w / 2
        parts.append(f'<text x="{label_x:.1f}" y="{TOP + plot_h + 14}" text-anchor="middle">{escape(group[:18])}</text>')
    parts.extend(_legend(list(series)))
    parts.append("</svg>")
    return "\n".join(parts)


def step_chart(title: str, series: dict[str, list[tuple[float, float]]], x_label: str = "", y_label: str = "",
               x_end: float | None = None) -> str:
    """Step lines (values hold until the next point, or ``x_end``): counts over simulated time."""
    x_max = max([x for points in series.values() for x, _ in points] + [x_end or 0.0]) or 1.0
    y_max = _nice_max(max((y for points in series.values() for _, y in points), default=0))
    parts = _frame(title, y_max, y_label)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + plot_w * x / x_max

    def sy(y: float) -> float:
        return TOP + plot_h - plot_h * y / y_max

    for s, (name, points) in enumerate(series.items()):
        if not points:
            continue
        path = [f"M{sx(points[0][0]):.1f},{sy(points[0][1]):.1f}"]
        for x1, y1 in points[1:]:
            path.append(f"H{sx(x1):.1f}V{sy(y1):.1f}")
        path.append(f"H{sx(x_max):.1f}")
        parts.append(f'<path d="{"".join(path)}" fill="none" stroke="{PALETTE[s % len(PALETTE)]}" '
                     f'stroke-width="2"><title>{escape(name)}</title></path>')
    for i in range(5):
        x = x_max * i / 4
        parts.append(f'<text x="{sx(x):.1f}" y="{TOP + plot_h + 14}" text-anchor="middle">{x:g}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2}" y="{TOP + plot_h + 30}" text-anchor="middle">{escape(x_label)}</text>')
    parts.extend(_legend(list(series)))
    parts.append("</svg>")
    return "\n".join(parts)
