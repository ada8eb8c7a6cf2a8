"""A small CuTe DSL tcgen05 GEMM (C = A·Bᵀ, fp16 in, fp32 accumulate, fp16 out), written for tmemlint's tests in
the style of CUTLASS's Python Blackwell examples: one CTA of 128 threads per 128×128 tile of C, TMA loads of A and B
into a 2-stage shared-memory ring, one thread of warp 0 issuing ``tcgen05.mma`` into a 128-column accumulator in
Tensor Memory, and all four warps reading it back (``tcgen05.ld.32x32b``) for the epilogue.

``compile_gemm()`` is the clean kernel.  Two faults, one switch each:

- ``dealloc=False`` leaves out the ``tcgen05.dealloc`` of the accumulator (``TmemAllocator.free``): TM101
  (tmem-leak, at the ``tcgen05.alloc``: the allocation reaches kernel exit);
- ``wait_ld=False`` leaves out ``cute.arch.fence_view_async_tmem_load()`` (``tcgen05.wait::ld``) after the
  epilogue's TMEM loads, so the accumulator is released to the MMA warp (``mbarrier.arrive``) and freed while the
  loads may still be reading it: TM302 (tmem-reuse-before-wait-ld, at the ``tcgen05.ld``).  CUTLASS's first
  Python tutorial GEMM has this shape; the DSL's own docstring of the fence says the release needs it.  Compiles on the CPU with ``CUTE_DSL_ARCH=sm_100a`` (fake tensors, no GPU needed).
"""

from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.memory import SmemAllocator, TmemAllocator

AB_TYPE = cutlass.Float16
ACC_TYPE = cutlass.Float32
MMA_SHAPE_MNK = (128, 128, 16)  # one tcgen05.mma.cta_group::1.kind::f16
TILE_MNK = (128, 128, 64)  # one K tile: 4 MMAs
STAGES = 2
THREADS = 128
ACC_COLUMNS = 128  # the fp32 accumulator of a 128×128 tile: 128 lanes × 128 columns


@cute.struct
class Storage:
    ab_barriers: cute.struct.MemRange[cutlass.Int64, STAGES * 2]
    acc_barriers: cute.struct.MemRange[cutlass.Int64, 2]
    tmem_base: cutlass.Int32


@cute.kernel
def gemm_kernel(mma: cute.TiledMma, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
                mC: cute.Tensor, sA_layout: cute.ComposedLayout, sB_layout: cute.ComposedLayout,
                dealloc: cutlass.Constexpr[bool], wait_ld: cutlass.Constexpr[bool]):
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    bm, bn, _ = cute.arch.block_idx()
    tile = (bm, bn, None)

    smem = SmemAllocator()
    storage = smem.allocate(Storage)
    sA = smem.allocate_tensor(element_type=AB_TYPE, layout=sA_layout.outer, byte_alignment=128,
                              swizzle=sA_layout.inner)
    sB = smem.allocate_tensor(element_type=AB_TYPE, layout=sB_layout.outer, byte_alignment=128,
                              swizzle=sB_layout.inner)

    # warp 0 allocates the accumulator's columns; every warp waits on barrier 1 before reading the address
    tmem = TmemAllocator(storage.tmem_base, barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1,
                                                                                        num_threads=THREADS))
    tmem.allocate(ACC_COLUMNS)

    if warp == 0:
        cpasync.prefetch_descriptor(tma_a)
        cpasync.prefetch_descriptor(tma_b)

    stage_bytes = (cute.size_in_bytes(AB_TYPE, cute.select(sA_layout, mode=[0, 1, 2]))
                   + cute.size_in_bytes(AB_TYPE, cute.select(sB_layout, mode=[0, 1, 2])))
    load_producer, load_consumer = pipeline.PipelineTmaUmma.create(
        num_stages=STAGES,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        tx_count=stage_bytes,
        barrier_storage=storage.ab_barriers.data_ptr(),
    ).make_participants()
    acc_producer, acc_consumer = pipeline.PipelineUmmaAsync.create(
        num_stages=1,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS),
        barrier_storage=storage.acc_barriers.data_ptr(),
    ).make_participants()

    gA = cute.local_tile(mA, TILE_MNK, tile, proj=(1, None, 1))  # (bM, bK, k tiles)
    gB = cute.local_tile(mB, TILE_MNK, tile, proj=(None, 1, 1))  # (bN, bK, k tiles)
    gC = cute.local_tile(mC, TILE_MNK, tile, proj=(1, 1, None))  # (bM, bN)
    thr = mma.get_slice(0)
    tCgA, tCgB, tCgC = thr.partition_A(gA), thr.partition_B(gB), thr.partition_C(gC)
    tCrA, tCrB = mma.make_fragment_A(sA), mma.make_fragment_B(sB)
    acc_layout = mma.make_fragment_C(mma.partition_shape_C(TILE_MNK[:2])).layout
    tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 3),
                                       cute.group_modes(tCgA, 0, 3))
    tBsB, tBgB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 3),
                                       cute.group_modes(tCgB, 0, 3))

    tmem.wait_for_alloc()
    acc = cute.make_tensor(tmem.retrieve_ptr(ACC_TYPE), acc_layout)

    # the epilogue: each thread reads its lane's 32 columns at a time (tcgen05.ld.32x32b.x32)
    chunk = ((cute.size(acc, mode=[0, 0]), 32),)
    acc_chunks = cute.zipped_divide(acc, chunk)
    gC_chunks = cute.zipped_divide(tCgC, chunk)
    t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), ACC_TYPE),
                                 acc_chunks[None, 0])
    t2r_thr = t2r.get_slice(tidx)
    tTR_tAcc = t2r_thr.partition_S(acc_chunks)
    tTR_gC = t2r_thr.partition_D(gC_chunks)
    r_acc = cute.make_rmem_tensor(tTR_gC[None, None, 0].shape, ACC_TYPE)
    r_c = cute.make_rmem_tensor(tTR_gC[None, None, 0].shape, AB_TYPE)

    # mainloop: warp 0 loads (TMA) and issues the MMAs
    if warp == 0:
        acc_empty = acc_producer.acquire_and_advance()
        for k in cutlass.range(cute.size(gA, mode=[2])):
            slot = load_producer.acquire_and_advance()
            cute.copy(tma_a, tAgA[(None, slot.count)], tAsA[(None, slot.index)], tma_bar_ptr=slot.barrier)
            cute.copy(tma_b, tBgB[(None, slot.count)], tBsB[(None, slot.index)], tma_bar_ptr=slot.barrier)
            full = load_consumer.wait_and_advance()
            for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                cute.gemm(mma, acc, tCrA[(None, None, kb, full.index)], tCrB[(None, None, kb, full.index)], acc)
                mma.set(tcgen05.Field.ACCUMULATE, True)
            full.release()
        acc_empty.commit()

    tmem.relinquish_alloc_permit()

    acc_full = acc_consumer.wait_and_advance()
    for i in cutlass.range(cute.size(tTR_tAcc, mode=[2])):
        cute.copy(t2r, tTR_tAcc[None, None, i], r_acc)
        if cutlass.const_expr(wait_ld):
            cute.arch.fence_view_async_tmem_load()  # tcgen05.wait::ld: the columns are read before the release
        r_c.store(r_acc.load().to(AB_TYPE))
        cute.autovec_copy(r_c, tTR_gC[None, None, i])
    acc_full.release()

    if cutlass.const_expr(dealloc):
        pipeline.sync(barrier_id=1)
        tmem.free(acc.iterator)


@cute.jit
def gemm(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, dealloc: cutlass.Constexpr[bool],
         wait_ld: cutlass.Constexpr[bool]):
    mma = cute.make_tiled_mma(tcgen05.MmaF16BF16Op(AB_TYPE, ACC_TYPE, MMA_SHAPE_MNK, tcgen05.CtaGroup.ONE,
                                                   tcgen05.OperandSource.SMEM, cute.nvgpu.OperandMajorMode.K,
                                                   cute.nvgpu.OperandMajorMode.K))
    sA_layout = sm100_utils.make_smem_layout_a(mma, TILE_MNK, a.element_type, STAGES)
    sB_layout = sm100_utils.make_smem_layout_b(mma, TILE_MNK, b.element_type, STAGES)
    load = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
    tma_a, tA = cute.nvgpu.make_tiled_tma_atom_A(load, a, cute.select(sA_layout, mode=[0, 1, 2]), TILE_MNK, mma)
    tma_b, tB = cute.nvgpu.make_tiled_tma_atom_B(load, b, cute.select(sB_layout, mode=[0, 1, 2]), TILE_MNK, mma)
    grid = cute.ceil_div((*c.layout.shape, 1), TILE_MNK[:2])
    gemm_kernel(mma, tma_a, tA, tma_b, tB, c, sA_layout, sB_layout, dealloc, wait_ld).launch(
        grid=grid, block=(THREADS, 1, 1))


def compile_gemm(dealloc: bool = True, wait_ld: bool = True, m: int = 256, n: int = 256, k: int = 256,
                 **compile_args: Any) -> Any:
    """``cute.compile`` of the GEMM for fake K-major fp16 tensors A (m×k), B (n×k) and C (m×n); no GPU needed.
    ``compile_args`` go to ``cute.compile`` (``options=...``)."""
    a = cute.runtime.make_fake_compact_tensor(AB_TYPE, (m, k), stride_order=(1, 0), assumed_align=16)
    b = cute.runtime.make_fake_compact_tensor(AB_TYPE, (n, k), stride_order=(1, 0), assumed_align=16)
    c = cute.runtime.make_fake_compact_tensor(AB_TYPE, (m, n), stride_order=(1, 0), assumed_align=16)
    return cute.compile(gemm, a, b, c, dealloc, wait_ld, **compile_args)
