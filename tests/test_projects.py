"""Source mode on projects laid out as real ones are (issue 14): kernels whose helpers, constants and macros live
in quoted-included headers (fixtures/projects), checked against the expectations written in every file of the
project, in source mode and in compile mode; and the pieces: include search, TM901 where source mode cannot see,
reads of tcgen05.ld results through calls, lambdas, compile_commands.json, compile-mode paths."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, expectations, needs_ptxas
from tmemlint.compdb import flags_for, parse_arguments
from tmemlint.config import Overrides, Settings
from tmemlint.engine import Options, lint_file, lint_source

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")
PROJECTS = FIXTURES / "projects"
_HEADERS = (".cu", ".cuh", ".h", ".hpp")


def _projects() -> list:
    return [pytest.param(p, id=p.name) for p in sorted(PROJECTS.iterdir()) if p.is_dir() and any(p.rglob("*.cu"))]


def _kernel(project: Path) -> Path:
    (cu,) = sorted(project.rglob("*.cu"))
    return cu


def _expected(project: Path) -> set[tuple[str, int, str]]:
    """``(path relative to the project, line, code)`` of every ``// expect:`` in the project's files."""
    out = set()
    for f in sorted(project.rglob("*")):
        if f.suffix in _HEADERS:
            lines, file_codes = expectations(f)
            assert not file_codes, "projects expect on lines only"
            out |= {(f.relative_to(project).as_posix(), n, c) for n, c in lines}
    return out


_EXTEND = re.compile(r"//\s*tmemlint-test:\s*extend-select=([A-Z0-9, ]+)")


def _extra(project: Path) -> set[str]:
    """The opt-in rules a ``// tmemlint-test: extend-select=TM301`` comment in one of the project's files names
    (as in the fixtures of ``test_fixtures``)."""
    return {c.strip() for f in sorted(project.rglob("*")) if f.suffix in _HEADERS
            for m in _EXTEND.finditer(f.read_text(encoding="utf-8", errors="replace"))
            for c in m.group(1).split(",") if c.strip()}


def _with_extra(project: Path, opts: Options) -> Options:
    """``opts`` with the project's ``_extra`` rules added to its enabled ones."""
    import dataclasses

    from tmemlint.checks.registry import RULES

    extra = _extra(project)
    if not extra:
        return opts
    base = opts.codes if opts.codes is not None else {c for c, r in RULES.items() if r.enabled}
    return dataclasses.replace(opts, codes=set(base) | extra)


def _found(findings) -> set[tuple[str, int, str]]:
    return {(Path(os.path.normpath(f.path)).as_posix(), f.line, f.code) for f in findings}


def _configured(project: Path, kernel: Path) -> Options:
    """The project's options, as the command line resolves them from its tmemlint.toml."""
    return Settings(None, False, Overrides()).options_for(str(kernel.relative_to(project)))


@pytest.mark.parametrize("project", _projects())
def test_source_mode_meets_the_project_expectations(project, monkeypatch):
    monkeypatch.chdir(project)
    kernel = _kernel(project).relative_to(project)
    opts = _configured(project, project / kernel)
    assert opts.include_dirs  # include-dirs of the project's tmemlint.toml
    res = lint_file(str(kernel), options=_with_extra(project, opts))
    assert sorted(_found(res.findings)) == sorted(_expected(project))


@pytest.mark.parametrize("project", _projects())
def test_the_include_folder_above_the_kernel_is_found_without_configuration(project, monkeypatch):
    monkeypatch.chdir(project)
    kernel = _kernel(project).relative_to(project)
    assert sorted(_found(lint_file(str(kernel), options=_with_extra(project, Options())).findings)) \
        == sorted(_expected(project))


@pytest.mark.parametrize("project", _projects())
def test_a_folder_search_of_the_project_gives_the_same_findings(project):
    """``tmemlint .`` in the project: its headers are checked too, on their own (no finding that depends on the
    kernel around a helper), and the kernel's findings in them are reported once."""
    out = _cli(".", *(f"--extend-select={c}" for c in sorted(_extra(project))), cwd=project)
    got = {(p, int(n), c) for p, n, c in re.findall(r"^(\S+):(\d+):\d+: (TM\d+)", out.stdout, flags=re.M)}
    assert sorted(got) == sorted(_expected(project)), out.stdout + out.stderr


@needs_nvcc
@pytest.mark.parametrize("project", _projects())
def test_compile_mode_gives_the_same_findings(project, monkeypatch):
    monkeypatch.chdir(project)
    kernel = _kernel(project).relative_to(project)
    res = lint_file(str(kernel), options=_with_extra(project, Options(compile=True, include_dirs=("include",))))
    assert res.error is None
    assert sorted(_found(res.findings)) == sorted(_expected(project))


@needs_nvcc
@needs_ptxas
@pytest.mark.parametrize("project", _projects())
def test_nvcc_ptx_of_the_project_assembles(project, tmp_path):
    ptx = tmp_path / "k.ptx"
    subprocess.run(["nvcc", "-arch=sm_100a", "-ptx", "-lineinfo", "-Iinclude", "-o", str(ptx),
                    str(_kernel(project).relative_to(project))], cwd=project, check=True, capture_output=True)
    subprocess.run(["ptxas", "-arch=sm_100a", str(ptx), "-o", os.devnull], check=True, capture_output=True)


# ------------------------------------------------------------------------------------------- include search

HELPERS = """#pragma once
#include <cstdint>
constexpr uint32_t kCols = 96;
__device__ __forceinline__ void tmem_alloc(uint32_t* slot, uint32_t cols) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"((uint32_t)__cvta_generic_to_shared(slot)), "r"(cols));
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
}
__device__ __forceinline__ void tmem_free(uint32_t base, uint32_t cols) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(base), "r"(cols));
}
"""
KERNEL = """#include "tmem_helpers.cuh"
__global__ void k(float* out) {
  __shared__ uint32_t slot;
  if (threadIdx.x / 32 == 0) tmem_alloc(&slot, kCols);
  __syncthreads();
  out[threadIdx.x] = 1.f;
}
"""


def _layout(tmp_path: Path, kernel: str = KERNEL, helpers: str = HELPERS, folder: str = "third_party/tk") -> Path:
    (tmp_path / folder).mkdir(parents=True)
    (tmp_path / folder / "tmem_helpers.cuh").write_text(helpers)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "k.cu").write_text(kernel)
    return tmp_path / "app" / "k.cu"


def test_a_helper_in_a_header_not_found_is_tm901_at_the_call(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _layout(tmp_path)
    (f,) = lint_file("app/k.cu").findings
    assert (f.path, f.line, f.column, f.code) == ("app/k.cu", 4, 30, "TM901")
    assert "k calls tmem_alloc" in f.message and "tmem_helpers.cuh" in f.message
    assert "-I DIR" in f.message and "--compile" in f.message and "-p build/" in f.message


def test_include_dirs_find_the_header_and_its_findings_are_in_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _layout(tmp_path)
    got = lint_file("app/k.cu", options=Options(include_dirs=("third_party/tk",))).findings
    assert sorted((f.path, f.line, f.column, f.code) for f in got) == [
        ("third_party/tk/tmem_helpers.cuh", 5, 17, "TM101"), ("third_party/tk/tmem_helpers.cuh", 5, 17, "TM102")]
    leak = next(f for f in got if f.code == "TM101")
    assert [(r.path, r.line, r.message) for r in leak.related] == [
        ("app/k.cu", 7, "the kernel exits here with the allocation live (warp 0)"),
        ("app/k.cu", 4, "called from here (inlined)")]


def test_include_dirs_key_of_the_configuration(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _layout(tmp_path)
    (tmp_path / "tmemlint.toml").write_text('include-dirs = ["third_party/tk"]\n')
    opts = Settings(None, False, Overrides()).options_for("app/k.cu")
    assert opts.include_dirs == (str(tmp_path / "third_party" / "tk"),)
    assert {f.code for f in lint_file("app/k.cu", options=opts).findings} == {"TM101", "TM102"}


def test_bad_include_dirs_value_is_a_configuration_error(tmp_path):
    from tmemlint.config import ConfigError

    (tmp_path / "tmemlint.toml").write_text('include-dirs = "include"\n')
    with pytest.raises(ConfigError, match=r"include-dirs.*list of folder names"):
        Settings(None, False, Overrides()).options_for(str(tmp_path / "k.cu"))


def test_relative_includes_guards_pragma_once_and_alternative_tokens(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "inc" / "detail").mkdir(parents=True)
    (tmp_path / "inc" / "api.cuh").write_text(
        '#ifndef API\n#define API\n#include "detail/cols.cuh"\n#include "detail/cols.cuh"\n#endif\n')
    (tmp_path / "inc" / "detail" / "cols.cuh").write_text(
        "#pragma once\n#if defined(__CUDA_ARCH__) and not defined(NARROW) or defined(WIDE)\n"
        "#define COLS 96\n#else\n#define COLS 128\n#endif\nconstexpr int kTwice = 1;\n")
    src = ('#include "inc/api.cuh"\n#include "inc/api.cuh"\n__global__ void k() {\n  __shared__ unsigned s;\n'
           '  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :: '
           '"r"((unsigned)__cvta_generic_to_shared(&s)), "n"(COLS));\n}\n')
    (tmp_path / "k.cu").write_text(src)
    got = lint_source(src, "k.cu", Options(codes={"TM102", "TM900", "TM901"}))
    assert [(f.line, f.code) for f in got] == [(5, "TM102")]  # one copy of kTwice: no redefinition
    opts = Options(codes={"TM102", "TM900", "TM901"}, defines={"NARROW": "1"})
    assert lint_source(src, "k.cu", opts) == []


def test_kernels_that_touch_no_tmem_stay_silent(tmp_path):
    src = ('#include <cub/cub.cuh>\n#include "missing_but_harmless.h"\n__global__ void k(float* x, float m) {\n'
           '  x[threadIdx.x] = fmaxf(__expf(x[threadIdx.x]), m) + make_float2(1.f, 2.f).x;\n'
           '  cub::WarpReduce<float>::TempStorage* t = nullptr; (void)t;\n}\n')
    assert lint_source(src, str(tmp_path / "k.cu")) == []


def test_a_function_declared_without_a_body_is_tm901_and_blind_rules_are_dropped():
    src = ("__device__ void tmem_alloc_elsewhere(unsigned* slot);  // defined in another .cu (-rdc)\n"
           "__global__ void k() {\n  __shared__ unsigned s;\n  if (threadIdx.x < 32) tmem_alloc_elsewhere(&s);\n"
           "  __syncthreads();\n"
           '  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 128;" :: "r"(s));\n}\n')
    got = lint_source(src, "k.cu")
    assert [(f.line, f.column, f.code) for f in got] == [(4, 25, "TM901")]  # no TM104 guessed for the dealloc
    assert "k calls tmem_alloc_elsewhere" in got[0].message


def test_a_prototype_alone_in_a_file_without_includes_is_not_a_silent_pass():
    src = ("__device__ void tmem_alloc_elsewhere(unsigned* slot);\n__global__ void k() {\n  __shared__ unsigned s;\n"
           "  if (threadIdx.x < 32) tmem_alloc_elsewhere(&s);\n}\n")
    assert [(f.line, f.code) for f in lint_source(src, "k.cu")] == [(4, "TM901")]
    assert lint_source("__device__ float sq(float x);\n__global__ void k(float* o) { o[0] = 1.f; }\n", "k.cu") == []


def test_a_macro_that_makes_a_helper_unreadable_suggests_a_define():
    src = ("#include <mylib/config.h>\nMYLIB_DEVICE void tmem_alloc(unsigned* s) {\n"
           '  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 96;" :: '
           '"r"((unsigned)__cvta_generic_to_shared(s)));\n}\n'
           "__global__ void k() {\n  __shared__ unsigned s;\n  if (threadIdx.x < 32) tmem_alloc(&s);\n}\n")
    (f,) = lint_source(src, "k.cu")
    assert f.code == "TM901" and "MYLIB_DEVICE is probably a macro" in f.message
    assert "-D MYLIB_DEVICE=" in f.message
    opts = Options(defines={"MYLIB_DEVICE": "__device__ __forceinline__"})
    assert sorted((f.line, f.code) for f in lint_source(src, "k.cu", opts)) == [(3, "TM101"), (3, "TM102")]


# ------------------------------------------------------------------------- reads through calls, lambdas

LD_KERNEL = """#include <cstdint>
__device__ __forceinline__ float sum2(const float* v) { return v[0] + v[1]; }
__global__ void __launch_bounds__(128) k(float* out, float m) {
  __shared__ uint32_t slot;
  auto warp_idx = [] { return __shfl_sync(0xffffffff, threadIdx.x / 32, 0); };
  const uint32_t warp = warp_idx();
  if (warp == 0) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 128;" :: "r"((uint32_t)__cvta_generic_to_shared(&slot)));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
  }
  asm volatile("tcgen05.fence::before_thread_sync;");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;");
  const uint32_t base = slot + ((warp * 32) << 16);
  float r[2];
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x2.b32 {%0, %1}, [%2];" : "=f"(r[0]), "=f"(r[1]) : "r"(base));
  READ
  asm volatile("tcgen05.wait::ld.sync.aligned;");
  out[threadIdx.x] = r[0];
  asm volatile("tcgen05.fence::before_thread_sync;");
  __syncthreads();
  if (warp == 0) asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 128;" :: "r"(slot));
}
"""


@pytest.mark.parametrize("read", ["float a = fmaxf(r[0], m); (void)a;", "float2 b = make_float2(r[0], r[1]); (void)b;",
                                  "float c = sum2(r); (void)c;", "float d = __expf(r[1]); (void)d;",
                                  "__nv_bfloat162 h = __float22bfloat162_rn({r[0], r[1]}); (void)h;"])
def test_a_loaded_register_passed_to_a_function_is_a_read(read):
    got = lint_source(LD_KERNEL.replace("READ", read), "k.cu", Options(codes={"TM301"}))
    assert [(f.line, f.code) for f in got] == [(17 if "sum2" not in read else 2, "TM301")]


def test_lambda_and_shfl_warp_roles_are_warp_predicates():
    assert lint_source(LD_KERNEL.replace("READ", ""), "k.cu") == []
    bad = LD_KERNEL.replace("if (warp == 0) {", "if ([&] { return warp < 2; }()) {")
    # warps 0 and 1 allocate, warp 0 alone frees: the same findings as nvcc's PTX gives
    assert [(f.line, f.code) for f in lint_source(bad.replace("READ", ""), "k.cu")] == [(8, "TM101"), (8, "TM108")]


# ---------------------------------------------------------------------------- compile_commands.json

def test_compile_commands_give_include_folders_defines_and_nvcc_flags(tmp_path):
    flags = parse_arguments(str(tmp_path), ["nvcc", "-Iinclude", "-I", "/opt/x", "--include-path=gen", "-DA=1",
                                            "-D", "B", "-std=c++17", "--expt-relaxed-constexpr", "-gencode",
                                            "arch=compute_100a,code=sm_100a", "-o", "k.o", "-c", "k.cu",
                                            "-isystem", "sys", "-Xcompiler", "-fPIC"])
    assert flags.include_dirs == [str(tmp_path / "include"), "/opt/x", str(tmp_path / "gen"), str(tmp_path / "sys")]
    assert flags.defines == ["A=1", "B"]
    assert flags.nvcc_args == [f"-I{tmp_path / 'include'}", "-I/opt/x", f"-I{tmp_path / 'gen'}", "-std=c++17",
                               "--expt-relaxed-constexpr", f"-I{tmp_path / 'sys'}", "-Xcompiler", "-fPIC"]


def _cmake_project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    shutil.copytree(PROJECTS / "ncols_from_header_bad", project)
    (project / "tmemlint.toml").unlink()
    build = project / "build"
    build.mkdir()
    cmd = f"nvcc -DBLOCK_N=128 -I{project / 'include'} -std=c++17 -o k.o -c {project / 'kernels' / 'zero_accum.cu'}"
    (build / "compile_commands.json").write_text(json.dumps([
        {"directory": str(build), "command": cmd, "file": str(project / "kernels" / "zero_accum.cu")}]))
    return project


def test_build_path_flags_for_a_file(tmp_path):
    project = _cmake_project(tmp_path)
    flags = flags_for(str(project / "build"), str(project / "kernels" / "zero_accum.cu"))
    assert flags.include_dirs == [str(project / "include")] and flags.defines == ["BLOCK_N=128"]
    assert flags_for(str(project / "build"), str(project / "other.cu")) is None


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-P", "-m", "tmemlint", "--no-cache", "--format", "concise", *args],
                          capture_output=True, text=True, cwd=cwd, env=dict(os.environ, NO_COLOR="1"))


def test_cli_build_path_and_include_option(tmp_path):
    project = _cmake_project(tmp_path)
    shutil.move(project / "include", project / "headers")  # not where the include/ fallback looks
    db = project / "build" / "compile_commands.json"
    db.write_text(db.read_text().replace(str(project / "include"), str(project / "headers")))
    want = ["kernels/zero_accum.cu:10:5: TM102", "kernels/zero_accum.cu:24:5: TM102"]
    for args in (["-p", "build"], ["-I", "headers"]):
        out = _cli(*args, "kernels/zero_accum.cu", cwd=project)
        assert [x.split(" [")[0] for x in out.stdout.splitlines()] == want, out.stderr
        assert out.returncode == 1
    out = _cli("-p", "nowhere", "kernels/zero_accum.cu", cwd=project)
    assert out.returncode == 2 and "compile_commands.json" in out.stderr and "Traceback" not in out.stderr


@needs_nvcc
def test_cli_compile_mode_with_build_path(tmp_path):
    project = _cmake_project(tmp_path)
    out = _cli("--compile", "-p", "build", "kernels/zero_accum.cu", cwd=project)
    assert [x.split(" [")[0] for x in out.stdout.splitlines()] == [
        "kernels/zero_accum.cu:10:5: TM102", "kernels/zero_accum.cu:24:5: TM102"], out.stderr


# ---------------------------------------------------------------------------- compile-mode paths

LIB_PTX = """.version 9.0
.target sm_100a
.address_size 64
.file 1 "{lib}"
.file 2 "{user}"
.visible .entry k()
{{
\t.reg .b32 %r<3>;
\t.shared .align 4 .b32 slot;
\tmov.u32 %r1, slot;
\t.loc 1 10 3, function_name $L__info_string0, inlined_at 2 7 5
\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 96;
\t.loc 2 9 1
\tret;
}}
\t.section\t.debug_str
\t{{
$L__info_string0:
.b8 102,0
\t}}
"""


def test_a_finding_in_a_library_header_moves_to_the_users_call(tmp_path, monkeypatch):
    from tmemlint.compile import map_findings
    from tmemlint.engine import lint_module
    from tmemlint.frontend.parser import parse_text

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    lib = tmp_path / "toolkit" / "include" / "tmem_lib.hpp"
    module = parse_text(LIB_PTX.format(lib=lib, user=work / "k.cu"), "k.ptx")
    got = map_findings(lint_module(module, "k.ptx", Options(codes={"TM102"})), module, "k.cu")
    assert [(f.path, f.line, f.column, f.code) for f in got] == [("k.cu", 7, 5, "TM102")]
    assert (str(lib), 10, "in this library header") in {(r.path, r.line, r.message) for r in got[0].related}


def test_compile_mode_paths_are_relative_to_the_current_folder(tmp_path, monkeypatch):
    from tmemlint.compile import _SourceMapper
    from tmemlint.ir import Module

    monkeypatch.chdir(tmp_path)
    m = _SourceMapper(Module("k.ptx", "9.0", ["sm_100a"], 64), "src/k.cu")
    assert m.file(str(tmp_path / "include" / "h.cuh")) == os.path.join("include", "h.cuh")
    assert m.file("/tmp/tmemlint-nvcc-abc123/k.cu") == "src/k.cu"  # nvcc's copy of standard input
    assert re.fullmatch(r"/\S+", m.file("/elsewhere/h.cuh"))  # outside the current folder: as nvcc names it
    assert ROOT.is_dir()


# ---------------------------------------------------------------------- C++ of hand-written kernels

TEMPLATE_KERNEL = """#include <cstdint>
#define DEVICE __device__ __forceinline__
DEVICE uint32_t elect_sync() {
  uint32_t pred = 0;
  asm volatile("{\\n\\t.reg .pred P1;\\n\\telect.sync _|P1, %1;\\n\\tselp.b32 %0, 1, 0, P1;\\n\\t}" : "+r"(pred) : "r"(0xFFFFFFFF));
  return pred;
}
template <int NUM> DEVICE void ld_32x32b(float (&tmp)[NUM], uint32_t taddr);
template <> DEVICE void ld_32x32b<2>(float (&tmp)[2], uint32_t taddr) {
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x2.b32 {%0, %1}, [%2];" : "=f"(tmp[0]), "=f"(tmp[1]) : "r"(taddr));
}
template <int BLOCK_N>
__global__ __launch_bounds__(128) void k(float* out) {
  __shared__ int slot;
  const int warp_id = threadIdx.x / 32;
  if (warp_id == 0 && elect_sync()) {
    out[0] = 0.f;
  } else if (warp_id == 1) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"((int)__cvta_generic_to_shared(&slot)), "r"(BLOCK_N));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
  }
  asm volatile("tcgen05.fence::before_thread_sync;");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;");
  float tmp[2];
  ld_32x32b<2>(tmp, slot + ((warp_id * 32) << 16));
  asm volatile("tcgen05.wait::ld.sync.aligned;");
  out[threadIdx.x] = tmp[0] + tmp[1];
  asm volatile("tcgen05.fence::before_thread_sync;");
  __syncthreads();
  if (warp_id == 1) asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(slot), "r"(BLOCK_N));
}
void launch(float* out) { k<COLS><<<1, 128>>>(out); }
"""


def test_template_kernel_is_lowered_per_launched_instantiation_with_explicit_specialisations():
    # the alloc in `else if (warp_id == 1)` after `if (warp_id == 0 && elect_sync())`: warp 1 never meets the
    # lane-varying elect (no TM109); the explicit specialisation ld_32x32b<2> is the helper called
    assert lint_source(TEMPLATE_KERNEL.replace("COLS", "128"), "k.cu") == []
    got = lint_source(TEMPLATE_KERNEL.replace("COLS", "96"), "k.cu")
    assert sorted((f.line, f.code) for f in got) == [(19, "TM102"), (31, "TM102")]
    assert "96" in got[0].message


def test_a_negated_warp_test_after_a_lane_varying_one_is_no_divergence():
    """``else if (warp_id >= 3)``: the warp predicate is the negation of ``warp_id < 3``; warp 3 never meets the
    lane-varying elect of warp 0 (its polarity counts)."""
    src = TEMPLATE_KERNEL.replace("COLS", "128").replace("} else if (warp_id == 1) {", "} else if (warp_id >= 3) {")
    src = src.replace("if (warp_id == 1) asm", "if (warp_id >= 3) asm")
    assert lint_source(src, "k.cu") == []


def test_two_instantiations_are_two_kernels():
    src = TEMPLATE_KERNEL.replace("k<COLS><<<1, 128>>>(out);", "k<128><<<1, 128>>>(out); k<96><<<1, 128>>>(out);")
    assert sorted((f.line, f.code, f.function) for f in lint_source(src, "k.cu")) == [
        (19, "TM102", "k<96>"), (31, "TM102", "k<96>")]


def test_kernels_launched_through_templated_launchers_are_their_instantiations():
    """``auto kernel = k<N>`` in ``template <int N> void launch()``, a function pointer and ``cudaLaunchKernel``
    in a launcher two templates deep: each kernel is lowered with the arguments of the launcher's instantiation
    (nvcc compiles ``k<96>`` and ``k<128>``, nothing for the launcher template no one calls)."""
    launchers = """template <int N> void launch(float* out) { auto kernel = k<N>; kernel<<<1, 128>>>(out); }
template <int N> void by_pointer(float* out) {
  void (*fp)(float*) = k<N * 2>;
  void* args[] = {&out};
  cudaLaunchKernel((const void*)fp, 1, 128, args, 0, 0);
}
template <int M> void dispatch(float* out) { by_pointer<M / 2>(out); }
template <int N> void never_called(float* out) { k<N + 1><<<1, 128>>>(out); }
void run(float* out) { launch<96>(out); dispatch<128>(out); }
"""
    src = TEMPLATE_KERNEL.replace("void launch(float* out) { k<COLS><<<1, 128>>>(out); }\n", launchers)
    got = sorted((f.line, f.code, f.function) for f in lint_source(src, "k.cu"))
    assert got == [(19, "TM102", "k<96>"), (31, "TM102", "k<96>")]
    from tmemlint.frontend.cuda import parse_cuda

    assert sorted(fn.name for fn in parse_cuda(src, "k.cu").module.functions) == ["k<128>", "k<96>"]


@pytest.mark.parametrize("launch", [
    "run_op<<<grid, 128>>>(LowRankDelta{U, V, bias, out});",
    "run_op<LowRankDelta><<<grid, 128>>>(LowRankDelta{U, V, bias, out});",
    "LowRankDelta op{U, V, bias, out};\n  run_op<<<grid, 128>>>(op);",
    "auto op = LowRankDelta{U, V, bias, out};\n  run_op<<<grid, 128, 0, 0>>>(op);",
])
def test_a_functor_launched_as_the_kernel_body_is_followed(launch):
    """``template <class Op> __global__ void run_op(Op op) { op(); }``: the functor type is the template argument
    (given or deduced from the launch's argument), and ``op()`` is its ``operator()``, inlined as nvcc does."""
    src = (FIXTURES / "nvcc" / "functor_body_tm303_bad.cu").read_text()
    src = src.replace("run_op<<<grid, 128>>>(LowRankDelta{U, V, bias, out});", launch)
    got = lint_source(src, "k.cu")
    assert [(f.line, f.code, f.function) for f in got] == [(42, "TM303", "run_op")]


def test_a_functor_after_an_explicit_template_argument_is_deduced():
    src = (FIXTURES / "nvcc" / "functor_body_tm303_bad.cu").read_text()
    src = src.replace("template <class Op>\n__global__", "template <int N, class Op>\n__global__")
    src = src.replace("run_op<<<grid, 128>>>(", "run_op<4><<<grid, 128>>>(")
    got = lint_source(src, "k.cu")
    assert [(f.line, f.code) for f in got] == [(42, "TM303")]


def test_enum_conversion_is_a_cast_not_an_unseen_call():
    src = ("#include <cstdint>\nenum class Role : int { kAlloc = 0, kEpi = 1 };\n__global__ void k() {\n"
           "  __shared__ uint32_t s;\n  const int w = threadIdx.x / 32;\n  const Role r = w < 1 ? Role(w) : Role::kEpi;\n"
           "  if (r == Role::kAlloc) asm volatile(\"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 32;\" "
           ":: \"r\"((uint32_t)__cvta_generic_to_shared(&s)));\n  __syncthreads();\n"
           "  if (r == Role::kAlloc) asm volatile(\"tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 32;\" :: \"r\"(s));\n}\n")
    assert lint_source(src, "k.cu") == []


def test_libcu_ptx_wrappers_are_not_taken_for_harmless():
    src = ("#include <cuda/ptx>\n__global__ void k() {\n  __shared__ unsigned s;\n"
           "  cuda::ptx::tcgen05_alloc(cuda::ptx::cta_group_1, &s, 128u);\n  cuda::std::uint32_t x = 0; (void)x;\n}\n")
    got = lint_source(src, "k.cu")
    assert [(f.line, f.code) for f in got] == [(4, "TM901")] and "cuda::ptx::tcgen05_alloc" in got[0].message


def test_an_angle_include_of_a_project_header_is_read_from_the_include_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _layout(tmp_path, kernel=KERNEL.replace('#include "tmem_helpers.cuh"', "#include <tk/tmem_helpers.cuh>\n"
                                                                          "#include <cute/tensor.hpp>"),
            folder="third_party/tk")
    got = lint_file("app/k.cu", options=Options(include_dirs=("third_party",))).findings
    assert sorted((f.path, f.line, f.code) for f in got) == [
        ("third_party/tk/tmem_helpers.cuh", 5, "TM101"), ("third_party/tk/tmem_helpers.cuh", 5, "TM102")]
    # without the include folder nothing is read: the helper is unseen (and <cute/...> is never read)
    assert [(f.line, f.code) for f in lint_file("app/k.cu").findings] == [(5, "TM901")]


CHAIN_PTX = """.version 9.0
.target sm_100a
.address_size 64
.file 1 "{lib}"
.file 2 "{user}"
.visible .entry k()
{{
\t.reg .b32 %r<3>;
\t.shared .align 4 .b32 slot;
\tmov.u32 %r1, slot;
\t.loc 2 7 5
\t.loc 1 629 5, function_name $L__info_string0, inlined_at 2 7 5
\t.loc 1 10 3, function_name $L__info_string0, inlined_at 1 629 5
\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 96;
\t.loc 2 9 1
\tret;
}}
"""


def test_a_library_finding_follows_nvccs_chain_of_inlined_call_sites(tmp_path, monkeypatch):
    """nvcc writes one call site per .loc: an instruction of a library helper inlined into another library helper
    names that one, whose own .loc (on the line before, with no instruction) names the user's call."""
    from tmemlint.compile import map_findings
    from tmemlint.engine import lint_module
    from tmemlint.frontend.parser import parse_text

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    lib = tmp_path / "toolkit" / "include" / "cuda_bf16.hpp"
    text = CHAIN_PTX.format(lib=lib, user=work / "k.cu")
    module = parse_text(text, "k.ptx")
    found = lint_module(module, "k.ptx", Options(codes={"TM102"}))
    assert [(f.path, f.line) for f in map_findings(found, module, "k.cu")] == [(str(lib), 10)]  # without the PTX
    got = map_findings(found, module, "k.cu", ptx_text=text)
    assert [(f.path, f.line, f.column, f.code) for f in got] == [("k.cu", 7, 5, "TM102")]
    assert (str(lib), 10, "in this library header") in {(r.path, r.line, r.message) for r in got[0].related}


LOOP_KERNEL = """#include <cstdint>
__global__ void __launch_bounds__(128) k(float* out) {
  __shared__ uint32_t slot;
  const uint32_t warp = threadIdx.x / 32;
  if (warp == 0) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 64;" :: "r"((uint32_t)__cvta_generic_to_shared(&slot)));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
  }
  asm volatile("tcgen05.fence::before_thread_sync;");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;");
  const uint32_t base = slot + ((warp * 32) << 16);
  float acc = 0.f;
  for (int n = 0; n < 32; ++n) {
    float r[4];
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x4.b32 {%0, %1, %2, %3}, [%4];" : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3]) : "r"(base + n * 4));
    asm volatile("tcgen05.wait::ld.sync.aligned;");
    acc += r[0] + r[1] + r[2] + r[3];
  }
  out[threadIdx.x] = acc;
  asm volatile("tcgen05.fence::before_thread_sync;");
  __syncthreads();
  if (warp == 0) asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 64;" :: "r"(slot));
}
"""


def test_a_32_iteration_loop_is_unrolled_as_nvcc_unrolls_it():
    """nvcc unrolls this constant-trip loop; source mode unrolls up to 64 iterations without a pragma, so the
    columns of the last loads are known (TM402 at the load, as in compile mode)."""
    got = lint_source(LOOP_KERNEL, "k.cu")
    assert sorted((f.line, f.code) for f in got) == [(16, "TM402")]
    assert "columns [64, 68)" in got[0].message  # the first unrolled load past the end, as compile mode says


def test_runtime_device_functions_and_atomics_are_harmless():
    body = ("cudaGridDependencySynchronize();\n  atomicAdd_block(out, 1.f);\n  cudaTriggerProgrammaticLaunchCompletion();"
            "\n  READ")
    assert lint_source(LD_KERNEL.replace("READ", body.replace("READ", "")), "k.cu") == []
