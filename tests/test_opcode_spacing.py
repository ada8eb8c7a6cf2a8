"""Blank space inside opcodes is read as ptxas reads it (``tmemlint.frontend.opcode``): before any ``.qualifier`` after
the instruction name (spaces, tabs, newlines and comments), never inside the name, never around ``::``.  Where ptxas
is installed, every way of putting one space before a ``.`` of the opcodes below is assembled, and the parser must
accept exactly the spellings ptxas accepts."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import needs_ptxas
from tmemlint.frontend.opcode import INSTRUCTION_NAMES, instruction_name
from tmemlint.frontend.parser import PTXSyntaxError, parse_text

HEAD = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<20>;
  .reg .b64 %rd<20>;
  .reg .pred %p<4>;
  .reg .f32 %f<10>;
  .shared .align 16 .b8 smem[1024];
  mov.u64 %rd1, smem;
  mov.u64 %rd2, 0;
  mov.u64 %rd3, smem;
  mov.u64 %rd4, 0;
  mov.u32 %r1, 0;
  mov.u32 %r2, 0;
  mov.u32 %r3, 0;
tgts: .branchtargets L0;
L0:
"""
TAIL = "  ret;\n}\n"

#: One instruction of each form checked against ptxas (all valid for sm_100a as written).
FORMS = [
    'tcgen05.shift.cta_group::1.down [%r1];',
    'tcgen05.mma.ws.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r2, %p1;',
    'tcgen05.mma.cta_group::1.kind::tf32 [%r1], %rd1, %rd2, %r2, %p1;',
    'tcgen05.mma.cta_group::1.kind::f16 [%r1], [%r3], %rd2, %r2, %p1;',
    'tcgen05.st.sync.aligned.32x32b.x1.b32 [%r1], {%r2};',
    'tcgen05.st.sync.aligned.16x64b.x1.b32 [%r1], {%r2};',
    'tcgen05.ld.sync.aligned.16x64b.x1.b32 {%r4}, [%r1];',
    'tcgen05.wait::st.sync.aligned;',
    'tcgen05.wait::ld.sync.aligned;',
    'tcgen05.fence::before_thread_sync;',
    'tcgen05.fence::after_thread_sync;',
    'tcgen05.cp.cta_group::1.128x256b [%r1], %rd1;',
    'tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [%rd1];',
    'tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%rd1];',
    'tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%rd1], 32;',
    'tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 32;',
    'tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;',
    'mbarrier.try_wait.shared::cta.b64 %p1, [%rd1], %rd2;',
    'mbarrier.try_wait.parity.shared::cta.b64 %p1, [%rd1], %r1;',
    'mbarrier.test_wait.shared::cta.b64 %p1, [%rd1], %rd2;',
    'mbarrier.test_wait.parity.shared::cta.b64 %p1, [%rd1], %r1;',
    'mbarrier.arrive_drop.shared::cta.b64 %rd5, [%rd1];',
    'mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%rd1], 16;',
    'mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%rd1], 16;',
    'mbarrier.pending_count.b64 %r4, %rd2;',
    'mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %rd5, [%rd1], 16;',
    'mbarrier.arrive.noComplete.shared::cta.b64 %rd5, [%rd1], 1;',
    'mbarrier.arrive.shared::cta.b64 %rd5, [%rd1];',
    'mbarrier.init.shared::cta.b64 [%rd1], 1;',
    'mbarrier.inval.shared::cta.b64 [%rd1];',
    'cp.async.ca.shared.global [%rd1], [%rd2], 4;',
    'cp.async.commit_group;',
    'cp.async.wait_group 0;',
    'cp.async.wait_all;',
    'cp.async.mbarrier.arrive.shared::cta.b64 [%rd1];',
    'cp.async.bulk.prefetch.L2.global [%rd2], 16;',
    'cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%rd1], 16;',
    'cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%rd1], [%rd2], 16, [%rd3];',
    'cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%rd1], [%rd2, {%r1, %r2}], [%rd3], %rd4;',
    'cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd2, {%r1, %r2}], [%rd1];',
    'cp.async.bulk.prefetch.tensor.2d.L2.global [%rd2, {%r1, %r2}];',
    'cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd2], [%rd1], 16;',
    'cp.async.bulk.commit_group;',
    'cp.async.bulk.wait_group.read 0;',
    'cp.async.bulk.wait_group 0;',
    'fence.sc.cta;',
    'fence.acq_rel.cluster;',
    'fence.proxy.async;',
    'fence.proxy.async.shared::cta;',
    'fence.mbarrier_init.release.cluster;',
    'fence.proxy.tensormap::generic.release.gpu;',
    'membar.gl;',
    'griddepcontrol.wait;',
    'griddepcontrol.launch_dependents;',
    'elect.sync %r4|%p1, -1;',
    'barrier.cluster.arrive;',
    'barrier.cluster.arrive.release.aligned;',
    'barrier.cluster.wait;',
    'barrier.cluster.wait.acquire.aligned;',
    'barrier.sync.aligned 0;',
    'barrier.cta.sync.aligned 0;',
    'barrier.arrive 0, 32;',
    'bar.sync 0;',
    'bar.arrive 0, 32;',
    'bar.warp.sync -1;',
    'bar.red.popc.u32 %r4, 0, %p1;',
    'brx.idx %r1, tgts;',
    'atom.global.add.u32 %r4, [%rd2], 1;',
    'atom.shared::cta.cas.b32 %r4, [%rd1], 1, 2;',
    'red.shared.add.u32 [%rd1], 1;',
    'red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%rd1], 1, [%rd3];',
    'st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%rd1], %r1, [%rd3];',
    'mov.b64 %rd5, {%r1, %r2};',
    'mad.lo.s32 %r4, %r1, %r2, %r3;',
    'mad.hi.s32 %r4, %r1, %r2, %r3;',
    'mad.wide.s32 %rd5, %r1, %r2, %rd4;',
    'mul.lo.s32 %r4, %r1, %r2;',
    'mul.hi.s32 %r4, %r1, %r2;',
    'mul.wide.s32 %rd5, %r1, %r2;',
    'div.rn.f32 %f1, %f2, %f3;',
    'div.full.f32 %f1, %f2, %f3;',
    'div.approx.f32 %f1, %f2, %f3;',
    'div.s32 %r4, %r1, %r2;',
    'shfl.sync.bfly.b32 %r4, %r1, 1, 31, -1;',
    'vote.sync.ballot.b32 %r4, %p1, -1;',
    'redux.sync.add.u32 %r4, %r1, -1;',
    'cvta.shared.u64 %rd5, %rd1;',
    'cvta.to.shared.u64 %rd5, %rd1;',
    'mapa.shared::cluster.u32 %r4, %r1, 0;',
    'setp.eq.and.u32 %p1, %r1, %r2, %p2;',
    'cvt.rn.bf16x2.f32 %r4, %f1, %f2;',
    'ld.global.nc.v4.u32 {%r4, %r5, %r6, %r7}, [%rd2];',
    'ld.shared.u32 %r4, [%rd1];',
    'st.shared.u32 [%rd1], %r4;',
    'createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;',
    'clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%rd1], [%rd3];',
    'setmaxnreg.inc.sync.aligned.u32 240;',
    'setmaxnreg.dec.sync.aligned.u32 96;',
    'multimem.ld_reduce.relaxed.sys.global.add.u32 %r4, [%rd2];',
    'tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd2], [%rd1], 128;',
    'shf.l.wrap.b32 %r4, %r1, %r2, %r3;',
    'mul24.lo.s32 %r4, %r1, %r2;',
    'mad24.lo.s32 %r4, %r1, %r2, %r3;',
    'add.cc.u32 %r4, %r1, %r2;',
    'shf.r.clamp.b32 %r4, %r1, %r2, %r3;',
    'mul24.hi.s32 %r4, %r1, %r2;',
    'mad24.hi.s32 %r4, %r1, %r2, %r3;',
    'multimem.st.relaxed.sys.global.u32 [%rd2], %r1;',
    'multimem.red.relaxed.sys.global.add.u32 [%rd2], %r1;',
    'tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%rd1], %rd2;',
    'cp.async.cg.shared.global [%rd1], [%rd2], 16;',
    'cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%rd2, {%r1, %r2}], [%rd1];',
    'tcgen05.mma.sp.cta_group::1.kind::f16 [%r1], %rd1, %rd2, [%r3], %r2, %p1;',
    'tcgen05.mma.ws.sp.cta_group::1.kind::f16 [%r1], %rd1, %rd2, [%r3], %r2, %p1;',
    'mbarrier.try_wait.relaxed.cluster.shared::cta.b64 %p1, [%rd1], %rd2;',
    'mbarrier.arrive_drop.expect_tx.shared::cta.b64 %rd5, [%rd1], 16;',
    'barrier.cta.arrive.aligned 0, 32;',
    'barrier.red.popc.u32 %r4, 0, %p1;',
    'bar.cta.sync 0;',
    'bar.cta.arrive 0, 32;',
    'fence.proxy.alias;',
    'fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;',
    'fence.acquire.sync_restrict::shared::cluster.cluster;',
    'isspacep.shared::cta %p1, %rd1;',
    'prefetch.tensormap [%rd2];',
    'applypriority.global.L2::evict_normal [%rd2], 128;',
    'discard.global.L2 [%rd2], 128;',
    'mov.u32 %r4, %clock;',
    'cvt.rna.tf32.f32 %r4, %f1;',
    'match.any.sync.b32 %r4, %r1, -1;',
    'st.bulk.weak.shared::cta [%rd1], 64, 0;',
]

TILELANG = ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes .L2::cache_hint "
            "[%rd1], [%rd2, {%r1, %r2}], [%rd3], %rd4;")


def _module(line: str):
    return parse_text(HEAD + "  " + line + "\n" + TAIL)


def _last(line: str):
    return _module(line).functions[0].instructions[-2]


def test_tilelang_bulk_copy_with_a_space_before_its_cache_hint():
    inst = _last(TILELANG)
    assert inst.opcode == TILELANG.split(" ")[0] + ".L2::cache_hint"
    assert inst.parts[-1] == "L2::cache_hint"
    assert [type(o).__name__ for o in inst.operands] == ["Address", "Address", "Address", "Reg"]


@pytest.mark.parametrize("line, opcode", [
    ("add // a comment\n   .s32 /* another */ .sat %r4, %r1, %r2;", "add.s32.sat"),
    ("tcgen05.alloc\n\t.cta_group::1 .sync\t.aligned .shared::cta .b32 [%rd1], 32;",
     "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32"),
    ("tcgen05.ld .sync.aligned .32x32b .x1 .b32 {%r4}, [%r1];", "tcgen05.ld.sync.aligned.32x32b.x1.b32"),
    ("tcgen05.wait::ld .sync .aligned;", "tcgen05.wait::ld.sync.aligned"),
    ("mbarrier.try_wait.parity .shared::cta .b64 %p1, [%rd1], %r1;", "mbarrier.try_wait.parity.shared::cta.b64"),
])
def test_gaps_before_qualifiers_are_dropped(line, opcode):
    inst = _last(line)
    assert inst.opcode == opcode
    assert inst.parts == tuple(opcode.split("."))


@pytest.mark.parametrize("line, column, name", [
    ("tcgen05 .alloc.cta_group::1.sync.aligned.shared::cta.b32 [%rd1], 32;", 11, "tcgen05.alloc"),
    ("mbarrier.try_wait .parity.shared::cta.b64 %p1, [%rd1], %r1;", 21, "mbarrier.try_wait.parity"),
    ("mul .wide.u32 %rd5, %r1, %r2;", 7, "mul.wide"),
])
def test_a_gap_inside_the_instruction_name_is_a_syntax_error(line, column, name):
    with pytest.raises(PTXSyntaxError) as e:
        _module(line)
    assert (e.value.line, e.value.column) == (HEAD.count("\n") + 1, column)
    assert repr(name) in e.value.message


@pytest.mark.parametrize("line", ["tcgen05.alloc.cta_group ::1.sync.aligned.shared::cta.b32 [%rd1], 32;",
                                  "tcgen05.alloc.cta_group:: 1.sync.aligned.shared::cta.b32 [%rd1], 32;",
                                  "add. s32 %r4, %r1, %r2;"])
def test_no_gap_after_a_dot_or_around_a_double_colon(line):
    with pytest.raises(PTXSyntaxError):
        _module(line)


def test_instruction_names():
    assert instruction_name("tcgen05.fence::before_thread_sync") == "tcgen05.fence::before_thread_sync"
    assert instruction_name("tcgen05.wait::ld.sync.aligned") == "tcgen05.wait::ld"
    assert instruction_name("mbarrier.try_wait.parity.shared::cta.b64") == "mbarrier.try_wait.parity"
    assert instruction_name("mbarrier.try_wait.shared::cta.b64") == "mbarrier.try_wait"
    assert instruction_name("tcgen05.unknown_op.x") == "tcgen05.unknown_op"  # a family: never split after it
    assert instruction_name("add.s32") == "add"
    assert all(n == instruction_name(n) for n in INSTRUCTION_NAMES)


def _variants() -> list[str]:
    """Every form of ``FORMS`` with one space inserted before one ``.`` of its opcode."""
    out = []
    for line in FORMS:
        op, _, rest = line.partition(" ")
        for m in re.finditer(r"(?<!:)\.", op):
            out.append(op[:m.start()] + " " + op[m.start():] + (" " + rest if rest else ""))
    return out


@needs_ptxas
def test_parser_accepts_exactly_the_spellings_ptxas_accepts(tmp_path):
    variants = _variants()
    first = HEAD.count("\n") + 1
    f = tmp_path / "spaced.ptx"
    f.write_text(HEAD + "".join(f"  {v}\n" for v in variants) + TAIL)
    r = subprocess.run(["ptxas", "-arch=sm_100a", str(f), "-o", "/dev/null"], capture_output=True, text=True)
    assert "fatal   : Parsing error" not in r.stderr, r.stderr[:400]  # only per-line errors: every line is judged
    rejected = {int(m.group(1)) - first for m in re.finditer(r"line (\d+); error", r.stderr)}
    wrong = []
    for i, v in enumerate(variants):
        try:
            _module(v)
            ours = True
        except PTXSyntaxError:
            ours = False
        if ours != (i not in rejected):
            wrong.append(("ptxas accepts" if i not in rejected else "ptxas rejects", v))
    assert not wrong
    assert len(rejected) > 40 and len(variants) - len(rejected) > 200  # both kinds are exercised
