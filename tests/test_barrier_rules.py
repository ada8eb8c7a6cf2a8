"""Issue 24's issue and mbarrier rules (``tmemlint/checks/barriers.py``) on small hand-written kernels, with exact
codes and lines: TM314 (single-issue-guard), TM310 (remote-barrier-local-form), TM311 (arrive-count-overflow),
TM312 (commit-target-recycled).  The fixture twins in fixtures/ptx/ are compared by test_fixtures."""

from __future__ import annotations

import pytest

from tmemlint.analysis.values import Op, Param, SReg, const, opaque
from tmemlint.checks.barriers import _ALL_BITS, _pair_bits
from tmemlint.engine import lint_text
from tmemlint.options import Options

CODES = ("TM310", "TM311", "TM312", "TM314")


def _found(text: str) -> list[tuple[int, str]]:
    found = lint_text(text, "k.ptx", Options())
    return sorted((f.line, f.code) for f in found if f.code in CODES)


def _line(text: str, marker: str) -> int:
    return next(n for n, s in enumerate(text.splitlines(), 1) if marker in s)


# ---- TM314 -------------------------------------------------------------------------------------------------------

MMA_KERNEL = """.version 8.7
.target sm_100a
.address_size 64

.visible .entry k(.param .u64 adesc, .param .u64 bdesc, .param .u32 flag)
.reqntid 128
{{
	.reg .pred %p<8>;
	.reg .b32 %r<20>;
	.reg .b64 %rd<4>;
	.shared .align 4 .b32 slot;
	.shared .align 8 .b64 mma_done;

	mov.u32 %r1, %tid.x;
	shr.u32 %r2, %r1, 5;
	setp.ne.u32 %p1, %r2, 0;
	@%p1 bra ALLOC_DONE;
	tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 128;
	tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
ALLOC_DONE:
	setp.ne.u32 %p2, %r1, 0;
	@%p2 bra INIT_DONE;
	mbarrier.init.shared::cta.b64 [mma_done], 1;
INIT_DONE:
	tcgen05.fence::before_thread_sync;
	bar.sync 0;
	tcgen05.fence::after_thread_sync;
	ld.shared.b32 %r3, [slot];
{role}
	ld.param.u64 %rd1, [adesc];
	ld.param.u64 %rd2, [bdesc];
	mov.b32 %r5, 136314896;
	{guard}tcgen05.mma.cta_group::1.kind::f16 [%r3], %rd1, %rd2, %r5, 0; // MMA
	{guard}tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [mma_done]; // COMMIT
WAIT_D:
	mbarrier.try_wait.parity.shared::cta.b64 %p4, [mma_done], 0;
	@!%p4 bra WAIT_D;
	tcgen05.fence::after_thread_sync;
	shl.b32 %r6, %r2, 21;
	add.s32 %r7, %r3, %r6;
	tcgen05.ld.sync.aligned.32x32b.x1.b32 {{%r8}}, [%r7];
	tcgen05.wait::ld.sync.aligned;
	tcgen05.fence::before_thread_sync;
	bar.sync 0;
	@%p1 bra EXIT;
	tcgen05.fence::after_thread_sync;
	tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 128;
EXIT:
	ret;
}}
"""

WARP0 = "\t@%p1 bra WAIT_D;\n"

CLEAN_314 = {
    "elect.sync guard": (WARP0 + "\telect.sync %r4|%p3, -1;\n", "@%p3 "),
    "elect.sync branch": (WARP0 + "\telect.sync %r4|%p3, -1;\n\t@!%p3 bra WAIT_D;\n", ""),
    "tid.x == 0": ("\tsetp.eq.u32 %p3, %r1, 0;\n", "@%p3 "),
    "laneid == 0 in warp 0": (WARP0 + "\tmov.u32 %r9, %laneid;\n\tsetp.eq.u32 %p3, %r9, 0;\n", "@%p3 "),
    "(tid & 31) == 0 in warp 0": (WARP0 + "\tand.b32 %r9, %r1, 31;\n\tsetp.eq.u32 %p3, %r9, 0;\n", "@%p3 "),
    "role entered by a thread test": ("\tsetp.ne.u32 %p3, %r1, 32;\n\t@%p3 bra WAIT_D;\n", ""),
    # CUTLASS's elect_one_sync(): a 0/1 flag set under the elected lane's predicate, then tested
    "elect_one_sync flag": (WARP0 + "\tmov.b32 %r10, 0;\n\telect.sync %r4|%p3, -1;\n\t@%p3 mov.b32 %r10, 1;\n"
                            "\tsetp.eq.u32 %p5, %r10, 0;\n\t@%p5 bra WAIT_D;\n", ""),
    # a flag set on thread 0's path only (nvcc's hoisting of `threadIdx.x == 0` out of a loop)
    "flag set on thread 0's path": ("\tmov.pred %p6, 0;\n\t@%p2 bra SKIP;\n\tmov.pred %p6, -1;\nSKIP:\n"
                                    "\t@!%p6 bra WAIT_D;\n", ""),
}

BAD_314 = {
    "warp test only": (WARP0, ""),
    "a uniform guard only": (WARP0 + "\tld.param.u32 %r9, [flag];\n\tsetp.ne.u32 %p3, %r9, 0;\n", "@%p3 "),
    "two lanes of warp 0": (WARP0 + "\tand.b32 %r9, %r1, 31;\n\tsetp.lt.u32 %p3, %r9, 2;\n", "@%p3 "),
    "elect.sync result ignored": (WARP0 + "\telect.sync %r4|%p3, -1;\n", ""),
}


@pytest.mark.parametrize("name", sorted(CLEAN_314))
def test_tm314_confined_issue_is_clean(name):
    role, guard = CLEAN_314[name]
    assert _found(MMA_KERNEL.format(role=role, guard=guard)) == []


@pytest.mark.parametrize("name", sorted(BAD_314))
def test_tm314_issue_by_several_lanes(name):
    role, guard = BAD_314[name]
    text = MMA_KERNEL.format(role=role, guard=guard)
    assert _found(text) == [(_line(text, "// MMA"), "TM314"), (_line(text, "// COMMIT"), "TM314")]


def test_tm314_message_counts_the_lanes():
    role, guard = BAD_314["two lanes of warp 0"]
    found = [f for f in lint_text(MMA_KERNEL.format(role=role, guard=guard), "k.ptx", Options()) if f.code == "TM314"]
    assert "up to 2 lanes" in found[0].message and "warp 0" in found[0].message


# ---- TM310 -------------------------------------------------------------------------------------------------------

PEER_KERNEL = """.version 8.7
.target sm_100a
.address_size 64

.visible .entry k(.param .u64 tmap)
.explicitcluster
.reqnctapercluster 2, 1, 1
.reqntid 64
{{
	.reg .pred %p<6>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	.shared .align 4 .b32 slot;
	.shared .align 8 .b64 done_bar;
	.shared .align 128 .b8 buf[1024];

	mov.u32 %r1, %tid.x;
	shr.u32 %r2, %r1, 5;
	mov.u32 %r3, %cluster_ctarank;
	setp.ne.u32 %p1, %r2, 0;
	@%p1 bra ALLOC_DONE;
	tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;
	tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
ALLOC_DONE:
	setp.ne.u32 %p2, %r1, 0;
	@%p2 bra INIT_DONE;
	mbarrier.init.shared::cta.b64 [done_bar], 1;
	fence.mbarrier_init.release.cluster;
INIT_DONE:
	tcgen05.fence::before_thread_sync;
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	tcgen05.fence::after_thread_sync;
	ld.shared.b32 %r4, [slot];
	@%p2 bra TEARDOWN;
	setp.eq.u32 %p3, %r3, 0;
	@%p3 bra TEARDOWN;
	mov.u32 %r5, done_bar;
	mov.u64 %rd5, done_bar;
	cvta.shared.u64 %rd6, %rd5;
{op}
TEARDOWN:
	tcgen05.fence::before_thread_sync;
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	@%p1 bra EXIT;
	tcgen05.fence::after_thread_sync;
	tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 32;
EXIT:
	ret;
}}
"""

MAPA = "\tmapa.shared::cluster.u32 %r6, %r5, 0;\n"
MAPA_GENERIC = "\tmapa.u64 %rd7, %rd6, 0;\n"

BAD_310 = {
    "arrive .shared::cta": MAPA + "\tmbarrier.arrive.shared::cta.b64 %rd1, [%r6]; // OP",
    "arrive .shared through an add": MAPA + "\tadd.s32 %r7, %r6, 0;\n\tmbarrier.arrive.shared.b64 %rd1, [%r7]; // OP",
    "expect_tx .shared::cta": MAPA + "\tmbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r6], 64; // OP",
    "init on a peer": MAPA + "\tmbarrier.init.shared::cta.b64 [%r6], 1; // OP",
    "inval on a peer": MAPA + "\tmbarrier.inval.shared::cta.b64 [%r6]; // OP",
    "test_wait on a peer, generic": MAPA_GENERIC + "\tmbarrier.test_wait.parity.b64 %p4, [%rd7], 0; // OP",
    "cp.async.mbarrier.arrive on a peer": MAPA + "\tcp.async.mbarrier.arrive.shared.b64 [%r6]; // OP",
    "bulk copy into .shared::cta signalling a peer":
        MAPA + "\tmov.u32 %r8, buf;\n\tld.param.u64 %rd2, [tmap];\n"
        "\tcp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%r8], [%rd2, {%r1, %r1}], [%r6]; // OP",
}

CLEAN_310 = {
    "arrive .shared::cluster with _": MAPA + "\tmbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r6];",
    "arrive through a generic address": MAPA_GENERIC + "\tmbarrier.arrive.release.cluster.b64 _, [%rd7];",
    "expect_tx .shared::cluster": MAPA + "\tmbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [%r6], 64;",
    "mapa onto the CTA itself": "\tmapa.shared::cluster.u32 %r6, %r5, %r3;\n\tmbarrier.arrive.shared::cta.b64 %rd1, [%r6];",
    "own barrier": "\tmbarrier.arrive.shared::cta.b64 %rd1, [%r5];",
    "mapa on one path only": MAPA + "\t@%p3 mov.u32 %r6, %r5;\n\tmbarrier.arrive.shared::cta.b64 %rd1, [%r6];",
}


@pytest.mark.parametrize("name", sorted(BAD_310))
def test_tm310_peer_barrier_in_local_form(name):
    text = PEER_KERNEL.format(op=BAD_310[name])
    assert _found(text) == [(_line(text, "// OP"), "TM310")]


@pytest.mark.parametrize("name", sorted(CLEAN_310))
def test_tm310_allowed_forms_are_clean(name):
    assert _found(PEER_KERNEL.format(op=CLEAN_310[name])) == []


def test_tm310_message_says_which():
    wait = [f.message for f in lint_text(PEER_KERNEL.format(op=BAD_310["init on a peer"]), "k.ptx", Options())
            if f.code == "TM310"]
    assert wait and "mbarrier.init on a peer CTA's barrier" in wait[0] and "in any state space" in wait[0]
    arrive = [f.message for f in lint_text(PEER_KERNEL.format(op=BAD_310["arrive .shared::cta"]), "k.ptx",
                                           Options()) if f.code == "TM310"]
    assert arrive and ".shared::cluster and `_`" in arrive[0]


# ---- TM311 -------------------------------------------------------------------------------------------------------

COUNT_KERNEL = """.version 8.7
.target sm_100a
.address_size 64

.visible .entry k(.param .u64 tmap, .param .u32 n)
.explicitcluster
.reqnctapercluster 2, 1, 1
.reqntid 128
{{
	.reg .pred %p<8>;
	.reg .b32 %r<20>;
	.reg .b64 %rd<8>;
	.shared .align 4 .b32 slot;
	.shared .align 8 .b64 bar_x;
	.shared .align 128 .b8 buf[1024];

	mov.u32 %r1, %tid.x;
	shr.u32 %r2, %r1, 5;
	and.b32 %r9, %r1, 31;
	mov.u32 %r3, %cluster_ctarank;
	setp.ne.u32 %p1, %r2, 0;
	@%p1 bra ALLOC_DONE;
	tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;
	tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
ALLOC_DONE:
	setp.ne.u32 %p2, %r1, 0;
	@%p2 bra INIT_DONE;
	ld.param.u32 %r15, [n];
	mbarrier.init.shared::cta.b64 [bar_x], {count};
	fence.mbarrier_init.release.cluster;
INIT_DONE:
	tcgen05.fence::before_thread_sync;
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	tcgen05.fence::after_thread_sync;
	ld.shared.b32 %r4, [slot];
	mov.u32 %r5, bar_x;
{arrive}
DONE:
	tcgen05.fence::before_thread_sync;
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	@%p1 bra EXIT;
	tcgen05.fence::after_thread_sync;
	tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 32;
EXIT:
	ret;
}}
"""

WARP1 = "\tsetp.ne.u32 %p3, %r2, 1;\n\t@%p3 bra DONE;\n"
ELECT = "\telect.sync %r6|%p4, -1;\n\t@!%p4 bra DONE;\n"
ARRIVE = "\tmbarrier.arrive.shared::cta.b64 %rd1, [bar_x]; // ARRIVE"
LEADER_ARRIVE = "\tmapa.shared::cluster.u32 %r7, %r5, 0;\n" \
                "\tmbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r7]; // ARRIVE"

CLEAN_311 = {
    "elect.sync arrive on count 1": ("1", WARP1 + ELECT + ARRIVE),
    "every lane of 4 warps on count 128": ("128", ARRIVE),
    "one lane per warp on count 4": ("4", "\tsetp.ne.u32 %p4, %r9, 0;\n\t@%p4 bra DONE;\n" + ARRIVE),
    "expect_tx by one thread on count 1 plus TMA":
        ("1", "\t@%p2 bra DONE;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [bar_x], 1024; // ARRIVE\n"
              "\tmov.u32 %r8, buf;\n\tld.param.u64 %rd2, [tmap];\n"
              "\tcp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%r8], [%rd2, {%r1, %r1}], [bar_x];"),
    "both CTAs' epilogue threads on the leader's count-2 barrier": ("2", "\t@%p2 bra DONE;\n" + LEADER_ARRIVE),
    "count in a register": ("%r15", ARRIVE),
    "arrive_drop changes the count": ("1", ARRIVE + "\n\tmbarrier.arrive_drop.shared::cta.b64 %rd2, [bar_x];"),
}

BAD_311 = {
    "warp-wide arrive on count 1": ("1", WARP1 + ARRIVE),
    "per-thread arrive by a warpgroup on count 4": ("4", ARRIVE),
    "both CTAs arriving on the leader's count-1 barrier": ("1", "\t@%p2 bra DONE;\n" + LEADER_ARRIVE),
    "one lane arriving twice on count 1":
        ("1", WARP1 + ELECT + "\tmbarrier.arrive.shared::cta.b64 %rd1, [bar_x], 2; // ARRIVE"),
}


@pytest.mark.parametrize("name", sorted(CLEAN_311))
def test_tm311_counts_that_match_are_clean(name):
    count, arrive = CLEAN_311[name]
    assert _found(COUNT_KERNEL.format(count=count, arrive=arrive)) == []


@pytest.mark.parametrize("name", sorted(BAD_311))
def test_tm311_more_arrivals_than_the_count(name):
    count, arrive = BAD_311[name]
    text = COUNT_KERNEL.format(count=count, arrive=arrive)
    assert _found(text) == [(_line(text, "// ARRIVE"), "TM311")]


def test_tm311_message_gives_the_numbers():
    count, arrive = BAD_311["per-thread arrive by a warpgroup on count 4"]
    msg = [f.message for f in lint_text(COUNT_KERNEL.format(count=count, arrive=arrive), "k.ptx", Options())
           if f.code == "TM311"]
    assert msg and msg[0].startswith("128 arrivals on mbarrier bar_x") and "expected count of 4" in msg[0]


# ---- TM312 -------------------------------------------------------------------------------------------------------

def _fixture(name: str) -> str:
    from conftest import FIXTURES

    return (FIXTURES / "ptx" / name).read_text(encoding="utf-8")


def test_tm312_peer_exits_without_waiting_for_the_multicast_commit():
    text = _fixture("tm312_commit_target_recycled_bad.ptx")
    assert _found(text) == [(_line(text, "multicast::cluster.b64 [mma_done]"), "TM312")]


def test_tm312_every_cta_waits_before_exit_is_clean():
    assert _found(_fixture("tm312_commit_target_recycled_good.ptx")) == []


def test_tm312_remote_arrive_followed_by_a_cluster_barrier_is_clean():
    # the tmem_empty release of the TM309 fixtures: a remote arrive, then the teardown cluster barrier
    assert _found(_fixture("tm309_remote_release_scope_good.ptx")) == []


def test_tm312_two_roles_counting_one_trip_count_is_clean():
    # each role computes ceil_div(seqlen_q, 128) - max(...) itself: one value, so the consumer's zero-trip exit
    # contradicts the MMA thread's entered loop
    assert _found(_fixture("tm312_role_tripcount_good.ptx")) == []


def test_tm312_a_consumer_counting_one_fewer_exits_before_the_last_commit():
    text = _fixture("tm312_role_tripcount_bad.ptx")
    assert _found(text) == [(_line(text, "multicast::cluster.b64 [mma_done]"), "TM312")]


def test_tm312_the_pairs_nblock_and_a_count_written_a_plus_not_b_are_clean():
    # (ctaid.x << 7) & -256 is the same in both CTAs of the pair; a + ~b < 0 is a - b < 1
    assert _found(_fixture("tm312_pair_tripcount_good.ptx")) == []


def test_tm312_an_nblock_that_differs_within_the_pair_is_reported():
    text = _fixture("tm312_pair_tripcount_bad.ptx")
    assert _found(text) == [(_line(text, "multicast::cluster.b64 [mma_done]"), "TM312")]


def test_pair_bits_follow_bit_0_of_ctaid_through_shifts_masks_and_carries():
    x = SReg("sreg", "%ctaid.x")
    shl = Op(("op", "shl", x, const(7), 1))
    assert _pair_bits(x) == 1
    assert _pair_bits(shl) == 1 << 7
    assert _pair_bits(Op(("op", "and", shl, const(-256), 2))) == 0  # FA4's n-block of the pair
    assert _pair_bits(Op(("op", "and", shl, const(-128), 2))) == 1 << 7
    assert _pair_bits(Op(("op", "add", shl, Param("param", "n", 0), 2))) == _ALL_BITS & ~((1 << 7) - 1)
    assert _pair_bits(Op(("op", "shr", shl, const(8), 2))) == 0
    assert _pair_bits(Op(("op", "max", x, const(0), 1))) == _ALL_BITS
    assert _pair_bits(SReg("sreg", "%cluster_ctarank")) == _ALL_BITS
    assert _pair_bits(SReg("sreg", "%clusterid.x")) == 0
    assert _pair_bits(opaque(3)) == _ALL_BITS
