"""The pre-commit hook (``.pre-commit-hooks.yaml``), run the way users run it: ``pre-commit try-repo`` this
repository on a temporary git repository that holds one good and one bad CUDA kernel.

``try-repo`` installs the hook from this repository's HEAD plus its uncommitted changes to tracked files, into a
fresh environment (so it needs the package index for the dependencies, and takes about a minute)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import FIXTURES, ROOT

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def test_hook_definition():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [(h["id"], h["entry"], h["language"]) for h in hooks] == [("tmemlint", "tmemlint --force-exclude", "python")]
    assert hooks[0]["verbose"] is True  # warnings are shown when the hook passes too
    files = re.compile(hooks[0]["files"])
    assert [n for n in ("k.cu", "k.cuh", "k.ptx", "k.h", "k.cpp", "k.ptx.bak") if files.search(n)] == [
        "k.cu", "k.cuh", "k.ptx"]


@needs_git
def test_try_repo_reports_the_bad_kernel(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "cache"), NO_COLOR="1", PRE_COMMIT_COLOR="never")
    subprocess.run(["git", "init", "-q"], cwd=work, check=True, env=env)
    shutil.copy(FIXTURES / "nvcc" / "tm101_leak_good.cu", work / "good.cu")
    shutil.copy(FIXTURES / "nvcc" / "tm101_leak_bad.cu", work / "bad.cu")
    (work / "notes.txt").write_text("not a kernel\n")
    (work / "warn.cu").write_text('#include "tmem_helpers.cuh"  // not in this repository\n'
                                  "__global__ void k() {\n  __shared__ unsigned s;\n  tmem_alloc(&s, 128);\n}\n")
    subprocess.run(["git", "add", "."], cwd=work, check=True, env=env)
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "tmemlint", "--all-files",
                           "--color", "never"], cwd=work, env=env, capture_output=True, text=True, timeout=1200)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    findings = re.findall(r"^(\S+):(\d+):(\d+): (TM\d+) \[(\w+)\]", out, flags=re.M)
    # TM307's warning on the scale-factor copy of the MMA thread (issue order only), as PTX and compile mode give it
    assert findings == [("bad.cu", "66", "17", "TM307", "warning"), ("bad.cu", "105", "19", "TM101", "error"),
                        ("good.cu", "66", "17", "TM307", "warning"), ("warn.cu", "4", "3", "TM901", "warning")], out
    assert "- hook id: tmemlint" in out and "- exit code: 1" in out
    # without the bad kernel the hook passes, and still prints the warning (verbose hook)
    subprocess.run(["git", "rm", "-q", "--cached", "bad.cu"], cwd=work, check=True, env=env)
    (work / "bad.cu").unlink()
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "tmemlint", "--all-files",
                           "--color", "never"], cwd=work, env=env, capture_output=True, text=True, timeout=1200)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert re.findall(r"^(\S+):(\d+):(\d+): (TM\d+) \[(\w+)\]", out, flags=re.M) == [
        ("good.cu", "66", "17", "TM307", "warning"), ("warn.cu", "4", "3", "TM901", "warning")], out
