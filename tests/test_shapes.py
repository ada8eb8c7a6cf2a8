"""Issue 24's missed fault shapes outside the ordering rules TM302-TM305/TM313: TM205 (a ``.relaxed`` cluster arrive
publishing the alloc slot), TM204 (a lane field computed from the CTA rank), and the shapes of the catalog rows of
TM111 (paired work of another warp before a paired dealloc), TM206 (a store to the slot by another warp role),
TM306 (the after_thread_sync side, arrive hand-overs, across blocks) and TM403 (a loop-invariant scale-factor
address).  Each bad fixture twin in fixtures/ptx/ gives exactly its code on its line, each good twin nothing
(test_fixtures compares the same expectations line by line; here the codes and lines are spelled out, with variants
of the shapes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tmemlint.engine import lint_text
from tmemlint.options import Options

PTX = Path(__file__).resolve().parent.parent / "fixtures" / "ptx"


def _lint(text: str, extra: tuple[str, ...] = ()) -> list:
    opts = Options()
    if extra:
        from tmemlint.checks.registry import RULES

        opts = Options({c for c, r in RULES.items() if r.enabled} | set(extra))
    return lint_text(text, "k.ptx", opts)


def _found(text: str, extra: tuple[str, ...] = ()) -> list[tuple[str, int]]:
    return sorted((f.code, f.line) for f in _lint(text, extra))


def _line(text: str, marker: str) -> int:
    return next(n for n, s in enumerate(text.splitlines(), 1) if marker in s)


BAD = {
    "tm205_relaxed_cluster_arrive_bad.ptx": ([("TM205", 35)], ()),
    "tm204_lane_from_cta_rank_bad.ptx": ([("TM204", 39)], ()),
    "tm111_pair_dealloc_mma_warp_bad.ptx": ([("TM111", 76)], ()),
    "tm206_slot_aliased_other_warp_bad.ptx": ([("TM206", 40)], ()),
    "tm306_fence_after_wait_bad.ptx": ([("TM306", 53), ("TM306", 65)], ("TM306",)),
    "tm403_scale_invariant_k_loop_bad.ptx": ([("TM403", 55)], ()),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_twin_exact_code_and_line(name):
    want, extra = BAD[name]
    assert _found((PTX / name).read_text(), extra) == want


@pytest.mark.parametrize("name", sorted(BAD))
def test_good_twin_is_clean_with_every_rule(name):
    good = name.replace("_bad.ptx", "_good.ptx")
    text = (PTX / good).read_text()
    from tmemlint.checks.registry import RULES

    assert _found(text, tuple(RULES)) == []


# ---- TM205: which arrives publish the slot ---------------------------------------------------------------------

TM205_BAD = (PTX / "tm205_relaxed_cluster_arrive_bad.ptx").read_text()
RELAXED = "\ttcgen05.fence::before_thread_sync;\n\tbarrier.cluster.arrive.relaxed.aligned;\n"


@pytest.mark.parametrize("arrive, reported", [
    ("\tbarrier.cluster.arrive.aligned;\n", False),                      # default .release
    ("\tbarrier.cluster.arrive.release.aligned;\n", False),
    ("\tfence.acq_rel.cta;\n\tbarrier.cluster.arrive.relaxed.aligned;\n", False),  # any release fence scope
    ("\tfence.sc.cluster;\n\tbarrier.cluster.arrive.relaxed.aligned;\n", False),
    ("\tmembar.cta;\n\tbarrier.cluster.arrive.relaxed.aligned;\n", False),
    ("\tbarrier.cluster.arrive.relaxed.aligned;\n", True),
    ("\tfence.mbarrier_init.release.cluster;\n\tbarrier.cluster.arrive.relaxed.aligned;\n", True),  # init only
    ("\tfence.proxy.async.shared::cta;\n\tbarrier.cluster.arrive.relaxed.aligned;\n", True),  # a proxy fence
])
def test_tm205_release_forms(arrive, reported):
    text = TM205_BAD.replace(RELAXED, arrive).replace(" // expect: TM205", "")
    line = _line(text, "ld.shared.b32 %r3, [slot]")
    assert _found(text) == ([("TM205", line)] if reported else [])


def test_tm205_fence_before_the_alloc_does_not_release_it():
    """A release fence that precedes the alloc orders nothing the alloc writes."""
    text = TM205_BAD.replace("\t@%p1 bra ALLOC_DONE;\n", "\tfence.acq_rel.cluster;\n\t@%p1 bra ALLOC_DONE;\n")
    assert _found(text) == [("TM205", _line(text, "ld.shared.b32 %r3, [slot]"))]


def test_tm205_message_names_the_relaxed_arrive():
    (f,) = _lint(TM205_BAD)
    assert ".relaxed arrive at line 30" in f.message and "fence.acq_rel.cluster" in f.message
    assert [r.line for r in f.related] == [26, 30]


def test_tm205_relaxed_mbarrier_arrive():
    """ThunderKittens' tmem_provisioned hand-over written with a .relaxed mbarrier arrive publishes nothing either."""
    text = """.version 8.7
.target sm_100a
.address_size 64

.visible .entry k()
.reqntid 128
{
	.reg .pred %p<4>;
	.reg .b32 %r<16>;
	.shared .align 4 .b32 slot;
	.shared .align 8 .b64 prov;

	mov.u32 %r1, %tid.x;
	shr.u32 %r2, %r1, 5;
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra I;
	mbarrier.init.shared::cta.b64 [prov], 1;
I:
	bar.sync 0;
	setp.ne.u32 %p2, %r2, 0;
	@%p2 bra READ;
	tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 128;
	tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
	@%p1 bra READ;
	{ARRIVE}
READ:
	mbarrier.try_wait.parity.shared::cta.b64 %p3, [prov], 0;
	@!%p3 bra READ;
	@!%p2 bra TEAR;
	ld.shared.b32 %r3, [slot]; // READ
	tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r4}, [%r3];
	tcgen05.wait::ld.sync.aligned;
TEAR:
	bar.sync 0;
	@%p2 bra EXIT;
	ld.shared.b32 %r5, [slot];
	tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 128;
EXIT:
	ret;
}
"""
    released = text.replace("{ARRIVE}", "mbarrier.arrive.release.cta.shared::cta.b64 _, [prov];")
    relaxed = text.replace("{ARRIVE}", "mbarrier.arrive.relaxed.cta.shared::cta.b64 _, [prov];")
    assert [c for c, _ in _found(released)].count("TM205") == 0
    assert ("TM205", _line(relaxed, "// READ")) in _found(relaxed)


# ---- TM204: lane fields and the run-time check -----------------------------------------------------------------

TM204_BAD = (PTX / "tm204_lane_from_cta_rank_bad.ptx").read_text()


def test_tm204_message_says_the_access_check_traps():
    (f,) = _lint(TM204_BAD)
    assert "%cluster_ctarank 1" in f.message and "lanes 128..159" in f.message
    assert "-g-tmem-access-check traps" in f.message and "current_warp_owner_invalid" in f.message


def test_tm204_rank_times_32_in_one_warp():
    """One warp (quadrant 0) whose lane field is rank * 32: right in CTA 0, wrong in CTA 1."""
    text = TM204_BAD.replace("""	shl.b32 %r9, %r4, 7;
	shl.b32 %r10, %r2, 5;
	add.s32 %r11, %r9, %r10;
	shl.b32 %r5, %r11, 16;""", """	shl.b32 %r5, %r4, 21;""").replace("""	ld.shared.b32 %r3, [slot];
""", """	ld.shared.b32 %r3, [slot];
	@%p1 bra SKIP;
""").replace("""	tcgen05.fence::before_thread_sync;
	bar.sync 0;
	@%p1 bra EXIT;""", """SKIP:
	tcgen05.fence::before_thread_sync;
	bar.sync 0;
	@%p1 bra EXIT;""")
    assert _found(text) == [("TM204", _line(text, "tcgen05.ld.sync"))]


def test_tm204_rank_test_on_the_path_says_nothing():
    """A lane field from the rank under a branch on the rank: the branch may exclude the faulting CTAs."""
    text = TM204_BAD.replace("""	mov.u32 %r4, %cluster_ctarank;
""", """	mov.u32 %r4, %cluster_ctarank;
	setp.ne.u32 %p2, %r4, 0;
	@%p2 bra SKIP;
""").replace("""	tcgen05.wait::ld.sync.aligned;
""", """	tcgen05.wait::ld.sync.aligned;
SKIP:
""").replace(" // expect: TM204", "")
    assert [c for c, _ in _found(text)].count("TM204") == 0


def test_tm204_lane_zero_in_warps_1_to_3_is_an_error_that_traps():
    """The uniform lane field 0 in all four warps: an error (ptxas's run-time check traps on it)."""
    text = (PTX / "tm204_lane_from_cta_rank_good.ptx").read_text().replace(
        "\tadd.s32 %r6, %r3, %r5;\n", "\tmov.u32 %r6, %r3;\n")
    (f,) = _lint(text)
    assert (f.code, f.line, f.severity.value) == ("TM204", _line(text, "tcgen05.ld.sync"), "error")
    assert "-g-tmem-access-check traps" in f.message


# ---- TM111, TM206, TM306, TM403 variants -------------------------------------------------------------------------

def test_tm111_peer_barrier_handoff_orders_the_dealloc():
    """The bad twin's dealloc after a wait on a barrier the peer arrives on (mapa) is CUTLASS's paired release."""
    text = (PTX / "tm111_pair_dealloc_mma_warp_bad.ptx").read_text()
    text = text.replace("\t.shared .align 8 .b64 mma_done;\n",
                        "\t.shared .align 8 .b64 mma_done;\n\t.shared .align 8 .b64 peer_done;\n")
    text = text.replace("\tmbarrier.init.shared::cta.b64 [mma_done], 1;\n",
                        "\tmbarrier.init.shared::cta.b64 [mma_done], 1;\n"
                        "\tmbarrier.init.shared::cta.b64 [peer_done], 1;\n")
    text = text.replace("""	@%p1 bra EXIT;
	tcgen05.fence::after_thread_sync;""", """	@%p1 bra EXIT;
	xor.b32 %r11, %r3, 1;
	mov.u32 %r12, peer_done;
	mapa.shared::cluster.u32 %r13, %r12, %r11;
	mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r13];
WAIT_P:
	mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p7, [peer_done], 0;
	@!%p7 bra WAIT_P;
	tcgen05.fence::after_thread_sync;""").replace(" // expect: TM111", "")
    assert [c for c, _ in _found(text)].count("TM111") == 0


def test_tm206_store_ordered_before_the_alloc_is_clean():
    """The staging warp's store followed by a barrier that the allocating warp waits on before it allocates."""
    text = (PTX / "tm206_slot_aliased_other_warp_bad.ptx").read_text().replace(" // expect: TM206", "")
    text = text.replace("""	setp.eq.u32 %p2, %r2, 1;
	@!%p1 bra NOT_ALLOC;""", """	setp.eq.u32 %p2, %r2, 1;
	@!%p2 bra STAGED;
	mov.u32 %r20, smem;
	shl.b32 %r21, %r3, 4;
	add.s32 %r22, %r20, %r21;
	st.shared.v4.b32 [%r22], {%r3, %r3, %r3, %r3};
STAGED:
	bar.sync 1;
	@!%p1 bra ROLES_DONE;""")
    assert _found(text) == []


def test_tm306_off_by_default():
    assert _found((PTX / "tm306_fence_after_wait_bad.ptx").read_text()) == []


def test_tm306_one_finding_per_synchronization():
    """A bar.sync that lacks both fences is one finding, naming both sides."""
    text = (PTX / "tm306_fence_after_wait_good.ptx").read_text().replace(
        """	tcgen05.wait::ld.sync.aligned;
	tcgen05.fence::before_thread_sync;""", """	tcgen05.wait::ld.sync.aligned;
	bar.sync 1, 128;
	tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r10}, [%r8];
	tcgen05.wait::ld.sync.aligned;
	tcgen05.fence::before_thread_sync;""")
    got = [f for f in _lint(text, ("TM306",)) if f.code == "TM306"]
    assert [(f.line) for f in got] == [_line(text, "bar.sync 1, 128")]
    assert "before_thread_sync" in got[0].message and "after_thread_sync" in got[0].message


def test_tm403_copy_in_the_loop_keeps_it_silent():
    """CUTLASS's idiom: the next K block's factors copied into the same columns inside the loop."""
    text = (PTX / "tm403_scale_invariant_k_loop_bad.ptx").read_text().replace(" // expect: TM403", "")
    text = text.replace("""	add.s64 %rd5, %rd5, 2;
	add.s64 %rd6, %rd6, 2;""", """	add.s64 %rd5, %rd5, 2;
	add.s64 %rd6, %rd6, 2;
	tcgen05.cp.cta_group::1.32x128b.warpx4 [%r6], %rd3;
	tcgen05.cp.cta_group::1.32x128b.warpx4 [%r7], %rd4;""")
    assert "TM403" not in [c for c, _ in _found(text)]


def test_tm403_copy_of_one_operand_leaves_the_other_stale():
    """A copy in the loop into scale-A's columns (128) does not refresh scale-B's (132): scale-B is reported."""
    text = (PTX / "tm403_scale_invariant_k_loop_bad.ptx").read_text().replace(" // expect: TM403", "")
    text = text.replace("""	add.s64 %rd5, %rd5, 2;
	add.s64 %rd6, %rd6, 2;""", """	add.s64 %rd5, %rd5, 2;
	add.s64 %rd6, %rd6, 2;
	tcgen05.cp.cta_group::1.32x128b.warpx4 [%r6], %rd3;""")
    assert [(c, ln) for c, ln in _found(text) if c == "TM403"] == [("TM403", 55)]


def test_tm403_idesc_selector_varies_keeps_it_silent():
    """DeepGEMM's form: the instruction descriptor's byte selectors pick the K block's factors."""
    text = (PTX / "tm403_scale_invariant_k_loop_bad.ptx").read_text().replace(" // expect: TM403", "")
    text = text.replace("\tadd.s32 %r10, %r10, 1;\n", "\tadd.s32 %r10, %r10, 1;\n\tadd.s32 %r8, %r8, 16;\n")
    assert "TM403" not in [c for c, _ in _found(text)]
