// Benchmark input for tmemlint (not a test fixture): a template-heavy CUDA file in the style of CUTLASS-like
// libraries. One kernel template, instantiated for many tile shapes and epilogue variants, with small inlined
// helpers (so -lineinfo emits many `.loc ... inlined_at` lines) and fully unrolled epilogues.
// Built at benchmark time by benchmarks/bench.py:
//   nvcc -arch=sm_100a -ptx -lineinfo template_gemms.cu -o <tmpdir>/template_gemms.ptx
#include <cstdint>

#define DEV __device__ __forceinline__

DEV uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
DEV uint32_t warp_idx() { return __shfl_sync(0xffffffffu, threadIdx.x / 32, 0); }
DEV void fence_before() { asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory"); }
DEV void fence_after() { asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory"); }
DEV void cta_sync() { fence_before(); __syncthreads(); fence_after(); }
DEV void tmem_alloc(uint32_t* slot, uint32_t cols) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"(smem_u32(slot)), "r"(cols));
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
}
DEV void tmem_free(uint32_t taddr, uint32_t cols) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(taddr), "r"(cols));
}
DEV void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(bar)), "r"(count));
}
DEV void mbar_wait(uint64_t* bar, uint32_t phase) {
  asm volatile("{\n .reg .pred P1;\n LAB_WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
               " @P1 bra DONE;\n bra LAB_WAIT;\n DONE:\n }" :: "r"(smem_u32(bar)), "r"(phase));
}
DEV void mma_f16(uint32_t d, uint64_t a, uint64_t b, uint32_t idesc, uint32_t acc) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %4, 0;\n"
               " tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n }"
               :: "r"(d), "l"(a), "l"(b), "r"(idesc), "r"(acc));
}
DEV void commit(uint64_t* bar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" :: "r"(smem_u32(bar)));
}
DEV void ld16(uint32_t taddr, float (&v)[16]) {
  uint32_t r[16];
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x16.b32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, [%16];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]),
                 "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15])
               : "r"(taddr));
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
#pragma unroll
  for (int i = 0; i < 16; ++i) v[i] = __uint_as_float(r[i]);
}
template <int V> DEV float epilogue_op(float x, float bias) {
  if constexpr (V == 0) return x + bias;
  else if constexpr (V == 1) return fmaxf(x + bias, 0.f);
  else if constexpr (V == 2) return (x + bias) / (1.f + __expf(-(x + bias)));
  else if constexpr (V == 3) return tanhf(x) * bias;
  else if constexpr (V == 4) return x * bias + __sinf(x);
  else if constexpr (V == 5) return fminf(fmaxf(x, -bias), bias);
  else if constexpr (V == 6) return __logf(1.f + __expf(x)) * bias;
  else return x * x * bias;
}

template <int N, int KSTEPS, int V>
__global__ void __launch_bounds__(128, 1) gemm_kernel(const uint64_t* adesc, const uint64_t* bdesc,
                                                     const float* bias, float* out, int tiles) {
  __shared__ uint32_t tmem_slot;
  __shared__ uint64_t mma_done;
  // two accumulator stages (double-buffered), rounded up to a power of two (nCols rule, PTX ISA 9.7.16.7.1)
  constexpr uint32_t kCols = 2 * N <= 128 ? 2 * N : (2 * N <= 256 ? 256 : 512);
  constexpr uint32_t kIdesc = (1u << 4) | ((N >> 3) << 17) | ((128 >> 4) << 24);
  const uint32_t warp = warp_idx();
  if (warp == 0) tmem_alloc(&tmem_slot, kCols);
  if (threadIdx.x == 0) mbar_init(&mma_done, 1);
  cta_sync();
  const uint32_t tmem = tmem_slot;
  uint32_t phase = 0;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const uint32_t acc = tmem + (tile & 1) * N;  // this tile's accumulator stage
    if (threadIdx.x == 0) {
#pragma unroll
      for (int k = 0; k < KSTEPS; ++k) mma_f16(acc, adesc[tile * KSTEPS + k], bdesc[k], kIdesc, k > 0);
      commit(&mma_done);
    }
    mbar_wait(&mma_done, phase);
    phase ^= 1;
    fence_after();
    const uint32_t row = acc + (((warp % 4) * 32) << 16);
    if (tile & 1) {
#pragma unroll
      for (int c = 0; c < N; c += 16) {
        float v[16];
        ld16(row + c, v);
#pragma unroll
        for (int i = 0; i < 16; ++i)
          out[(tile * 128 + threadIdx.x) * N + c + i] = epilogue_op<V>(v[i], bias[c + i]);
      }
    } else {
#pragma unroll
      for (int c = 0; c < N; c += 16) {
        float v[16];
        ld16(row + c, v);
#pragma unroll
        for (int i = 0; i < 16; ++i)
          out[(tile * 128 + threadIdx.x) * N + c + i] = epilogue_op<(V + 1) % 8>(v[i], bias[N - 1 - c - i]);
      }
    }
    cta_sync();
  }
  cta_sync();
  if (warp == 0) tmem_free(tmem, kCols);
}

#define INST(N, K, V) \
  template __global__ void gemm_kernel<N, K, V>(const uint64_t*, const uint64_t*, const float*, float*, int);
#define INST_V(N, K) INST(N, K, 0) INST(N, K, 1) INST(N, K, 2) INST(N, K, 3) \
  INST(N, K, 4) INST(N, K, 5) INST(N, K, 6) INST(N, K, 7)
// BENCH_SCALE 1: 40 kernels; 2 (default): 136 kernels, over 500k PTX lines.
#ifndef BENCH_SCALE
#define BENCH_SCALE 2
#endif
INST_V(64, 4) INST_V(128, 8) INST_V(256, 16) INST_V(256, 4) INST_V(128, 16)
#if BENCH_SCALE >= 2
INST_V(64, 8) INST_V(64, 16) INST_V(128, 4) INST_V(256, 8) INST_V(256, 32)
INST_V(128, 32) INST_V(64, 32) INST_V(256, 64) INST_V(128, 64) INST_V(64, 64)
INST_V(192, 8) INST_V(192, 16)
#endif
