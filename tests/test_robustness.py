"""Robustness (issue 9): generated kernels with known ground truth, mutated real files, limits, encodings and
odd files, determinism across runs, ``--jobs`` and file order, and compile mode's use of nvcc."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tmemlint.pipeline as pipeline
import tmemlint.frontend.parser as parser
from conftest import FIXTURES, ROOT, SHARED, needs_shared
from ptx_gen import mutate, mutations, programs
from ptx_samples import NCOLS_96
from tmemlint.cli import app
from tmemlint.engine import lint_bytes, lint_file, lint_text
from tmemlint.frontend.transformer import MAX_SCOPE_DEPTH

def fast(n: int) -> settings:
    """Hypothesis settings for these tests: ``n`` examples, no deadline, derandomized (the fuzzing target in
    ``fuzz/fuzz_lint.py`` explores at random)."""
    return settings(max_examples=n, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
SMALL_BAD = SHARED / "cases" / "01_ncols_not_pow2" / "bad.ptx"
NCOLS_96_CONCISE = [
    "{p}:16:2: TM102 [error] tcgen05.alloc column count 96 is not a power of two (nCols must be a power of two in "
    "[32, 512])",
    "{p}:18:2: TM102 [error] tcgen05.dealloc column count 96 is not a power of two (nCols must be a power of two "
    "in [32, 512])",
]


def run(*args: str, input: str | bytes | None = None):
    """The CLI in this process (typer's runner)."""
    return CliRunner().invoke(app, list(args), input=input)


def tmemlint(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """``python -m tmemlint ARGS`` in a subprocess."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    return subprocess.run([sys.executable, "-P", "-m", "tmemlint", *args], capture_output=True, cwd=cwd, env=env,
                          timeout=300, text=True)


def key(findings):
    """What a finding says, for comparing two runs."""
    return [(f.path, f.line, f.column, f.end_column, f.code, f.message) for f in findings]


def lines_in(data: bytes) -> int:
    """Lines of ``data`` as the engine counts them (LF-separated; the last one may be empty)."""
    return data.count(b"\n") + 1


# ---- 1a: generated kernels with ground truth ----------------------------------------------------------------

@fast(60)
@given(programs())
def test_generated_kernels_verdict_equals_ground_truth(prog):
    found = lint_text(prog.text, "gen.ptx")
    expected = ({"TM101"} if prog.leaks else set()) | ({"TM104"} if prog.double_frees else set())
    assert {f.code for f in found} == expected
    if prog.leaks:
        assert [f.line for f in found if f.code == "TM101"] == [prog.alloc_line]
    assert key(lint_text(prog.text, "gen.ptx")) == key(found)


def test_generator_ground_truth_examples():
    from ptx_gen import Dealloc, Filler, If, Ret, render

    # dealloc on both sides of a parameter branch: no leak; on one side only: a leak
    both = render((If(("param", 0, False), (Dealloc(0),), (Dealloc(1),), 0),))
    one = render((If(("param", 0, False), (Dealloc(0),), (Filler("add.s32 %r20, %r20, 1;"),), 1),))
    # warp 0 never takes the 'warp != 0' side, so its early ret is not a leak
    warp = render((If(("warp", "ne", 0), (Ret(),), (), 0), Dealloc(2)))
    # the same parameter tested twice is one boolean: dealloc under n0 != 0 and under n0 == 0 covers all paths
    corr = render((If(("param", 0, False), (Dealloc(0),), (), 0), If(("param", 0, True), (Dealloc(0),), (), 1)))
    assert [(p.leaks, p.double_frees) for p in (both, one, warp, corr)] == \
        [(False, False), (True, False), (False, False), (False, False)]
    assert [sorted({f.code for f in lint_text(p.text, "g.ptx")}) for p in (both, one, warp, corr)] == \
        [[], ["TM101"], [], []]


# ---- 1b: mutations of real files ----------------------------------------------------------------------------

def _sources() -> list[Path]:
    files = sorted((FIXTURES / "nvcc").glob("*.ptx"))
    return [p for p in files if p.stat().st_size < 40_000]


def check_bad_input(data: bytes, name: str = "m.ptx"):
    """No exception, a TM900 inside the file, and the same findings twice."""
    res = lint_bytes(data, name)
    for f in res.findings:
        if f.code == "TM900":
            assert 1 <= f.line <= lines_in(data), (f.line, f.message)
    assert key(lint_bytes(data, name).findings) == key(res.findings)
    return res


@fast(40)
@given(st.integers(0, 10_000), st.lists(mutations(), min_size=1, max_size=3))
def test_mutated_nvcc_fixtures_never_crash(i, muts):
    files = _sources()
    data = files[i % len(files)].read_bytes()
    for m in muts:
        data = mutate(data, *m)
    check_bad_input(data)


@needs_shared
@fast(3)
@given(st.integers(0, 10_000), mutations())
def test_mutated_triton_corpus_never_crashes(i, m):
    files = sorted((SHARED / "corpus" / "triton").glob("*.sm100.ptx"))
    check_bad_input(mutate(files[i % len(files)].read_bytes(), *m))


@needs_shared
def test_truncation_at_every_offset():
    data = SMALL_BAD.read_bytes()
    codes = {}
    for k in range(len(data) + 1):
        res = check_bad_input(data[:k])
        codes[tuple(sorted({f.code for f in res.findings}))] = codes.get(tuple(sorted({f.code for f in
                                                                                      res.findings})), 0) + 1
    assert len(data) == 890
    assert codes == {("TM900",): 802, (): 87, ("TM102",): 2}
    assert [(f.code, f.line) for f in lint_bytes(data, "b.ptx").findings] == [("TM102", 18), ("TM102", 30)]


@fast(80)
@given(st.binary(max_size=300), st.booleans())
def test_random_bytes_never_crash(blob, header):
    prefix = b".version 8.7\n.target sm_100a\n.address_size 64\n" if header else b""
    check_bad_input(prefix + blob)


def test_lone_carriage_return_is_blank_space():
    """A lone CR is not a line break (every other place counts lines by LF), so a syntax error after it is on a
    line of the file (the fuzzer's first finding)."""
    data = b".version 8.7\n.target sm_100a\n.address_size 64\n\r\xec4"
    [f] = check_bad_input(data).findings
    assert (f.code, f.line, f.column) == ("TM900", 4, 2)
    [f] = check_bad_input(b"\rK").findings
    assert (f.code, f.line, f.column) == ("TM900", 1, 2)


def test_swapped_operands_of_the_alloc():
    bad = NCOLS_96.replace("[%r3], 96", "96, [%r3]").encode()
    assert mutate(NCOLS_96.encode(), "swap", 15, 0, b"") == bad
    # not a syntax error (operands are not typed by the grammar): the alloc is no longer recognised, only the
    # dealloc's column count is checked (ptxas rejects the line)
    assert [(f.code, f.line) for f in check_bad_input(bad).findings] == [("TM102", 18)]


# ---- CLI: exit codes and determinism -------------------------------------------------------------------------

def test_cli_exit_codes_on_mutants(tmp_path):
    src = (FIXTURES / "nvcc" / "tm101_leak_bad.ptx").read_bytes()
    (tmp_path / "trunc.ptx").write_bytes(src[: len(src) // 2])
    (tmp_path / "dup.ptx").write_bytes(mutate(src, "duplicate", 40, 0, b""))
    (tmp_path / "noise.ptx").write_bytes(mutate(src, "bytes", 5000, 0, b"\xff\xfe{{;"))
    for name in ("trunc.ptx", "dup.ptx", "noise.ptx"):
        p = tmemlint("--isolated", "--format", "concise", name, cwd=tmp_path)
        assert p.returncode in {0, 1, 2}
        assert "Traceback" not in p.stderr
    p = tmemlint("--isolated", "--format", "concise", "trunc.ptx", cwd=tmp_path)
    assert p.returncode == 1
    [line] = p.stdout.splitlines()
    assert line.startswith("trunc.ptx:") and " TM900 [error] " in line
    assert 1 <= int(line.split(":")[1]) <= lines_in(src[: len(src) // 2])


def test_output_identical_across_runs_jobs_and_file_order(tmp_path):
    files = [FIXTURES / "nvcc" / n for n in ("tm101_leak_bad.ptx", "tm102_ncols_bad.ptx", "tm101_leak_good.ptx")]
    (tmp_path / "broken.ptx").write_bytes(files[0].read_bytes()[:3000])
    args = [str(f) for f in files] + [str(tmp_path / "broken.ptx")]
    base = run("check", "--isolated", "--format", "json", "--jobs", "1", *args)
    assert base.exit_code == 1
    found = json.loads(base.stdout)
    assert sorted({(Path(f["path"]).name, f["code"]) for f in found}) == [
        ("broken.ptx", "TM900"), ("tm101_leak_bad.cu", "TM101"), ("tm101_leak_bad.cu", "TM307"),
        ("tm101_leak_good.cu", "TM307"), ("tm102_ncols_bad.cu", "TM102"), ("tm102_ncols_bad.cu", "TM307")]  # -lineinfo PTX
    for jobs, order in (("1", args), ("2", args), ("2", args[::-1]), ("1", args[1:] + args[:1])):
        r = run("check", "--isolated", "--format", "json", "--jobs", jobs, *order)
        assert (r.exit_code, r.stdout) == (1, base.stdout)


# ---- 2: limits ------------------------------------------------------------------------------------------------

HEAD = NCOLS_96.split("\tmov.u32 %r1, %tid.x;")[0] + "\t.reg .b32 %x<200000>;\n"
BODY = NCOLS_96[len(NCOLS_96.split("\tmov.u32 %r1, %tid.x;")[0]):]
NCOLS_96_LINES = [(17, "TM102"), (19, "TM102")]  # with HEAD's extra .reg line


def with_body(extra: str) -> str:
    """NCOLS_96 (TM102 on lines 16 and 18) with ``extra`` statements before its first instruction."""
    return HEAD + extra + BODY


def shifted(found, extra: str):
    """``(line, code)`` of ``found`` with the lines of ``extra`` taken off."""
    n = extra.count("\n")
    return [(f.line - n if f.line > 6 else f.line, f.code) for f in found]


def timed(text: str):
    """``(seconds, findings)`` of linting ``text``."""
    t = time.perf_counter()
    found = lint_text(text, "big.ptx")
    return time.perf_counter() - t, found


def test_scope_nesting_within_the_limit_is_analysed():
    extra = "{\n" * MAX_SCOPE_DEPTH + "\tadd.s32 %x1, %x0, 1;\n" + "}\n" * MAX_SCOPE_DEPTH
    assert shifted(lint_text(with_body(extra), "n.ptx"), extra) == NCOLS_96_LINES


@pytest.mark.parametrize("depth", [MAX_SCOPE_DEPTH + 1, 10_000])
def test_scope_nesting_beyond_the_limit_is_tm901(depth):
    dt, found = timed(with_body("{\n" * depth + "}\n" * depth))
    assert [(f.code, f.line, f.column, f.message) for f in found] == [
        ("TM901", 5, 17, "{ } scopes nested more than 1000 deep in function k: the file is not analysed "
                         "(limit 1000)")]
    assert dt < 10


def test_line_limit(monkeypatch):
    """The limit counts the lines that are parsed: here a TMEM kernel's (debug sections and functions without
    tcgen05 do not count: tests/test_prune.py)."""
    monkeypatch.setattr(parser, "MAX_LINES", 1000)
    text = with_body("// x\n" * 1000)
    msg = ("1,023 lines of code (debug sections and functions without tcgen05 not counted), more than the limit of "
           "1,000: the file is not analysed")
    assert [(f.code, f.line, f.message) for f in lint_text(text, "l.ptx")] == [("TM901", 1, msg)]
    assert [(f.code, f.line, f.message) for f in lint_bytes(text.encode(), "l.ptx").findings] == [
        ("TM901", 1, msg)]
    assert [f.code for f in lint_text(NCOLS_96, "ok.ptx")] == ["TM102", "TM102"]


def test_byte_limit(monkeypatch, tmp_path):
    monkeypatch.setattr(pipeline, "MAX_BYTES", 1000)
    p = tmp_path / "k.ptx"
    p.write_text(NCOLS_96 + "// " + "x" * 1000 + "\n")
    size = p.stat().st_size
    for res in (lint_file(p, "k.ptx"), lint_bytes(p.read_bytes(), "k.ptx")):
        assert [(f.code, f.line, f.message) for f in res.findings] == [
            ("TM901", 1, f"{size:,} bytes, more than the limit of 1,000: the file is not read")]
    res = lint_file("/dev/zero", "zero.ptx")  # an endless file: only the limit is read
    assert [(f.code, f.line, f.message) for f in res.findings] == [
        ("TM901", 1, "more than the limit of 1,000 bytes: the file is not read")]


def test_value_work_limit():
    """A register redefined in every one of 3,000 instructions (9M definitions x reads) is not analysed."""
    n = 3000
    dt, found = timed(with_body("\tadd.s32 %x1, %x1, 1;\n" * n))
    assert [(f.code, f.line, f.message) for f in found] == [
        ("TM901", 5, f"function k is not analysed: its registers are redefined too often (definitions x reads = "
                     f"{n * n + 3:,}, more than the limit of 4,000,000)")]
    assert dt < 10
    extra = "\tadd.s32 %x1, %x1, 1;\n" * 1000
    assert shifted(timed(with_body(extra))[1], extra) == NCOLS_96_LINES


def test_long_lines():
    dt, found = timed(with_body("\t// " + "x" * 100_000 + "\n"))
    assert [(f.line, f.code) for f in found] == [(18, "TM102"), (20, "TM102")]
    assert dt < 5
    dt, found = timed(with_body("".join(f"add.s32 %x{i + 1}, %x{i}, 1; " for i in range(4000)) + "\n"))
    assert [(f.line, f.code) for f in found] == [(18, "TM102"), (20, "TM102")]
    assert dt < 20


def test_many_labels_and_branches():
    n = 5000
    labels = "".join(f"L{i}:\n\tadd.s32 %x{i + 1}, %x{i}, 1;\n" for i in range(n))
    dt, found = timed(with_body(labels))
    assert shifted(found, labels) == NCOLS_96_LINES
    assert dt < 30
    n = 1000
    branches = "".join(f"\tsetp.ne.u32 %p1, %x{i}, {i};\n\t@%p1 bra B{i};\n\tadd.s32 %x{i + 1}, %x{i}, 1;\nB{i}:\n"
                        for i in range(n))
    dt, found = timed(with_body(branches))
    assert shifted(found, branches) == NCOLS_96_LINES
    assert dt < 30


# ---- 3: encodings and files -------------------------------------------------------------------------------------

def concise(*args: str, input=None):
    """``tmemlint check --isolated --format concise ARGS`` in this process; no exception but the exit."""
    r = run("check", "--isolated", "--format", "concise", *args, input=input)
    assert r.exception is None or isinstance(r.exception, SystemExit)
    return r


@pytest.mark.parametrize("name,data", [
    ("bom.ptx", b"\xef\xbb\xbf" + NCOLS_96.encode()),
    ("latin1.ptx", NCOLS_96.replace("{\n", "{ // caf\xe9 na\xefve\n", 1).encode("latin-1")),
    ("utf8.ptx", NCOLS_96.replace("{\n", "{ // café ✓\n", 1).encode()),
    ("crlf.ptx", NCOLS_96.replace("\n", "\r\n").encode()),
    ("tabs.ptx", NCOLS_96.replace("\t", "\t \t").replace("\t \ttcgen05", "\ttcgen05").encode()),
])
def test_encodings_give_the_same_findings(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    r = concise(str(tmp_path / name))
    assert (r.exit_code, r.stdout.splitlines()) == (1, [x.format(p=tmp_path / name) for x in NCOLS_96_CONCISE])


def test_empty_file(tmp_path):
    (tmp_path / "empty.ptx").write_bytes(b"")
    r = concise(str(tmp_path / "empty.ptx"))
    assert (r.exit_code, r.stdout) == (1, f"{tmp_path / 'empty.ptx'}:1:1: TM900 [error] not a PTX module: no "
                                          f".version directive\n")


def test_directory_named_ptx(tmp_path):
    d = tmp_path / "x.ptx"
    d.mkdir()
    (d / "inner.ptx").write_text(NCOLS_96)
    r = concise(str(d))
    assert (r.exit_code, r.stdout.splitlines()) == (1, [x.format(p=d / "inner.ptx") for x in NCOLS_96_CONCISE])
    (d / "inner.ptx").unlink()
    r = concise(str(tmp_path))
    assert (r.exit_code, r.stdout) == (0, "")
    assert lint_file(d).unreadable == "is a directory"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads a chmod 000 file")
def test_unreadable_file(tmp_path):
    p = tmp_path / "secret.ptx"
    p.write_text(NCOLS_96)
    p.chmod(0)
    try:
        r = tmemlint("--isolated", str(p))
    finally:
        p.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert (r.returncode, r.stdout, r.stderr.splitlines()[0]) == (2, "", f"tmemlint: {p}: cannot read: Permission "
                                                                          f"denied")


def test_broken_symlink(tmp_path):
    link = tmp_path / "gone.ptx"
    link.symlink_to(tmp_path / "missing.ptx")
    r = tmemlint("--isolated", str(link))
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.splitlines()[0] == f"tmemlint: {link}: cannot read: No such file or directory"
    r = concise(str(tmp_path))  # a folder search skips it
    assert (r.exit_code, r.stdout) == (0, "")


def test_paths_with_spaces_and_non_ascii_names(tmp_path):
    d = tmp_path / "my kernels" / "ядро ü"
    d.mkdir(parents=True)
    p = d / "gemm tile é.ptx"
    p.write_text(NCOLS_96)
    r = tmemlint("--isolated", "--format", "concise", str(tmp_path / "my kernels"))
    assert (r.returncode, r.stdout.splitlines(), "Traceback" in r.stderr) == (
        1, [x.format(p=p) for x in NCOLS_96_CONCISE], False)
    r = tmemlint("--isolated", "--format", "json", "my kernels/ядро ü/gemm tile é.ptx", cwd=tmp_path)
    assert [(f["path"], f["line"]) for f in json.loads(r.stdout)] == [("my kernels/ядро ü/gemm tile é.ptx", 16),
                                                                      ("my kernels/ядро ü/gemm tile é.ptx", 18)]


def test_binary_file_named_ptx(tmp_path):
    (tmp_path / "blob.ptx").write_bytes(b".version 8.7\n\x7fELF\x00\x01\x02")
    r = concise(str(tmp_path / "blob.ptx"))
    assert (r.exit_code, r.stdout) == (1, f"{tmp_path / 'blob.ptx'}:2:5: TM900 [error] binary data (NUL byte): "
                                          f"not a PTX text file\n")


# ---- 4: compile mode runs nvcc safely ---------------------------------------------------------------------------

FAKE_NVCC = """#!{python}
import json, os, sys
args = sys.argv[1:]
out = args[args.index("-o") + 1]
with open(os.environ["FAKE_NVCC_LOG"], "w") as fh:
    json.dump({{"argv": args, "cwd": os.getcwd(), "tmpdir": os.environ.get("TMPDIR")}}, fh)
if os.environ.get("FAKE_NVCC_SLEEP"):
    import time; time.sleep(float(os.environ["FAKE_NVCC_SLEEP"]))
open(out, "w").write(open(os.environ["FAKE_NVCC_PTX"]).read())
"""


@pytest.fixture
def fake_nvcc(tmp_path, monkeypatch):
    """A stand-in nvcc on PATH that logs its arguments, folder and TMPDIR and writes a fixed PTX file."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    nvcc = bindir / "nvcc"
    nvcc.write_text(FAKE_NVCC.format(python=sys.executable))
    nvcc.chmod(0o755)
    ptx = tmp_path / "canned.ptx"
    ptx.write_text(NCOLS_96)
    log = bindir / "nvcc.json"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NVCC_LOG", str(log))
    monkeypatch.setenv("FAKE_NVCC_PTX", str(ptx))
    return log


def test_compile_runs_nvcc_as_an_argument_list_from_the_files_folder(tmp_path, fake_nvcc):
    src = tmp_path / "src dir" / "k; rm -rf x $(id).cu"
    src.parent.mkdir()
    src.write_text('// "; touch pwned; "\n__global__ void k() {}\n')
    before = sorted(os.listdir(tmp_path))
    r = run("check", "--isolated", "--compile", "--nvcc-arg=-Iinc dir", "-D", "N=1", str(src))
    log = json.loads(fake_nvcc.read_text())
    assert log["cwd"] == str(src.parent)
    assert log["argv"][:3] == ["-Iinc dir", "-DN=1", "-arch=sm_100a"]
    assert log["argv"][3:6] == ["-ptx", "-lineinfo", "-o"]
    assert log["argv"][-1] == "./k; rm -rf x $(id).cu"  # "./": a name like an option stays a file name
    out = Path(log["argv"][6])
    assert out.name == "out.ptx" and Path(log["tmpdir"]) == out.parent and not out.parent.exists()
    assert sorted(os.listdir(tmp_path)) == before and os.listdir(src.parent) == [src.name]
    assert not (tmp_path / "pwned").exists() and r.exit_code in {0, 1}


def test_compile_time_limit(tmp_path, fake_nvcc, monkeypatch):
    from tmemlint.compile import CompileError, compile_to_ptx

    monkeypatch.setenv("FAKE_NVCC_SLEEP", "30")
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    t = time.perf_counter()
    with pytest.raises(CompileError) as e:
        compile_to_ptx(src.read_text(), str(src), timeout=1)
    assert str(e.value) == "nvcc did not finish within 1 s"
    assert time.perf_counter() - t < 20


def test_compile_file_named_like_an_option(tmp_path, fake_nvcc):
    src = tmp_path / "-E.cu"
    src.write_text("__global__ void k() {}\n")
    run("check", "--isolated", "--compile", str(src))
    assert not json.loads(fake_nvcc.read_text())["argv"][-1].startswith("-")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")
def test_compile_with_real_nvcc_writes_nothing_next_to_the_source(tmp_path):
    src_dir = tmp_path / "with space"
    src_dir.mkdir()
    shutil.copy(FIXTURES / "nvcc" / "tm102_ncols_bad.cu", src_dir / "k.cu")
    r = run("check", "--isolated", "--compile", "--format", "concise", str(src_dir / "k.cu"))
    assert r.exit_code == 1
    codes = [line.split(": ", 1)[1].split(" ")[0] for line in r.stdout.splitlines()]
    assert sorted(codes) == ["TM102", "TM102", "TM307"]  # TM307: the scale-factor copy's issue-order warning
    assert os.listdir(src_dir) == ["k.cu"]


# ---- 5: the fuzzing target --------------------------------------------------------------------------------------

def test_fuzz_target_checks_inputs():
    sys.path.insert(0, str(ROOT / "fuzz"))
    try:
        import fuzz_lint
    finally:
        sys.path.remove(str(ROOT / "fuzz"))
    assert fuzz_lint.check_input(NCOLS_96.encode(), {"TM102"}) is None
    assert fuzz_lint.check_input(NCOLS_96.encode(), set()) == "codes ['TM102'] != ground truth []"
    assert fuzz_lint.check_input(b"\x00") is None


def test_operands_nested_past_the_recursion_limit():
    """A vector in a vector in … 5,000 deep (found while measuring the limits: a RecursionError escaped)."""
    extra = "\tmov.b32 %x5, " + "{" * 5000 + "%x1" + "}" * 5000 + ";\n"
    assert [(f.code, f.line, f.message) for f in lint_text(with_body(extra), "v.ptx")] == [
        ("TM901", 5, "function k is not analysed: nested too deep (Python recursion limit)")]
    extra = "{\n\t.reg .b32 %q;\n\tmov.b32 %q, " + "{" * 5000 + "%x1" + "}" * 5000 + ";\n}\n"
    assert [(f.code, f.line, f.message) for f in lint_text(with_body(extra), "v.ptx")] == [
        ("TM901", 1, "nested too deep for the parser (Python recursion limit): the file is not analysed")]


def test_operands_nested_at_the_depth_limit_compiled_and_pure():
    """``pipeline.MAX_OPERAND_DEPTH`` (200): a register inside 199 braces is at depth 200 and is analysed (the
    file's two TM102), inside 200 braces it is past the limit (TM901), the same in plain Python and compiled with
    mypyc, whose native recursion the interpreter's recursion limit does not stop (a 5,000-deep vector was analysed
    compiled, TM901 pure; 400,000 deep crashed the compiled process)."""
    def codes(depth: int) -> list[tuple[str, int]]:
        extra = "\tmov.b32 %x5, " + "{" * depth + "%x1" + "}" * depth + ";\n"
        return [(f.code, f.line) for f in lint_text(with_body(extra), "v.ptx")]

    assert pipeline.MAX_OPERAND_DEPTH == 200
    assert codes(199) == [("TM102", 18), ("TM102", 20)]
    assert codes(200) == [("TM901", 5)]


def test_output_identical_across_hash_seeds(tmp_path):
    """Two processes with different string-hash seeds (set iteration order) print the same bytes."""
    files = [str(FIXTURES / "nvcc" / n) for n in ("tm101_leak_bad.ptx", "tm305_dealloc_unsynchronized_bad.ptx")]
    outs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, TMEMLINT_NO_CACHE="1")
        p = subprocess.run([sys.executable, "-P", "-m", "tmemlint", "--isolated", "--format", "json", "--jobs", "1",
                            *files], capture_output=True, text=True, env=env, timeout=300)
        outs.append((p.returncode, p.stdout))
    assert outs[0] == outs[1]
    assert outs[0][0] == 1 and {f["code"] for f in json.loads(outs[0][1])} == {"TM101", "TM305", "TM307"}
