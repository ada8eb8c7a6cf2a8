"""``tmemlint plan``: numbers worked out by hand on the compiled fixtures of fixtures/plan/, the Triton corpus
against the TMEM size Triton reported, snapshots of the JSON and text, and the command line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, FIXTURES, ROOT, SHARED, needs_ptxas
from tmemlint.frontend.parser import decode, parse_text
from tmemlint.plan.model import SCHEMA_VERSION, build_plan
from tmemlint.plan.render_text import render_text

PLAN = FIXTURES / "plan"
SNAP = ROOT / "tests" / "snapshots"


def plan_of(path: Path, **kw) -> dict:
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    return build_plan(parse_text(decode(path.read_bytes()), rel), rel, **kw)


def kernel(path: Path, **kw) -> dict:
    p = plan_of(path, **kw)
    assert len(p["kernels"]) == 1
    return p["kernels"][0]


def regions(k: dict) -> list[tuple]:
    return [(r["name"], r["kind"], tuple(r["columns"]), r["width"]) for r in k["regions"]]


# ---------------------------------------------------------------------------------------- hand-worked fixtures


def test_double_buffered_128x256_fp32_accumulator():
    # M=128 x N=256 fp32: 256 columns per stage (one 32-bit cell per element per lane), 2 stages = 512 columns,
    # which is already a power of two: allocated 512, nothing wasted.
    k = kernel(PLAN / "plan_acc_double_buffer.ptx")
    assert regions(k) == [("acc0", "accumulator", (0, 256), 256), ("acc1", "accumulator", (256, 512), 256)]
    assert [r["lanes"] for r in k["regions"]] == [[0, 128], [0, 128]]
    b = k["budget"]
    assert (b["raw_columns"], b["allocated_columns"], b["waste_columns"], b["waste_percent"]) == (512, 512, 0, 0.0)
    assert (b["per_sm_columns"], b["fits"], b["complete"]) == (512, True, True)
    assert k["ctas_per_sm"] == {"value": 1, "source": "minnctapersm"}  # __launch_bounds__(128, 1)
    assert k["cta_group"] == 1 and k["threads_per_cta"] == 128
    assert k["peak"]["columns"] == 512 and k["peak"]["regions"] == ["acc0", "acc1"]
    # the epilogue reads both stages in 32-column chunks: 32 registers per thread, 32 lanes x 32 columns x 4 B
    rb = k["readback"]
    assert rb["by_shape"][0]["shape"] == "32x32b.x32"
    assert (rb["by_shape"][0]["registers_per_thread"], rb["by_shape"][0]["bytes_per_warp"]) == (32, 4096)
    assert (rb["max_registers_held"], rb["waits_per_ld"], rb["lds_without_wait"]) == (32, 1.0, [])
    assert {e["guard"] for e in k["reuse_edges"]} <= {"same-thread-wait", "mbarrier+tcgen05"}


def test_fa_style_s_p_o_layout():
    # S = 128 fp32 columns [0,128); P = 128 bf16 per row packed 2 per cell = 64 columns over S's first half
    # (read by the PV MMA as A: 8 K-slices of 8 columns); O = 128 fp32 columns [128,256).
    # Raw = union = 256 (P aliases S and is counted once), region widths sum to 320, allocated 256, no waste.
    k = kernel(PLAN / "plan_fa_spo.ptx")
    assert regions(k) == [("acc0", "accumulator", (0, 128), 128), ("A0", "A", (0, 64), 64),
                          ("acc1", "accumulator", (128, 256), 128)]
    a = k["regions"][1]
    assert [w["op"] for w in a["writers"]] == ["st", "st"]
    assert len(a["readers"]) == 8 and {r["role"] for r in a["readers"]} == {"a"}
    b = k["budget"]
    assert (b["raw_columns"], b["region_width_sum"], b["allocated_columns"], b["waste_columns"]) == (256, 320, 256, 0)
    assert b["complete"] is True
    assert k["peak"]["columns"] == 256
    # S is read back (softmax) and then overwritten by P in the same thread after tcgen05.wait::ld; P is read by
    # the PV MMA and overwritten by the next QK MMA after the PV MMA's commit has been waited on
    guards = {(e["region"], e["reader"]["op"], e["writer"]["op"]): e["guard"] for e in k["reuse_edges"]}
    assert guards[("acc0", "ld", "st")] == "same-thread-wait"
    assert guards[("A0", "mma", "mma")] == "same-thread-wait"
    assert all(e["missing"] == [] for e in k["reuse_edges"])


def test_block_scaled_two_stages_plus_scales():
    # two accumulator stages of N=16 columns + 4 scale-A + 4 scale-B columns = 40 raw; the allocation must be a
    # power of two >= 32 -> 64; waste 64 - 40 = 24 = 37.5 %.
    k = kernel(PLAN / "plan_blockscaled_small.ptx")
    assert regions(k) == [("acc0", "accumulator", (0, 16), 16), ("acc1", "accumulator", (16, 32), 16),
                          ("SFA0", "scale-A", (32, 36), 4), ("SFB0", "scale-B", (36, 40), 4)]
    b = k["budget"]
    assert (b["raw_columns"], b["allocated_columns"], b["waste_columns"], b["waste_percent"]) == (40, 64, 24, 37.5)
    assert b["allocations"] == [{"allocation": 0, "raw_columns": 40, "allocated_columns": 64, "waste_columns": 24}]
    assert k["peak"]["columns"] == 40
    assert [a["columns"] for a in k["allocations"]] == [64]
    sfa = k["regions"][2]
    assert {w["op"] for w in sfa["writers"]} == {"cp"} and {r["role"] for r in sfa["readers"]} == {"scale-a"}
    assert "ue8m0" in sfa["packing"]
    # x16 loads: 16 registers per thread, 16 x 32 threads x 4 B = 2048 bytes per warp
    assert [(s["shape"], s["registers_per_thread"], s["bytes_per_warp"]) for s in k["readback"]["by_shape"]] == \
        [("32x32b.x16", 16, 2048)]
    # the scale factors are re-copied each tile only after the MMAs that read them were committed and waited on
    sf_edges = [e for e in k["reuse_edges"] if e["region"].startswith("SF")]
    assert sf_edges and all(e["guard"] == "same-thread-wait" and e["next_iteration"] for e in sf_edges)


def test_ctas_per_sm_from_configuration_scales_the_budget():
    # without .minnctapersm the configured number is used: 64 columns x 8 CTAs = 512 (fits), 9 would not
    ptx = (PLAN / "plan_blockscaled_small.ptx").read_text().replace(".minnctapersm 1", "")
    m = parse_text(ptx, "x.ptx")
    k = build_plan(m, "x.ptx", ctas_per_sm=9)["kernels"][0]
    assert k["ctas_per_sm"] == {"value": 9, "source": "config"}
    assert (k["budget"]["per_sm_columns"], k["budget"]["fits"]) == (576, False)
    k = build_plan(m, "x.ptx")["kernels"][0]
    assert k["ctas_per_sm"] == {"value": 1, "source": "default"}


# ---------------------------------------------------------------------------------------- real compiler output


def _triton_log() -> dict:
    shared = SHARED / "corpus" / "triton" / "gen" / "gen_log.json"
    path = shared if shared.is_file() else ROOT / "tests" / "data" / "triton_gen_log.json"
    return json.loads(path.read_text())


def _triton_files():
    if not SHARED.is_dir():
        return []
    return [pytest.param(p, id=p.name) for p in sorted((SHARED / "corpus" / "triton").glob("*.sm10[03].ptx"))]


@pytest.mark.parametrize("path", _triton_files())
def test_triton_allocated_columns_equal_what_triton_reported(path):
    want = _triton_log()[path.name.removesuffix(".ptx")]["tmem"]
    k = kernel(path)
    assert k["budget"]["allocated_columns"] == want
    assert k["budget"]["complete"] is True  # every TMEM operand is placed in a region
    assert 0 < k["budget"]["raw_columns"] <= want
    assert k["peak"]["columns"] <= k["budget"]["raw_columns"]


def test_triton_layouts():
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    tri = SHARED / "corpus" / "triton"
    # persistent matmul: the accumulator is double-buffered through a wrapping stage counter
    assert regions(kernel(tri / "mm_persistent_f16.sm100.ptx")) == [
        ("acc0", "accumulator", (0, 128), 128), ("acc1", "accumulator", (128, 256), 128)]
    # attention, head dim 64: O at 0, S at 64, P (bf16, A operand of PV) at 128
    assert regions(kernel(tri / "attn_fwd_d64.sm100.ptx")) == [
        ("acc0", "accumulator", (0, 64), 64), ("acc1", "accumulator", (64, 128), 64), ("A0", "A", (128, 160), 32)]
    # block-scaled: scale factors written with tcgen05.st right after the accumulator
    k = kernel(tri / "mm_scaled_mxfp8.sm100.ptx")
    assert regions(k)[1:] == [("SFA0", "scale-A", (128, 132), 4), ("SFB0", "scale-B", (132, 136), 4)]
    assert (k["budget"]["raw_columns"], k["budget"]["waste_columns"], k["budget"]["waste_percent"]) == (136, 120, 46.9)
    # warp-specialized: the epilogue hands the accumulator back through an mbarrier without tcgen05 fences; check
    # reports nothing there (TM306 is off by default) and the happens-before analysis orders the two warps, so
    # it is the weakest edge, not a risky one
    k = kernel(tri / "mm_persistent_ws_f16.sm100.ptx")
    assert k["riskiest_edge"] is None and k["ordering_verdict"].startswith("nothing is missing")
    e = k["reuse_edges"][k["weakest_edge"]]
    assert (e["guard"], e["same_thread"], e["reader"]["line"], e["writer"]["line"]) == ("mbarrier", False, 271, 599)
    assert e["ordered"] is not False and e["findings"] == []


def _compiled_files():
    files = sorted((FIXTURES / "nvcc").glob("*.ptx")) + sorted((FIXTURES / "real").rglob("*.ptx"))
    files += sorted(EXAMPLES.glob("*.ptx")) + sorted(PLAN.glob("*.ptx"))
    return [pytest.param(p, id=str(p.relative_to(ROOT))) for p in files]


@pytest.mark.parametrize("path", _compiled_files())
def test_plan_of_real_nvcc_and_cute_output(path):
    plan = plan_of(path)
    text = path.read_text()
    for k in plan["kernels"]:
        # the allocated size is the column count the source asked the compiler for (the alloc operand)
        fn = re.search(r"\.entry\s+" + re.escape(k["kernel"]) + r"\b", text)
        assert fn is not None
        for a in k["allocations"]:
            line = text.splitlines()[a["line"] - 1]
            imm = re.search(r"tcgen05\.alloc[^;]*,\s*(\d+)\s*;", line)
            if imm:
                assert a["columns"] == int(imm.group(1))
        render_text(plan)


def test_cute_sizes_match_the_readme():
    cute = FIXTURES / "real" / "cute"
    assert kernel(cute / "cute_dense_f16.ptx")["budget"]["allocated_columns"] == 128
    k = kernel(cute / "cute_mxf8.ptx")
    assert k["budget"]["allocated_columns"] == 256
    assert regions(k) == [("acc0", "accumulator", (0, 128), 128), ("SFA0", "scale-A", (128, 132), 4),
                          ("SFB0", "scale-B", (132, 136), 4)]
    # CuTe DSL re-copies the scale factors every k-tile with no wait on the MMAs that read them (mma -> cp is not
    # a pipelined pair): the riskiest edge, in the same thread
    e = k["reuse_edges"][k["riskiest_edge"]]
    assert (e["guard"], e["same_thread"], e["writer"]["op"]) == ("none", True, "cp")


@needs_ptxas
@pytest.mark.parametrize("path", sorted(PLAN.glob("*.ptx")), ids=lambda p: p.name)
def test_plan_fixture_assembles_with_ptxas(path):
    proc = subprocess.run(["ptxas", "-arch=sm_100a", str(path), "-o", "/dev/null"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_plan_fixtures_carry_no_machine_path():
    for p in PLAN.glob("*.ptx"):
        for line in p.read_text().splitlines():
            if line.lstrip().startswith(".file"):
                assert "/" not in line, line


# ---------------------------------------------------------------------------------------- snapshots


def _snapshot(name: str, got: str):
    path = SNAP / name
    if os.environ.get("TMEMLINT_UPDATE_SNAPSHOTS"):
        path.write_text(got)
    assert got == path.read_text(), f"snapshot {name} differs (TMEMLINT_UPDATE_SNAPSHOTS=1 to rewrite)"


@pytest.mark.parametrize("name", ["plan_blockscaled_small", "plan_fa_spo", "plan_rotating_sf", "plan_constant_trap",
                                  "plan_tk_stages"])
def test_json_and_text_snapshots(name):
    plan = plan_of(PLAN / f"{name}.ptx")
    assert plan["schema_version"] == SCHEMA_VERSION
    _snapshot(f"{name}.json", json.dumps(plan, indent=1) + "\n")
    _snapshot(f"{name}.txt", render_text(plan))


def test_json_schema_document_lists_every_field():
    doc = (ROOT / "docs" / "plan-schema.md").read_text()
    assert f"`schema_version`: `\"{SCHEMA_VERSION}\"`" in doc
    k = kernel(PLAN / "plan_fa_spo.ptx")
    fields = set(k) | {f for r in k["regions"] for f in r} | set(k["budget"]) | set(k["readback"]) | \
        {f for e in k["reuse_edges"] for f in e} | set(k["peak"])
    missing = sorted(f for f in fields if f"`{f}`" not in doc)
    assert missing == []


def test_svg_and_html():
    pytest.importorskip("drawsvg")
    from tmemlint.plan.render_svg import render_html, render_svg

    plan = plan_of(PLAN / "plan_blockscaled_small.ptx")
    svg = render_svg(plan)
    assert svg.startswith("<?xml") or svg.startswith("<svg")
    for name in ("acc0", "acc1", "SFA0", "SFB0", "nothing is missing", "lanes [0, 128)"):
        assert name in svg
    assert "riskiest" not in svg  # every reuse is ordered: no edge in red
    page = render_html(plan, render_text(plan))
    assert "<svg" in page and "Column budget" in page


# ---------------------------------------------------------------------------------------- command line


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-m", "tmemlint", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_text_and_json():
    proc = run_cli("plan", "fixtures/plan/plan_blockscaled_small.ptx")
    assert proc.returncode == 0, proc.stderr
    assert "alignment waste: 24 columns = 37.5% of the allocation" in proc.stdout
    proc = run_cli("plan", "--format", "json", "fixtures/plan/plan_blockscaled_small.ptx")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["kernels"][0]["budget"]["raw_columns"] == 40


def test_cli_bad_input_is_tm900_and_exit_2(tmp_path):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 9.0\n.target sm_100a\n.visible .entry k() { mov.u32 %r1, ; }\n")
    proc = run_cli("plan", str(bad))
    assert proc.returncode == 2
    assert "TM900" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("plan", str(tmp_path / "missing.ptx"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    proc = run_cli("plan", "--kernel", "nope", "fixtures/plan/plan_fa_spo.ptx")
    assert proc.returncode == 2 and "no kernel named 'nope'" in proc.stderr
    notptx = tmp_path / "x.ptx"
    notptx.write_bytes(b"\x00\xff garbage")
    proc = run_cli("plan", str(notptx))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
