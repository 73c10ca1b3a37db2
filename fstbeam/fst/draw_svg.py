"""Pictures of a `View` without Graphviz: SVG written by hand, PNG through matplotlib.

Geometry: columns by breadth-first depth, left to right; edges to the next column are straight,
others (back edges, long jumps, edges within a column) are quadratic curves bent away from the
line, so that they do not run through the states in between; a self-loop is a small arc above
its state. Both writers draw the same geometry.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from .draw_view import REST, View

__all__ = ["layout", "svg_text", "write_png"]

R = 18  # state radius
DX, DY = 190, 64  # column and row spacing
MARGIN = 40


@dataclass(frozen=True)
class Curve:
    """One edge: from ``a`` to ``b`` through control point ``c`` (``c`` None: straight)."""

    a: tuple[float, float]
    b: tuple[float, float]
    c: tuple[float, float] | None
    label: str
    label_at: tuple[float, float]
    to_rest: bool


@dataclass
class Layout:
    pos: dict[int, tuple[float, float]]
    width: float
    height: float
    curves: list[Curve]
    top: float  # y of the first row (room for the title above)


def _toward(p, q, d):
    """The point ``d`` along the segment from ``p`` toward ``q``."""
    length = math.hypot(q[0] - p[0], q[1] - p[1]) or 1.0
    return (p[0] + (q[0] - p[0]) * d / length, p[1] + (q[1] - p[1]) * d / length)


def layout(view: View) -> Layout:
    top = MARGIN + (22 if view.title else 0) + (18 if view.note else 0) + 46  # room for self-loops
    pos: dict[int, tuple[float, float]] = {}
    for col, states in sorted(view.column.items()):
        for row, s in enumerate(states):
            pos[s] = (MARGIN + 40 + col * DX, top + R + row * DY)
    rows = max((len(v) for v in view.column.values()), default=1)
    cols = max(view.column, default=0) + 1
    if view.hidden:
        pos[REST] = (MARGIN + 40 + cols * DX, top + R)
        cols += 1
    curves = []
    for e in view.edges:
        p, q = pos[e.src], pos[e.dst]
        if e.src == e.dst:  # a self-loop: an arc above the state
            a, b = (p[0] - R * 0.6, p[1] - R * 0.8), (p[0] + R * 0.6, p[1] - R * 0.8)
            c = (p[0], p[1] - R * 3.2)
            curves.append(Curve(a, b, c, e.label, (p[0], p[1] - R * 2.4), False))
            continue
        adjacent = e.dst != REST and view.depth[e.dst] == view.depth[e.src] + 1
        mid = ((p[0] + q[0]) / 2, (p[1] + q[1]) / 2)
        if adjacent or e.dst == REST and pos[REST][0] - p[0] <= DX:
            a, b = _toward(p, q, R), _toward(q, p, R + (6 if e.dst == REST else 0))
            curves.append(Curve(a, b, None, e.label, (mid[0], mid[1] - 6), e.dst == REST))
            continue
        # bend perpendicular to the line, more for longer edges; backward edges bend the other way
        dx, dy = q[0] - p[0], q[1] - p[1]
        length = math.hypot(dx, dy) or 1.0
        bend = min(0.35 * length, 90.0) * (1 if dx >= 0 else -1)
        c = (mid[0] + dy / length * bend, mid[1] - dx / length * bend)
        a, b = _toward(p, c, R), _toward(q, c, R)
        label_at = (0.25 * a[0] + 0.5 * c[0] + 0.25 * b[0], 0.25 * a[1] + 0.5 * c[1] + 0.25 * b[1] - 4)
        curves.append(Curve(a, b, c, e.label, label_at, e.dst == REST))
    width = MARGIN * 2 + 40 + (cols - 1) * DX + 2 * R + 120
    height = top + rows * DY + MARGIN
    return Layout(pos, width, height, curves, top)


def _path(cv: Curve) -> str:
    if cv.c is None:
        return f"M {cv.a[0]:.1f} {cv.a[1]:.1f} L {cv.b[0]:.1f} {cv.b[1]:.1f}"
    return f"M {cv.a[0]:.1f} {cv.a[1]:.1f} Q {cv.c[0]:.1f} {cv.c[1]:.1f} {cv.b[0]:.1f} {cv.b[1]:.1f}"


def svg_text(view: View) -> str:
    """The SVG document of ``view`` (UTF-8 text, no external resources)."""
    lay = layout(view)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        (f'<svg xmlns="http://www.w3.org/2000/svg" width="{lay.width:.0f}" height="{lay.height:.0f}" '
         f'viewBox="0 0 {lay.width:.0f} {lay.height:.0f}" font-family="Helvetica, Arial, sans-serif">'),
        ('<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
         'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#333"/></marker></defs>'),
        '<rect width="100%" height="100%" fill="white"/>',
    ]
    y = MARGIN
    if view.title:
        out.append(f'<text x="{MARGIN}" y="{y}" font-size="15" font-weight="bold">{escape(view.title)}</text>')
        y += 20
    if view.note:
        out.append(f'<text x="{MARGIN}" y="{y}" font-size="12" fill="#555">{escape(view.note)}</text>')
    for cv in lay.curves:
        dash = ' stroke-dasharray="5 3"' if cv.to_rest else ""
        out.append(f'<path d="{_path(cv)}" fill="none" stroke="#333" stroke-width="1.2"{dash} marker-end="url(#arrow)"/>')
        out.append(f'<text x="{cv.label_at[0]:.1f}" y="{cv.label_at[1]:.1f}" font-size="11" text-anchor="middle" '
                   f'fill="#1a4d8f">{escape(cv.label)}</text>')
    if view.start is not None:
        x, y0 = lay.pos[view.start]
        out.append(f'<path d="M {x - R - 34:.1f} {y0:.1f} L {x - R:.1f} {y0:.1f}" stroke="#333" stroke-width="1.2" '
                   'marker-end="url(#arrow)"/>')
        if view.entry:
            out.append(f'<text x="{x - R - 36:.1f}" y="{y0 - 6:.1f}" font-size="11" text-anchor="start" '
                       f'fill="#555">{escape(view.entry)}</text>')
    for s in view.states:
        x, y0 = lay.pos[s]
        out.append(f'<circle cx="{x:.1f}" cy="{y0:.1f}" r="{R}" fill="#f4f7fb" stroke="#333" stroke-width="1.3"/>')
        if s in view.final:
            out.append(f'<circle cx="{x:.1f}" cy="{y0:.1f}" r="{R - 4}" fill="none" stroke="#333" stroke-width="1.1"/>')
        out.append(f'<text x="{x:.1f}" y="{y0 + 4:.1f}" font-size="11" text-anchor="middle">{s}</text>')
    if view.hidden:
        x, y0 = lay.pos[REST]
        out.append(f'<rect x="{x - 6:.1f}" y="{y0 - 16:.1f}" width="120" height="32" rx="6" fill="#fff4e0" '
                   'stroke="#a66" stroke-dasharray="5 3"/>')
        out.append(f'<text x="{x + 54:.1f}" y="{y0 + 4:.1f}" font-size="11" text-anchor="middle">'
                   f'{view.hidden:,} more states</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_png(view: View, path: Path, dpi: int = 100) -> None:
    """The same picture as a PNG, drawn with matplotlib (ImportError if it is not installed)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch
    from matplotlib.path import Path as MPath

    lay = layout(view)
    fig = Figure(figsize=(lay.width / dpi, lay.height / dpi), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, lay.width)
    ax.set_ylim(lay.height, 0)
    ax.axis("off")
    if view.title:
        ax.text(MARGIN, MARGIN, view.title, fontsize=11, fontweight="bold", va="bottom")
    if view.note:
        ax.text(MARGIN, MARGIN + (20 if view.title else 0), view.note, fontsize=9, color="#555", va="bottom")
    for cv in lay.curves:
        if cv.c is None:
            verts, codes = [cv.a, cv.b], [MPath.MOVETO, MPath.LINETO]
        else:
            verts, codes = [cv.a, cv.c, cv.b], [MPath.MOVETO, MPath.CURVE3, MPath.CURVE3]
        ax.add_patch(FancyArrowPatch(path=MPath(verts, codes), arrowstyle="-|>", mutation_scale=10,
                                     linestyle="--" if cv.to_rest else "-", color="#333", lw=1))
        ax.text(*cv.label_at, cv.label, fontsize=8, ha="center", va="bottom", color="#1a4d8f")
    if view.start is not None:
        x, y0 = lay.pos[view.start]
        ax.add_patch(FancyArrowPatch((x - R - 34, y0), (x - R, y0), arrowstyle="-|>", mutation_scale=10, color="#333"))
    for s in view.states:
        x, y0 = lay.pos[s]
        ax.add_patch(Circle((x, y0), R, facecolor="#f4f7fb", edgecolor="#333"))
        if s in view.final:
            ax.add_patch(Circle((x, y0), R - 4, fill=False, edgecolor="#333"))
        ax.text(x, y0, str(s), fontsize=8, ha="center", va="center")
    if view.hidden:
        x, y0 = lay.pos[REST]
        ax.add_patch(FancyBboxPatch((x - 6, y0 - 16), 120, 32, boxstyle="round,pad=0", facecolor="#fff4e0",
                                    edgecolor="#a66", linestyle="--"))
        ax.text(x + 54, y0, f"{view.hidden:,} more states", fontsize=8, ha="center", va="center")
    fig.savefig(path, format="png", dpi=dpi)
