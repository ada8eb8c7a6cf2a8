"""``tmemlint.plan.layout``: whatever texts are asked for, in whatever order and with whatever candidate spots,
no two placed boxes overlap, a fixed text keeps its spot, and a text no candidate fits goes to the spill column."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmemlint.plan.layout import Anchor, Box, Layout, Spot, box_of, fit, text_width
from tmemlint.plan.render_svg import region_caption

_spots = st.builds(Spot, st.floats(0, 800), st.floats(0, 800), st.sampled_from(list(Anchor)), st.booleans())
_requests = st.lists(st.tuples(st.text("abcdefSFA0123: ", min_size=1, max_size=24), st.sampled_from([6.0, 7.0, 8.0,
                                                                                                      10.0]),
                               st.lists(_spots, max_size=6), st.booleans(), st.booleans()), max_size=40)


@settings(max_examples=200, deadline=None)
@given(fixed=st.lists(st.tuples(st.text("0123456789", min_size=1, max_size=4), _spots), max_size=10),
       requests=_requests)
def test_placed_texts_never_overlap(fixed, requests):
    lay = Layout(Box(0, 0, 1000, 820), 796, 996, 300)
    fixed_boxes = []
    for text, spot in fixed:  # fixed texts may overlap one another (the caller's own layout): later ones avoid them
        fixed_boxes.append(lay.fix(text, 9, spot).box)
    placed = []
    for text, size, spots, bold, optional in requests:
        got = lay.place_optional(text, size, spots, bold) if optional else lay.place(text, size, spots, bold)
        if got is None:
            assert optional and all(not lay.free(box_of(text, size, s, bold)) for s in spots)
            continue
        assert got.box == box_of(text, size, got.spot, bold)
        if got.spilled:
            assert got.spot.x == 796 and got.box.top >= 300 - 1e-9
        else:
            assert got.spot in spots and got.box.inside(Box(0, 0, 1000, 820))
        placed.append(got.box)
    for i, a in enumerate(placed):
        assert not any(a.overlaps(b) for b in fixed_boxes)
        for b in placed[i + 1:]:
            assert not a.overlaps(b), (a, b)
    assert lay.bottom >= max([b.bottom for b in placed + fixed_boxes] + [0])


def test_box_of_rotated_text_runs_down_from_its_anchor():
    # rotate(90 x y): the baseline goes down from (x, y), the glyphs' tops towards +x
    b = box_of("SFA0", 10, Spot(100, 50, rotated=True), bold=True)
    assert (b.left, b.top, b.right, b.bottom) == pytest.approx((97.6, 50, 109.3, 78.8))
    b = box_of("ab", 10, Spot(100, 50, Anchor.middle))
    assert (b.left, b.top, b.right, b.bottom) == pytest.approx((93.6, 40.7, 106.4, 52.4))


def test_fit_cuts_to_the_width():
    assert fit("riskiest: same-thread-wait", 10, 1000) == "riskiest: same-thread-wait"
    cut = fit("riskiest: same-thread-wait", 10, 64)
    assert cut == "riskiest:…" and text_width(cut, 10) <= 64


def test_touching_boxes_do_not_overlap():
    assert not Box(0, 0, 10, 10).overlaps(Box(10, 0, 20, 10))
    assert Box(0, 0, 10, 10).overlaps(Box(9.5, 9.5, 20, 20))


def test_region_caption_is_the_logical_tensor_and_stage():
    assert region_caption({"name": "SFA2", "label": "SFA[stage 2]"}) == "SFA[2]"
    assert region_caption({"name": "acc0", "label": "acc[stage 0]"}) == "acc[0]"
    assert region_caption({"name": "SFB0", "label": "SFB"}) == "SFB"  # an unstaged tensor keeps its label
    assert region_caption({"name": "acc0"}) == "acc0"  # a plan older than schema 2.1: the name
