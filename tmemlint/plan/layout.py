"""Label placement for the plan's picture: every text gets a box, and no two boxes overlap.

Pure and independent of the drawing library: ``render_svg`` asks a ``Layout`` where to put each text, in order of
importance (fixed texts first: titles, ticks, the legend; then region labels, event marks, annotations such as
"riskiest"), each with its candidate positions best first.  A text takes the first candidate whose box is inside
the bounds and meets no box already placed; when none is free it goes to the spill column (the right margin), at
the first free height there, so placement always succeeds and never overlaps; ``Layout.bottom`` says how tall the
drawing must then be.  ``place_optional`` is for a text that may be left out (an event glyph that would overprint
another: the caller lists it in a tooltip instead).

Boxes are estimated from DejaVu Sans metrics (the sans-serif of Debian's Chromium; wider than Liberation/Arial,
so the estimate errs large): advance ``0.64`` em a character (``0.72`` bold), ascent ``0.93`` em, descent
``0.24`` em; a glyph mark (▲ ■ ◆) is 1 em square.  Units are SVG user units (CSS pixels at scale 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable, Sequence

ASCENT = 0.93
DESCENT = 0.24
ADVANCE = 0.64
ADVANCE_BOLD = 0.72
#: Gap (px) kept between a spilled text and the next.
SPILL_GAP = 2.0


class Anchor(str, Enum):
    """SVG ``text-anchor``: where ``x`` is along the text."""

    start = "start"
    middle = "middle"
    end = "end"


@dataclass(frozen=True)
class Box:
    """An axis-aligned box (px): ``left <= right``, ``top <= bottom`` (y grows down)."""

    left: float
    top: float
    right: float
    bottom: float

    def overlaps(self, other: "Box") -> bool:
        """The two share an area (touching edges do not overlap)."""
        return (min(self.right, other.right) > max(self.left, other.left)
                and min(self.bottom, other.bottom) > max(self.top, other.top))

    def inside(self, other: "Box") -> bool:
        """This box lies within ``other``."""
        return (self.left >= other.left and self.right <= other.right and self.top >= other.top
                and self.bottom <= other.bottom)


def text_width(text: str, size: float, bold: bool = False) -> float:
    """Estimated advance (px) of ``text`` at font ``size`` (px)."""
    return len(text) * size * (ADVANCE_BOLD if bold else ADVANCE)


@dataclass(frozen=True)
class Spot:
    """One way to draw a text: its anchor point (``x``, ``y``: the baseline's anchor), ``anchor``, and whether it
    runs down the page (``rotated``: SVG ``rotate(90 x y)``, the baseline downwards from ``y``)."""

    x: float
    y: float
    anchor: Anchor = Anchor.start
    rotated: bool = False


@dataclass(frozen=True)
class Placed:
    """A text where the layout put it: ``spot`` and its ``box``; ``spilled`` when no candidate was free and it went
    to the spill column."""

    text: str
    size: float
    bold: bool
    spot: Spot
    box: Box
    spilled: bool = False


def box_of(text: str, size: float, spot: Spot, bold: bool = False, glyph: bool = False) -> Box:
    """The box of ``text`` drawn at ``spot`` with font ``size`` (``glyph``: a 1 em square mark)."""
    w = size if glyph else text_width(text, size, bold)
    up, down = (0.9 * size, 0.3 * size) if glyph else (ASCENT * size, DESCENT * size)
    start = {Anchor.start: 0.0, Anchor.middle: -w / 2, Anchor.end: -w}[spot.anchor]
    if spot.rotated:  # baseline along +y, the glyphs' up towards +x
        return Box(spot.x - down, spot.y + start, spot.x + up, spot.y + start + w)
    return Box(spot.x + start, spot.y - up, spot.x + start + w, spot.y + down)


@dataclass
class Layout:
    """Boxes placed so far in a drawing ``bounds``; texts no candidate fits go to the spill column
    ``[spill_left, spill_right]`` from ``spill_top`` down."""

    bounds: Box
    spill_left: float
    spill_right: float
    spill_top: float
    boxes: list[Box] = field(default_factory=list)

    @property
    def bottom(self) -> float:
        """The lowest box's bottom (px): the drawing must reach it."""
        return max([b.bottom for b in self.boxes] + [self.bounds.top])

    def free(self, box: Box) -> bool:
        """``box`` is inside the bounds and meets no placed box."""
        return box.inside(self.bounds) and not any(box.overlaps(b) for b in self.boxes)

    def fix(self, text: str, size: float, spot: Spot, bold: bool = False) -> Placed:
        """Record a text that must stay where it is (titles, ticks, the legend): later texts avoid it."""
        box = box_of(text, size, spot, bold)
        self.boxes.append(box)
        return Placed(text, size, bold, spot, box)

    def block(self, box: Box) -> None:
        """Keep texts out of ``box`` (a drawn shape whose area a text must not cover)."""
        self.boxes.append(box)

    def place_optional(self, text: str, size: float, spots: Iterable[Spot], bold: bool = False,
                       glyph: bool = False) -> Placed | None:
        """The first of ``spots`` where the text is free (recorded), or None when none is."""
        for spot in spots:
            box = box_of(text, size, spot, bold, glyph)
            if self.free(box):
                self.boxes.append(box)
                return Placed(text, size, bold, spot, box)
        return None

    def place(self, text: str, size: float, spots: Sequence[Spot], bold: bool = False) -> Placed:
        """The first free spot of ``spots``, else the spill column at the first free height at or below
        ``spill_top`` (past every placed box at worst, so this always succeeds)."""
        got = self.place_optional(text, size, spots, bold)
        if got is not None:
            return got
        y = self.spill_top + ASCENT * size
        while True:
            spot = Spot(self.spill_left, y)
            box = box_of(text, size, spot, bold)
            hits = [b for b in self.boxes if box.overlaps(b)]
            if not hits:
                self.boxes.append(box)
                if box.bottom > self.bounds.bottom:
                    self.bounds = Box(self.bounds.left, self.bounds.top, self.bounds.right, box.bottom + 4)
                return Placed(text, size, bold, spot, box, spilled=True)
            y = max(b.bottom for b in hits) + SPILL_GAP + ASCENT * size


def fit(text: str, size: float, width: float, bold: bool = False) -> str:
    """``text`` cut (with "…") to at most ``width`` px at ``size``."""
    if text_width(text, size, bold) <= width:
        return text
    n = max(1, int(width / (size * (ADVANCE_BOLD if bold else ADVANCE))) - 1)
    return text[:n] + "…"
