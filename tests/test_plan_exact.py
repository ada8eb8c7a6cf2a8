"""``tmemlint plan`` on kernels whose plan was worked out by hand (issue 16): rotating pipeline stages, constant
TMEM addresses, loop-advanced readback addresses, the checker's findings on the edges, the configuration, CUDA
sources, ``--kernel`` by demangled name, ``--design``, and the picture.  Every number is exact."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT
from tmemlint.frontend.parser import decode, parse_text
from tmemlint.options import Options
from tmemlint.plan.model import build_plan

PLAN = FIXTURES / "plan"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")


def kernel(path: Path, **kw) -> dict:
    rel = path.relative_to(ROOT).as_posix()
    p = build_plan(parse_text(decode(path.read_bytes()), rel), rel, **kw)
    assert len(p["kernels"]) == 1
    return p["kernels"][0]


def regions(k: dict) -> list[tuple]:
    return [(r["name"], r["kind"], tuple(r["columns"])) for r in k["regions"]]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-m", "tmemlint", *args], capture_output=True, text=True, cwd=ROOT)


# ---------------------------------------------------------------------------------------- rotating stages


ROTATING = [("acc0", "accumulator", (0, 128)), ("acc1", "accumulator", (128, 256))] + \
    [(f"SFA{s}", "scale-A", (256 + 4 * s, 260 + 4 * s)) for s in range(4)] + \
    [(f"SFB{s}", "scale-B", (272 + 4 * s, 276 + 4 * s)) for s in range(4)]


def test_rotating_scale_factor_stages_are_regions_of_their_own():
    # 2 accumulator stages x 128 columns + SFA and SFB over 4 stages x 4 columns at 256 + 4 s and 272 + 4 s:
    # 256 + 16 + 16 = 288 raw columns, all live in the k-block loop (peak 288); 512 allocated, 224 unused
    k = kernel(PLAN / "plan_rotating_sf.ptx")
    assert regions(k) == ROTATING
    b = k["budget"]
    assert (b["raw_columns"], b["allocated_columns"], b["waste_columns"], b["complete"]) == (288, 512, 224, True)
    assert (b["anchored_accesses"], b["unplaced_accesses"]) == (0, 0)
    assert k["peak"]["columns"] == 288
    sfa1 = k["regions"][3]
    assert sfa1["stage"] == {"index": 1, "of": 4, "starts": [256, 260, 264, 268]}
    assert sfa1["tcol"] == "column = base + 256 + 4·stage (stage 1 of 4) + k, k in [0, 4)"
    assert sfa1["lanes"] == [0, 128] and sfa1["overlaps"] == []
    # -lineinfo: each access names its line in the kernel's source (the asm statement, not the helper it inlines)
    assert sfa1["writers"] == [{"op": "cp", "role": "cp", "line": 309, "source": "plan_rotating_sf.cu:59"}]
    # the accumulator is read back in 4 chunks of 32 columns (c += 32): every chunk is placed, in both stages
    acc0 = k["regions"][0]
    assert [r["line"] for r in acc0["readers"]] == [400] and acc0["stage"] == {"index": 0, "of": 2, "starts": [0, 128]}
    # one pass reads one stage: 4 executions of the x32 load = 32 lanes x 128 columns x 4 B per warp
    rb = k["readback"]
    assert ([(s["shape"], s["count"], s["executions"]) for s in rb["by_shape"]], rb["bytes_per_warp"],
            rb["bytes_per_cta"]) == ([("32x32b.x32", 1, 4)], 16384, 65536)
    # integer TMEM addresses: the 512-column allocation proves the base is column 0 (an assumption from the code)
    assert {"text": "integer TMEM addresses are columns of the allocation, whose base is column 0 (one allocation of "
                    "512 columns, or a base the code traps on unless it is 0)", "from_code": True} in k["assumptions"]


def test_rotating_stages_edges_and_verdict():
    k = kernel(PLAN / "plan_rotating_sf.ptx")
    edges = k["reuse_edges"]
    assert len(edges) == 10
    sf = [e for e in edges if e["region"].startswith("SF")]
    # the next cp into a stage waits on sf_free[s], committed after the MMAs that read it, except while the stages
    # fill (iter < 4): a conditional wait, in the thread that issued the MMAs
    assert {(e["guard"], e["relation"], e["reader"]["line"], e["writer"]["op"]) for e in sf} == \
        {("conditional-wait", "same thread", 349, "cp")}
    acc = [e for e in edges if e["region"].startswith("acc")]
    # the four warps read the accumulator, thread 0 of warp 0 writes it again: not "same thread"
    assert [(e["guard"], e["relation"], e["same_thread"], e["reader"]["warps"], e["writer"]["warps"]) for e in acc] \
        == [("mbarrier+tcgen05", "same warps, other threads", False, "warps 0-3", "warp 0")] * 2
    # the chain the happens-before engine found: warps 1-3 arrive on the stage's empty barrier (and the final
    # __syncthreads, which the engine's loop counts let order the pair too), warp 0 waits before the next MMA
    assert acc[0]["present"] == [
        "tcgen05.wait::ld",
        "happens-before chain: mbarrier empty (offset not known: any of its stages), barrier 0: warps 1-3 arrive at "
        "lines 463, 481, warp 0 wait at lines 184, 258",
        "tcgen05.fence::before_thread_sync", "tcgen05.fence::after_thread_sync"]
    assert all(e["findings"] == [] and e["at_risk"] is False for e in edges)
    assert k["riskiest_edge"] is None and k["findings"] == []
    assert edges[k["weakest_edge"]]["guard"] == "conditional-wait"
    assert k["ordering_verdict"].startswith("nothing is missing: the checker reports no ordering fault on any of the "
                                            "10 reuse edges")


def test_rotating_stages_cuda_source_mode_gives_the_same_plan():
    proc = run_cli("plan", "--format", "json", "fixtures/plan/plan_rotating_sf.cu")
    assert proc.returncode == 0, proc.stderr
    k = json.loads(proc.stdout)["kernels"][0]
    assert k["kernel"] == "rotating_sf"
    assert regions(k) == ROTATING
    assert (k["budget"]["raw_columns"], k["peak"]["columns"], k["budget"]["complete"]) == (288, 288, True)


@needs_nvcc
def test_rotating_stages_compile_mode():
    proc = run_cli("plan", "--compile", "--format", "json", "fixtures/plan/plan_rotating_sf.cu")
    assert proc.returncode == 0, proc.stderr
    k = json.loads(proc.stdout)["kernels"][0]
    assert k["demangled"] == "rotating_sf(uint4 const*, uint4 const*, unsigned int const*, unsigned int const*, " \
                             "float*, unsigned int)"
    assert regions(k) == ROTATING and k["budget"]["raw_columns"] == 288


# ---------------------------------------------------------------------------------------- constant addresses


def test_constant_addresses_after_a_trap_checked_base():
    # 128 columns allocated, the base trap-checked against 0: accumulator N=64 at [0, 64), A (32 bf16 x 16 K...) 4
    # K-slices of 8 columns at [64, 96): raw 96, waste 32 = 25 %; one tile: nothing is written again after a read
    k = kernel(PLAN / "plan_constant_trap.ptx")
    assert regions(k) == [("acc0", "accumulator", (0, 64)), ("A0", "A", (64, 96))]
    b = k["budget"]
    assert (b["raw_columns"], b["allocated_columns"], b["waste_columns"], b["waste_percent"], b["complete"]) == \
        (96, 128, 32, 25.0, True)
    assert k["peak"]["columns"] == 96
    a0 = k["regions"][1]
    assert [w["op"] for w in a0["writers"]] == ["st"] and len(a0["readers"]) == 4
    assert k["reuse_edges"] == [] and k["riskiest_edge"] is None and k["weakest_edge"] is None
    assert k["ordering_verdict"] == "no column is read and then written again: no reuse to order"
    assert any(a["from_code"] and "base is column 0" in a["text"] for a in k["assumptions"])


def test_loop_advanced_readback_is_placed_column_by_column():
    # plan_acc_double_buffer reads each stage with `tmem_ld32(t_row + c)` for c = 0, 32, ..., 224: the load's
    # address set is the 8 chunks of both stages, not the anchor at the stage's first column
    k = kernel(PLAN / "plan_acc_double_buffer.ptx")
    assert k["budget"]["complete"] is True and k["budget"]["anchored_accesses"] == 0
    assert [[r["line"] for r in reg["readers"]] for reg in k["regions"]] == [[291], [291]]
    assert [s["fragment"] for s in k["readback"]["by_shape"]] == [
        "each warp reads 32 lanes of its quarter (lane = 32·(warp % 4) + lane id) x 32 columns: 32 registers per "
        "thread"]


# ---------------------------------------------------------------------------------------- one truth with check


def test_a_checker_finding_makes_the_edge_at_risk():
    k = kernel(FIXTURES / "nvcc" / "tm302_tmem_reuse_before_wait_ld_bad.ptx")
    e = k["reuse_edges"][k["riskiest_edge"]]
    assert (e["region"], e["reader"]["op"], e["reader"]["line"], e["writer"]["op"], e["writer"]["line"]) == \
        ("acc0", "ld", 271, "mma", 335)
    assert [f["code"] for f in e["findings"]] == ["TM302"] and e["at_risk"] is True
    # one TM302 per load that misses its wait::ld, at the tcgen05.ld, the overwriting MMA named in its message
    assert e["missing"][0].startswith("TM302: no tcgen05.wait::ld after this tcgen05.ld") \
        and e["missing"][0].endswith("tcgen05.mma overwrites its columns at line 335")
    assert k["ordering_verdict"] == ("at risk: acc0 read at line 271 (ld) and rewritten at line 335 (mma): TM302 "
                                     "line 271")


def test_read_before_complete_is_shown_on_its_region():
    k = kernel(FIXTURES / "nvcc" / "tm304_accumulator_read_before_complete_bad.ptx")
    assert [f["code"] for f in k["regions"][0]["findings"]] == ["TM304"]


def test_selected_rules_follow_the_options():
    path = FIXTURES / "nvcc" / "tm302_tmem_reuse_before_wait_ld_bad.ptx"
    k = kernel(path, options=Options(codes={"TM101"}))
    assert k["findings"] == [] and k["riskiest_edge"] is None


def test_ctas_per_sm_as_tm106_configuration_over_minnctapersm(tmp_path):
    # plan_acc_double_buffer has .minnctapersm 1; the configuration's 2 CTAs per SM win, as in TM106:
    # 512 columns x 2 = 1024 > 512, and check warns (TM106) on the same file with the same configuration
    cfg = tmp_path / "tmemlint.toml"
    cfg.write_text("ctas-per-sm = 2\n")
    src = tmp_path / "k.ptx"
    src.write_bytes((PLAN / "plan_acc_double_buffer.ptx").read_bytes())
    proc = run_cli("plan", "--format", "json", "--config", str(cfg), str(src))
    assert proc.returncode == 0, proc.stderr
    k = json.loads(proc.stdout)["kernels"][0]
    assert k["ctas_per_sm"] == {"value": 2, "source": "config"}
    assert (k["budget"]["per_sm_columns"], k["budget"]["fits"]) == (1024, False)
    assert [f["code"] for f in k["findings"]] == ["TM106"]
    chk = run_cli("check", "--config", str(cfg), "--format", "concise", str(src))
    assert " TM106 [warning] " in chk.stdout
    k = json.loads(run_cli("plan", "--format", "json", "--ctas-per-sm", "3", "--config", str(cfg),
                           str(src)).stdout)["kernels"][0]
    assert k["ctas_per_sm"] == {"value": 3, "source": "config"}


def test_defines_decide_the_cuda_source(tmp_path):
    src = tmp_path / "k.cu"
    text = (PLAN / "plan_constant_trap.cu").read_text().replace("constexpr uint32_t kM = 128, kN = 64,", (
        "#ifndef WIDE\n#define N_COLS 64\n#else\n#define N_COLS 96\n#endif\nconstexpr uint32_t kM = 128, kN = N_COLS,"))
    src.write_text(text)
    (tmp_path / "plan_common.cuh").write_bytes((PLAN / "plan_common.cuh").read_bytes())
    for args, acc in (((), (0, 64)), (("-D", "WIDE"), (0, 96))):
        proc = run_cli("plan", "--format", "json", *args, str(src))
        assert proc.returncode == 0, proc.stderr
        assert regions(json.loads(proc.stdout)["kernels"][0])[0] == ("acc0", "accumulator", acc)


# ---------------------------------------------------------------------------------------- names


def test_kernel_by_demangled_name_or_part():
    for name in ("acc_double_buffer", "acc_double_buffer(uint4 const*, uint4 const*, float*, unsigned int)",
                 "double_buf", "_Z17acc_double_bufferPK5uint4S1_Pfj"):
        proc = run_cli("plan", "--kernel", name, "fixtures/plan/plan_acc_double_buffer.ptx")
        assert proc.returncode == 0, (name, proc.stderr)
        assert "kernel acc_double_buffer(uint4 const*, uint4 const*, float*, unsigned int)  (line" in proc.stdout
    proc = run_cli("plan", "--kernel", "nope", "fixtures/plan/plan_acc_double_buffer.ptx")
    assert proc.returncode == 2
    assert "(functions: acc_double_buffer(uint4 const*, uint4 const*, float*, unsigned int))" in proc.stderr


def test_lanes_are_intervals_like_columns():
    proc = run_cli("plan", "fixtures/plan/plan_fa_spo.ptx")
    assert "  acc0    accumulator  [0, 128)  [0, 128)    128" in proc.stdout
    assert "0-127" not in proc.stdout


def test_a_register_named_without_percent_in_the_function_scope(tmp_path):
    # CuTe DSL (FlashAttention-4) declares '.reg .b32 idesc;' at function level and uses it in asm scopes
    ptx = """.version 8.7
.target sm_100a
.address_size 64
.shared .align 4 .b32 slot;
.visible .entry k() .reqntid 128 {
    .reg .b32 idesc;
    .reg .b32 %r<4>;
    .reg .b64 %rd<3>;
    .reg .pred p;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 p, %r1, 0;
    @p bra DONE;
    tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 64;
    ld.shared.u32 %r2, [slot];
    mov.b32 idesc, 0x8100490;
    mov.b64 %rd1, 0;
    mov.b64 %rd2, 0;
    { .reg .pred q; setp.ne.b32 q, 0, 0;
      tcgen05.mma.cta_group::1.kind::f16 [%r2], %rd1, %rd2, idesc, q; }
DONE:
    ret;
}
"""
    m = parse_text(ptx, "k.ptx")
    k = build_plan(m, "k.ptx", options=Options(codes=set()))["kernels"][0]
    assert regions(k) == [("acc0", "accumulator", (0, 64))]


# ---------------------------------------------------------------------------------------- design


FA_DESIGN = """[design]
name = "fa_spo"
cta_group = 1
ctas_per_sm = 1

[[object]]
name = "S"
kind = "accumulator"
dtype = "f32"
m = 128
n = 128

[[object]]
name = "P"
kind = "A"
dtype = "bf16"
m = 128
n = 128
aliases = "S"

[[object]]
name = "O"
kind = "accumulator"
dtype = "f32"
m = 128
n = 128
"""


def test_design_budget_layout_and_header(tmp_path):
    d = tmp_path / "fa.toml"
    d.write_text(FA_DESIGN + "\n[[object]]\nname = \"SFA\"\nkind = \"scale-A\"\nstages = 4\n")
    p = json.loads(run_cli("plan", "--design", str(d), "--format", "json").stdout)
    assert [(o["name"], o["columns"], o["columns_per_stage"], o["starts"]) for o in p["objects"]] == [
        ("S", [0, 128], 128, [0]), ("P", [0, 64], 64, [0]), ("O", [128, 256], 128, [128]),
        ("SFA", [256, 272], 4, [256, 260, 264, 268])]
    assert p["budget"] == {"raw_columns": 272, "allocated_columns": 512, "waste_columns": 240, "fits_cta": True,
                           "per_sm_columns": 512, "fits": True}
    assert "next cp of the same stage only after the MMAs" in p["objects"][3]["lifecycle"]
    hdr = run_cli("plan", "--design", str(d), "--format", "cuda").stdout
    for line in ("constexpr uint32_t kTmemAllocCols = 512;  // raw 272", "constexpr uint32_t kTmemPCol = 0;",
                 "constexpr uint32_t kTmemOCol = 128;", "constexpr uint32_t kTmemSFAStageStride = 4;"):
        assert line in hdr
    if shutil.which("g++"):
        h = tmp_path / "layout.h"
        h.write_text(hdr)
        src = tmp_path / "use.cpp"
        src.write_text('#include "layout.h"\nstatic_assert(kTmemSFACol == 256, "");\nint main() { return 0; }\n')
        proc = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", str(src)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_design_compared_with_the_kernel(tmp_path):
    d = tmp_path / "fa.toml"
    d.write_text(FA_DESIGN)
    p = json.loads(run_cli("plan", "--design", str(d), "--format", "json", "fixtures/plan/plan_fa_spo.ptx").stdout)
    assert p["design_comparison"] == ["the kernel matches the design: same allocation, every object at its columns"]
    d.write_text(FA_DESIGN.replace('name = "O"\nkind = "accumulator"\ndtype = "f32"\nm = 128\nn = 128',
                                   'name = "O"\nkind = "accumulator"\ndtype = "f32"\nm = 128\nn = 128\nstages = 2'))
    p = json.loads(run_cli("plan", "--design", str(d), "--format", "json", "fixtures/plan/plan_fa_spo.ptx").stdout)
    name = "fa_spo(uint4 const*, uint4 const*, uint4 const*, float*, unsigned int)"
    assert p["design_comparison"] == [f"{name}: allocates 256 columns, the design 512",
                                      f"{name}: O[1] (accumulator, [256, 384)) is not in the kernel"]


def test_bad_design_is_a_clear_error(tmp_path):
    d = tmp_path / "bad.toml"
    d.write_text('[[object]]\nname = "S"\nkind = "accumulator"\nn = 128\n[[object]]\nname = "P"\nkind = "A"\n'
                 'n = 512\naliases = "S"\n')
    proc = run_cli("plan", "--design", str(d))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "object 2 (P): 256 columns x 1 stages do not fit in S (128 x 1)" in proc.stderr


# ---------------------------------------------------------------------------------------- picture


def test_svg_narrow_regions_are_labelled_without_overprinting():
    pytest.importorskip("drawsvg")
    from tmemlint.plan.layout import Anchor, Spot, box_of
    from tmemlint.plan.render_svg import render_svg

    import re

    rel = "fixtures/plan/plan_rotating_sf.ptx"
    svg = render_svg(build_plan(parse_text(decode((ROOT / rel).read_bytes()), rel), rel))
    assert "riskiest" not in svg and "nothing is missing" in svg
    assert "Region map (lanes x columns)" in svg
    assert "Lifetime (plan_rotating_sf.cu lines down, from -lineinfo; PTX lines in the tooltips)" in svg
    # every region is labelled once in each panel; the 4-column regions' labels run down their bands; in each
    # panel no two label boxes (as the layout estimates them) intersect (tests/test_plan_browser.py measures
    # them in Chromium)
    labels = re.findall(r'<text x="([\d.]+)" y="([\d.]+)" font-size="([\d.]+)"[^>]*class="region-label" '
                        r'data-region="(\w+)" data-panel="(\w+)"([^>]*)>([^<]+)</text>', svg)
    names = ["acc0", "acc1"] + [f"SF{m}{s}" for m in "AB" for s in range(4)]
    # each region is drawn as its logical tensor's stage: acc1 is acc[1], SFB2 is SFB[2]
    caption = {n: f"{n.rstrip('0123456789')}[{n[-1]}]" for n in names}
    for panel in ("map", "lifetime"):
        got = [(float(x), float(y), float(f), n, "rotate(90" in rest, "middle" in rest)
               for x, y, f, n, pn, rest, text in labels if pn == panel and caption[n] == text]
        assert sorted(g[3] for g in got) == sorted(names), panel
        if panel == "map":
            assert all(rot for x, y, f, n, rot, mid in got if n.startswith("SF"))
        boxes = [box_of(caption[n], f, Spot(x, y, Anchor.middle if mid else Anchor.start, rot), bold=True)
                 for x, y, f, n, rot, mid in got]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert not a.overlaps(b), (a, b)


def test_design_pair_of_ctas(tmp_path):
    # cta_group::2, M=256: each CTA holds 128 rows x N columns of the accumulator, 4 columns of A's scales (128 of
    # the 256 rows), and B's scales for all N=256 rows: 8 columns (ThunderKittens' mxfp8 2-CTA layout)
    d = tmp_path / "pair.toml"
    d.write_text('[design]\nname = "pair"\ncta_group = 2\n\n[[object]]\nname = "D"\nkind = "accumulator"\nm = 256\n'
                 'n = 256\n\n[[object]]\nname = "SFA"\nkind = "scale-A"\nm = 256\nstages = 5\n\n[[object]]\n'
                 'name = "SFB"\nkind = "scale-B"\nn = 256\nstages = 5\n')
    p = json.loads(run_cli("plan", "--design", str(d), "--format", "json").stdout)
    assert [(o["name"], o["columns_per_stage"], o["columns"]) for o in p["objects"]] == [
        ("D", 256, [0, 256]), ("SFA", 4, [256, 276]), ("SFB", 8, [276, 316])]
    assert (p["budget"]["raw_columns"], p["budget"]["allocated_columns"]) == (316, 512)


def test_build_path_gives_the_defines(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text((PLAN / "plan_constant_trap.cu").read_text().replace("constexpr uint32_t kM = 128, kN = 64,", (
        "#ifndef WIDE\n#define N_COLS 64\n#else\n#define N_COLS 96\n#endif\nconstexpr uint32_t kM = 128, kN = N_COLS,")))
    (tmp_path / "plan_common.cuh").write_bytes((PLAN / "plan_common.cuh").read_bytes())
    build = tmp_path / "build"
    build.mkdir()
    (build / "compile_commands.json").write_text(json.dumps([{
        "directory": str(tmp_path), "file": str(src), "command": f"nvcc -DWIDE -arch=sm_100a -c {src} -o k.o"}]))
    proc = run_cli("plan", "--format", "json", "-p", str(build), str(src))
    assert proc.returncode == 0, proc.stderr
    assert regions(json.loads(proc.stdout)["kernels"][0])[0] == ("acc0", "accumulator", (0, 96))


def test_cuda_source_the_frontend_cannot_read_is_said_not_a_traceback(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text('__global__ void k() { asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 '
                   '[%0], 32 garbage;" :: "r"(0)); }\n')
    proc = run_cli("plan", str(bad))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "bad.cu:1:102: TM900 the asm text is not valid PTX" in proc.stderr and "(the plan omits it)" in proc.stderr
    assert "no kernel uses Tensor Memory" in proc.stdout
    proc = run_cli("plan", "--format", "cuda", "fixtures/plan/plan_fa_spo.ptx")
    assert proc.returncode == 2 and "--format cuda writes the header of a design" in proc.stderr


def test_suppression_comments_apply_to_the_plan_as_to_check(tmp_path):
    lines = (FIXTURES / "nvcc" / "tm302_tmem_reuse_before_wait_ld_bad.ptx").read_text().split("\n")
    lines[270] += "  // tmemlint: disable=TM302"  # on the tcgen05.ld, where TM302 reports (one per missing wait::ld)
    src = tmp_path / "k.ptx"
    src.write_text("\n".join(lines))
    k = json.loads(run_cli("plan", "--format", "json", str(src)).stdout)["kernels"][0]
    assert k["findings"] == [] and k["riskiest_edge"] is None
    assert run_cli("check", "--format", "concise", str(src)).returncode == 0


# ---------------------------------------------------------------------------------------- logical regions (issue 28)


def test_logical_regions_of_a_thunderkittens_style_kernel():
    # hand count from plan_tk_stages.cu, as its author draws it: the accumulator's two stages of 128 columns, then
    # SFA[stage 0..4] at 256 + 16 s and SFB[stage 0..4] at 336 + 16 s, 16 columns each (every stage copied as 4
    # pieces of 4 columns and read 4 columns per MMA K-step: 40 fragments, 10 logical stage buffers): 12 regions,
    # raw 256 + 80 + 80 = 416, allocated 512, 96 unused; everything live in the k-block loop
    k = kernel(PLAN / "plan_tk_stages.ptx")
    want = [("acc0", "accumulator", (0, 128)), ("acc1", "accumulator", (128, 256))] + \
        [(f"SFA{s}", "scale-A", (256 + 16 * s, 272 + 16 * s)) for s in range(5)] + \
        [(f"SFB{s}", "scale-B", (336 + 16 * s, 352 + 16 * s)) for s in range(5)]
    assert regions(k) == want
    assert [r["label"] for r in k["regions"]] == ["acc[stage 0]", "acc[stage 1]"] + \
        [f"SFA[stage {s}]" for s in range(5)] + [f"SFB[stage {s}]" for s in range(5)]
    assert {r["tensor"] for r in k["regions"]} == {"acc[stage 0..1]", "SFA[stage 0..4]", "SFB[stage 0..4]"}
    sfa2 = k["regions"][4]
    assert sfa2["stage"] == {"index": 2, "of": 5, "starts": [256, 272, 288, 304, 320]}
    assert [f["columns"] for f in sfa2["fragments"]] == [[288, 292], [292, 296], [296, 300], [300, 304]]
    assert [len(r["fragments"]) for r in k["regions"]] == [1, 1] + [4] * 10
    b = k["budget"]
    assert (b["raw_columns"], b["allocated_columns"], b["waste_columns"], b["complete"]) == (416, 512, 96, True)
    assert (b["anchored_accesses"], b["unplaced_accesses"]) == (0, 0) and k["unplaced"] == []
    assert k["peak"]["columns"] == 416
    # one reuse edge per logical region: the next cp of a stage after its MMAs, the next MMA into an accumulator
    # stage after the epilogue's readback
    assert len(k["reuse_edges"]) == 12
    assert k["findings"] == [] and k["riskiest_edge"] is None


def test_accumulator_addresses_reloaded_from_local_memory_are_placed():
    # tm[stage] is kept in the local frame (st.local of base and base + 128, ld.local of tm[stage]): the MMAs and the
    # readback are placed in both stages, none is left unplaced
    k = kernel(PLAN / "plan_tk_stages.ptx")
    acc = k["regions"][:2]
    assert [r["stage"]["starts"] for r in acc] == [[0, 128], [0, 128]]
    assert all(r["writers"] and r["readers"] and r["readers"][0]["op"] == "ld" for r in acc)


def test_fragments_of_unrolled_stages_stay_separate_regions():
    # plan_blockscaled_small's two accumulator stages are written by the MMAs of two unrolled tiles (other basic
    # blocks): two regions, one fragment each
    k = kernel(PLAN / "plan_blockscaled_small.ptx")
    assert [(r["name"], len(r["fragments"])) for r in k["regions"]] == [("acc0", 1), ("acc1", 1), ("SFA0", 1),
                                                                         ("SFB0", 1)]


def test_design_peak_from_declared_lifetimes(tmp_path):
    # S [0, 128) live in phases 0-1, P over S in 1-2, O [128, 256) in 2-3, a scratch [256, 320) in 0 only:
    # phase 0: S + scratch = 192; phase 1: S (P counted once) = 128; phase 2: P's 64 + O = 192; raw 320
    d = tmp_path / "fa.toml"
    d.write_text('[design]\nname = "x"\n'
                 '[[object]]\nname = "S"\nkind = "accumulator"\nn = 128\nlive = [0, 1]\n'
                 '[[object]]\nname = "P"\nkind = "A"\ndtype = "bf16"\nn = 128\naliases = "S"\nlive = [1, 2]\n'
                 '[[object]]\nname = "O"\nkind = "accumulator"\nn = 128\nlive = [2, 3]\n'
                 '[[object]]\nname = "T"\nkind = "data"\ndtype = "f32"\nn = 64\nlive = [0, 0]\n')
    p = json.loads(run_cli("plan", "--design", str(d), "--format", "json").stdout)
    assert (p["budget"]["raw_columns"], p["peak_columns"]) == (320, 192)
    assert [o["live"] for o in p["objects"]] == [[0, 1], [1, 2], [2, 3], [0, 0]]
    d.write_text(FA_DESIGN)  # no lifetimes declared: everything is live throughout
    p = json.loads(run_cli("plan", "--design", str(d), "--format", "json").stdout)
    assert p["peak_columns"] == p["budget"]["raw_columns"] == 256
    d.write_text('[[object]]\nname = "S"\nkind = "accumulator"\nn = 128\nlive = [2, 1]\n')
    proc = run_cli("plan", "--design", str(d))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "object 1 (S): 'live' must be [first, last] phases" in proc.stderr


# ---------------------------------------------------------------------------------------- load completion (issue 24)


def test_hand_over_needs_wait_ld_not_a_register_read():
    # plan_acc_double_buffer (good) and its bad twin plan_acc_double_buffer_no_wait_ld_bad: 2 stages x 256 columns;
    # the four warps load their lane quarter at PTX line 291 and hand the stage to the MMA at line 228 (two tiles
    # later) through empty[stage]. good: tcgen05.wait::ld before the hand-over; bad: only a register read (the
    # st.global of the values). The plan asks the engine (SyncModel.pending_at): a register read does not complete
    # the load (PTX ISA §9.7.16.6.4.5; reference §3.1; catalog TM302 row)
    chain = ("happens-before chain: mbarrier empty (offset not known: any of its stages), barrier 0: warps 1-3 "
             "arrive at lines {}, {}, warp 0 wait at lines 135, 207")
    fences = ["tcgen05.fence::before_thread_sync", "tcgen05.fence::after_thread_sync"]
    good = kernel(PLAN / "plan_acc_double_buffer.ptx")
    bad = kernel(PLAN / "plan_acc_double_buffer_no_wait_ld_bad.ptx")
    # the chain orders the threads in both; in the bad twin it does not order the TMEM read still in flight, so
    # the edge is not ordered and at risk
    for k, ordered in ((good, True), (bad, False)):
        assert [(e["region"], tuple(e["columns"]), e["reader"]["line"], e["writer"]["line"], e["relation"],
                 e["next_iteration"], e["ordered"], e["at_risk"]) for e in k["reuse_edges"]] == \
            [("acc0", (0, 256), 291, 228, "same warps, other threads", True, ordered, not ordered),
             ("acc1", (256, 512), 291, 228, "same warps, other threads", True, ordered, not ordered)]
    for e in good["reuse_edges"]:
        assert (e["guard"], e["risk"], e["missing"]) == ("mbarrier+tcgen05", 1, [])
        assert e["present"] == ["tcgen05.wait::ld", chain.format(354, 372), *fences]
    for e in bad["reuse_edges"]:
        assert (e["guard"], e["risk"]) == ("mbarrier", 3)
        assert e["present"] == [chain.format(349, 367), *fences]
        assert e["missing"] == ["tcgen05.wait::ld before the hand-over"]
    assert good["findings"] == []
    assert [(f["code"], f["line"]) for f in bad["findings"]] == [("TM302", 291)]
    assert bad["ordering_verdict"] == ("at risk: acc0 read at line 291 (ld) and rewritten at line 228 (mma): "
                                       "missing: tcgen05.wait::ld before the hand-over")
    assert good["ordering_verdict"].startswith("nothing is missing")
    assert (good["readback"]["wait_count"], good["readback"]["lds_without_wait"]) == (1, [])
    assert (bad["readback"]["wait_count"], bad["readback"]["lds_without_wait"]) == (0, [291])
