"""Inputs and the command line: standard input, globs, many files in parallel (same output for any --jobs),
rule documentation commands, the README rule table, and no traceback for bad input."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from conftest import EXAMPLES, FIXTURES, ROOT
from ptx_samples import NCOLS_96
from tmemlint.checks.registry import RULES, load_all
from tmemlint.cli import app, lint_tasks
from tmemlint.docs import readme_with_rules, rules_table
from tmemlint.engine import Options, expand_paths

load_all()
TM102_ALLOC = "tcgen05.alloc column count 96 is not a power of two (nCols must be a power of two in [32, 512])"


def run(*args: str, input: str | bytes | None = None):
    return CliRunner().invoke(app, list(args), input=input)


def tmemlint(*args: str, input: bytes | None = None, cwd=None) -> subprocess.CompletedProcess:
    """``python -m tmemlint ARGS`` in a subprocess (real standard input, console entry point)."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    return subprocess.run([sys.executable, "-P", "-m", "tmemlint", *args], input=input, capture_output=True, cwd=cwd,
                          env=env, timeout=300)


def test_stdin_with_filename(tmp_path):
    (tmp_path / "tmemlint.toml").write_text('select = ["TM102"]\n')
    p = tmemlint("--format", "concise", "--stdin-filename", "kern/k.ptx", "-", input=NCOLS_96.encode(), cwd=tmp_path)
    assert p.returncode == 1
    assert p.stdout.decode().splitlines() == [f"kern/k.ptx:16:2: TM102 [error] {TM102_ALLOC}",
                                              "kern/k.ptx:18:2: TM102 [error] " + TM102_ALLOC.replace("alloc", "dealloc")]
    assert p.stderr == b"Found 2 errors in 1 file\n"


def test_stdin_without_filename_and_with_files(tmp_path):
    (tmp_path / "a.ptx").write_text(NCOLS_96)
    r = run("check", "--isolated", "--select", "TM102", "--format", "concise", "-", str(tmp_path / "a.ptx"),
            input=NCOLS_96)
    assert r.exit_code == 1
    assert [x.split(": ")[0] for x in r.stdout.splitlines()] == \
        [f"{tmp_path / 'a.ptx'}:16:2", f"{tmp_path / 'a.ptx'}:18:2", "<stdin>:16:2", "<stdin>:18:2"]


def test_stdin_filename_alone_reads_stdin_and_suppressions_apply():
    text = NCOLS_96.replace(", 96;", ", 96; // tmemlint: disable=TM102")
    r = run("check", "--isolated", "--select", "TM102", "--stdin-filename", "x.ptx", input=text)
    assert (r.exit_code, r.stdout) == (0, "")


def test_stdin_binary_is_a_syntax_error():
    r = run("check", "--isolated", "--format", "concise", "-", input=b".version 8.7\n\x00\x01")
    assert r.exit_code == 1
    assert r.stdout == "<stdin>:2:1: TM900 [error] binary data (NUL byte): not a PTX text file\n"


def test_globs_and_duplicates(tmp_path, monkeypatch):
    (tmp_path / "a" / "b").mkdir(parents=True)
    for rel in ("a/x.ptx", "a/b/y.ptx", "a/b/z.txt", "top.ptx"):
        (tmp_path / rel).write_text(NCOLS_96)
    monkeypatch.chdir(tmp_path)
    files, missing = expand_paths(["a/**/*.ptx", "top.ptx", "top.ptx", "nomatch/*.ptx", "a/*"])
    assert files == ["a/b/y.ptx", "a/x.ptx", "top.ptx"]
    assert missing == ["nomatch/*.ptx"]
    r = run("check", "--isolated", "--select", "TM102", "--statistics", "a/**/*.ptx", "no*.ptx")
    assert r.exit_code == 2
    assert r.stdout == "    4  TM102  invalid-ncols\n"
    assert r.stderr == "tmemlint: no*.ptx: no such file or directory\nFound 4 errors in 2 files\n"


def test_lint_tasks_order_and_progress_callback():
    files = sorted((FIXTURES / "nvcc").glob("tm10*_bad.ptx"))
    tasks = [(str(p), p.name, Options()) for p in files]
    calls = []
    res = lint_tasks(tasks, 2, lambda: calls.append(1))
    assert [r.path for r in res] == [p.name for p in files]
    assert len(calls) == len(files)


def test_output_is_identical_for_any_jobs():
    args = ["check", "--isolated", "--format", "json", str(EXAMPLES)] + \
        [str(p) for p in sorted((FIXTURES / "nvcc").glob("tm1*_bad.ptx"))]
    one, two = run(*args, "--jobs", "1"), run(*args, "-j", "2")
    assert one.exit_code == two.exit_code == 1
    assert one.stdout == two.stdout and one.stdout.startswith("[")


def test_jobs_must_be_positive():
    r = run("check", "--jobs", "0", "x.ptx")
    assert (r.exit_code, r.stderr) == (2, "tmemlint: --jobs: must be at least 1 (got 0)\n")


def test_no_paths_means_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run("check")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "tmemlint: warning: no .ptx, .cu or .cuh files to check in "
                                                        ". (after exclusions and .gitignore)\n")
    (tmp_path / "k.ptx").write_text(NCOLS_96)
    r = run("check", "--isolated", "--format", "concise", "--select", "TM102")
    assert (r.exit_code, r.stdout.splitlines()[0].split(": ")[0], r.stderr) == (1, "k.ptx:16:2",
                                                                              "Found 2 errors in 1 file\n")


@pytest.mark.parametrize("args,content,code", [
    (["--format", "xml", "k.ptx"], None, 2),
    (["k.ptx"], b"\xff\xfe garbage \x80", 1),
    (["k.ptx"], b"\x00\x00", 1),
    (["--config", "missing.toml", "k.ptx"], None, 2),
    (["--baseline", "missing.json", "k.ptx"], None, 2),
    (["link.ptx"], None, 2),
    (["dir.ptx"], None, 0),
    (["rule", "TM000"], None, 2),
])
def test_bad_input_never_gives_a_traceback(tmp_path, args, content, code):
    if content is not None:
        (tmp_path / "k.ptx").write_bytes(content)
    (tmp_path / "dir.ptx").mkdir()
    (tmp_path / "link.ptx").symlink_to(tmp_path / "nowhere")
    p = tmemlint(*args, cwd=tmp_path)
    assert p.returncode == code
    assert b"Traceback" not in p.stderr + p.stdout


def test_rule_pages_and_table():
    by_code, by_name = run("rule", "TM101"), run("rule", "tmem-leak")
    assert by_code.exit_code == by_name.exit_code == 0
    assert by_code.stdout == by_name.stdout
    assert by_code.stdout.startswith("TM101") or by_code.stdout.startswith("#")
    r = run("rules")
    assert r.exit_code == 0
    assert [row.split()[0] for row in r.stdout.splitlines()] == sorted(RULES)
    assert "TM902  unused-suppression" in r.stdout
    r = run("rule", "nope")
    assert (r.exit_code, r.stderr) == (2, "tmemlint: unknown rule 'nope'\n")


def test_readme_rule_table_is_generated_from_the_registry():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "<!-- rules:start -->" in readme and "<!-- rules:end -->" in readme
    assert readme_with_rules(readme) == readme, "run: python -m tmemlint.docs --write-readme"
    assert rules_table().count("\n") == len(RULES) + 2


def test_docs_module_check_and_write(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n<!-- rules:start -->\nold\n<!-- rules:end -->\n\nmore\n")
    p = subprocess.run([sys.executable, "-P", "-m", "tmemlint.docs", "--check", str(readme)], capture_output=True)
    assert p.returncode == 1
    p = subprocess.run([sys.executable, "-P", "-m", "tmemlint.docs", "--write-readme", str(readme)], capture_output=True)
    assert p.returncode == 0
    assert readme.read_text() == f"# x\n\n<!-- rules:start -->\n{rules_table()}<!-- rules:end -->\n\nmore\n"
    p = subprocess.run([sys.executable, "-P", "-m", "tmemlint.docs", "--check", str(readme)], capture_output=True)
    assert p.returncode == 0


def test_server_without_pygls_says_how_to_install(monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "tmemlint.server":
            raise ImportError("No module named 'pygls'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    r = run("server")
    assert r.exit_code == 2
    assert r.stderr == ("tmemlint: the language server needs pygls (No module named 'pygls'); install it with: "
                        "pip install 'tmemlint[server]'\n")


def test_a_dead_worker_does_not_lose_files(monkeypatch):
    """A pool whose worker died mid-run: the remaining files are linted in-process, in order."""
    from concurrent.futures.process import BrokenProcessPool

    class DyingPool:
        def __init__(self, max_workers, initializer=None, initargs=()):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        submitted = 0

        def submit(self, fn, task):  # the first task submitted runs, the worker dies with the others
            self.submitted += 1
            return Done(fn(task) if self.submitted == 1 else BrokenProcessPool("worker died"))

    class Done:
        def __init__(self, value):
            self.value = value

        def result(self):
            if isinstance(self.value, Exception):
                raise self.value
            return self.value

    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", DyingPool)  # cli imports it when it needs it
    files = sorted((FIXTURES / "nvcc").glob("tm10[12]_*.ptx"))
    res = lint_tasks([(str(p), p.name, Options()) for p in files], 2)
    assert [r.path for r in res] == [p.name for p in files]
    assert [r.unreadable for r in res] == [None] * len(files)
