"""The everyday workflow of a ruff or clang-tidy user (issue 17): folder searches that respect .gitignore and the
default exclusions, force-exclude for pre-commit, the summary line, paths without ./, options people type
without reading the help, -lineinfo PTX findings on their CUDA lines, demangled kernel names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ptx_samples import NCOLS_96
from tmemlint.cli import app, summary
from tmemlint.config import clear_cache
from tmemlint.findings import Finding, Severity
from tmemlint.lineinfo import LazyLineLocations, line_locations, snap_to_asm
from tmemlint.names import base_name, demangle, demangle_message

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MANGLED = "_Z22mxfp8_gemm_bf16_kernel14CUtensorMap_stS_PKjS1_P13__nv_bfloat16jjjf"


def run(*args: str):
    return CliRunner().invoke(app, ["check", "--isolated", "--format", "concise", "--select", "TM102", *args])


def paths_of(stdout: str) -> list[str]:
    return sorted({row.split(":")[0] for row in stdout.splitlines()})


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository with kernels where a user keeps them and where tools put copies."""
    for rel in ("src/k.ptx", ".git/k.ptx", ".venv/lib/k.ptx", "node_modules/x/k.ptx", "build/k.ptx",
                "third_party/vendored/k.ptx", "gen/keep.ptx", "gen/drop.ptx", "notes/k.ptx"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(NCOLS_96)
    (tmp_path / ".gitignore").write_text("third_party/\ngen/*.ptx\n!gen/keep.ptx\n")
    (tmp_path / "notes" / ".ignore").write_text("*.ptx\n")
    monkeypatch.chdir(tmp_path)
    clear_cache()
    yield tmp_path
    clear_cache()


def test_folder_search_respects_gitignore_ignore_and_default_exclusions(repo):
    r = run(".")
    assert paths_of(r.stdout) == ["gen/keep.ptx", "src/k.ptx"]
    assert paths_of(run("--no-respect-gitignore", ".").stdout) == ["gen/drop.ptx", "gen/keep.ptx", "notes/k.ptx",
                                                                   "src/k.ptx", "third_party/vendored/k.ptx"]
    # --exclude replaces the defaults, as in ruff (.git and the rest come back)
    assert paths_of(run("--exclude", "src", ".").stdout) == [".git/k.ptx", ".venv/lib/k.ptx", "build/k.ptx",
                                                             "gen/keep.ptx", "node_modules/x/k.ptx"]
    assert paths_of(run("--extend-exclude", "gen", ".").stdout) == ["src/k.ptx"]


def test_named_folders_and_files_are_checked_unless_force_exclude(repo):
    assert paths_of(run("build").stdout) == ["build/k.ptx"]  # excluded by default, named: searched
    assert paths_of(run("third_party").stdout) == ["third_party/vendored/k.ptx"]  # git-ignored, named: searched
    assert paths_of(run("build/k.ptx", "src/k.ptx").stdout) == ["build/k.ptx", "src/k.ptx"]
    assert paths_of(run("--force-exclude", "build/k.ptx", "src/k.ptx").stdout) == ["src/k.ptx"]
    (repo / "tmemlint.toml").write_text('force-exclude = true\nextend-exclude = ["src"]\n')
    clear_cache()
    r = CliRunner().invoke(app, ["check", "--format", "concise", "build/k.ptx", "src/k.ptx", "gen/keep.ptx"])
    assert paths_of(r.stdout) == ["gen/keep.ptx"]


def test_tmemlint_alone_checks_the_current_folder(repo, capsys):
    from tmemlint.cli import main

    with pytest.raises(SystemExit) as e:
        main([])
    out = capsys.readouterr()
    assert e.value.code == 1
    assert sorted({row.split(":")[0] for row in out.out.splitlines() if ": TM" in row}) == ["gen/keep.ptx",
                                                                                          "src/k.ptx"]
    assert out.err.endswith("Found 4 errors in 2 files\n")


def test_a_folder_with_nothing_to_check_says_so(repo):
    (repo / "empty").mkdir()
    r = run("empty")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "tmemlint: warning: no .ptx, .cu or .cuh files to check "
                                                        "in empty (after exclusions and .gitignore)\n")


def test_paths_are_shown_relative_without_dot_slash(repo):
    r = run("./src/../src/k.ptx", str(repo / "gen"))
    assert paths_of(r.stdout) == ["gen/keep.ptx", "src/k.ptx"]


def test_summary_counts_every_severity():
    def f(sev: Severity, path: str = "a.ptx") -> Finding:
        return Finding(path, 1, 1, 1, 2, "TM301", "x", sev, "m")

    assert summary([]) == "All checks passed!"
    assert summary([], hidden=2) == "All checks passed! (2 more in the baseline)"
    assert summary([f(Severity.ERROR)]) == "Found 1 error in 1 file"
    assert summary([f(Severity.ERROR)] * 3 + [f(Severity.WARNING, "b.ptx")] * 51) == \
        "Found 3 errors and 51 warnings in 2 files"
    assert summary([f(Severity.ERROR), f(Severity.WARNING), f(Severity.INFO), f(Severity.INFO)]) == \
        "Found 1 error, 1 warning and 2 info findings in 1 file"


def test_exit_zero_quiet_output_file_and_output_format(repo):
    r = run("--exit-zero", "src/k.ptx")
    assert (r.exit_code, r.stderr) == (0, "Found 2 errors in 1 file\n")
    r = run("-q", "src/k.ptx")
    assert (r.exit_code, r.stderr, len(r.stdout.splitlines())) == (1, "", 2)
    r = run("-o", "out.txt", "src/k.ptx")
    assert (r.exit_code, r.stdout) == (1, "")
    assert (repo / "out.txt").read_text().startswith("src/k.ptx:16:2: TM102 [error]")
    r = CliRunner().invoke(app, ["check", "--isolated", "--output-format", "json", "src/k.ptx"])
    assert [x["code"] for x in json.loads(r.stdout)] == ["TM102", "TM102"]
    r = CliRunner().invoke(app, ["check", "--isolated", "--output-format", "sarif", "-o", "r.sarif", "src/k.ptx"])
    assert (r.exit_code, r.stdout, r.stderr) == (1, "", "")
    assert json.loads((repo / "r.sarif").read_text())["version"] == "2.1.0"


def test_runs_that_write_a_file_are_not_answered_from_the_cache(repo):
    from tmemlint.entry import cache_key

    assert cache_key(["src/k.ptx"]) is not None
    for args in (["-o", "x.txt", "src/k.ptx"], ["--output-file=x.txt", "src/k.ptx"], ["--show-settings", "src/k.ptx"]):
        assert cache_key(args) is None, args


def test_help_options(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    for args in (["-h"], ["check", "-h"], ["rules", "-h"], ["plan", "-h"]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0 and "Usage:" in r.stdout, args
    text = CliRunner().invoke(app, ["check", "--help"]).stdout
    for option in ("--no-cache", "--exit-zero", "--output-file", "--output-format", "--show-settings", "--quiet",
                   "--force-exclude", "--extend-exclude", "--respect-gitignore"):
        assert option in text, option


def test_show_settings(repo):
    (repo / "src" / "tmemlint.toml").write_text('select = ["TM1"]\nignore = ["TM107"]\nfail-on = "warning"\n')
    clear_cache()
    r = CliRunner().invoke(app, ["check", "--show-settings", "-D", "X=2", "src/k.ptx"])
    assert r.exit_code == 0
    rows = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    assert rows["Resolved settings for"] == "src/k.ptx"
    assert rows["configuration file"] == "src/tmemlint.toml"
    assert rows["select"] == "TM101, TM102, TM103, TM104, TM105, TM106, TM108, TM109, TM110, TM111, TM112"
    assert rows["fail-on"] == "warning"
    assert rows["defines"] == "X=2"
    assert rows["respect-gitignore"] == "true"


def test_rules_json():
    rows = json.loads(CliRunner().invoke(app, ["rules", "--format", "json"]).stdout)
    assert rows[0] == {"code": "TM101", "name": "tmem-leak", "severity": "error", "enabled": True,
                       "summary": "an allocation that reaches kernel exit on some feasible path without a matching "
                                  "dealloc",
                       "url": "https://github.com/tmemlint/tmemlint/blob/v0.3.0/rules/TM101-tmem-leak.md"}


def test_names_demangled():
    assert demangle(MANGLED) == ("mxfp8_gemm_bf16_kernel(CUtensorMap_st, CUtensorMap_st, unsigned int const*, "
                                 "unsigned int const*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, "
                                 "float)")
    assert demangle("triton_poi_kernel") == "triton_poi_kernel"
    assert demangle("_Znot_a_name") == "_Znot_a_name"
    assert demangle_message("function _Z3fooPv is not analysed") == "function foo(void*) is not analysed"
    assert base_name(MANGLED) == "mxfp8_gemm_bf16_kernel"
    assert base_name("_ZN4fmha16attention_kernelILi64EEEv14CUtensorMap_stS1_S1_Pfiif") == "attention_kernel"
    assert base_name("kernel_cutlass_gemm_0") == "kernel_cutlass_gemm_0"


def test_lineinfo_locations_and_asm_snap():
    ptx = (EXAMPLES / "gemm_leak_bad.ptx").read_text()
    locs = line_locations(ptx)
    assert (locs[179].file, locs[179].line) == ("gemm_leak_bad.cu", 137)
    cu = (EXAMPLES / "gemm_leak_bad.cu").read_text().split("\n")
    assert snap_to_asm(cu, 137, 25, "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32") == (136, 19, 74)
    assert snap_to_asm(cu, 137, 25, "not.there") == (137, 25, 26)


def test_lazy_line_locations_equal_the_whole_map():
    """The relocation's per-line lookup (``LazyLineLocations``) gives, on every line of every fixture with line info,
    what ``line_locations`` maps for the whole text (None where it maps nothing)."""
    files = [p for p in sorted((ROOT / "fixtures").rglob("*.ptx")) + sorted(EXAMPLES.glob("*.ptx"))
             if ".loc" in p.read_text(errors="replace")]
    assert len(files) > 50
    for p in files:
        text = p.read_text(errors="replace")
        whole = line_locations(text)
        lines = text.split("\n")
        lazy = LazyLineLocations(text, lines)
        for n in range(len(lines) + 2):
            assert lazy.get(n) == whole.get(n), (p.name, n)


def test_one_finding_whether_from_source_mode_or_lineinfo_ptx(tmp_path, monkeypatch):
    """The leak of the example is one finding on the .cu line, with the PTX line as a related place, and the
    same path and fingerprint from the .cu and from the PTX."""
    monkeypatch.chdir(ROOT)
    one = CliRunner().invoke(app, ["check", "--ignore", "TM307", "--format", "json", "examples/gemm_leak_bad.ptx"])
    two = CliRunner().invoke(app, ["check", "--ignore", "TM307", "--format", "json", "examples/gemm_leak_bad.cu"])
    both = CliRunner().invoke(app, ["check", "--ignore", "TM307", "--format", "json", "examples/"])
    a, b, c = (json.loads(r.stdout) for r in (one, two, both))
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in a] == [("examples/gemm_leak_bad.cu", 136, 19,
                                                                            "TM101")]
    assert a[0]["related"][0] == {"path": "examples/gemm_leak_bad.ptx", "line": 179, "column": 2,
                                  "message": "the PTX instruction"}
    assert a[0]["fingerprint"] == b[0]["fingerprint"]
    assert (a[0]["function"], a[0]["function_demangled"].split("(")[0]) == (MANGLED, "mxfp8_gemm_bf16_kernel")
    assert len(c) == 1 and c[0]["fingerprint"] == a[0]["fingerprint"]
    assert {r["path"] for r in c[0]["related"]} == {"examples/gemm_leak_bad.cu", "examples/gemm_leak_bad.ptx"}
    # the PTX without its .cu beside it stays on the PTX line and names the recorded source position
    shutil.copy(EXAMPLES / "gemm_leak_bad.ptx", tmp_path / "alone.ptx")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["check", "--ignore", "TM307", "--format", "json", "alone.ptx"])
    [f] = json.loads(r.stdout)
    assert (f["path"], f["line"]) == ("alone.ptx", 179)
    assert f["related"][0] == {"path": "gemm_leak_bad.cu", "line": 137, "column": 25,
                               "message": "the CUDA source of this instruction (file not found here)"}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="compile mode needs nvcc")
def test_compile_mode_gives_the_same_finding(monkeypatch):
    monkeypatch.chdir(ROOT)
    got = []
    for args in (["--compile", "examples/gemm_leak_bad.cu"], ["examples/gemm_leak_bad.cu"],
                 ["examples/gemm_leak_bad.ptx"]):
        r = CliRunner().invoke(app, ["check", "--ignore", "TM307", "--format", "json", *args])
        got.append([(f["path"], f["line"], f["column"], f["code"], f["fingerprint"]) for f in json.loads(r.stdout)])
    assert got[0] == got[1] == got[2] and got[0][0][:4] == ("examples/gemm_leak_bad.cu", 136, 19, "TM101")


def test_json_keeps_the_mangled_function_name(tmp_path, monkeypatch):
    text = NCOLS_96.replace(".entry k(", f".entry {MANGLED}(")
    assert text != NCOLS_96
    (tmp_path / "m.ptx").write_text(text)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["check", "--isolated", "--format", "json", "m.ptx"])
    assert {f["function"] for f in json.loads(r.stdout)} == {MANGLED}
