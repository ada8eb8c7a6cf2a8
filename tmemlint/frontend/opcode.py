"""Where ptxas allows blank space inside an instruction's opcode.

PTX ISA §9.1 writes an instruction as its name followed by ``.qualifier``s, and ptxas reads the qualifiers as
tokens of their own: blank space (newlines and comments included) may stand before any ``.qualifier`` that
follows the instruction *name*, as in TileLang's ``cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::
complete_tx::bytes .L2::cache_hint [...]`` or ``add .s32 .sat``.  Never after a dot, nor around ``::`` (``.cta_group
::1`` and ``.cta_group:: 1`` are syntax errors).

The name itself cannot be split, and for many instructions the name has several components: ptxas knows
``mbarrier.try_wait.parity`` as a name distinct from ``mbarrier.try_wait``, ``mul.wide`` from ``mul``,
``tcgen05.alloc`` (there is no ``tcgen05`` instruction), so ``mbarrier.try_wait .parity``, ``mul .wide`` and
``tcgen05 .alloc`` are rejected.  ``INSTRUCTION_NAMES`` lists the names with more than one component as ptxas
13.0 reads them (found by inserting a space before every ``.`` of every opcode of the fixtures and corpora, and
of the PTX ISA's forms of the instructions below, and assembling: ``tests/test_opcode_spacing.py`` repeats the
check where ptxas is installed).  The name of an opcode is the longest entry that is a prefix of it ending at a
component boundary; with none, its first component, except for the ``FAMILIES`` (first components that are not
instructions by themselves), whose name is at least their first two components.  An opcode outside the table is
therefore read as ptxas reads it or more leniently, never more strictly.
"""

from __future__ import annotations

#: Instruction names of more than one component, as ptxas 13.0 reads them (``instruction_name`` takes the longest
#: that is a prefix of the opcode).
INSTRUCTION_NAMES: frozenset[str] = frozenset({
    "bar.arrive", "bar.cta", "bar.cta.arrive", "bar.red", "bar.warp",
    "barrier.arrive", "barrier.cluster.arrive", "barrier.cluster.wait", "barrier.cta", "barrier.cta.arrive",
    "barrier.red",
    "brx.idx",
    "clusterlaunchcontrol.query_cancel", "clusterlaunchcontrol.try_cancel.async",
    "cp.async", "cp.async.bulk", "cp.async.bulk.commit_group", "cp.async.bulk.prefetch",
    "cp.async.bulk.prefetch.tensor", "cp.async.bulk.tensor", "cp.async.bulk.wait_group", "cp.async.commit_group",
    "cp.async.mbarrier.arrive", "cp.async.wait_all", "cp.async.wait_group", "cp.reduce.async.bulk",
    "cp.reduce.async.bulk.tensor",
    "createpolicy.fractional",
    "cvta.to",
    "div.full",
    "fence.proxy",
    "mad.hi", "mad.lo", "mad.wide", "mad24.hi", "mad24.lo",
    "mbarrier.arrive", "mbarrier.arrive.expect_tx", "mbarrier.arrive_drop", "mbarrier.arrive_drop.expect_tx",
    "mbarrier.complete_tx", "mbarrier.expect_tx", "mbarrier.init", "mbarrier.inval", "mbarrier.pending_count",
    "mbarrier.test_wait", "mbarrier.test_wait.parity", "mbarrier.try_wait", "mbarrier.try_wait.parity",
    "mul.hi", "mul.lo", "mul.wide", "mul24.hi", "mul24.lo",
    "multimem.ld_reduce", "multimem.red", "multimem.st",
    "red.async",
    "setmaxnreg.dec", "setmaxnreg.inc",
    "shf.l", "shf.r",
    "st.async", "st.bulk",
    "tcgen05.alloc", "tcgen05.commit", "tcgen05.cp", "tcgen05.dealloc", "tcgen05.fence::after_thread_sync",
    "tcgen05.fence::before_thread_sync", "tcgen05.ld", "tcgen05.ld.red", "tcgen05.mma",
    "tcgen05.mma.ws", "tcgen05.relinquish_alloc_permit", "tcgen05.shift", "tcgen05.st",
    "tcgen05.wait::ld", "tcgen05.wait::st",
    "tensormap.cp_fenceproxy", "tensormap.replace",
})

#: First components that are no instruction by themselves (ptxas: "Not a name of any known instruction").
FAMILIES: frozenset[str] = frozenset({
    "brx", "clusterlaunchcontrol", "cp", "createpolicy", "mad24", "mbarrier", "mul24", "multimem", "setmaxnreg",
    "shf", "tcgen05", "tensormap", "wgmma",
})


def instruction_name(opcode: str) -> str:
    """The part of ``opcode`` (written without blanks) that ptxas reads as the instruction's name: no blank may
    stand inside it.  See the module docstring."""
    parts = opcode.split(".")
    for k in range(len(parts), 1, -1):
        cand = ".".join(parts[:k])
        if cand in INSTRUCTION_NAMES:
            return cand
    if parts[0] in FAMILIES and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0]
