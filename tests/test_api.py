"""The Python API (tmemlint.check, tmemlint.plan, configuration as an argument) and the Triton integration,
tested with the real compiler on the CPU (Triton emits sm_100a PTX without a GPU) when it is installed
(``pip install triton``; CI installs only '.[test]', where those tests skip)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import tmemlint
from ptx_samples import NCOLS_96

ROOT = Path(__file__).resolve().parents[1]
LEAK = (ROOT / "examples" / "gemm_leak_bad.ptx").read_text()


def test_check_returns_sorted_findings_and_prints_them():
    found = tmemlint.check(LEAK, name="gemm_leak_bad.ptx")
    # the leak, then TM307's two warnings on the scale-factor copies the MMA thread issues (the CUTLASS idiom)
    assert [(f.path, f.line, f.code) for f in found] == [("gemm_leak_bad.ptx", 179, "TM101"),
                                                         ("gemm_leak_bad.ptx", 476, "TM307"),
                                                         ("gemm_leak_bad.ptx", 491, "TM307")]
    assert str(found[0]).startswith("gemm_leak_bad.ptx:179:2: TM101 [error] 512 TMEM columns allocated here")
    assert str(found[0]).endswith("(tmem-leak)")
    assert found[0].severity is tmemlint.Severity.ERROR
    assert tmemlint.check(LEAK.encode(), name="b.ptx")[0].code == "TM101"  # bytes too


def test_configuration_is_an_argument():
    assert [f.line for f in tmemlint.check(NCOLS_96, name="k.ptx")] == [16, 18]
    assert tmemlint.check(NCOLS_96, name="k.ptx", config={"ignore": ["invalid-ncols"]}) == []
    assert tmemlint.check(NCOLS_96, name="k.ptx", select=["TM101"]) == []
    sev = tmemlint.check(NCOLS_96, name="k.ptx", config={"severity": {"TM102": "warning"}})
    assert {f.severity for f in sev} == {tmemlint.Severity.WARNING}
    assert tmemlint.check(NCOLS_96, name="legacy/k.ptx", config={"per-file-ignores": {"legacy/*": ["TM102"]}}) == []
    with pytest.raises(tmemlint.ConfigError, match="<config>: unknown key 'selct'"):
        tmemlint.check(NCOLS_96, config={"selct": ["TM1"]})


def test_configuration_file_argument(tmp_path):
    (tmp_path / "t.toml").write_text('ignore = ["TM102"]\n')
    assert tmemlint.check(NCOLS_96, config=tmp_path / "t.toml") == []


def test_bad_ptx_is_a_finding_not_an_exception():
    [f] = tmemlint.check("not ptx at all", name="x.ptx")
    assert (f.code, f.line) == ("TM900", 1)


def test_plan_model_and_errors():
    p = tmemlint.plan(LEAK)
    assert (p["schema_version"], [k["kernel"] for k in p["kernels"]]) == (
        p["schema_version"], ["_Z22mxfp8_gemm_bf16_kernel14CUtensorMap_stS_PKjS1_P13__nv_bfloat16jjjf"])
    with pytest.raises(tmemlint.PlanError, match=r"^kernel.ptx:1:1: TM900 \[error\]"):
        tmemlint.plan("nonsense")
    assert tmemlint.plan("", name="k.cu")["kernels"] == []  # a CUDA source is planned in source mode, as by `plan`


def test_import_tmemlint_is_light():
    code = "import sys, tmemlint; print(sorted(m for m in ('lark', 'networkx', 'tmemlint.api') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---- Triton -----------------------------------------------------------------------------------------------------

KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def mm_tile(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))
'''


@pytest.fixture
def triton_kernel(tmp_path, monkeypatch):
    """``compile(arch)``: compile a tl.dot kernel (tcgen05.mma on sm_100a) for ``GPUTarget("cuda", arch, 32)``."""
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    import tmemlint.integrations.triton as hook

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "kern.py").write_text(KERNEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    import kern

    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}

    def compile_(arch: int):
        return triton.compile(ASTSource(kern.mm_tile, sig, {"BM": 128, "BN": 128, "BK": 64}),
                              target=GPUTarget("cuda", arch, 32), options={"num_warps": 4, "num_stages": 2})

    yield compile_
    hook.uninstall()


def test_triton_hook_warns_about_each_finding(triton_kernel):
    import tmemlint.integrations.triton as hook

    hook.install("warn", select=["TM306"])  # Triton orders tcgen05 work without tcgen05.fence::*: TM306 (info)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        compiled = triton_kernel(100)
    assert "tcgen05.mma" in compiled.asm["ptx"]
    tm = [w for w in got if issubclass(w.category, hook.TmemWarning)]
    assert tm and all(": TM306 [info] " in str(w.message) for w in tm)
    assert str(tm[0].message).startswith("mm_tile.ptx:")


def test_triton_hook_raises_and_skips_targets_without_tmem(triton_kernel):
    import tmemlint.integrations.triton as hook

    hook.install("error", fail_on="info", select=["TM306"])
    with pytest.raises(hook.TmemError) as e:
        triton_kernel(100)
    assert e.value.kernel == "mm_tile" and {f.code for f in e.value.findings} == {"TM306"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        triton_kernel(120)  # sm_120a (consumer Blackwell) has no Tensor Memory: not linted
    hook.install("error")  # a correct kernel: no error-level finding, compiles
    triton_kernel(103)


def test_triton_environment_variable(tmp_path):
    pytest.importorskip("triton")
    script = tmp_path / "run.py"
    script.write_text('''
import tmemlint.integrations.autoload  # what the tmemlint-triton.pth file does when TMEMLINT_TRITON is set
import sys
assert "triton" not in sys.modules  # Triton is not imported early: the hook waits for it
''' + KERNEL + '''
from triton import knobs
print(getattr(knobs.compilation.listener, "_tmemlint", False))
''')
    env = dict(os.environ, TMEMLINT_TRITON="error", TRITON_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.stdout.strip() == "True", out.stderr
    assert (ROOT / "tmemlint-triton.pth").read_text().strip() == \
        'import os; os.environ.get("TMEMLINT_TRITON") and __import__("tmemlint.integrations.autoload")'
