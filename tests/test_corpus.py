"""Correct production code gives no error-level finding: the Triton corpus of ../shared and our real corpus.

``fixtures/real/nvcc/`` (our own DeepGEMM / ThunderKittens / CUTLASS-style kernels, nvcc 13.0 with and without
``-lineinfo``) is held to its exact finding list at the default settings, not only to "no error"."""

from __future__ import annotations

import pytest

import re
import subprocess

from conftest import FIXTURES, SHARED, needs_ptxas
from tmemlint.engine import lint_file
from tmemlint.findings import Severity


def _files():
    out = []
    if SHARED.is_dir():
        out += sorted((SHARED / "corpus" / "triton").glob("*.ptx"))
    out += sorted((FIXTURES / "real").rglob("*.ptx"))
    return [pytest.param(p, id=f"{p.parent.name}/{p.name}") for p in out]


#: Files of the real corpus with a known fault: file name -> its exact error findings ``(line, code)``.
#: ``cute_dense_f16_nowait.ptx`` (CuTe DSL without ``fence_view_async_tmem_load``) frees the accumulator after
#: loads that nothing waits for; reading their registers does not complete them (rules catalog, TM302).
KNOWN_FAULTS = {"cute_dense_f16_nowait.ptx": [(667, "TM302")]}


@pytest.mark.parametrize("path", _files())
def test_no_error_on_correct_code(path):
    errors = [(f.line, f.code) for f in lint_file(path).findings if f.severity is Severity.ERROR]
    assert errors == KNOWN_FAULTS.get(path.name, [])


def test_corpus_is_present():
    assert len(_files()) >= 4


REAL_NVCC = FIXTURES / "real" / "nvcc"
#: kernel file -> (kernels, exact findings ``(line, code)`` at the default settings), the same for both builds
REAL_NVCC_EXPECTED = {
    "deepgemm_mxf8_persistent": (1, []),
    "tk_bf16_gemm_2cta": (1, []),
    "cutlass_style_templates": (7, []),
}


@pytest.mark.parametrize("build", ["", ".nolineinfo"])
@pytest.mark.parametrize("name", sorted(REAL_NVCC_EXPECTED))
def test_real_nvcc_exact_findings(name, build):
    path = REAL_NVCC / f"{name}{build}.ptx"
    text = path.read_text()
    kernels, expected = REAL_NVCC_EXPECTED[name]
    assert len(re.findall(r"^\.visible \.entry ", text, re.M)) == kernels
    assert ("inlined_at" in text) is (build == "")  # -lineinfo builds carry inlined call sites, the others none
    assert [(f.line, f.code) for f in lint_file(path).findings] == expected


def test_real_nvcc_files_are_complete_and_name_no_machine_path():
    sources = sorted(p.stem for p in REAL_NVCC.glob("*.cu"))
    assert sources == sorted(REAL_NVCC_EXPECTED)
    assert sorted(p.name for p in REAL_NVCC.glob("*.ptx")) == sorted(
        f"{n}{b}.ptx" for n in sources for b in ("", ".nolineinfo"))
    for p in REAL_NVCC.glob("*.ptx"):
        files = re.findall(r'^\s*\.file\s+\d+\s+"([^"]*)"', p.read_text(), re.M)
        assert all("/" not in f for f in files), p.name
    # template-heavy: several kernels and deep inlining in one file
    text = (REAL_NVCC / "cutlass_style_templates.ptx").read_text()
    assert text.count("inlined_at") > 3000


@needs_ptxas
@pytest.mark.parametrize("path", sorted(REAL_NVCC.glob("*.ptx")), ids=lambda p: p.name)
def test_real_nvcc_assembles_with_ptxas(path):
    proc = subprocess.run(["ptxas", "-arch=sm_100a", str(path), "-o", "/dev/null"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
