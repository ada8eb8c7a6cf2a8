"""The plan's HTML picture in a real browser (headless Chromium, ``tests/browser.py``): for the plans of the
fixtures under fixtures/plan and of examples/, the screenshot is not blank, every region's label is in the DOM in
both panels (region map and lifetime chart), no two texts' boxes overlap as the browser lays them out (labels,
ticks, legend, event glyphs, annotations such as "riskiest"), and the page logs nothing to the console.  Skips,
saying why, only where Chromium is absent (``.ci/run`` installs it)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

import browser
from conftest import EXAMPLES, FIXTURES, ROOT
from tmemlint.frontend.parser import decode, parse_text
from tmemlint.plan.model import build_plan
from tmemlint.plan.render_svg import region_caption, render_html
from tmemlint.plan.render_text import render_text

pytestmark = pytest.mark.skipif(browser.chromium() is None, reason=browser.SKIP_REASON)

PAGES = sorted((FIXTURES / "plan").glob("*.ptx")) + sorted(EXAMPLES.glob("*.ptx"))


def _plan(path: Path) -> dict:
    rel = path.relative_to(ROOT).as_posix()
    return build_plan(parse_text(decode(path.read_bytes()), rel), rel)


def _riskiest_forced(plan: dict) -> dict:
    """The plan with its first reuse edge made the riskiest and at risk: the red "riskiest" annotation is drawn
    beside the bands and their labels."""
    p = copy.deepcopy(plan)
    k = p["kernels"][0]
    k["riskiest_edge"] = 0
    k["reuse_edges"][0]["at_risk"] = True
    return p


def _check(plan: dict, tmp_path: Path) -> browser.Rendered:
    page = tmp_path / "plan.html"
    page.write_text(render_html(plan, render_text(plan)), encoding="utf-8")
    r = browser.render(page, tmp_path)
    # the screenshot is the requested size and not blank: a one-colour image has at most 3 distinct scanlines
    assert (r.png.width, r.png.height) == (1100, 1040)
    assert r.png.distinct_rows() > 300, r.png.distinct_rows()
    # and it shows the first picture: its region map's labels are on screen
    assert [t.region for t in r.texts if t.svg == 0 and t.panel == "map" and t.box[3] > r.png.height] == []
    # every region's name is a region label of its kernel's picture, once in each panel
    assert r.svgs == len(plan["kernels"])
    for i, k in enumerate(plan["kernels"]):
        for panel in ("map", "lifetime"):
            got = sorted(t.region for t in r.texts if t.svg == i and "region-label" in t.cls.split()
                         and t.panel == panel)
            assert got == sorted(reg["name"] for reg in k["regions"]), (panel, got)
            # written as the region's logical tensor and stage (SFA[2]), named in data-region (SFA2)
            caption = {reg["name"]: region_caption(reg) for reg in k["regions"]}
            assert all(t.text == caption[t.region] for t in r.texts if t.svg == i and t.region)
    assert [(a.text, a.box, b.text, b.box) for a, b in r.overlapping_pairs(skip_cls=())] == []
    assert r.console == ()
    return r


@pytest.mark.parametrize("path", PAGES, ids=[p.name for p in PAGES])
def test_plan_page_in_chromium(path: Path, tmp_path: Path):
    _check(_plan(path), tmp_path)


def test_riskiest_annotation_stays_off_labels(tmp_path: Path):
    # plan_fa_spo's first edge (acc0, line 860 -> 1045) drawn as the riskiest: its note is drawn once, in red,
    # and (checked in _check) over no label
    r = _check(_riskiest_forced(_plan(FIXTURES / "plan" / "plan_fa_spo.ptx")), tmp_path)
    assert [t.text for t in r.texts if "annotation" in t.cls.split() and t.text.startswith("riskiest")] == [
        "riskiest: same-thread-wait"]


def test_source_lines_label_the_time_axis(tmp_path: Path):
    # plan_fa_spo.ptx has -lineinfo: the lifetime chart's axis is plan_fa_spo.cu's lines (one tick for each run of
    # PTX lines of one source line), the PTX line in each tick's tooltip
    r = _check(_plan(FIXTURES / "plan" / "plan_fa_spo.ptx"), tmp_path)
    ticks = [(t.text, t.title) for t in r.texts if "tick" in t.cls.split() and t.title]
    assert ticks == [("47", "plan_fa_spo.cu:47: PTX line 217"), ("57", "plan_fa_spo.cu:57: PTX line 306"),
                     ("63", "plan_fa_spo.cu:63: PTX line 1045"), ("72", "plan_fa_spo.cu:72: PTX line 1078"),
                     ("83", "plan_fa_spo.cu:83: PTX line 1192")]
    assert [t.text for t in r.texts if t.text.startswith("Lifetime")] == [
        "Lifetime (plan_fa_spo.cu lines down, from -lineinfo; PTX lines in the tooltips)"]
    assert [t.text for t in r.texts if t.text in ("source line", "PTX line")] == ["source line"]
