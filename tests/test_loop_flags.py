"""Loop-carried flags branched on directly (``@%allocated bra``): the path's constant of a register several
definitions reach decides the branch (``GuardOracle.resolve`` of a ``("phi", …)`` value through the path's
``regval`` fact), as it does when the flag is first compared with ``setp`` (nvcc's PTX).  Issue 14: source mode
lowers a ``bool`` local to a ``.pred`` register and branches on it."""

from __future__ import annotations

from conftest import FIXTURES
from tmemlint.engine import Options, lint_file, lint_text

# warp 0 allocates on the first iteration of a tile loop only, guarded by a predicate flag it sets there (lines 14-19)
PTX = """.version 8.7
.target sm_100a
.address_size 64
.shared .align 4 .b32 slot;
.entry k(.param .u32 n)
{
.reg .pred %p<4>;
.reg .pred %allocated;
.reg .b32 %r<9>;
ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
shr.u32 %r3, %r2, 5;
setp.ne.u32 %p1, %r3, 0;
@%p1 bra $END;
mov.pred %allocated, 0;
mov.u32 %r4, 0;
$LOOP:
@%allocated bra $SKIP;
tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;
tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
SETFLAG
$SKIP:
add.u32 %r4, %r4, 1;
setp.lt.u32 %p2, %r4, %r1;
@%p2 bra $LOOP;
ld.shared.u32 %r5, [slot];
tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 32;
$END:
ret;
}
"""


def found(ptx: str) -> list[tuple[int, int, int, str]]:
    return [(f.line, f.column, f.end_column, f.code) for f in lint_text(ptx, "k.ptx", Options(codes={"TM105"}))]


def test_flag_set_after_the_alloc_decides_the_next_iterations():
    assert found(PTX.replace("SETFLAG", "mov.pred %allocated, 1;")) == []


def test_flag_never_set_is_an_alloc_after_relinquish():
    assert found(PTX.replace("SETFLAG", "")) == [(19, 1, 68, "TM105")]


def test_flag_set_to_a_value_not_known_is_not_decided():
    src = PTX.replace("SETFLAG", "setp.ne.u32 %allocated, %r1, 7;")
    assert found(src) == [(19, 1, 68, "TM105")]


def test_persistent_loop_alloc_flags_has_no_tm105_in_source_mode():
    """The fixture's ``if (warp == 1 && !allocated)`` (a ``bool`` lowered to a ``.pred`` register): no TM105, as in
    nvcc's PTX; the TM101 warning that remains is a listed gap (test_cuda_source.SOURCE_GAPS)."""
    path = FIXTURES / "patterns" / "persistent_loop_alloc_flags.cu"
    assert [(f.line, f.code) for f in lint_file(path).findings if f.code == "TM105"] == []
    bad = FIXTURES / "patterns" / "persistent_loop_alloc_flags_bad.cu"
    assert [(f.line, f.code) for f in lint_file(bad).findings if f.code == "TM105"] == [(51, "TM105")]
