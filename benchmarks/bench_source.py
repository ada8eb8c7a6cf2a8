"""Speed of source mode (CUDA files linted without a compiler): lines per second over a tree of .cu/.cuh files.

    python benchmarks/bench_source.py                 # fixtures/, examples/ and ../shared/cases
    python benchmarks/bench_source.py DIR_OR_FILE ... # any tree
    python benchmarks/bench_source.py --repeat 5 --cli
    python benchmarks/bench_source.py --generated 150   # one generated 2,446-line kernel: time and peak memory
    python benchmarks/bench_source.py --unreadable 200  # a kernel over 200 generated headers full of #if branches
                                                        # source mode cannot decide: what its TM901 costs

Prints, for the best of ``--repeat`` runs in this process: files, lines, seconds, lines/s, the share of each phase
(preprocessing, tree-sitter parse and definitions, lowering to the IR, analyses and rules) and the slowest files.
``--cli`` also times ``python -m tmemlint FILES`` end to end (interpreter start-up included: what a pre-commit
hook feels).  Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tmemlint.checks.registry import load_all  # noqa: E402
from tmemlint.engine import Options, lint_module, lint_source  # noqa: E402
from tmemlint.frontend.cuda import parse_cuda  # noqa: E402
from tmemlint.frontend.cuda.preprocess import preprocess  # noqa: E402
from tmemlint.frontend.cuda.program import Program  # noqa: E402


def collect(paths: list[str]) -> list[Path]:
    """The .cu/.cuh files under ``paths`` (sorted)."""
    out: list[Path] = []
    for p in paths:
        q = Path(p)
        if q.is_dir():
            out.extend(sorted(x for x in q.rglob("*") if x.suffix in (".cu", ".cuh") and x.is_file()))
        elif q.is_file():
            out.append(q)
    return out


def one_pass(files: list[tuple[Path, str]]) -> tuple[float, dict[str, float], list[tuple[float, str]]]:
    """Seconds for linting every file once, per-phase seconds, and per-file seconds."""
    phases = {"preprocess": 0.0, "parse": 0.0, "lower": 0.0, "rules": 0.0}
    per_file = []
    opts = Options()
    t_all = time.perf_counter()
    for path, text in files:
        t0 = time.perf_counter()
        lint_source(text, str(path), opts)  # the real entry point (what the CLI runs)
        per_file.append((time.perf_counter() - t0, str(path)))
    total = time.perf_counter() - t_all
    # phase split, measured separately on the same inputs
    for path, text in files:
        if "tcgen05" not in text:
            continue
        t0 = time.perf_counter()
        pre = preprocess(text)
        t1 = time.perf_counter()
        Program(pre, str(path))
        t2 = time.perf_counter()
        unit = parse_cuda(text, str(path))
        t3 = time.perf_counter()
        lint_module(unit.module, str(path), opts)
        t4 = time.perf_counter()
        phases["preprocess"] += t1 - t0
        phases["parse"] += t2 - t1
        phases["lower"] += max(0.0, (t3 - t2) - (t2 - t0))  # parse_cuda repeats preprocess + parse
        phases["rules"] += t4 - t3
    return total, phases, per_file


def generated_kernel(steps: int = 150) -> str:
    """A warp-specialised kernel of about 16 lines per step (150 steps: 2,446 lines, 13,000 IR instructions):
    per step an MMA warp issues four tcgen05.mma and a commit, the epilogue warps wait on the mbarrier, load eight
    columns, wait and reduce them with fmaxf; helpers are inlined at every use and the small loops unrolled."""
    head = '''#include <cstdint>
#define DEV __device__ __forceinline__
DEV uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
DEV void fence_before() { asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory"); }
DEV void fence_after() { asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory"); }
DEV void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile("{\\n\\t.reg .pred P1;\\n\\tLAB_WAIT:\\n\\t"
               "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\\n\\t"
               "@P1 bra DONE;\\n\\tbra LAB_WAIT;\\n\\tDONE:\\n\\t}" :: "r"(bar), "r"(parity) : "memory");
}
DEV void mma(uint32_t d, uint64_t a, uint64_t b, uint32_t idesc, uint32_t acc) {
  asm volatile("{\\n\\t.reg .pred p;\\n\\tsetp.ne.b32 p, %4, 0;\\n\\t"
               "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\\n\\t}"
               :: "r"(d), "l"(a), "l"(b), "r"(idesc), "r"(acc));
}
DEV void commit(uint32_t bar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" :: "r"(bar) : "memory");
}
DEV void ld8(uint32_t taddr, float (&v)[8]) {
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8];"
               : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]), "=f"(v[4]), "=f"(v[5]), "=f"(v[6]), "=f"(v[7])
               : "r"(taddr));
}
DEV void wait_ld() { asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory"); }
constexpr uint32_t kCols = 256;
constexpr uint32_t kIdesc = (1u << 4) | (1u << 7) | (1u << 10) | ((128u >> 3) << 17) | ((128u >> 4) << 24);

__global__ void __launch_bounds__(256, 1) big_kernel(float* __restrict__ out, const uint64_t* __restrict__ descs, float scale) {
  __shared__ uint32_t tmem_slot;
  __shared__ alignas(8) uint64_t bars[4];
  const uint32_t warp = threadIdx.x / 32;
  if (warp == 0) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"(smem_u32(&tmem_slot)), "n"(kCols));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
  }
  if (threadIdx.x == 0)
    for (int i = 0; i < 4; ++i) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&bars[i])));
  fence_before();
  __syncthreads();
  fence_after();
  const uint32_t tmem = tmem_slot;
  float acc = 0.f;
'''
    body = []
    for s in range(steps):
        body.append(f'''  // step {s}
  if (warp == 1 && threadIdx.x % 32 == 0) {{
    for (int k = 0; k < 4; ++k)
      mma(tmem + {(s % 2) * 128}, descs[{2 * s} + 2 * k], descs[{2 * s + 1} + 2 * k], kIdesc, k);
    commit(smem_u32(&bars[{s % 4}]));
  }}
  if (warp >= 4) {{
    mbar_wait(smem_u32(&bars[{s % 4}]), {(s // 4) % 2});
    fence_after();
    float v[8];
    ld8(tmem + (((warp % 4) * 32) << 16) + {(s % 2) * 128 + (s % 16) * 8}, v);
    wait_ld();
    for (int i = 0; i < 8; ++i) acc = fmaxf(acc, v[i] * scale);
    out[(blockIdx.x * {steps} + {s}) * 128 + threadIdx.x - 128] = acc;
  }}
  __syncthreads();''')
    tail = '''
  fence_before();
  __syncthreads();
  if (warp == 0) asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(tmem), "n"(kCols));
}
'''
    return head + "\n".join(body) + tail


#: ``python -m tmemlint`` that writes its peak resident memory (kB, ``VmHWM`` of ``/proc/self/status``) last to
#: standard error.  Not ``ru_maxrss`` of the children: Linux keeps a forked child's high-water mark from before
#: its exec, so the child would count this (larger) process.
_PEAK_PROBE = """
import atexit, sys
def _peak():
    try:
        with open("/proc/self/status") as fh:
            kb = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
        sys.__stderr__.write("\\nVMHWM " + kb + "\\n")
    except (OSError, StopIteration):
        pass
atexit.register(_peak)
sys.argv = ["tmemlint"] + sys.argv[1:]
from tmemlint.entry import main
main()
"""


def measure_generated(steps: int, repeat: int) -> None:
    """Source mode on ``generated_kernel(steps)``: the best in-process time of the phases, and the end-to-end time
    and peak resident memory of ``python -m tmemlint`` on it (one child process per run, the package's bytecode
    compiled beforehand as an installed package's is)."""
    text = generated_kernel(steps)
    lines = text.count("\n")
    load_all()
    best = None
    for _ in range(max(1, repeat)):
        gc.disable()  # as engine.lint_source runs them: the cyclic garbage collector paused
        t0 = time.perf_counter()
        unit = parse_cuda(text, "generated.cu")
        t1 = time.perf_counter()
        lint_module(unit.module, "generated.cu", Options())
        t2 = time.perf_counter()
        gc.enable()
        if best is None or t2 - t0 < best[0]:
            best = (t2 - t0, t1 - t0, t2 - t1, len(unit.module.functions[0].instructions))
    total, front, rules, insts = best
    print(f"generated kernel: {lines} lines, {insts} IR instructions; in process (best of {repeat}): {total:.2f} s "
          f"(front end {front:.2f} s, analyses and rules {rules:.2f} s)")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "generated.cu")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        cmd = [sys.executable, "-c", _PEAK_PROBE, "--no-cache", "--format", "concise", path]
        # as installed (pip compiles the bytecode): an editable install run with PYTHONDONTWRITEBYTECODE=1 would
        # compile every module it imports in every run (0.05 s here)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "tmemlint")], capture_output=True,
                       check=False)
        runs = []
        peak = 0
        for _ in range(max(1, repeat)):
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
            runs.append(time.perf_counter() - t0)
            got = proc.stderr.rpartition("VMHWM ")[2].split()
            peak = max(peak, int(got[0]) if got else resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        print(f"  cli end to end: {min(runs):.2f} s (best of {len(runs)}, bytecode compiled), peak resident memory "
              f"{peak / 1024:.0f} MB; load average {os.getloadavg()[0]:.2f}")


def unreadable_tree(root: str, headers: int, ifs: int = 40) -> str:
    """A CUTLASS-like translation unit under ``root``: ``k.cu`` includes ``headers`` headers (each about 20,000
    characters, each including the next), each with ``ifs`` device helpers under ``#if defined(CUTLASS_…)``
    branches that source mode cannot decide, and a kernel calling one helper of each header.  Returns the path
    of ``k.cu``."""
    for h in range(headers):
        parts = [f"#pragma once\n#include \"h{h + 1}.cuh\"\n" if h + 1 < headers else "#pragma once\n"]
        for i in range(ifs):
            parts.append(f"""#if defined(CUTLASS_ARCH_FEATURE_{h}_{i}) && (__CUDACC_VER_MAJOR__ >= 12)
__device__ __forceinline__ void helper_{h}_{i}(unsigned taddr) {{
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");  // the feature's fast path
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}}
#else
__device__ __forceinline__ void helper_{h}_{i}(unsigned taddr) {{ (void)taddr; /* {'x' * 200} */ }}
#endif
""")
        with open(os.path.join(root, f"h{h}.cuh"), "w", encoding="utf-8") as fh:
            fh.write("".join(parts))
    calls = "\n".join(f"  helper_{h}_0(slot);" for h in range(headers))
    path = os.path.join(root, "k.cu")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"""#include "h0.cuh"
__global__ void k(unsigned* out) {{
  __shared__ unsigned slot;
  if (threadIdx.x / 32 == 0)
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 32;" :: "r"((unsigned)__cvta_generic_to_shared(&slot)));
{calls}
}}
""")
    return path


def measure_unreadable(headers: int, repeat: int) -> None:
    """``python -m tmemlint`` on ``unreadable_tree(headers)``: end-to-end time, CPU time and peak resident memory of
    the process until it reports what it cannot read (TM901), and that report's first words."""
    with tempfile.TemporaryDirectory() as tmp:
        path = unreadable_tree(tmp, headers)
        size = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp))
        cmd = [sys.executable, "-c", _PEAK_PROBE, "--no-cache", "--format", "concise", path]
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "tmemlint")], capture_output=True,
                       check=False)
        runs, cpu, peak, out = [], [], 0, ""
        for _ in range(max(1, repeat)):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
            runs.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            got = proc.stderr.rpartition("VMHWM ")[2].split()
            peak = max(peak, int(got[0]) if got else 0)
            out = proc.stdout
        tm901 = [ln for ln in out.splitlines() if "TM901" in ln]
        print(f"unreadable tree: {headers} headers, {size / 1e6:.1f} MB of text; cli end to end {min(runs):.2f} s "
              f"(best of {len(runs)}), CPU {min(cpu):.2f} s, peak resident memory {peak / 1024:.0f} MB; "
              f"load average {os.getloadavg()[0]:.2f}; {len(tm901)} TM901")
        for ln in tm901[:2]:
            print("  " + ln[:220])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cli", action="store_true", help="also time `python -m tmemlint FILES` end to end")
    ap.add_argument("--generated", type=int, metavar="STEPS", help="measure one generated kernel of STEPS steps")
    ap.add_argument("--unreadable", type=int, metavar="HEADERS",
                    help="measure a kernel over HEADERS generated headers of undecidable #if branches")
    args = ap.parse_args(argv)
    if args.generated:
        measure_generated(args.generated, args.repeat)
        return
    if args.unreadable:
        measure_unreadable(args.unreadable, args.repeat)
        return
    paths = args.paths or [str(ROOT / "fixtures"), str(ROOT / "examples"), str(ROOT.parent / "shared" / "cases")]
    files = [(p, p.read_text(encoding="utf-8", errors="replace")) for p in collect(paths)]
    if not files:
        print("no .cu/.cuh files found")
        return
    lines = sum(t.count("\n") for _, t in files)
    load_all()
    one_pass(files[:1])  # warm-up: grammar, tree-sitter language, rule registry
    best = None
    for _ in range(max(1, args.repeat)):
        got = one_pass(files)
        if best is None or got[0] < best[0]:
            best = got
    total, phases, per_file = best
    split = sum(phases.values()) or 1.0
    print(f"source mode: {len(files)} files, {lines} lines, {total:.3f} s (best of {args.repeat}): "
          f"{lines / total:,.0f} lines/s, {1000 * total / len(files):.1f} ms/file")
    print("  phases: " + ", ".join(f"{k} {100 * v / split:.0f}%" for k, v in phases.items()))
    for secs, name in sorted(per_file, reverse=True)[:5]:
        print(f"  slowest: {1000 * secs:7.1f} ms  {os.path.relpath(name)}")
    if args.cli:
        cmd = [sys.executable, "-m", "tmemlint", "--format", "concise", "--jobs", "1", *[str(p) for p, _ in files]]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False)
        dt = time.perf_counter() - t0
        print(f"cli end to end (one process, start-up included): {dt:.2f} s, {lines / dt:,.0f} lines/s")


if __name__ == "__main__":
    main()
