"""User code first (issue 26, item 4): a finding whose place falls in a library header (CUTLASS, CuTe, cccl, the
toolkit's include folders, an ``-isystem`` folder, a ``library-paths`` glob) moves to the user's frame of its inline
chain, with the header place as a related place, in PTX mode (``-lineinfo``), compile mode and source mode.

The kernel is written here: a header in a ``cutlass/`` folder whose inline helper holds the tcgen05.alloc, and a
``.cu`` whose kernel calls it and can return before freeing (TM101 at the alloc).  nvcc makes its PTX."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from tmemlint.cli import app
from tmemlint.libraries import library_predicate
from tmemlint.options import Options

HEADER = """#pragma once
// A library-style helper (it stands for CUTLASS/CuTe code): the column count is the caller's.
template <int kCols>
__device__ __forceinline__ void lib_tmem_alloc(unsigned* slot) {
  unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(slot));
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"(a), "n"(kCols) : "memory");
}

template <int kCols>
__device__ __forceinline__ void lib_tmem_free(unsigned base) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(base), "n"(kCols) : "memory");
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}
"""

KERNEL = """#include "{lib}/tmem_helper.h"

__global__ void __launch_bounds__(128) k(float* out, int n) {{
  __shared__ unsigned slot;
  const unsigned warp = threadIdx.x / 32;
  if (warp == 0) {{
    lib_tmem_alloc<32>(&slot);
  }}
  __syncthreads();
  const unsigned base = slot;
  if (n <= 0) return;
  __syncthreads();
  if (warp == 0) {{
    lib_tmem_free<32>(base);
  }}
  if (threadIdx.x == 0) out[0] = static_cast<float>(base);
}}
"""

CALL = ("k.cu", 7, 5)  # lib_tmem_alloc<32>(&slot) in the kernel
ALLOC = 6, 17  # where the tcgen05.alloc text starts in the header's asm string

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")


def _project(root, lib: str) -> None:
    (root / lib).mkdir(parents=True)
    (root / lib / "tmem_helper.h").write_text(HEADER)
    (root / "k.cu").write_text(KERNEL.format(lib=lib))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Two copies of the kernel, with the helper in ``cutlass/`` and in ``mylib/``, each with its -lineinfo PTX."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc (CUDA toolkit) is not installed")
    out = {}
    for lib in ("cutlass", "mylib"):
        root = tmp_path_factory.mktemp(lib)
        _project(root, lib)
        subprocess.run(["nvcc", "-arch=sm_100a", "-lineinfo", "-ptx", "-o", "k.ptx", "k.cu"], cwd=root, check=True,
                       capture_output=True, timeout=300)
        out[lib] = root
    return out


def _tm101(*args: str):
    r = CliRunner().invoke(app, ["check", "--no-cache", "--select", "TM101", "--format", "json", *args])
    (f,) = json.loads(r.stdout)
    return f


def _header_place(f) -> list[tuple[str, int, int]]:
    return [(r["path"], r["line"], r["column"]) for r in f["related"] if r["message"] == "in this library header"]


@needs_nvcc
@pytest.mark.parametrize("mode", [["k.ptx"], ["--compile", "k.cu"], ["k.cu"]], ids=["ptx", "compile", "source"])
def test_a_finding_in_a_cutlass_header_moves_to_the_users_call(built, monkeypatch, mode):
    monkeypatch.chdir(built["cutlass"])
    f = _tm101("--isolated", *mode)
    assert (f["path"], f["line"], f["column"]) == CALL
    assert _header_place(f) == [("cutlass/tmem_helper.h", *ALLOC)]
    assert not any(r["message"] == "called from here (inlined)" and r["path"] == "k.cu" and r["line"] == 7
                   for r in f["related"])  # the call is the finding's place now
    assert f["flow"][0]["path"] == "cutlass/tmem_helper.h"  # the witness starts at the instruction itself
    if mode == ["k.ptx"]:
        assert ("k.ptx", "the PTX instruction") in [(r["path"], r["message"]) for r in f["related"]]


@needs_nvcc
@pytest.mark.parametrize("mode", [["k.ptx"], ["--compile", "k.cu"], ["k.cu"]], ids=["ptx", "compile", "source"])
def test_a_users_own_header_keeps_its_findings(built, monkeypatch, mode):
    monkeypatch.chdir(built["mylib"])
    f = _tm101("--isolated", *mode)
    assert (f["path"], f["line"], f["column"]) == ("mylib/tmem_helper.h", *ALLOC)
    assert _header_place(f) == []


@needs_nvcc
@pytest.mark.parametrize("mode", [["k.ptx"], ["--compile", "k.cu"], ["k.cu"]], ids=["ptx", "compile", "source"])
def test_library_paths_of_the_configuration(built, monkeypatch, mode):
    root = built["mylib"]
    (root / "tmemlint.toml").write_text('library-paths = ["mylib/**"]\n')
    monkeypatch.chdir(root)
    try:
        f = _tm101(*mode)
    finally:
        (root / "tmemlint.toml").unlink()
    assert (f["path"], f["line"], f["column"]) == CALL
    assert _header_place(f) == [("mylib/tmem_helper.h", *ALLOC)]


@needs_nvcc
def test_an_isystem_folder_is_a_library_in_compile_mode(built, monkeypatch):
    root = built["mylib"]
    monkeypatch.chdir(root)
    f = _tm101("--isolated", "--compile", "--nvcc-arg=-isystem", f"--nvcc-arg={root / 'mylib'}", "k.cu")
    assert (f["path"], f["line"]) == CALL[:2]
    assert _header_place(f) == [("mylib/tmem_helper.h", *ALLOC)]


def test_library_predicate(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lib = library_predicate(Options(nvcc_args=("-isystem", "/opt/tk/include"),
                                    library_paths=((str(tmp_path), "third_party/**"),)), "src/k.cu")
    for path in ("include/cutlass/arch/barrier.h", "cute/atom/copy_traits_sm100.hpp", "/usr/local/cuda/include/cuda_bf16.hpp",
                 "/usr/local/cuda-13.0/targets/x86_64-linux/include/cuda/std/__atomic/api.h", "cccl/cub/block.cuh",
                 "/opt/tk/include/kittens.cuh", "third_party/deepgemm/common/utils.cuh"):
        assert lib(path), path
    for path in ("src/k.cu", "include/my_tmem.cuh", "kernels/cutlass_like_gemm.cu", "examples/cute_tutorial.cu"):
        assert not lib(path), path
    os.makedirs("cute/project", exist_ok=True)
    monkeypatch.chdir(tmp_path / "cute" / "project")  # a project that lives in a folder called cute/
    assert not library_predicate(None)("kernels/k.cu")
