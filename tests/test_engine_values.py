"""Unit tests of the engine's value domains (issue 24, item 5), asked directly on small hand-written kernels run
through the real pipeline (``test_engine.build``):

* ``ValueAnalysis`` (``analysis/values.py``): one value per register read, a flat lattice (two definitions that
  disagree are TOP), small constant sets from ``selp`` between constants, thread expressions of ``%tid.x``;
* ``AddressSets`` (``analysis/regions.py``, ``FunctionContext.address_sets`` / ``address_sets_of``): bounded sets of
  integers and TMEM addresses, and the lane × column footprints of ``collect_accesses``;
* ``ThreadModel`` / ``WarpClass`` (``analysis/threads.py``): the warp classes the ``%tid.x`` guards make.

Each positive case has a twin that differs from it in one instruction.  TMEM addresses: PTX ISA §9.7.16.2 (lane
in bits 31-16, column in bits 15-0); a warp may access the lanes ``32 * (warp % 4)`` to ``+31`` (§9.7.16.2.3);
footprints of tcgen05.ld/st shapes: Tables 47/48 (reference §2.2); the MMA's accumulator: §9.7.16.10.5 data-path
layouts (reference §2.5); the instruction descriptor: §9.7.16.4.2 Table 42 (reference §2.6).
"""

from __future__ import annotations

import pytest

from test_engine import IDESC_M128_N64, Kernel, build, swap
from tmemlint.analysis.regions import TmemAddr, collect_accesses
from tmemlint.analysis.threads import (WarpClass, distinct_warps, lanes_on_path, normalize, one_warp_executes,
                                      warps_executing)
from tmemlint.analysis.values import TOP, Cmp, Param, const, const_candidates, opaque
from tmemlint.ir import Instruction
from tmemlint.threadexpr import eval_tid

#: The allocation slot (``.shared slot``) as the analyses name it: a ``sym`` value at byte offset 0.
SLOT = ("sym", "slot", 0)

#: A prologue without warp roles: ``%r1`` = ``%tid.x``, ``%r2`` = the warp index, ``%r5`` = the TMEM address of
#: 128 columns read from the slot, ``%p9`` = a CTA-uniform flag from a kernel parameter (nothing here splits the
#: warps; the alloc is not confined to one warp, as it must be when the kernel runs: these kernels are analysed
#: only).
MINI = """
\tmov.u32 %r1, %tid.x;
\tshr.u32 %r2, %r1, 5;
\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 128;
\tld.shared.b32 %r5, [slot];
\tld.param.u32 %r9, [flag];
\tsetp.ne.u32 %p9, %r9, 0;
"""

#: Something that touches TMEM, so that the pipeline analyses the kernel.
LD = "\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r40, %r41, %r42, %r43}, [%r5];\n"


def mini(body: str, ntid: int | None = 128) -> Kernel:
    return build(body + LD, ntid, pre=MINI)


def stored(k: Kernel, name: str):
    """The ValueAnalysis value of the register stored by the ``st.shared`` marked ``name``."""
    i = k.at[name]
    return k.ctx.values.value(i, i.operands[1])


def stored_set(k: Kernel, name: str, warps: tuple[int, ...] | None = None) -> frozenset | None:
    """The AddressSets integers of the register stored by the ``st.shared`` marked ``name`` (over ``warps`` only)."""
    sets = k.ctx.address_sets if warps is None else k.ctx.address_sets_of(warps)
    return sets.integers(k.at[name], 1)


def per_thread(v, n: int) -> list[int]:
    """A thread-expression value (``("tid", e)``) evaluated for ``%tid.x`` = 0 .. n-1."""
    assert v is not TOP and v[0] == "tid", v
    return eval_tid(v[1], range(n))


# ---- ValueAnalysis: constants, constant sets, merges ----------------------------------------------------------

CONST = """
\tmov.u32 %r10, 3;
\tadd.u32 %r11, %r10, 5;
\tshl.b32 %r12, %r11, 4;
\tst.shared.u32 [slot], %r12; // @c
"""


def test_constant_through_mov_add_shl():
    k = mini(CONST)
    assert stored(k, "c") == ("c", 128)  # (3 + 5) << 4
    assert const_candidates(stored(k, "c")) == frozenset({128})
    assert stored_set(k, "c") == frozenset({128})


def test_a_kernel_parameter_in_the_chain_is_not_a_constant():
    k = mini(swap(CONST, "add.u32 %r11, %r10, 5;", "add.u32 %r11, %r10, %r9;"))
    assert const_candidates(stored(k, "c")) is None
    assert stored_set(k, "c") is None


SELP = """
\tselp.u32 %r13, 128, 0, %p9;
\tst.shared.u32 [slot], %r13; // @sel
\tadd.u32 %r14, %r13, 32;
\tshl.b32 %r15, %r14, 1;
\tst.shared.u32 [slot], %r15; // @sel2
"""


def test_selp_between_constants_is_a_constant_set_through_arithmetic():
    k = mini(SELP)
    assert stored(k, "sel") == ("cs", frozenset({0, 128}))
    assert const_candidates(stored(k, "sel2")) == frozenset({64, 320})  # ({0, 128} + 32) << 1
    assert stored_set(k, "sel2") == frozenset({64, 320})


def test_selp_with_an_unknown_operand_is_no_set():
    k = mini(swap(SELP, "selp.u32 %r13, 128, 0, %p9;", "selp.u32 %r13, %r9, 0, %p9;"))
    assert const_candidates(stored(k, "sel")) is None
    assert const_candidates(stored(k, "sel2")) is None
    assert stored_set(k, "sel2") is None


MERGE = """
\t@%p9 bra ELSE;
\tmov.u32 %r20, 1;
\tbra.uni JOIN;
ELSE:
\tmov.u32 %r20, 2;
JOIN:
\tst.shared.u32 [slot], %r20; // @phi
"""


def test_two_constants_merged_are_top_in_the_flat_lattice_and_a_set_in_address_sets():
    k = mini(MERGE)
    assert stored(k, "phi") is TOP
    assert stored_set(k, "phi") == frozenset({1, 2})


def test_the_same_constant_on_both_branches_stays_that_constant():
    k = mini(swap(MERGE, "mov.u32 %r20, 2;", "mov.u32 %r20, 1;"))
    assert stored(k, "phi") == ("c", 1)
    assert stored_set(k, "phi") == frozenset({1})


# ---- loop counters and stage indices --------------------------------------------------------------------------

#: A counter 0, 1, 2, 3 (the loop runs 4 times); the exit test does not bound the sets (no branch refinement).
COUNTER = """
\tmov.u32 %r30, 0;
LOOP:
\tst.shared.u32 [slot], %r30; // @inloop
\tadd.u32 %r30, %r30, 1;
\tsetp.lt.u32 %p10, %r30, 4;
\t@%p10 bra LOOP;
\tst.shared.u32 [slot], %r30; // @after
"""


def test_a_loop_counter_is_unknown_to_both_domains():
    k = mini(COUNTER)
    assert stored(k, "inloop") is TOP  # the entry's 0 and the increment disagree
    after = stored(k, "after")
    assert after != TOP and after[0] == "opq" and const_candidates(after) is None  # the add's own, opaque
    # the counted loop's values, from its constant start, step and bound (analysis.feasibility's counted loops)
    assert stored_set(k, "inloop") == frozenset({0, 1, 2, 3})
    assert stored_set(k, "after") is None


#: A pipeline stage index over 5 stages: ``s = s + 1 == 5 ? 0 : s + 1`` (CUTLASS's PipelineState::operator++).
STAGE = """
\tmov.u32 %r50, 0;
STAGE:
\tst.shared.u32 [slot], %r50; // @stage
\tadd.u32 %r51, %r50, 1;
\tsetp.eq.u32 %p11, %r51, 5;
\tselp.u32 %r50, 0, %r51, %p11;
\t@%p9 bra STAGE;
"""


def test_a_wrapping_stage_index_is_the_set_of_its_stages():
    k = mini(STAGE)
    assert stored(k, "stage") is TOP
    assert stored_set(k, "stage") == frozenset({0, 1, 2, 3, 4})


def test_a_two_stage_index_is_zero_or_one():
    k = mini(swap(STAGE, "setp.eq.u32 %p11, %r51, 5;", "setp.eq.u32 %p11, %r51, 2;"))
    assert stored_set(k, "stage") == frozenset({0, 1})


def test_a_stage_index_that_does_not_wrap_is_unknown():
    # counter-example: the selp replaced by a plain copy, the index grows without bound
    k = mini(swap(STAGE, "selp.u32 %r50, 0, %r51, %p11;", "mov.u32 %r50, %r51;"))
    assert stored_set(k, "stage") is None


# ---- values derived from %tid.x -------------------------------------------------------------------------------

TID = """
\tst.shared.u32 [slot], %r2; // @warp
\tand.b32 %r31, %r1, 31;
\tst.shared.u32 [slot], %r31; // @lane
\tshr.u32 %r32, %r2, 2;
\tshl.b32 %r33, %r32, 7;
\tst.shared.u32 [slot], %r33; // @group
"""


def test_warp_and_lane_indices_are_thread_expressions():
    k = mini(TID, ntid=256)
    assert per_thread(stored(k, "warp"), 256) == [t >> 5 for t in range(256)]
    assert per_thread(stored(k, "lane"), 256) == [t & 31 for t in range(256)]
    assert per_thread(stored(k, "group"), 256) == [(t >> 7) << 7 for t in range(256)]


def test_thread_derived_sets_over_the_cta_and_per_warp():
    k = mini(TID, ntid=256)
    assert stored_set(k, "warp") == frozenset(range(8))
    assert stored_set(k, "lane") == frozenset(range(32))
    assert stored_set(k, "group") == frozenset({0, 128})
    assert stored_set(k, "warp", (5,)) == frozenset({5})
    assert stored_set(k, "group", (3,)) == frozenset({0})
    assert stored_set(k, "group", (4,)) == frozenset({128})
    assert stored_set(k, "group", (3, 4)) == frozenset({0, 128})


def test_a_cta_of_one_warpgroup_has_one_group_index():
    # twin: 128 threads (warps 0-3): (warp >> 2) << 7 is 0 for all
    k = mini(TID, ntid=128)
    assert stored_set(k, "group") == frozenset({0})
    assert stored_set(k, "warp") == frozenset(range(4))


# ---- AddressSets: TMEM addresses and footprints ---------------------------------------------------------------


def accesses(k: Kernel, name: str, warps: tuple[int, ...] | None = None):
    sets = k.ctx.address_sets if warps is None else k.ctx.address_sets_of(warps)
    return collect_accesses([k.at[name]], k.ctx.values, sets)


def footprint(k: Kernel, name: str, warps: tuple[int, ...] | None = None) -> list[tuple]:
    """``(role, lanes, columns, start lanes, column intervals, exact)`` of each TMEM operand of ``name``."""
    return [(a.role, a.lanes, a.columns, a.addr.lanes if a.addr else None, a.intervals(),
             a.addr.exact if a.addr else None) for a in accesses(k, name, warps)]


BASE_PLUS = """
\tadd.s32 %r22, %r5, 32;
\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r44, %r45, %r46, %r47}, [%r22]; // @ld
"""


def test_load_at_base_plus_a_constant_column():
    k = mini(BASE_PLUS)
    assert k.ctx.address_sets.address(k.at["ld"], 1) == TmemAddr(SLOT, frozenset({32}))
    # .32x32b.x4: 32 lanes x 4 columns (Table 47), from lane 0, column 32
    assert footprint(k, "ld") == [("ld", 32, 4, [0], [(32, 36)], True)]


def test_load_at_base_plus_an_unknown_term_is_anchored_at_the_base():
    k = mini(swap(BASE_PLUS, "add.s32 %r22, %r5, 32;", "add.s32 %r22, %r5, %r9;"))
    assert k.ctx.address_sets.address(k.at["ld"], 1) == TmemAddr(SLOT, frozenset({0}), exact=False)
    assert footprint(k, "ld") == [("ld", 32, 4, [0], [(0, 4)], False)]


#: Each warp stores to its own lane quarter (lane 32 * (warp % 4): ``(warp & 3) << 21`` is lane << 16) and, per
#: warpgroup, its own 64 columns (``(warp >> 2) * 64``).
PER_WARP = """
\tand.b32 %r24, %r2, 3;
\tshl.b32 %r25, %r24, 21;
\tadd.s32 %r26, %r5, %r25;
\ttcgen05.st.sync.aligned.16x64b.x2.b32 [%r26], {%r40, %r41}; // @st
\tshr.u32 %r27, %r2, 2;
\tshl.b32 %r28, %r27, 6;
\tadd.s32 %r29, %r26, %r28;
"""
PER_WARP += ("\ttcgen05.ld.sync.aligned.32x32b.x16.b32 {" + ", ".join(f"%r{60 + i}" for i in range(16))
             + "}, [%r29]; // @wg\n")


def test_lane_quarter_per_warp():
    k = mini(PER_WARP, ntid=256)
    st = k.at["st"]
    assert [k.ctx.address_sets_of((w,)).address(st, 0) for w in (0, 1, 2, 3)] == [
        TmemAddr(SLOT, frozenset({w << 21})) for w in (0, 1, 2, 3)]
    # .16x64b.x2: 16 lanes x 4 columns (2 per .x, Table 47), from the warp's first lane
    assert footprint(k, "st", (1,)) == [("st", 16, 4, [32], [(0, 4)], True)]
    assert footprint(k, "st", (5,)) == [("st", 16, 4, [32], [(0, 4)], True)]
    assert footprint(k, "st") == [("st", 16, 4, [0, 32, 64, 96], [(0, 4)], True)]


def test_warpgroup_columns_per_warp():
    k = mini(PER_WARP, ntid=256)
    wg = k.at["wg"]
    assert k.ctx.address_sets_of((4,)).address(wg, 1) == TmemAddr(SLOT, frozenset({64}))
    assert k.ctx.address_sets_of((5,)).address(wg, 1) == TmemAddr(SLOT, frozenset({(1 << 21) + 64}))
    assert k.ctx.address_sets_of((0, 4)).address(wg, 1) == TmemAddr(SLOT, frozenset({0, 64}))
    assert footprint(k, "wg", (4,)) == [("ld", 32, 16, [0], [(64, 80)], True)]
    assert footprint(k, "wg", (2,)) == [("ld", 32, 16, [64], [(0, 16)], True)]
    # over the whole CTA: 4 lane quarters x 2 column groups
    assert k.ctx.address_sets.address(wg, 1) == TmemAddr(SLOT, frozenset(
        {(q << 21) + c for q in range(4) for c in (0, 64)}))
    assert footprint(k, "wg") == [("ld", 32, 16, [0, 32, 64, 96], [(0, 16), (64, 80)], True)]


def test_one_warpgroup_has_one_column_group():
    # twin: 128 threads, so (warp >> 2) * 64 is 0 for every warp
    k = mini(PER_WARP, ntid=128)
    assert footprint(k, "wg") == [("ld", 32, 16, [0, 32, 64, 96], [(0, 16)], True)]


MMA = f"""
\tld.param.u64 %rd2, [out];
\tmov.b32 %r7, {IDESC_M128_N64};
\tadd.s32 %r30, %r5, 64;
\ttcgen05.mma.cta_group::1.kind::f16 [%r30], %rd2, %rd2, %r7, 1; // @mma
"""


def test_mma_accumulator_footprint_from_its_constant_descriptor():
    k = mini(MMA)
    [d] = accesses(k, "mma")
    assert (d.idesc.m, d.idesc.n) == (128, 64)
    assert (d.role, d.writes, d.reads) == ("d", True, True)  # enable-input-d = 1: it accumulates
    # M = 128, cta_group::1: 128 lanes x N = 64 columns (layout D), from column 64
    assert footprint(k, "mma") == [("d", 128, 64, [0], [(64, 128)], True)]


def test_mma_that_does_not_accumulate_only_writes():
    k = mini(swap(MMA, "%r7, 1; // @mma", "%r7, 0; // @mma"))
    [d] = accesses(k, "mma")
    assert (d.role, d.writes, d.reads) == ("d", True, False)


def test_mma_with_m64_covers_64_lanes():
    k = mini(swap(MMA, f"mov.b32 %r7, {IDESC_M128_N64};", f"mov.b32 %r7, {(1 << 4) | (8 << 17) | (4 << 24)};"))
    [d] = accesses(k, "mma")
    assert (d.idesc.m, d.idesc.n) == (64, 64)
    assert footprint(k, "mma") == [("d", 64, 64, [0], [(64, 128)], True)]  # layout F: 64 lanes x N


#: A prologue that allocates all 512 columns (the base address is then lane 0, column 0) and addresses TMEM by
#: integers, as DeepGEMM and FlashMLA do.
ALL_COLUMNS = swap(MINI, "[slot], 128;", "[slot], 512;")


def test_integer_addresses_are_offsets_from_a_base_known_to_be_zero():
    body = "\tmov.u32 %r34, 96;\n\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r44, %r45, %r46, %r47}, [%r34]; // @ld\n"
    k = build(body + LD, 128, pre=ALL_COLUMNS)
    assert k.ctx.address_sets.constant_slot == SLOT
    assert footprint(k, "ld") == [("ld", 32, 4, [0], [(96, 100)], True)]


def test_integer_addresses_with_a_base_not_known_are_not_tmem_addresses():
    # twin: 256 columns allocated: the base is not known to be column 0, so 96 is no known address
    body = "\tmov.u32 %r34, 96;\n\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r44, %r45, %r46, %r47}, [%r34]; // @ld\n"
    k = build(body + LD, 128, pre=swap(MINI, "[slot], 128;", "[slot], 256;"))
    assert k.ctx.address_sets.constant_slot is None
    assert footprint(k, "ld") == [("ld", 32, 4, None, [], None)]


# ---- ThreadModel / WarpClass ----------------------------------------------------------------------------------

#: ``%tid.x / 32 == 4``: warp 4 (CUTLASS's MMA warp) skips the rest.
WARP4 = """
\tdiv.u32 %r70, %r1, 32;
\tsetp.eq.u32 %p20, %r70, 4;
\t@%p20 bra DONE;
\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r44, %r45, %r46, %r47}, [%r5]; // @rest
"""


def classes(k: Kernel) -> list[tuple[tuple[int, ...], str, int]]:
    return [(c.warps, repr(c), c.min_warps) for c in k.ctx.threads.classes]


def test_a_warp_index_guard_splits_the_warps():
    k = mini(WARP4, ntid=256)
    assert (k.ctx.threads.n_threads, k.ctx.threads.size_known) == (256, True)
    assert classes(k) == [((0, 1, 2, 3, 5, 6, 7), "warps 0, 1, 2, 3, 5, 6, 7", 7), ((4,), "warp 4", 1)]
    rest = k.at["rest"]
    assert [k.ctx.sync.executes(c, rest) for c in k.ctx.threads.classes] == [True, False]


def test_a_guard_on_a_warp_the_cta_does_not_have_splits_nothing():
    k = mini(WARP4, ntid=128)
    assert classes(k) == [((0, 1, 2, 3), "warps 0-3", 4)]


def test_without_a_declared_block_size_1024_threads_may_run_and_one_warp_of_each_class_certainly_does():
    k = mini(WARP4, ntid=None)
    assert (k.ctx.threads.n_threads, k.ctx.threads.size_known) == (1024, False)
    assert classes(k) == [(tuple(w for w in range(32) if w != 4), "warps " + ", ".join(
        str(w) for w in range(32) if w != 4), 1), ((4,), "warp 4", 1)]


def test_a_warp_range_test_through_selp_makes_two_roles():
    # CUTLASS's WarpCategory: role = warp < 4 ? 1 : 0, then a test of the role
    body = ("\tsetp.lt.u32 %p21, %r2, 4;\n\tselp.u32 %r72, 1, 0, %p21;\n\tsetp.eq.u32 %p22, %r72, 1;\n"
            "\t@%p22 bra DONE;\n")
    k = mini(body, ntid=256)
    assert classes(k) == [((0, 1, 2, 3), "warps 0-3", 4), ((4, 5, 6, 7), "warps 4-7", 4)]


def guard_key(k: Kernel, name: str):
    i: Instruction = k.at[name]
    return normalize(k.ctx.values.reg_value(i, i.guard.reg))


HALF = """
\tsetp.lt.u32 %p20, %r1, 16;
\t@%p20 bra DONE; // @br
"""


def test_a_lane_test_is_lane_varying_in_warp_0_only():
    k = mini(HALF)
    key, polarity = guard_key(k, "br")
    assert (key, polarity) == (("tid", ("cmp", "lt", ("x",), 16)), True)
    assert classes(k) == [((0,), "warp 0", 1), ((1, 2, 3), "warps 1-3", 3)]
    assert [c.decide(key[1]) for c in k.ctx.threads.classes] == [None, False]


def test_a_test_of_the_first_warp_is_decided_in_every_class():
    k = mini(swap(HALF, "%r1, 16;", "%r1, 32;"))
    key, _ = guard_key(k, "br")
    assert [c.decide(key[1]) for c in k.ctx.threads.classes] == [True, False]


ELECT = """
\telect.sync %r71|%p21, -1;
\t@!%p21 bra DONE; // @br
"""


def test_elect_sync_is_one_lane_of_every_warp_and_splits_no_warps():
    k = mini(ELECT)
    key, polarity = guard_key(k, "br")
    assert (key, polarity) == (("tid", ("elect",)), True)
    assert classes(k) == [((0, 1, 2, 3), "warps 0-3", 4)]
    [c] = k.ctx.threads.classes
    assert c.decide(("elect",)) is None
    assert lanes_on_path(c, frozenset({(key, True)}), frozenset()) == 1
    assert lanes_on_path(c, frozenset({(key, False)}), frozenset()) == 31
    assert lanes_on_path(c, frozenset(), frozenset()) == 32


#: CUTLASS's cute::elect_one_sync as nvcc inlines it (DeepGEMM calls it around its MMAs and again around each
#: tcgen05.commit): the elected predicate reaches the branch through a register set to 0, then to 1 under %px.
ELECT_ONE_SYNC = """
	mov.b32 %r{r}, 0;
	elect.sync %r{x}|%p{q}, -1;
	@%p{q} mov.s32 %r{r}, 1;
	setp.eq.s32 %p{p}, %r{r}, 0;
	@%p{p} bra {to}; // @{name}
"""


def test_two_elect_one_sync_calls_are_one_thread_predicate():
    # PTX ISA 9.0 §9.7.13.12: "the same leader thread is elected for the same membermask every time"
    body = (ELECT_ONE_SYNC.format(r=30, x=40, q=20, p=21, to="SKIP", name="first") + "SKIP:\n"
            + ELECT_ONE_SYNC.format(r=31, x=41, q=22, p=23, to="DONE", name="second"))
    k = mini(body)
    first, pol1 = guard_key(k, "first")
    second, pol2 = guard_key(k, "second")
    assert first == second and pol1 == pol2
    assert first == ("tid", ("cmp", "eq", ("sel", ("elect",), ("k", 1), ("k", 0)), 0))
    [c] = k.ctx.threads.classes
    assert lanes_on_path(c, frozenset({(first, False)}), frozenset()) == 1  # the branch not taken: the leader
    assert lanes_on_path(c, frozenset({(first, True)}), frozenset()) == 31


def test_an_election_over_another_member_mask_is_its_own_predicate():
    # the second election is at the join (the warp converged again), so it is the full mask's one
    k = mini("\telect.sync %r71|%p21, 65535;\n\t@!%p21 bra JOINED; // @a\nJOINED:\n"
             "\telect.sync %r72|%p22, -1;\n\t@!%p22 bra DONE; // @b\n")
    a, _ = guard_key(k, "a")
    b, _ = guard_key(k, "b")
    assert a[0] == "tid" and a[1][0] == "elect" and a != b and b == ("tid", ("elect",))


def test_a_full_mask_election_under_a_lane_branch_is_its_own_predicate():
    # counter-example: where only the first election's leader reaches the full-mask elect.sync, the mask names
    # lanes that do not execute it (undefined, PTX ISA 9.0 §9.7.13.12): not the converged election ("elect",)
    k = mini("\telect.sync %r71|%p21, 65535;\n\t@!%p21 bra DONE; // @a\n"
             "\telect.sync %r72|%p22, -1;\n\t@!%p22 bra DONE; // @b\n")
    b, _ = guard_key(k, "b")
    assert b[0] == "tid" and b[1][0] == "elect" and b != ("tid", ("elect",))


# ---- answers the ISA contradicts (strict xfail) ---------------------------------------------------------------

WRAP = """
\tmov.u32 %r10, 4294967295;
\tadd.u32 %r11, %r10, 1;
\tst.shared.u32 [slot], %r11; // @c
\tselp.u32 %r13, 4294967295, 0, %p9;
\tadd.u32 %r14, %r13, 1;
\tst.shared.u32 [slot], %r14; // @s
"""


def test_constant_arithmetic_wraps_at_the_register_width():
    k = mini(WRAP)
    assert stored(k, "c") == ("c", 0)  # 0xFFFFFFFF + 1 in a .u32 register
    assert stored_set(k, "s") == frozenset({0, 1})


def test_a_constant_set_wraps_at_the_register_width():
    k = mini(WRAP)
    assert stored(k, "s") == ("cs", frozenset({0, 1}))


def test_bar_red_defines_its_destination():
    body = "\tmov.u32 %r60, 7;\n\tbar.red.popc.u32 %r60, 0, %p9;\n\tadd.u32 %r61, %r60, 1;\n" \
           "\tst.shared.u32 [slot], %r61; // @red\n"
    k = mini(body)
    assert const_candidates(stored(k, "red")) in (None, frozenset({1, 129}))  # unknown, or 0 or 128, + 1


def test_bar_sync_defines_no_register():
    # twin of the above: bar.sync has no destination, the constant reaches the use
    body = "\tmov.u32 %r60, 7;\n\tbar.sync 0;\n\tadd.u32 %r61, %r60, 1;\n\tst.shared.u32 [slot], %r61; // @red\n"
    assert stored(mini(body), "red") == ("c", 8)


# ---- warp indices by bit-field extract and by a full-warp reduction (PTX ISA §9.7.1 bfe, §9.7.13.13 redux) ------

BFE = """
\tbfe.u32 %r50, %r1, 5, 3;
\tst.shared.u32 [slot], %r50; // @u
\tbfe.s32 %r51, %r1, 5, 3;
\tst.shared.u32 [slot], %r51; // @s
\tbfe.u32 %r52, %r1, 5, 0;
\tst.shared.u32 [slot], %r52; // @zero
\tbfe.u32 %r53, %r1, 40, 3;
\tst.shared.u32 [slot], %r53; // @beyond
\tbfe.u32 %r54, %r1, %r9, 3;
\tst.shared.u32 [slot], %r54; // @regpos
\tmov.u32 %r55, 0xF0;
\tbfe.u32 %r56, %r55, 4, 2;
\tst.shared.u32 [slot], %r56; // @const
"""


def test_bfe_of_tid_is_the_field_as_a_thread_expression():
    k = mini(BFE, ntid=256)
    assert per_thread(stored(k, "u"), 256) == [(t >> 5) & 7 for t in range(256)]
    # signed: bit 7 of %tid.x sign-extends the 3-bit field (warps 4-7 give -4 .. -1)
    assert per_thread(stored(k, "s"), 256) == [((t >> 5) & 7) - 8 * ((t >> 7) & 1) for t in range(256)]
    assert stored(k, "zero") == ("c", 0)  # length 0
    assert stored(k, "beyond") == ("c", 0)  # unsigned, start beyond the msb
    assert stored(k, "const") == ("c", 3)  # (0xF0 >> 4) & 3


def test_bfe_with_a_register_start_is_unknown():
    # twin of the above: the start position is a kernel parameter
    k = mini(BFE, ntid=256)
    assert stored(k, "regpos")[0] == "opq"


REDUX = """
\tredux.sync.min.u32 %r60, %r2, -1;
\tst.shared.u32 [slot], %r60; // @min
\tredux.sync.or.b32 %r61, %r2, 0xffff;
\tst.shared.u32 [slot], %r61; // @or
\tredux.sync.add.u32 %r62, %r2, -1;
\tst.shared.u32 [slot], %r62; // @add
\tredux.sync.min.u32 %r63, %r1, -1;
\tst.shared.u32 [slot], %r63; // @lane
\tredux.sync.max.u32 %r64, %r9, -1;
\tst.shared.u32 [slot], %r64; // @param
"""


def test_redux_min_or_of_a_warp_uniform_value_is_that_value():
    k = mini(REDUX, ntid=256)
    assert per_thread(stored(k, "min"), 256) == [t >> 5 for t in range(256)]
    assert per_thread(stored(k, "or"), 256) == [t >> 5 for t in range(256)]  # any mask: every participant agrees
    assert stored(k, "param") == ("param", "flag", 0)  # a CTA-uniform value: the same in every warp


def test_redux_that_counts_participants_or_of_a_lane_varying_value_is_unknown():
    # twins: .add sums the participants' values; %tid.x differs between the lanes of a warp
    k = mini(REDUX, ntid=256)
    assert stored(k, "add")[0] == "opq"
    assert stored(k, "lane")[0] == "opq"


def test_a_bfe_warp_index_guard_splits_the_warps():
    body = "\tbfe.u32 %r70, %r1, 5, 3;\n\tsetp.eq.u32 %p20, %r70, 4;\n\t@%p20 bra DONE;\n" \
           "\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r44, %r45, %r46, %r47}, [%r5]; // @rest\n"
    k = mini(body, ntid=256)
    assert classes(k) == [((0, 1, 2, 3, 5, 6, 7), "warps 0, 1, 2, 3, 5, 6, 7", 7), ((4,), "warp 4", 1)]


# ---- who executes an instruction: warps of a class on a path (threads.warps_executing, one_warp_executes) --------

def test_a_warpid_role_path_is_claimed_for_one_warp_and_its_other_outcome_for_other_warps():
    k4 = WarpClass((0, 1, 2, 3), 128, True)
    role = Cmp("cmp", "eq", opaque(("sreg", "%warpid")), const(0))
    flag = Cmp("cmp", "eq", Param("param", "flag", 0), const(0))
    on_role, off_role, plain = frozenset({(role, True)}), frozenset({(role, False)}), frozenset({(flag, True)})
    assert warps_executing(k4, {plain}) == 4  # a CTA-uniform path: every warp of the class
    assert warps_executing(k4, {on_role}) == 1  # a %warpid role: one warp claimed (PTX ISA §10.4)
    assert warps_executing(k4, {on_role, plain}) == 1  # the fewest over the paths
    assert warps_executing(k4, set()) == 0  # not executed
    assert warps_executing(k4, None) == 4  # paths not kept: the class
    assert distinct_warps(on_role, off_role) and not distinct_warps(on_role, on_role | plain)
    assert one_warp_executes(k4, [{on_role}, {on_role | plain}])
    # twins: the other outcome of the role test is another warp; a CTA-uniform path is every warp
    assert not one_warp_executes(k4, [{on_role}, {off_role}])
    assert not one_warp_executes(k4, [{on_role}, {plain}])
    assert one_warp_executes(WarpClass((4,), 256, True), [{plain}, {plain}])


# ---- ValueAnalysis: one trip count computed by two warp roles (FA4's backward kernel) -------------------------

#: ``ceil_div(flag, 128) - max((ctaid.x * 256 + flag - 64) / 128, 0)`` (signed divisions as shift/add idioms, nine
#: operations deep), computed twice: the second copy as ``a + ~b`` (= ``a - b - 1``), as FA4's MMA warp writes its
#: loop count.
TRIPS = """
\tshr.s32 %r20, %r9, 31;
\tshr.u32 %r21, %r20, 25;
\tadd.s32 %r22, %r9, %r21;
\tshr.s32 %r23, %r22, 7;
\tmov.u32 %r24, %ctaid.x;
\tshl.b32 %r25, %r24, 8;
\tadd.s32 %r26, %r9, %r25;
\tadd.s32 %r27, %r26, -64;
\tshr.s32 %r28, %r27, 31;
\tshr.u32 %r29, %r28, 25;
\tadd.s32 %r30, %r27, %r29;
\tshr.s32 %r31, %r30, 7;
\tmax.s32 %r32, %r31, 0;
\tsub.s32 %r33, %r23, %r32;
\tst.shared.u32 [slot], %r33; // @n
\tshr.s32 %r50, %r9, 31;
\tshr.u32 %r51, %r50, 25;
\tadd.s32 %r52, %r9, %r51;
\tshr.s32 %r53, %r52, 7;
\tmov.u32 %r54, %ctaid.x;
\tshl.b32 %r55, %r54, 8;
\tadd.s32 %r56, %r9, %r55;
\tadd.s32 %r57, %r56, -64;
\tshr.s32 %r58, %r57, 31;
\tshr.u32 %r59, %r58, 25;
\tadd.s32 %r60, %r57, %r59;
\tshr.s32 %r61, %r60, 7;
\tmax.s32 %r62, %r61, 0;
\tnot.b32 %r63, %r62;
\tadd.s32 %r64, %r53, %r63;
\tst.shared.u32 [slot], %r64; // @m
"""


def test_one_deep_computation_done_twice_is_one_value():
    k = mini(TRIPS)
    n = stored(k, "n")
    assert n[0] == "op" and n[-1] == 9  # nine operations deep: kept symbolic (it was opaque beyond six)
    assert stored(k, "m") == ("op", "add", n, ("c", -1), 10)  # a + ~b is (a - b) + -1
    assert hash(stored(k, "m")[2]) == hash(n)


def test_a_different_input_in_the_second_copy_is_another_value():
    k = mini(swap(TRIPS, "add.s32 %r57, %r56, -64;", "add.s32 %r57, %r56, -32;"))
    n, m = stored(k, "n"), stored(k, "m")
    assert m[0] == "op" and m[2] != n
