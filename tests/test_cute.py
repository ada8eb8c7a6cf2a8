"""The CuTe DSL integration (``tmemlint.integrations.cute``), tested with the real ``nvidia-cutlass-dsl`` on the CPU:
``cute.compile`` of the GEMM in ``tests/data/cute_gemm.py`` for fake tensors with ``CUTE_DSL_ARCH=sm_100a`` (no GPU).
Skipped when the DSL is not importable (``pip install '.[test-compilers]'``; CI installs only '.[test]')."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"

os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")  # read when the DSL is first imported
try:
    import cutlass.cute  # noqa: F401
except Exception as e:  # noqa: BLE001 - any failure to load the DSL (missing, no libcuda stubs...) skips
    pytest.skip(f"nvidia-cutlass-dsl is not importable ({type(e).__name__}: {e}); "
                "pip install '.[test-compilers]' to run these tests", allow_module_level=True)

import tmemlint.integrations.cute as hook  # noqa: E402

sys.path.insert(0, str(DATA))
import cute_gemm  # noqa: E402


def line_of(ptx: str, opcode: str) -> int:
    """The 1-based line of the first instruction ``opcode`` in ``ptx``."""
    return next(i for i, text in enumerate(ptx.splitlines(), 1) if text.strip().startswith(opcode))


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """``install`` with its arguments; the hook is removed afterwards.  Runs in an empty folder (the DSL's default
    dump folder is the current one) so that tests can see what it leaves there."""
    monkeypatch.chdir(tmp_path)

    def install(*args, **kwargs):
        return hook.install(*args, **kwargs)

    yield install
    hook.uninstall()


def compile_recording(*args, **kwargs):
    """``compile_gemm(*args, **kwargs)`` and the ``TmemWarning``s it issued."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        compiled = cute_gemm.compile_gemm(*args, **kwargs)
    return compiled, [w for w in got if issubclass(w.category, hook.TmemWarning)]


def test_the_hook_warns_about_the_leak_at_the_compile_call(installed, tmp_path):
    installed("warn")
    compiled, got = compile_recording(dealloc=False)
    ptx = compiled.__ptx__
    assert hook.ptx_target(ptx) == "sm_100a"
    kernel = next(iter(compiled.kernel_info))  # the one kernel the jit function launches
    assert [str(w.message) for w in got] == [
        f"gemm.ptx:{line_of(ptx, 'tcgen05.alloc')}:2: TM101 [error] 128 TMEM columns allocated here are not "
        "deallocated on some path to kernel exit (a CTA that exits holding TMEM makes the next CTA's tcgen05.alloc "
        f"wait forever) (tmem-leak) in kernel {kernel}"]
    assert Path(got[0].filename).name == "cute_gemm.py"  # reported at the cute.compile call
    assert list(tmp_path.iterdir()) == []  # the PTX the hook asked for is not left behind


def test_the_clean_gemm_has_no_findings(installed):
    installed("error")
    compiled, got = compile_recording()
    assert got == [] and "tcgen05.mma" in compiled.__ptx__ and "tcgen05.wait::ld" in compiled.__ptx__


def test_error_raises_out_of_cute_compile(installed):
    installed("error", ignore=["TM302"])
    ptx = cute_gemm.compile_gemm(wait_ld=False).__ptx__  # compiles: its one finding is ignored
    installed("error")  # installing again replaces the hook
    with pytest.raises(hook.TmemError) as e:
        cute_gemm.compile_gemm(wait_ld=False)
    assert e.value.kernel == "gemm" and e.value.compiler == "CuTe DSL"
    assert [(f.code, f.line, f.column) for f in e.value.findings] == [("TM302", line_of(ptx, "tcgen05.ld"), 2)]
    assert str(e.value).startswith("tmemlint: 1 finding(s) in CuTe DSL kernel gemm:\ngemm.ptx:")


def test_warnings_below_fail_on(installed):
    installed("error", select=["TM306"])  # CuTe DSL orders tcgen05 work without tcgen05.fence::*: TM306 (info)
    _, got = compile_recording()
    assert got and all(": TM306 [info] " in str(w.message) for w in got)


def test_ptx_the_user_keeps_stays(installed, tmp_path):
    installed("warn")
    keep = tmp_path / "dump"
    keep.mkdir()
    compiled, got = compile_recording(dealloc=False, options=f"--keep-ptx --dump-dir={keep}")
    assert [w.message.args[0].split(": ")[1] for w in got] == ["TM101 [error] 128 TMEM columns allocated here are "
                                                             "not deallocated on some path to kernel exit (a CTA "
                                                             "that exits holding TMEM makes the next CTA's "
                                                             "tcgen05.alloc wait forever) (tmem-leak) in kernel "
                                                             + next(iter(compiled.kernel_info))]
    assert [p.suffix for p in keep.iterdir()] == [".ptx"]


def test_other_targets_are_not_linted():
    assert hook.check_compiled(".version 8.8\n.target sm_90a\n.address_size 64\n") == []
    assert hook.check_compiled(None) == [] and hook.check_compiled("/no/such/file.ptx") == []


def test_an_existing_wrapper_is_kept(installed):
    from cutlass.base_dsl import compiler

    calls = []
    original = compiler.CompileCallable._compile

    def theirs(self, func, *args, **kwargs):
        calls.append(func.__name__)
        return original(self, func, *args, **kwargs)

    compiler.CompileCallable._compile = theirs
    try:
        installed("warn")
        _, got = compile_recording(dealloc=False)
        assert calls == ["gemm"] and [w.message.args[0].split(": ")[1][:5] for w in got] == ["TM101"]
        hook.uninstall()
        assert compiler.CompileCallable._compile is theirs
    finally:
        compiler.CompileCallable._compile = original


def test_bad_arguments():
    with pytest.raises(ValueError, match="TMEMLINT_CUTE / action must be one of warn, error"):
        hook.install("loud")
    with pytest.raises(ValueError, match="fail_on must be"):
        hook.install("warn", fail_on="never")


def test_environment_variable(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(f'''
import sys
import tmemlint.integrations.autoload  # what the tmemlint-cute.pth file does when TMEMLINT_CUTE is set
assert "cutlass" not in sys.modules  # the DSL is not imported early: the hook waits for it
sys.path.insert(0, {str(DATA)!r})
import cute_gemm
try:
    cute_gemm.compile_gemm(dealloc=False)
except Exception as e:
    print(type(e).__name__, e.kernel, [f.code for f in e.findings])
waiting = [h.name for f in sys.meta_path if isinstance(f, tmemlint.integrations.autoload._Finder) for h in f.pending]
print(waiting, "triton" in sys.modules)
''')
    # both variables set: the CuTe hook is installed with the DSL, the Triton one still waits for Triton
    env = dict(os.environ, TMEMLINT_CUTE="error", TMEMLINT_TRITON="warn", CUTE_DSL_ARCH="sm_100a")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.stdout.splitlines() == ["TmemError gemm ['TM101']", "['triton'] False"], out.stderr
    assert (ROOT / "tmemlint-cute.pth").read_text().strip() == \
        'import os; os.environ.get("TMEMLINT_CUTE") and __import__("tmemlint.integrations.autoload")'


def test_python_m_runs_a_script(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(f"import sys; sys.path.insert(0, {str(DATA)!r}); import cute_gemm; "
                      "cute_gemm.compile_gemm(dealloc=False)\n")
    env = dict(os.environ, CUTE_DSL_ARCH="sm_100a")
    out = subprocess.run([sys.executable, "-P", "-m", "tmemlint.integrations.cute", str(script)], capture_output=True,
                         text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0 and "TmemWarning: gemm.ptx:" in out.stderr and ": TM101 [error] " in out.stderr
