"""TM401 (scale-accumulator-overlap) on column sets and on the known bits of the instruction descriptor.

The accumulator of a block-scaled tcgen05.mma is ``[col(d), col(d) + N)`` (reference §2.5), N from idesc bits 17-22
(PTX ISA §9.7.16.4.2, Table 43).  Two compiler shapes used to hide it: nvcc's double-buffered accumulator, whose
column is one of {0, 128}, and CuTe DSL's descriptor, which ORs the scale byte selectors (bits 4-5, 29-30) taken
from the scale operands' TMEM addresses.  Line numbers below are those of the committed fixtures.
"""

from __future__ import annotations

from conftest import FIXTURES, ROOT
from tmemlint.analysis.regions import known_idesc
from tmemlint.checks.context import FunctionContext
from tmemlint.engine import lint_file, lint_text
from tmemlint.frontend.parser import parse_text

PATTERNS = FIXTURES / "patterns"


def _findings(path):
    return lint_file(str(path)).findings


def _tm401(path):
    return sorted(f.line for f in _findings(path) if f.code == "TM401")


def _ctx_at(path, line):
    text = path.read_text() if hasattr(path, "read_text") else path
    mod = parse_text(text, str(path)[:40])
    for fn in mod.functions:
        for inst in fn.instructions:
            if inst.span.line == line:
                return FunctionContext(mod, fn, "t.ptx"), inst
    raise AssertionError(f"no instruction at line {line}")


def test_double_buffered_accumulator_column_set():
    """nvcc: d = base + ((it & 1) << 7) & 128 — the MMA's [d] is column 0 or 128 (an exact set, not unknown)."""
    ctx, mma = _ctx_at(PATTERNS / "blockscaled_double_buffered_acc_bad.ptx", 160)
    a = ctx.address_sets.address(mma, 0)
    assert a is not None and a.exact
    assert a.columns == [0, 128]
    assert ctx.address_sets.address(mma, 4).columns == [64]
    assert ctx.address_sets.address(mma, 5).columns == [68]


def test_double_buffered_accumulator_scale_inside_buffer0():
    """Scale factors at 64/68 lie in buffer 0 [0, 128): both cps and the MMA are reported."""
    path = PATTERNS / "blockscaled_double_buffered_acc_bad.ptx"
    assert _tm401(path) == [151, 155, 160]
    msg = next(f.message for f in _findings(path) if f.code == "TM401" and f.line == 160)
    assert "accumulator columns [0, 128) (N=128 from instruction descriptor 0x08a00000; the accumulator address " \
           "is column 0 or 128)" in msg


def test_double_buffered_accumulator_scales_after_both_buffers():
    """Scale factors at 256/260, after both buffers [0, 128) and [128, 256): no finding at all."""
    assert _findings(PATTERNS / "blockscaled_double_buffered_acc.ptx") == []


def test_idesc_with_scale_selectors_decodes_n():
    """CuTe-style descriptor: kIdesc | ((sfa >> 1) & 0x60000000) | ((sfb >> 26) & 0x30), sfa/sfb TMEM addresses.
    Its shape bits are known: every alternative has N=128 (bits 17-22 = 16) and M=128 (bits 27-28 = 1)."""
    ctx, mma = _ctx_at(PATTERNS / "blockscaled_idesc_sf_selector_bad.ptx", 191)
    vals, unknown = known_idesc(mma, 3, ctx.values, ctx.address_sets)
    assert unknown == 0
    assert vals == frozenset(0x08A00000 | a | b for a in (0, 1 << 29, 2 << 29, 3 << 29) for b in (0, 16, 32, 48))
    assert _tm401(PATTERNS / "blockscaled_idesc_sf_selector_bad.ptx") == [183, 187, 191, 194, 197, 200]
    msg = next(f.message for f in _findings(PATTERNS / "blockscaled_idesc_sf_selector_bad.ptx")
               if f.line == 191)
    assert "(N=128 from instruction descriptor 0x08a00000 (bits 4-5, 29-30 vary))" in msg
    assert _findings(PATTERNS / "blockscaled_idesc_sf_selector.ptx") == []


def test_real_cute_idesc_shape_known():
    """cute_mxf4.ptx line 498: %r36 = %r33 | %r35 (selectors from [%r16]/[%r17] | selp of two descriptors):
    64 alternatives, all N=128, M=128."""
    ctx, mma = _ctx_at(ROOT / "fixtures/real/cute/cute_mxf4.ptx", 498)
    vals, unknown = known_idesc(mma, 3, ctx.values, ctx.address_sets)
    assert unknown == 0 and len(vals) == 64
    assert {(v >> 17) & 0x3F for v in vals} == {16} and {(v >> 27) & 3 for v in vals} == {1}


_KNOWN_BITS = """
.version 8.7
.target sm_100a
.address_size 64
.visible .entry k(.param .u32 p)
{{
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  .reg .pred %p<2>;
  .shared .align 4 .b32 slot;
  mov.u32 %r1, slot;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 256;
  ld.shared.b32 %r2, [slot];
  add.s32 %r3, %r2, {sfa};
  add.s32 %r4, %r2, {sfb};
  ld.param.u32 %r5, [p];
  and.b32 %r6, %r5, {mask};
  or.b32 %r7, %r6, 144703488;
  mov.b64 %rd1, 0;
  setp.ne.u32 %p1, %r5, 0;
  tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X [%r2], %rd1, %rd1, %r7, [%r3], [%r4], %p1;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 256;
  ret;
}}
"""


def test_known_bits_beyond_value_sets():
    """A descriptor ORed with 8 bits of a kernel parameter (256 values, more than a value set holds): the known-bits
    view keeps the rest, 0x08a00000 with bits 0-1, 3-6, 29-30 unknown, so N=128 decodes and the scale operand at
    column 64 is reported on the MMA (line 21 of the text); with 8 unknown bits over N's bits 17-22 nothing is
    decoded or reported, nor with the scale factors at 128 (after the accumulator [0, 128))."""
    text = _KNOWN_BITS.format(sfa=64, sfb=132, mask=0x6000007B)
    ctx, mma = _ctx_at(text, 21)
    assert known_idesc(mma, 3, ctx.values, ctx.address_sets) == (frozenset({0x08A00000}), 0x6000007B)
    found = [(f.code, f.line) for f in lint_text(text, "t.ptx") if f.code.startswith("TM4")]
    assert found == [("TM401", 21)]
    text = _KNOWN_BITS.format(sfa=64, sfb=132, mask=0x01FE0000)
    ctx, mma = _ctx_at(text, 21)
    assert known_idesc(mma, 3, ctx.values, ctx.address_sets) is None
    assert [f for f in lint_text(text, "t.ptx") if f.code == "TM401"] == []
    text = _KNOWN_BITS.format(sfa=128, sfb=132, mask=0x6000007B)
    assert [f for f in lint_text(text, "t.ptx") if f.code == "TM401"] == []
