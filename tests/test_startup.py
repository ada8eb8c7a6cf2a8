"""A command imports what it uses (issue 18): ``--version``, ``rules``, ``rule`` and ``--help`` and a cache hit import
neither the parser nor the analyses (``--version``, ``rules`` and ``rule`` not even the command line's parser:
``tmemlint.entry`` answers them from ``tmemlint.ruletable``, with the output of ``tmemlint.cli``); ``check`` of a
PTX file imports no CUDA front end, no output format it does not print, no language server.  The modules a run
imported are read from ``sys.modules`` when it exits; the time they take is measured by ``python -X importtime``
(``docs/performance.md``), not here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT
from tmemlint import checkcmd, cli
from tmemlint.checks.registry import RULES, load_all
from tmemlint.docs import ruletable_with_rows
from tmemlint.ruletable import ROWS

#: Runs the console entry point with the arguments given, then writes the names of the imported modules to
#: standard error (after everything the command wrote).
PROBE = """
import atexit, sys
atexit.register(lambda: sys.__stderr__.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n"))
sys.argv = ["tmemlint"] + sys.argv[1:]
from tmemlint.entry import main
main()
"""

#: The parser, the analyses and what only they use.
HEAVY = ("lark", "lark_cython", "networkx", "tmemlint.frontend.parser", "tmemlint.frontend.transformer",
         "tmemlint.analysis", "tmemlint.checks.context", "tree_sitter")
#: The command line's parser and the rules: not needed to print the version or the rule table.
CLI = ("typer", "click", "rich", "tmemlint.cli", "tmemlint.checks.access", "tmemlint.checks.lifecycle",
       "tmemlint.config", "tmemlint.engine")


def modules(*args: str, cwd=ROOT, env=None) -> tuple[subprocess.CompletedProcess, set[str]]:
    proc = subprocess.run([sys.executable, "-P", "-c", PROBE, *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)
    err, _, names = proc.stderr.rpartition("\nMODULES ")
    proc.stderr = err
    return proc, set(names.split())


def imported(mods: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in mods if any(m == p or m.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize("args", [["--version"], ["rules"], ["rule", "TM101"], ["rule", "tmem-leak"]])
def test_printing_the_version_or_the_rules_imports_no_parser_no_rules_no_cli(args):
    proc, mods = modules(*args)
    assert proc.returncode == 0 and proc.stdout
    assert imported(mods, HEAVY + CLI) == []


@pytest.mark.parametrize("args, ours", [(["--version"], ["tmemlint", "tmemlint.entry", "tmemlint.version"]),
                                        (["rules"], ["tmemlint", "tmemlint.entry", "tmemlint.ruletable",
                                                     "tmemlint.version"])])
def test_the_version_and_the_rule_table_import_only_the_entry_point_and_the_table(args, ours):
    """Their whole cost beyond the interpreter's start is these modules (issue 18: at most 2x ``python -c pass``,
    ``benchmarks/bench.py``), and the ``re`` that pip's console-script wrapper imports."""
    proc, mods = modules(*args)
    assert proc.returncode == 0 and proc.stdout
    assert imported(mods, ("tmemlint",)) == ours


@pytest.mark.parametrize("args", [["--help"], ["check", "--help"], ["rule", "--help"], ["plan", "--help"]])
def test_help_imports_no_parser_and_no_analysis(args):
    proc, mods = modules(*args)
    assert proc.returncode == 0 and "Usage" in proc.stdout
    assert imported(mods, HEAVY) == []


def test_a_cache_hit_imports_no_parser_no_analysis_no_cli(tmp_path):
    env = dict(os.environ, TMEMLINT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("TMEMLINT_NO_CACHE", None)
    ptx = str(FIXTURES / "nvcc" / "tm102_ncols_bad.ptx")
    first, mods = modules("--format", "concise", ptx, env=env)
    assert first.returncode == 1 and "TM102" in first.stdout and "tmemlint.frontend.parser" in mods
    again, mods = modules("--format", "concise", ptx, env=env)
    assert (again.returncode, again.stdout) == (first.returncode, first.stdout)
    assert imported(mods, HEAVY + CLI) == []


def test_check_of_a_ptx_file_imports_what_it_uses():
    proc, mods = modules("--no-cache", "--format", "concise", str(FIXTURES / "nvcc" / "tm102_ncols_bad.ptx"))
    assert proc.returncode == 1 and "TM102" in proc.stdout
    assert {"tmemlint.frontend.ptx_lalr", "tmemlint.analysis.cfg", "tmemlint.frontend.parser",
            "tmemlint.report.concise"} <= mods
    assert imported(mods, ("networkx", "tree_sitter", "tmemlint.frontend.cuda", "tmemlint.frontend.cuda.preprocess",
                           "tmemlint.compile", "tmemlint.server", "pygls", "tmemlint.report.sarif",
                           "tmemlint.report.json_format", "tmemlint.report.text", "tmemlint.plan.model",
                           "tmemlint.baseline",
                           "concurrent.futures.process", "multiprocessing")) == []


#: What a plain check of a small PTX file no longer imports (issue 29): Lark and lark-cython (the generated parser
#: ``tmemlint.frontend.ptx_lalr`` reads texts up to ``parser.STANDALONE_MAX_CHARS``), the configuration's TOML
#: reader where no configuration file exists, the solver (z3: only when a path question is asked), the demangler
#: (only for a finding that names a mangled function), the command line's typer, click and rich, the
#: ``logging`` and ``pickle`` that Lark's stand-alone module imported (``generate.trim``), the fingerprints'
#: ``hashlib`` (only for a finding), the compilation database's reader with its ``json`` and ``shlex`` (only
#: with ``-p``) and ``tmemlint.lineinfo`` (source mode, and PTX with ``.loc`` lines); ``resource``, the clock of
#: ``--profile`` (``tmemlint.profile.enable``: a check without it reads no clock at the phase boundaries).
LAZY = ("lark", "lark_cython", "tomllib", "z3", "cxxfilt", "typer", "click", "rich", "importlib.resources",
        "tmemlint.cli", "tmemlint.frontend.generate", "logging", "pickle", "zlib", "base64", "hashlib", "json",
        "shlex", "tmemlint.compdb", "tmemlint.lineinfo", "resource")


def test_a_plain_check_of_a_small_ptx_file_imports_none_of_the_lazy_modules(tmp_path):
    """A subprocess (the console entry point, no cache) on a clean 52-line kernel outside any project with a
    configuration file: ``sys.modules`` at exit holds none of ``LAZY`` (docs/performance.md, issue 29: each of
    them was on this path and cost start-up; this test keeps them off it)."""
    ptx = tmp_path / "k.ptx"
    ptx.write_bytes((FIXTURES / "ptx" / "bitcast_rename_before_wait.ptx").read_bytes())
    proc, mods = modules("--no-cache", str(ptx), cwd=tmp_path)
    assert proc.returncode == 0 and "All checks passed" in proc.stderr
    assert "tmemlint.frontend.ptx_lalr" in mods and "tmemlint.checks.context" in mods
    assert imported(mods, LAZY) == []


#: Runs a plain check through the console entry point, then writes whether a profile was active at exit.
PROFILE_PROBE = """
import atexit, sys
atexit.register(lambda: sys.__stderr__.write("\\nACTIVE " + repr(sys.modules["tmemlint.profile"].ACTIVE) + "\\n"))
sys.argv = ["tmemlint"] + sys.argv[1:]
from tmemlint.entry import main
main()
"""


def test_a_plain_check_runs_without_a_profile(tmp_path):
    """Without ``--profile`` the phase boundaries find ``tmemlint.profile.ACTIVE`` None (and ``resource``, its
    clock's module, is not imported: ``LAZY``); with it, the table is printed and the profile disabled again."""
    ptx = tmp_path / "k.ptx"
    ptx.write_bytes((FIXTURES / "ptx" / "bitcast_rename_before_wait.ptx").read_bytes())
    for extra in ((), ("--profile",)):
        proc = subprocess.run([sys.executable, "-P", "-c", PROFILE_PROBE, "--no-cache", *extra, str(ptx)],
                              capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert proc.returncode == 0
        assert proc.stderr.endswith("\nACTIVE None\n")  # with --profile: disabled again after its report
        assert ("tmemlint check profile:" in proc.stderr) == bool(extra)


def test_a_large_ptx_file_takes_lark_cython(tmp_path):
    """Above ``STANDALONE_MAX_CHARS`` characters in a process the faster parser pays for its import (when installed)."""
    from tmemlint.frontend.parser import STANDALONE_MAX_CHARS, backend

    text = (FIXTURES / "ptx" / "bitcast_rename_before_wait.ptx").read_text()
    ptx = tmp_path / "k.ptx"
    ptx.write_text(text + "// padding\n" * (STANDALONE_MAX_CHARS // 11 + 1))
    proc, mods = modules("--no-cache", str(ptx), cwd=tmp_path)
    assert proc.returncode == 0
    assert ("lark_cython" in mods) == (backend() == "lark-cython")


# ------------------------------------------------------------------ the answers without typer are typer's


def cli_output(capsys, *args: str) -> tuple[str, str, int]:
    code = 0
    try:
        cli.main(list(args))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    out, err = capsys.readouterr()
    return out, err, code


def entry_output(*args: str) -> tuple[str, str, int]:
    proc = subprocess.run([sys.executable, "-P", "-m", "tmemlint", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    return proc.stdout, proc.stderr, proc.returncode


def test_rule_table_rows_are_the_registry():
    load_all()
    assert [r[0] for r in ROWS] == sorted(RULES)
    assert [(c, n, s, on, summ) for c, n, s, on, summ in ROWS] == [
        (r.code, r.name, r.severity.value, r.enabled, r.summary) for r in (RULES[c] for c in sorted(RULES))]
    source = (ROOT / "tmemlint" / "ruletable.py").read_text(encoding="utf-8")
    assert ruletable_with_rows(source) == source, "run: python -m tmemlint.docs --write-readme"


@pytest.mark.parametrize("args", [["--version"], ["rules"], ["rule", "tm101"], ["rule", "tmem-leak"],
                                  ["rule", "TM9"], ["rule", "TM90"], ["rule", "ALL"], ["rule", "no-such-rule"]]
                         + [["rule", c] for c in sorted({r[0] for r in ROWS})])
def test_answers_without_typer_are_the_cli_answers(args, capsys):
    assert entry_output(*args) == cli_output(capsys, *args)


# ------------------------------------------------------------------ a plain check without typer (issue 29)

TYPER_PATH = "import sys; from tmemlint import cli; cli.main(sys.argv[1:])"
BAD = str(FIXTURES / "nvcc" / "tm102_ncols_bad.ptx")
GOOD = str(FIXTURES / "ptx" / "bitcast_rename_before_wait.ptx")
CU = str(next(iter(sorted((FIXTURES / "cuda").glob("*.cu")))))


@pytest.mark.parametrize("args", [
    [BAD], ["check", "--format", "json", BAD], ["--format=concise", "-q", BAD, GOOD], ["--output-format", "github", BAD],
    ["--exit-zero", BAD], ["-j", "1", "--isolated", BAD], ["--jobs=2", BAD, GOOD], ["--format", "sarif", GOOD],
    ["no_such_file.ptx"], ["-j", "0", BAD], [CU, "--quiet"]])
def test_a_plain_check_without_typer_is_the_typer_command(args):
    """``tmemlint.entry`` runs these command lines through ``checkcmd.run_check`` without typer: the same standard
    output, standard error and exit code as the typer command (``cli.main``)."""
    env = {**os.environ, "TMEMLINT_NO_CACHE": "1"}
    assert checkcmd.parse_simple(args) is not None
    fast = subprocess.run([sys.executable, "-P", "-m", "tmemlint", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)
    typed = subprocess.run([sys.executable, "-P", "-c", TYPER_PATH, *args], capture_output=True, text=True, cwd=ROOT,
                           env=env, timeout=300)
    assert (fast.stdout, fast.stderr, fast.returncode) == (typed.stdout, typed.stderr, typed.returncode)


def test_the_typer_command_and_run_check_take_the_same_options():
    """``cli.check``'s parameters are ``checkcmd.CheckOptions``'s fields (with the same defaults) plus ``paths`` and
    ``--no-cache``; ``run_check`` is ``check`` with the fields as keywords and rejects any other keyword."""
    import dataclasses
    import inspect

    params = inspect.signature(cli.check).parameters
    fields = dataclasses.fields(checkcmd.CheckOptions)
    assert [f.name for f in fields] == [n for n in params if n not in ("paths", "no_cache")]
    assert [f.default for f in fields] == [params[f.name].default.default for f in fields]
    with pytest.raises(TypeError):
        checkcmd.run_check([GOOD], no_such_option=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        checkcmd.CheckOptions().quiet = True  # type: ignore[misc]


def test_a_plain_check_imports_no_typer_click_or_rich():
    proc, mods = modules("--no-cache", "--format", "concise", BAD)
    assert proc.returncode == 1 and "TM102" in proc.stdout
    assert imported(mods, ("typer", "click", "rich", "tmemlint.cli", "tmemlint.plan")) == []


@pytest.mark.parametrize("args", [
    [], ["-"], ["--select", "TM1", BAD], ["-qj2", BAD], ["-j=2", BAD], ["-j2", BAD], ["--format", "xml", BAD],
    ["-j", "-1", BAD], ["-j", "x", BAD], ["-j"], ["plan", BAD], ["rules"], ["--quiet=1", BAD], ["--", BAD],
    ["--help"], ["check", "--help"], ["--format"]])
def test_other_command_lines_go_to_typer(args):
    assert checkcmd.parse_simple(args) is None
