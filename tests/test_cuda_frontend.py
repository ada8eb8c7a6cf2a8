"""Source mode piece by piece: the preprocessor, asm statements, the C++ lowering, bad input, and the command
line (-D, --compile, folders of .cu files)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT
from tmemlint.compile import CompileError, compile_to_ptx, nvcc_command
from tmemlint.engine import Options, expand_paths, lint_bytes, lint_source
from tmemlint.frontend.cuda import parse_cuda
from tmemlint.frontend.cuda.preprocess import preprocess
from tmemlint.ir import Imm, Reg, Sym

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")

HELPERS = """#include <cstdint>
#define DEV __device__ __forceinline__
DEV uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
"""
# A kernel that allocates COLS columns in warp 0 and frees them at the end (lines 4-18 after HELPERS).
KERNEL = HELPERS + """__global__ void __launch_bounds__(128) k(float* out) {
  __shared__ uint32_t slot;
  if (threadIdx.x / 32 == 0) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"(smem_u32(&slot)), "n"(COLS));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
  }
  asm volatile("tcgen05.fence::before_thread_sync;");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;");
  const uint32_t base = slot;
  BODY
  __syncthreads();
  if (threadIdx.x / 32 == 0)
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(base), "n"(COLS));
}
"""


def kernel(cols: str = "128", body: str = "out[threadIdx.x] = 0.f;", before: str = "") -> str:
    return before + KERNEL.replace("COLS", cols).replace("BODY", body)


def found(src: str, defines: dict | None = None, codes: set | None = None) -> list[tuple[int, str]]:
    opts = Options(codes=codes)
    opts.defines = dict(defines or {})
    return sorted((f.line, f.code) for f in lint_source(src, "k.cu", opts))


def lowered(src: str, defines: dict | None = None):
    unit = parse_cuda(src, "k.cu", defines)
    assert len(unit.module.functions) == 1, unit.diagnostics
    return unit.module.functions[0]


# ---------------------------------------------------------------------------------------------- preprocessor


def test_clean_kernel_and_bad_column_count():
    assert found(kernel()) == []
    assert found(kernel("96")) == [(7, "TM102"), (17, "TM102")]


def test_if_on_cuda_arch_takes_the_device_branch():
    src = kernel("COLS_", before="#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000\n#define COLS_ 96\n#else\n"
                                 "#define COLS_ 128\n#endif\n")
    assert found(src) == [(12, "TM102"), (22, "TM102")]


def test_defines_decide_an_ifdef():
    src = kernel("COLS_", before="#ifdef WIDE\n#define COLS_ 96\n#else\n#define COLS_ 128\n#endif\n")
    assert found(src) == []
    assert found(src, {"WIDE": "1"}) == [(12, "TM102"), (22, "TM102")]
    assert found(kernel("N_COLS"), {"N_COLS": "48"}) == [(7, "TM102"), (17, "TM102")]


def test_undecidable_if_is_reported_not_guessed():
    body = "#ifdef FEATURE\n  out[0] = 1.f;\n#endif"
    src = '#include "config.h"\n' + kernel("96", body=body)
    got = lint_source(src, "k.cu", Options())
    assert [(f.line, f.code) for f in got] == [(15, "TM901")]
    assert "function k is not analysed" in got[0].message and "#ifdef FEATURE" in got[0].message
    assert found(src, {"FEATURE": "1"}) == [(8, "TM102"), (20, "TM102")]


def test_include_guard_and_system_headers_are_decidable():
    src = "#ifndef K_CU\n#define K_CU\n" + kernel("96") + "#endif\n"
    assert found(src) == [(9, "TM102"), (19, "TM102")]


def test_function_like_macro_builds_the_asm_text():
    before = ('#define TMEM_FREE(a, n) asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, " #n ";" '
              ':: "r"(a))\n')
    src = before + kernel("128").replace(
        'asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(base), "n"(128));',
        "TMEM_FREE(base, 64);")
    fn = lowered(src)
    frees = [i for i in fn.instructions if i.family == "tcgen05.dealloc"]
    assert [(i.span.line, i.operands[1]) for i in frees] == [(18, Imm(64))]


def test_unroll_pragmas_become_statement_attributes():
    pre = preprocess("CUTLASS_PRAGMA_NO_UNROLL\nfor (;;) {}\n#pragma unroll 4\nfor (;;) {}\n")
    assert pre.text == "[[tmemlint::unroll(1)]]\nfor (;;) {}\n[[tmemlint::unroll(4)]]                \nfor (;;) {}\n"
    assert pre.map.line_col(pre.text.index("for")) == (2, 1)
    assert pre.map.line_col(pre.text.rindex("[[")) == (3, 1)


def test_unbraced_nested_loops_with_pragmas():
    body = ("#pragma unroll\n  for (int i = 0; i < 4; ++i)\n#pragma unroll\n    for (int j = 0; j < 4; ++j)\n"
            "      asm volatile(\"tcgen05.fence::after_thread_sync;\");")
    fn = lowered(kernel(body=body))
    assert sum(1 for i in fn.instructions if i.family == "tcgen05.fence::after_thread_sync") == 1 + 16


def test_code_the_parser_cannot_read_is_not_guessed():
    got = lint_source(kernel(body="int x = ;"), "k.cu", Options())
    assert [(f.line, f.code) for f in got] == [(14, "TM901")]
    assert got[0].message == "function k is not analysed: the C++ parser could not read the code at this line"


def test_positions_survive_macro_expansion():
    pre = preprocess("#define DEV __device__ __forceinline__\nDEV int f() { return 1; }\n")
    i = pre.text.index("int")
    assert pre.map.line_col(i) == (2, 5)
    assert pre.map.line_col(pre.text.index("__forceinline__")) == (2, 1)


# ---------------------------------------------------------------------------------------------- asm statements


def test_concatenated_pieces_map_each_instruction_to_its_own_line():
    body = ('asm volatile("{\\n\\t.reg .pred p;\\n\\tsetp.ne.b32 p, %0, 0;\\n\\t"\n'
            '               "@p tcgen05.fence::before_thread_sync;\\n\\t}" :: "r"(base));')
    fn = lowered(kernel(body=body))
    setp = next(i for i in fn.instructions if i.op == "setp" and i.span.line == 14)
    fence = next(i for i in fn.instructions if i.span.line == 15)
    assert (setp.span.column, fence.span.column, fence.span.end_column) == (39, 17, 54)
    assert fence.guard.reg == setp.operands[0]  # the scope-local predicate, renamed per asm instance


def test_operand_forms():
    body = ('uint32_t r;\n  asm volatile("mov.b32 %[dst], %%tid.x;\\n\\tadd.u32 %[dst], %[dst], %1;" '
            ': [dst] "=r"(r) : "n"(7));\n  out[r] = 1.f;')
    fn = lowered(kernel(body=body))
    mov, add = [i for i in fn.instructions if i.span.line == 15][:2]
    assert mov.operands[1] == Reg("%tid.x")
    assert add.operands[0] == mov.operands[0] and add.operands[2] == Imm(7)


def test_percent_equals_numbers_each_asm_instance_as_nvcc_does():
    """``%=`` is the number of the asm instance (nvcc 13.0 gives ``WAIT_0``, ``WAIT_1`` to the two inlined copies
    of a helper, then 2 to the next asm statement); ``%%`` is a literal ``%``."""
    src = HELPERS + """DEV void spin(uint32_t v) {
  asm volatile("{\\n\\t.reg .pred p;\\n\\tWAIT_%=:\\n\\tsetp.ne.u32 p, %0, 0;\\n\\t@p bra WAIT_%=;\\n\\t}" :: "r"(v));
}
__global__ void k(uint32_t* o) {
  spin(o[0]);
  spin(o[1]);
  uint32_t x;
  asm volatile("mov.u32 %0, %=;  // 100%% %%laneid" : "=r"(x));
  o[2] = x;
  asm volatile("tcgen05.fence::before_thread_sync;");
}
"""
    fn = parse_cuda(src, "k.cu").module.functions[0]
    assert sorted(n.split("@")[0] for n in fn.labels) == ["WAIT_0", "WAIT_1"]
    mov = next(i for i in fn.instructions if i.op == "mov" and i.span.line == 11)
    assert mov.operands[1] == Imm(2)


def test_invalid_ptx_in_asm_is_tm900_at_the_asm_text():
    got = found(kernel(body='asm volatile("tcgen05.fence::before_thread_sync");'))  # no ';'
    assert got == [(14, "TM900")]


def test_asm_text_from_an_unknown_macro_is_tm901():
    got = lint_source(kernel(body="asm volatile(TMEM_FENCE_TEXT);"), "k.cu", Options())
    assert [(f.line, f.code) for f in got] == [(14, "TM901")]
    assert got[0].message == ("asm statement not analysed: its text is built from 'TMEM_FENCE_TEXT', which is not "
                              "defined in this file; its instructions are skipped")


# ---------------------------------------------------------------------------------------------- lowering


def test_shared_struct_field_is_the_slot_at_its_offset():
    src = HELPERS + """struct alignas(16) Storage { uint64_t bars[3]; uint32_t pad; uint32_t tmem_slot; };
__global__ void k() {
  extern __shared__ __align__(1024) uint8_t smem[];
  Storage& s = *reinterpret_cast<Storage*>(smem);
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 32;" :: "r"(smem_u32(&s.tmem_slot)));
  uint32_t t = s.tmem_slot;
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 32;" :: "r"(t));
}
"""
    fn = lowered(src)
    ld = next(i for i in fn.instructions if i.opcode.startswith("ld.shared"))
    assert ld.operands[1].base == Sym("smem") and ld.operands[1].offset == 28
    mov = next(i for i in fn.instructions if i.op == "mov" and i.operands[1] == Sym("smem", 28))
    assert mov.span.line == 8


def test_constant_trip_loops_are_unrolled():
    loop = "{}\n  for (int i = 0; i < {}; ++i) asm volatile(\"tcgen05.fence::after_thread_sync;\");"
    count = lambda fn: sum(1 for i in fn.instructions if i.family == "tcgen05.fence::after_thread_sync")  # noqa: E731
    assert count(lowered(kernel(body=loop.format("", 64)))) == 1 + 64
    assert count(lowered(kernel(body=loop.format("#pragma unroll 1", 64)))) == 1 + 64  # exact values, same program
    assert count(lowered(kernel(body=loop.format("", 65)))) == 1 + 1
    assert count(lowered(kernel(body=loop.format("#pragma unroll 1", 65)))) == 1 + 1
    assert count(lowered(kernel(body=loop.format("#pragma unroll", 65)))) == 1 + 65


def test_loops_are_rotated_as_nvcc_emits_them():
    """``for``/``while`` loops: the condition is tested once before the loop, where the counter has only its
    initial definition (the zero-trip branch of ``for (k = 0; k < n; ++k)`` compares ``0 < n``, as in nvcc's PTX),
    then at the bottom (LLVM's loop rotation); ``continue`` goes to the bottom test."""
    body = ("int n = int(out[1]);\n  for (int k = 0; k < n; ++k) asm volatile(\"tcgen05.fence::after_thread_sync;\");\n"
            "  int w = 0;\n  while (w < n) { ++w; continue; }")
    fn = lowered(kernel(body=body))
    at = {n: i for n, i in fn.labels.items()}
    flow = [(i.index, i.span.line, i.opcode, i.guard.negated if i.guard else None, at[i.operands[0].name])
            for i in fn.instructions if i.op == "bra" and i.span.line in (15, 17)]
    assert flow == [(15, 15, "bra", True, 21), (20, 15, "bra", False, 16),  # for: guard to the end, bottom to the body
                    (23, 17, "bra", True, 29), (26, 17, "bra", None, 27), (28, 17, "bra", False, 24)]  # while
    guard = fn.instructions[14]
    assert (guard.opcode, guard.operands[1]) == ("setp.lt.s32", fn.instructions[13].operands[0])  # k, after k = 0
    assert (fn.instructions[13].opcode, fn.instructions[13].operands[1]) == ("mov.s32", Imm(0))
    assert fn.instructions[16].family == "tcgen05.fence::after_thread_sync"


def test_loop_counter_initialised_in_the_preheader_and_dead_flags_dropped():
    """``frontend.cuda.cleanup``: ``int it = 0`` read only inside the following loop is initialised after the
    zero-trip test, as nvcc does; ``bool seen`` only ever set to constants and never read is not lowered at all;
    ``int last = 0`` read after the loop stays before the test."""
    body = ("int n = int(out[1]);\n  bool seen = false;\n  int it = 0, last = 0;\n"
            "  for (int t = 0; t < n; ++t) { seen = true; out[it] = 0.f; ++it; last = t; }\n  out[2] = last;")
    fn = lowered(kernel(body=body))
    at = {i: n for n, i in fn.labels.items()}
    rows = [(i.index, i.opcode, i.operands[0].name if i.operands and hasattr(i.operands[0], "name") else None)
            for i in fn.instructions if i.span.line in (15, 16, 17)]
    assert not any(name and name.startswith("%seen") for _, _, name in rows)
    guard = next(i for i in fn.instructions if i.op == "bra" and i.guard is not None and i.span.line == 17)
    it0 = next(i for i in fn.instructions if i.opcode == "mov.s32" and i.operands[0].name.startswith("%it_"))
    last0 = next(i for i in fn.instructions if i.opcode == "mov.s32" and i.operands[0].name.startswith("%last_"))
    assert (last0.index < guard.index, it0.index, at.get(it0.index + 1, "")[:6]) == (True, guard.index + 1, "$L_for")


def test_vector_struct_copy_into_shared_memory_is_a_load_and_a_store():
    """``sA[i] = A[i]`` of ``uint4`` (a producer filling a shared tile): one vector load of the source and one vector
    store into shared memory, as nvcc emits (``ld.global.nc.v4.u32`` / ``st.shared.v4.u32``)."""
    body = ("__shared__ uint4 sA[64];\n  const uint4* A = reinterpret_cast<const uint4*>(out);\n"
            "  sA[threadIdx.x % 64] = A[threadIdx.x];\n  __syncwarp();")
    fn = lowered(kernel(body=body))
    got = [(i.span.line, i.opcode, len(i.operands[1].items) if i.op == "st" else len(i.operands[0].items))
           for i in fn.instructions if i.span.line == 16 and i.op in ("ld", "st")]
    assert got == [(16, "ld.v4.u32", 4), (16, "st.shared.v4.u32", 4)]


def test_constexpr_function_with_a_loop_is_evaluated():
    before = ("constexpr uint32_t cols_for(uint32_t n) { uint32_t c = 32; while (c < n) c *= 2; "
              "return c - 16 * (n == 300); }\n")
    assert found(kernel("cols_for(300)", before=before)) == [(8, "TM102"), (18, "TM102")]
    assert found(kernel("cols_for(200)", before=before)) == []


def test_raii_allocator_destructor_runs_on_return():
    src = HELPERS + """struct Tmem {
  uint32_t base;
  DEV Tmem(uint32_t* slot) {
    if (threadIdx.x / 32 == 0)
      asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 128;" :: "r"(smem_u32(slot)));
    __syncthreads();
    base = *slot;
  }
  DEV ~Tmem() {
    __syncthreads();
    if (threadIdx.x / 32 == 0) asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 128;" :: "r"(base));
  }
};
__global__ void __launch_bounds__(128) k(int n) {
  __shared__ uint32_t slot;
  Tmem t(&slot);
  if (n == 0) return;
  asm volatile("tcgen05.fence::after_thread_sync;");
}
"""
    fn = lowered(src)
    assert sum(1 for i in fn.instructions if i.family == "tcgen05.dealloc") == 2  # the return and the end
    assert found(src, codes={"TM101"}) == []
    assert found(src.replace("DEV ~Tmem()", "DEV void release()"), codes={"TM101"}) == [(8, "TM101")]


def test_warp_category_ternary_becomes_a_warp_predicate():
    src = HELPERS + """enum class Role : int { kAlloc = 0, kMma = 1, kEpi = 4 };
__global__ void __launch_bounds__(256) k() {
  __shared__ uint32_t slot;
  const int warp = threadIdx.x / 32;
  const Role role = warp < 4 ? static_cast<Role>(warp) : Role::kEpi;
  const bool is_alloc = role == Role::kAlloc;
  if (is_alloc)
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 32;" :: "r"(smem_u32(&slot)));
  __syncthreads();
  if (is_alloc) asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 32;" :: "r"(slot));
}
"""
    fn = lowered(src)
    setp = [i for i in fn.instructions if i.op == "setp"]
    assert [(i.opcode, i.operands[2]) for i in setp] == [("setp.lt.s32", Imm(4)), ("setp.le.u32", Imm(0))]
    assert found(src) == []


def test_lane_conditions_are_lane_varying():
    src = kernel(body='if (threadIdx.x % 32 == 0) asm volatile("tcgen05.wait::ld.sync.aligned;");')
    assert found(src, codes={"TM109"}) == [(14, "TM109")]


# ---------------------------------------------------------------------------------------------- bad input


_TOKENS = list("{}()[];:,.<>#&|!=+-*/%^~?\"' \n\tabcxyz019_") + [
    "asm", "volatile", "__global__", "void", "if", "for", "while", "return", "tcgen05.alloc", "#define", "#if",
    "#endif", "template", "struct", "%0", '"r"', "__shared__", "threadIdx.x", "uint32_t"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=200).map("".join))
def test_any_text_gives_findings_not_tracebacks(text):
    res = lint_source(text + "\n// tcgen05", "fuzz.cu", Options())
    assert all(f.code.startswith("TM") for f in res)


def test_binary_and_deep_input():
    res = lint_bytes(b"\x00\x01tcgen05\xff", "bin.cu", Options())
    assert [f.code for f in res.findings] == ["TM900"]
    deep = kernel(body="(" * 5000 + "1" + ")" * 5000 + ";")
    assert {c for _l, c in found(deep)} <= {"TM901"}


def test_huge_unroll_hits_the_instruction_budget():
    body = ("#pragma unroll\n  for (int i = 0; i < 250; ++i)\n#pragma unroll\n    for (int j = 0; j < 250; ++j)\n"
            "      asm volatile(\"tcgen05.fence::after_thread_sync;\");")
    got = lint_source(kernel(body=body), "k.cu", Options())
    assert [(f.line, f.code) for f in got] == [(4, "TM901")]
    assert "more than 60000 instructions" in got[0].message


# ---------------------------------------------------------------------------------------------- engine and CLI


def test_folders_hold_cu_and_cuh_and_named_headers_are_read(tmp_path):
    for name in ("a.cu", "b.cuh", "c.h", "d.ptx", "e.cpp"):
        (tmp_path / name).write_text(kernel("96"))
    files, missing = expand_paths([str(tmp_path)])
    assert [os.path.basename(f) for f in files] == ["a.cu", "b.cuh", "d.ptx"] and missing == []
    out = subprocess.run([sys.executable, "-P", "-m", "tmemlint", "--format", "concise", str(tmp_path / "c.h")],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 1
    assert [line.split(": ")[1].split()[0] for line in out.stdout.splitlines()] == ["TM102", "TM102"]


def _cli(*args, env=None, cwd=ROOT):
    return subprocess.run([sys.executable, "-P", "-m", "tmemlint", "--format", "concise", *args], capture_output=True,
                          text=True, cwd=cwd, env=env)


def test_cli_define(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(kernel("COLS_", before="#ifdef WIDE\n#define COLS_ 96\n#else\n#define COLS_ 128\n#endif\n"))
    assert _cli(str(src)).returncode == 0
    out = _cli("-D", "WIDE", str(src))
    assert out.returncode == 1 and out.stdout.count("TM102") == 2


def test_compile_without_nvcc_is_a_clear_error(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(kernel("96"))
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
    env["PATH"] = str(tmp_path)  # no nvcc here
    out = subprocess.run([sys.executable, "-P", "-m", "tmemlint", "--compile", str(src)], capture_output=True, text=True,
                         cwd=ROOT, env=env)
    assert out.returncode == 2
    assert out.stderr.splitlines()[0] == (f"tmemlint: {src}: --compile needs nvcc: it is not on PATH and CUDA_HOME/"
                                          f"bin has none")
    assert "Traceback" not in out.stderr


def test_nvcc_command_is_an_argument_list():
    assert nvcc_command("nvcc", "k.cu", "/t/out.ptx", ["-I", "inc"], {"A": "1"}) == [
        "nvcc", "-I", "inc", "-DA=1", "-arch=sm_100a", "-ptx", "-lineinfo", "-o", "/t/out.ptx", "k.cu"]
    assert nvcc_command("nvcc", "k.cuh", "o.ptx", ["-arch=sm_103a"]) == [
        "nvcc", "-arch=sm_103a", "-ptx", "-lineinfo", "-o", "o.ptx", "-x", "cu", "k.cuh"]


@needs_nvcc
def test_compile_error_is_reported_with_nvcc_message(tmp_path):
    src = tmp_path / "broken.cu"
    src.write_text("__global__ void k() { undeclared_thing(); }\n")
    out = _cli("--compile", str(src))
    assert out.returncode == 2
    assert out.stderr.startswith(f"tmemlint: {src}: nvcc failed (exit 1):\n")
    assert 'identifier "undeclared_thing" is undefined' in out.stderr
    with pytest.raises(CompileError):
        compile_to_ptx(src.read_text(), str(src))


@needs_nvcc
def test_compile_mode_writes_nothing_next_to_the_source(tmp_path):
    src = tmp_path / "k.cu"
    text = kernel("COLS_", before="#ifndef COLS_\n#define COLS_ 128\n#endif\n")
    src.write_text(text.replace('"n"(COLS_)', '"r"(COLS_)'))
    out = _cli("--compile", "--nvcc-arg=-DCOLS_=96", str(src))
    assert out.returncode == 1
    assert [line.split(":")[1] for line in out.stdout.splitlines()] == ["10", "20"]
    assert sorted(os.listdir(tmp_path)) == ["k.cu"]


def test_language_server_lints_cuda_documents():
    pytest.importorskip("pygls")
    from tmemlint.server import wants

    assert [wants(p) for p in ("/x/k.cu", "/x/k.cuh", "/x/k.ptx", "/x/k.cpp")] == [True, True, True, False]


def test_a_translation_unit_past_the_budget_is_one_tm901_at_its_include(tmp_path, monkeypatch):
    """More than ``MAX_UNIT_CHARS`` with its headers: source mode stops at the header that crosses it and says so
    at the main file's #include (TM901), instead of reading CUTLASS-sized trees for a minute."""
    from tmemlint.frontend.cuda import preprocess as pp

    monkeypatch.setattr(pp, "MAX_UNIT_CHARS", 5000)
    for i in range(5):
        nxt = f'#include "h{i + 1}.cuh"\n' if i < 4 else ""
        (tmp_path / f"h{i}.cuh").write_text(f"#pragma once\n{nxt}// {'x' * 2000}\n")
    k = tmp_path / "k.cu"
    k.write_text('// kernel\n#include "h0.cuh"\n__global__ void k() { asm volatile("tcgen05.fence::before_thread_sync;"); }\n')
    unit = parse_cuda(k.read_text(), str(k))
    assert [(d.code, d.span.line) for d in unit.diagnostics] == [("TM901", 2)]
    assert '"h2.cuh"' in unit.diagnostics[0].message and unit.module.functions == []
