"""TM313 access-after-release on variants of its fixtures (``fixtures/ptx/tm313_*.ptx``, nvcc output of
hand-written kernels), built by text edits: exact (code, line, related lines) of each finding."""

from __future__ import annotations

from conftest import FIXTURES
from tmemlint.checks.registry import load_all
from tmemlint.engine import lint_text

load_all()

BAD = (FIXTURES / "ptx" / "tm313_release_then_load_bad.ptx").read_text()
GOOD = (FIXTURES / "ptx" / "tm313_release_then_load_good.ptx").read_text()
TWO = (FIXTURES / "ptx" / "tm313_two_stage_release_good.ptx").read_text()
REWAIT = (FIXTURES / "ptx" / "tm313_release_rewait_good.ptx").read_text()

#: the load after the release in BAD (line 448), and the label just before it (line 445)
LATE_LD = ("\ttcgen05.ld.sync.aligned.32x32b.x16.b32 {%r106, %r107, %r108, %r109, %r110, %r111, %r112, %r113, %r114, "
           "%r115, %r116, %r117, %r118, %r119, %r120, %r121}, [%r21]; // expect: TM313\n")
AFTER_ARRIVE = "$L__BB0_17:\n"
#: the first load of stage 1 in TWO (line 578), after the arrive on acc_empty0 (line 569)
STAGE1_LD = ("\ttcgen05.ld.sync.aligned.32x32b.x16.b32 {%r131, %r132, %r133, %r134, %r135, %r136, %r137, %r138, %r139, "
             "%r140, %r141, %r142, %r143, %r144, %r145, %r146}, [%r147];\n")


def _tm313(text: str) -> list[tuple[str, int, list[int]]]:
    return [(f.code, f.line, [r.line for r in f.related]) for f in lint_text(text, "k.ptx") if f.code == "TM313"]


def test_load_after_release_is_reported_with_release_and_producer_write():
    # the load (448), the arrive on acc_empty (442), the first MMA of warp 0 after its wait on acc_empty (216)
    assert _tm313(BAD) == [("TM313", 448, [442, 216])]


def test_last_load_waited_before_the_release_is_clean():
    assert lint_text(GOOD, "k.ptx") == []


def test_store_after_release_is_reported():
    assert LATE_LD in BAD
    store = "\ttcgen05.st.sync.aligned.32x32b.x16.b32 [%r21], {%r106, %r107, %r108, %r109, %r110, %r111, %r112, " \
            "%r113, %r114, %r115, %r116, %r117, %r118, %r119, %r120, %r121};\n"
    assert _tm313(BAD.replace(LATE_LD, store)) == [("TM313", 448, [442, 216])]


def test_wait_on_the_full_barrier_before_the_access_ends_the_release():
    # a new wait on acc_full (the next phase) between the arrive and the load: the columns are owned again
    assert BAD.count(AFTER_ARRIVE) == 1
    rewait = ("\tmov.u32 \t%r157, _ZZ16ws_gemm_epiloguePK5uint4S1_PfjE8acc_full;\n"
              "\t{\n\t.reg .pred P9;\n\tW9:\n\tmbarrier.try_wait.parity.shared::cta.b64 P9, [%r157], %r53;\n"
              "\t@!P9 bra W9;\n\t}\n")
    assert _tm313(BAD.replace(AFTER_ARRIVE, AFTER_ARRIVE + rewait)) == []
    assert lint_text(REWAIT, "k.ptx") == []


def test_release_on_a_barrier_no_producer_waits_on_hands_nothing_over():
    # the epilogue arrives on acc_full instead (only the epilogue waits on it): nothing the MMA warp waits for
    arrive = "\tmov.u32 \t%r105, _ZZ16ws_gemm_epiloguePK5uint4S1_PfjE9acc_empty;\n"
    assert arrive in BAD
    assert _tm313(BAD.replace(arrive, arrive.replace("9acc_empty", "8acc_full"))) == []


def test_other_stage_after_release_is_clean():
    assert lint_text(TWO, "k.ptx") == []


def test_released_stage_after_release_is_reported():
    # the first load after the arrive on acc_empty0 reads stage 0 (the address of its first subtile) again: the
    # MMA of stage 0 (line 231, after warp 0's wait on acc_empty0) may be writing it
    assert TWO.count(STAGE1_LD) == 1
    assert _tm313(TWO.replace(STAGE1_LD, STAGE1_LD.replace("[%r147]", "[%r21]"))) == [("TM313", 578, [569, 231])]
