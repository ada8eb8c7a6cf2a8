// Persistent, warp-specialized MXFP8 GEMM for sm_100a: D (bf16, row-major) = alpha * (A x SFA) * (B x SFB)^T.
// A: M x K e4m3, B: N x K e4m3 (both K-major, loaded by TMA with 128B swizzle); SFA/SFB: UE8M0 scales, one per
// 32 elements of K, pre-packed per (block, K block) as BLOCK x 4 bytes and loaded with 1D bulk copies.
//
// Roles (DeepGEMM-like layout, 256 threads):
//   warp 0    TMA producer (one elected thread), also prefetches the tensor maps and initialises the barriers
//   warp 1    MMA issuer (one elected thread): tcgen05.cp of the scale factors, then tcgen05.mma block_scale
//   warp 2    TMEM allocator: allocates at the start, frees at the end after a CTA barrier
//   warp 3    idle
//   warps 4-7 epilogue warpgroup: warp w reads TMEM lanes 32*(w%4) .. +31 with tcgen05.ld, converts, stores
// TMEM (512 columns): two accumulator stages of BLOCK_N columns at 0 and BLOCK_N, SFA at 256, SFB at 260.
// Same kernel as gemm_blockscaled_good.cu with one realistic fault (TM101 tmem-leak): CTAs that get no tile
// (grid sized to the SM count, problem smaller than that) return right after the setup barrier, so warp 2
// exits with its 512 TMEM columns allocated. The next CTA scheduled on that SM then spins in tcgen05.alloc.
#include <cstdint>
#include <cuda.h>
#include <cuda_bf16.h>

constexpr uint32_t BLOCK_M = 128, BLOCK_N = 128, BLOCK_K = 128, UMMA_K = 32;
constexpr uint32_t kStages = 5, kAccStages = 2, kGroupM = 8;
constexpr uint32_t kNumThreads = 256, kFirstEpilogueWarp = 4, kNumEpilogueWarps = 4;
constexpr uint32_t kTileABytes = BLOCK_M * BLOCK_K, kTileBBytes = BLOCK_N * BLOCK_K;
constexpr uint32_t kSFABytes = BLOCK_M * 4, kSFBBytes = BLOCK_N * 4;
constexpr uint32_t kStageBytes = kTileABytes + kTileBBytes + kSFABytes + kSFBBytes;
constexpr uint32_t kAccCols = kAccStages * BLOCK_N;
constexpr uint32_t kSFACol = kAccCols, kSFBCol = kSFACol + BLOCK_M / 32;
constexpr uint32_t aligned_tmem_cols(uint32_t n) { uint32_t c = 32; while (c < n) c <<= 1; return c; }
constexpr uint32_t kTmemCols = aligned_tmem_cols(kSFBCol + BLOCK_N / 32);
static_assert(kTmemCols == 512, "two accumulator stages + scale factors");

// kind::mxf8f6f4 instruction descriptor: A/B e4m3 (0), K-major, N>>3 at bits 17-22, UE8M0 scales (bit 23),
// M>>7 at bits 27-28, and SFA_ID/SFB_ID (bits 29-30 / 4-5) = which byte of the scale word this UMMA uses.
__host__ __device__ constexpr uint32_t make_idesc(uint32_t m, uint32_t n, uint32_t sf_id) {
  return (sf_id << 4) | ((n >> 3) << 17) | (1u << 23) | ((m >> 7) << 27) | (sf_id << 29);
}

struct alignas(1024) SharedStorage {
  uint8_t a[kStages][kTileABytes];
  uint8_t b[kStages][kTileBBytes];
  uint32_t sfa[kStages][BLOCK_M], sfb[kStages][BLOCK_N];
  uint64_t full_bar[kStages], empty_bar[kStages];
  uint64_t tmem_full_bar[kAccStages], tmem_empty_bar[kAccStages];
  uint32_t tmem_ptr;
};

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ bool elect_one_sync() {
  uint32_t pred = 0;
  asm volatile("{\n\t.reg .b32 %%rx;\n\t.reg .pred %%px;\n\telect.sync %%rx|%%px, %1;\n\t@%%px mov.s32 %0, 1;\n\t}"
               : "+r"(pred) : "r"(0xffffffffu));
  return pred != 0;
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile("{\n\t.reg .pred P1;\n\tLAB_WAIT:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
               "@P1 bra DONE;\n\tbra LAB_WAIT;\n\tDONE:\n\t}" :: "r"(smem_u32(bar)), "r"(parity) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int32_t x, int32_t y) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(smem_u32(dst)), "l"(src), "r"(bytes), "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ uint64_t make_smem_desc_sw128(const void* p) {  // K-major, SBO 1024 B, version bit 46
  return uint64_t((smem_u32(p) & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 46) | (2ull << 61);
}
__device__ __forceinline__ uint64_t make_sf_desc(const void* p) {
  return uint64_t((smem_u32(p) & 0x3FFFF) >> 4) | (8ull << 32) | (1ull << 46);
}
__device__ __forceinline__ void tcgen05_before_sync() { asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory"); }
__device__ __forceinline__ void tcgen05_after_sync() { asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory"); }
__device__ __forceinline__ void utccp_32x128b_warpx4(uint32_t taddr, uint64_t sdesc) {
  asm volatile("tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1; // expect: TM307" :: "r"(taddr), "l"(sdesc));
}
__device__ __forceinline__ void umma_mxf8f6f4(uint32_t d, uint64_t adesc, uint64_t bdesc, uint32_t idesc,
                                              uint32_t sfa, uint32_t sfb, bool accumulate) {
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %6, 0;\n\t"
               "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X [%0], %1, %2, %3, [%4], [%5], p;\n\t}"
               :: "r"(d), "l"(adesc), "l"(bdesc), "r"(idesc), "r"(sfa), "r"(sfb), "r"(uint32_t(accumulate)));
}
__device__ __forceinline__ void umma_commit(uint64_t* bar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" :: "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void tmem_load_32x32b_x8(uint32_t taddr, uint32_t (&v)[8]) {
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8];"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]), "=r"(v[4]), "=r"(v[5]), "=r"(v[6]), "=r"(v[7])
               : "r"(taddr));
}
__device__ __forceinline__ void tmem_load_wait() { asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory"); }

struct TileScheduler {  // persistent, grouped rasterization: kGroupM M-blocks share each N-block sweep (L2 reuse)
  uint32_t num_m, num_n, tile;
  __device__ bool next(uint32_t& mb, uint32_t& nb) {
    if (tile >= num_m * num_n) return false;
    const uint32_t per_group = kGroupM * num_n, first_m = tile / per_group * kGroupM;
    const uint32_t group_m = min(num_m - first_m, kGroupM), in_group = tile % per_group;
    mb = first_m + in_group % group_m;
    nb = in_group / group_m;
    tile += gridDim.x;
    return true;
  }
};

__global__ void __launch_bounds__(kNumThreads, 1)
mxfp8_gemm_bf16_kernel(const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b,
                       const uint32_t* __restrict__ sfa, const uint32_t* __restrict__ sfb,
                       __nv_bfloat16* __restrict__ d, uint32_t shape_m, uint32_t shape_n, uint32_t shape_k, float alpha) {
  extern __shared__ __align__(1024) uint8_t smem_buf[];
  SharedStorage& smem = *reinterpret_cast<SharedStorage*>(smem_buf);
  const uint32_t warp_idx = __shfl_sync(0xffffffffu, threadIdx.x / 32, 0);
  const uint32_t lane_idx = threadIdx.x % 32;
  const uint32_t num_m = shape_m / BLOCK_M, num_n = shape_n / BLOCK_N, num_kb = shape_k / BLOCK_K;

  // ---- setup: barriers (warp 0), TMEM allocation (warp 2), then publish the TMEM address to every warp
  if (warp_idx == 0 && elect_one_sync()) {
    asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<uint64_t>(&tmap_a)) : "memory");
    asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<uint64_t>(&tmap_b)) : "memory");
    for (uint32_t i = 0; i < kStages; ++i) { mbar_init(&smem.full_bar[i], 1); mbar_init(&smem.empty_bar[i], 1); }
    for (uint32_t i = 0; i < kAccStages; ++i) {
      mbar_init(&smem.tmem_full_bar[i], 1);
      mbar_init(&smem.tmem_empty_bar[i], kNumEpilogueWarps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  } else if (warp_idx == 2) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1; // expect: TM101"
                 :: "r"(smem_u32(&smem.tmem_ptr)), "r"(kTmemCols) : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
  }
  tcgen05_before_sync();
  __syncthreads();
  tcgen05_after_sync();
  const uint32_t tmem_base = smem.tmem_ptr;
  if (blockIdx.x >= num_m * num_n) return;  // no tile for this CTA: nothing to do (skips the teardown below)
  TileScheduler sched{num_m, num_n, blockIdx.x};
  uint32_t mb, nb;

  if (warp_idx == 0) {
    // ---- TMA producer
    if (elect_one_sync()) {
      uint32_t stage = 0, phase = 0;
      while (sched.next(mb, nb)) {
#pragma unroll 1
        for (uint32_t kb = 0; kb < num_kb; ++kb) {
          mbar_wait(&smem.empty_bar[stage], phase ^ 1);
          mbar_arrive_expect_tx(&smem.full_bar[stage], kStageBytes);
          tma_load_2d(smem.a[stage], &tmap_a, &smem.full_bar[stage], kb * BLOCK_K, mb * BLOCK_M);
          tma_load_2d(smem.b[stage], &tmap_b, &smem.full_bar[stage], kb * BLOCK_K, nb * BLOCK_N);
          bulk_load(smem.sfa[stage], sfa + (size_t(mb) * num_kb + kb) * BLOCK_M, kSFABytes, &smem.full_bar[stage]);
          bulk_load(smem.sfb[stage], sfb + (size_t(nb) * num_kb + kb) * BLOCK_N, kSFBBytes, &smem.full_bar[stage]);
          stage = stage + 1 == kStages ? 0 : stage + 1;
          phase ^= stage == 0;
        }
      }
    }
  } else if (warp_idx == 1) {
    // ---- MMA issuer: scale factors to TMEM with tcgen05.cp, then 4 UMMAs (K = 32 each) per K block
    if (elect_one_sync()) {
      uint32_t stage = 0, phase = 0, local = 0;
      for (; sched.next(mb, nb); ++local) {
        const uint32_t acc = local % kAccStages, acc_phase = (local / kAccStages) & 1;
        mbar_wait(&smem.tmem_empty_bar[acc], acc_phase ^ 1);
        tcgen05_after_sync();
        const uint32_t d_tmem = tmem_base + acc * BLOCK_N;
#pragma unroll 1
        for (uint32_t kb = 0; kb < num_kb; ++kb) {
          mbar_wait(&smem.full_bar[stage], phase);
          tcgen05_after_sync();
          utccp_32x128b_warpx4(tmem_base + kSFACol, make_sf_desc(smem.sfa[stage]));
          utccp_32x128b_warpx4(tmem_base + kSFBCol, make_sf_desc(smem.sfb[stage]));
          const uint64_t a_desc = make_smem_desc_sw128(smem.a[stage]), b_desc = make_smem_desc_sw128(smem.b[stage]);
#pragma unroll
          for (uint32_t k = 0; k < BLOCK_K / UMMA_K; ++k)
            umma_mxf8f6f4(d_tmem, a_desc + k * (UMMA_K >> 4), b_desc + k * (UMMA_K >> 4), make_idesc(BLOCK_M, BLOCK_N, k),
                          tmem_base + kSFACol, tmem_base + kSFBCol, kb > 0 || k > 0);
          umma_commit(&smem.empty_bar[stage]);
          stage = stage + 1 == kStages ? 0 : stage + 1;
          phase ^= stage == 0;
        }
        umma_commit(&smem.tmem_full_bar[acc]);
      }
    }
  } else if (warp_idx >= kFirstEpilogueWarp) {
    // ---- epilogue: TMEM -> registers -> alpha scale -> bf16 -> global
    const uint32_t lane_quad = warp_idx % 4;
    for (uint32_t local = 0; sched.next(mb, nb); ++local) {
      const uint32_t acc = local % kAccStages, acc_phase = (local / kAccStages) & 1;
      mbar_wait(&smem.tmem_full_bar[acc], acc_phase);
      tcgen05_after_sync();
      const uint32_t row = mb * BLOCK_M + lane_quad * 32 + lane_idx;
      const uint32_t taddr = tmem_base + ((lane_quad * 32) << 16) + acc * BLOCK_N;
      __nv_bfloat16* out = d + size_t(row) * shape_n + nb * BLOCK_N;
#pragma unroll
      for (uint32_t c = 0; c < BLOCK_N; c += 8) {
        uint32_t v[8];
        tmem_load_32x32b_x8(taddr + c, v);
        tmem_load_wait();
        uint4 packed;
        uint32_t* p = reinterpret_cast<uint32_t*>(&packed);
#pragma unroll
        for (uint32_t i = 0; i < 4; ++i) {
          const __nv_bfloat162 h = __floats2bfloat162_rn(alpha * __uint_as_float(v[2 * i]), alpha * __uint_as_float(v[2 * i + 1]));
          p[i] = *reinterpret_cast<const uint32_t*>(&h);
        }
        *reinterpret_cast<uint4*>(out + c) = packed;
      }
      tcgen05_before_sync();
      __syncwarp();
      if (lane_idx == 0) mbar_arrive(&smem.tmem_empty_bar[acc]);
    }
  }

  // ---- teardown: all TMEM traffic is finished before the allocating warp frees the columns
  tcgen05_before_sync();
  __syncthreads();
  if (warp_idx == 2) {
    tcgen05_after_sync();
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(tmem_base), "r"(kTmemCols) : "memory");
  }
}
