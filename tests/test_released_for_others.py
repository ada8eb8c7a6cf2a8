"""TM302's second form (``checks.ordering._released_for_others``): a load that its warps wait for, with nothing of
theirs after the wait ordering it before the producer's next write.  The message says what the model found
(``_handover_gap``): whose arrival the producer's wait is for, and where the readers' own arrivals are; exact
messages on the bad fixture twins and on one variant (PTX ISA §9.7.16.6.4.5: a load completes with
``tcgen05.wait::ld``; reference §3.1)."""

from __future__ import annotations

from conftest import FIXTURES
from tmemlint.engine import lint_file, lint_text

ELECTED = FIXTURES / "ptx" / "tm302_elected_release_bad.ptx"
HEAD = ("the tcgen05.ld of {kr} is waited for (tcgen05.wait::ld at line {d}) but nothing of {kr} after the wait "
        "orders it before the next tcgen05.mma of warp 0 at line {w}, which overwrites the columns it reads: ")
JOIN = "; join the readers first (a named barrier over all of them, or an arrival per warp after its wait::ld)"


def _tm302(found) -> list[tuple[int, int, str]]:
    return [(f.line, f.column, f.message) for f in found if f.code == "TM302"]


def test_another_warps_elected_lane_releases_for_the_readers():
    # warp 1's lane 0 (its own warp class: the thread test) arrives on acc_empty for warps 1-4
    assert _tm302(lint_file(ELECTED).findings) == [(79, 2, HEAD.format(kr="warps 2-4", d=80, w=61) + (
        "the wait of warp 0 (line 57) is for the arrival of warp 1 (line 86), and no arrival of warps 2-4 comes "
        "between the tcgen05.wait::ld and the next tcgen05.ld" + JOIN))]


def test_the_readers_own_release_before_their_wait_ld_is_named_as_theirs():
    # the fmha_gen shape: lane 0 of each reading warp releases, before the only wait::ld (after the loop); the
    # release is the readers' own, not "an elected lane of another warp"
    path = FIXTURES / "ptx" / "tm302_release_before_wait_ld_bad.ptx"
    assert _tm302(lint_file(path).findings) == [(77, 2, HEAD.format(kr="warps 1-4", d=86, w=59) + (
        "the arrival of warps 1-4 on the barrier warp 0 waits on (line 81) is not between the tcgen05.wait::ld and "
        "the next tcgen05.ld: wait for the load (tcgen05.wait::ld) before that arrival"))]
    assert _tm302(lint_file(FIXTURES / "ptx" / "tm302_release_before_wait_ld_good.ptx").findings) == []


def test_the_readers_arrivals_after_the_wait_on_a_barrier_nobody_relays():
    # variant of the elected twin: lane 0 of each reading warp also arrives, after its wait::ld, on a barrier that
    # warp 0 never waits on
    text = ELECTED.read_text()
    old = "\ttcgen05.fence::before_thread_sync;\n\tsetp.ne.u32 %p8, %r1, 32;"
    assert text.count(old) == 1
    text = text.replace("\t.shared .align 8 .b64 acc_empty;\n",
                        "\t.shared .align 8 .b64 acc_empty;\n\t.shared .align 8 .b64 done_bar;\n")
    text = text.replace(old, "\ttcgen05.fence::before_thread_sync;\n\tsetp.ne.u32 %p9, %r14, 0;\n"
                             "\t@!%p9 mbarrier.arrive.shared::cta.b64 _, [done_bar];\n\tsetp.ne.u32 %p8, %r1, 32;")
    assert _tm302(lint_text(text, "k.ptx")) == [(80, 2, HEAD.format(kr="warps 2-4", d=81, w=62) + (
        "the wait of warp 0 (line 58) is for the arrival of warp 1 (line 89), and the arrivals of warps 2-4 after "
        "the tcgen05.wait::ld (line 86) reach no wait of warp 0, directly or through another warp class" + JOIN))]
