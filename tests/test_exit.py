"""The exit phase (issue 29, session 10): a check run by the console script (``tmemlint.entry.console``: the
``tmemlint`` command and ``python -m tmemlint``) flushes its standard streams and leaves with ``os._exit``,
skipping the interpreter's shutdown.  Each path must still write all of its output and give its exit code: a
reader that closes the pipe early, ``--output-file``, ``--profile-json``, ``-j 2``, a file that cannot be read, a
cache hit.  ``entry.main`` called in a process that goes on (this one) raises ``SystemExit`` instead, and
``TMEMLINT_NO_FAST_EXIT=1`` turns the fast exit off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from tmemlint import entry

BAD = str(FIXTURES / "nvcc" / "tm102_ncols_bad.ptx")
GOOD = str(FIXTURES / "ptx" / "bitcast_rename_before_wait.ptx")
BAD_SUMMARY = "Found 2 errors and 1 warning in 1 file\n"  # TM102 twice, TM307 (its .cu lines, -lineinfo)

#: Registers an ``atexit`` handler, then runs ``entry.console`` (the console script) or ``entry.main``: the handler
#: runs only when the process leaves through the interpreter's normal exit.
PROBE = """
import atexit, sys
kind = sys.argv[1]
atexit.register(lambda: sys.__stderr__.write("ATEXIT\\n"))
sys.argv = ["tmemlint"] + sys.argv[2:]
from tmemlint import entry
entry.console() if kind == "console" else entry.main()
"""


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TMEMLINT_NO_FAST_EXIT")}
    out["TMEMLINT_NO_CACHE"] = "1"
    out.update(extra)
    return out


def tmemlint(*args: str, cwd=None, stdout=subprocess.PIPE, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-m", "tmemlint", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, cwd=cwd, env=env(**extra), timeout=300)


def probe(kind: str, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-c", PROBE, kind, *args], capture_output=True, text=True,
                          env=env(**extra), timeout=300)


@pytest.mark.parametrize("args", [["--isolated", BAD], ["--isolated", "--select", "TM1", BAD]])
def test_the_console_script_skips_the_interpreters_exit_after_a_check(args):
    """``--select`` is read by typer (``cli.main``), the other command line by ``checkcmd.run_check`` directly."""
    fast = probe("console", *args)
    assert (fast.returncode, fast.stderr.endswith("ATEXIT\n")) == (1, False)
    assert "TM102" in fast.stdout
    for slow in (probe("console", *args, TMEMLINT_NO_FAST_EXIT="1"), probe("main", *args)):
        assert (slow.returncode, slow.stdout, slow.stderr) == (1, fast.stdout, fast.stderr + "ATEXIT\n")


@pytest.mark.parametrize("args", [["rules"], ["rule", "TM101"], ["--version"], ["plan", "--help"]])
def test_commands_other_than_a_check_leave_through_the_normal_exit(args):
    p = probe("console", *args)
    assert p.returncode == 0 and p.stdout
    assert p.stderr == "ATEXIT\n"


def test_main_in_a_process_that_goes_on_raises_system_exit(capsys):
    with pytest.raises(SystemExit) as e:
        entry.main(["--no-cache", "--isolated", "--format", "concise", BAD])
    assert e.value.code == 1
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 3 and err == BAD_SUMMARY


@pytest.mark.parametrize("args, summary", [(["--isolated", BAD], BAD_SUMMARY),
                                           (["--isolated", "--format", "json", BAD], ""),
                                           (["--isolated", "--select", "TM1", BAD], "Found 2 errors in 1 file\n")])
def test_a_reader_that_closes_the_pipe_early_loses_the_findings_not_the_summary_or_the_exit_code(args, summary):
    """Standard output is a pipe whose reading end is closed before the check starts: every write to it fails
    (``EPIPE``); the check still ends with its summary on standard error and exit code 1, without a traceback."""
    r, w = os.pipe()
    os.close(r)
    try:
        p = tmemlint(*args, stdout=w)
    finally:
        os.close(w)
    assert (p.returncode, p.stderr) == (1, summary)


def test_the_output_file_is_complete(tmp_path):
    out = tmp_path / "f.json"
    p = tmemlint("--isolated", "--format", "json", "-o", str(out), BAD, GOOD)
    assert (p.returncode, p.stdout, p.stderr) == (1, "", "")
    direct = tmemlint("--isolated", "--format", "json", BAD, GOOD)
    assert out.read_text(encoding="utf-8") == direct.stdout
    assert [f["code"] for f in json.loads(direct.stdout)] == ["TM307", "TM102", "TM102"]


def test_the_sarif_output_file_is_complete(tmp_path):
    out = tmp_path / "f.sarif"
    p = tmemlint("--isolated", "--format", "sarif", "--output-file", str(out), BAD)
    assert p.returncode == 1
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [r["ruleId"] for r in doc["runs"][0]["results"]] == ["TM307", "TM102", "TM102"]


def test_the_profile_json_is_complete(tmp_path):
    out = tmp_path / "p.json"
    p = tmemlint("--isolated", "--format", "concise", "--profile-json", str(out), BAD)
    assert p.returncode == 1 and len(p.stdout.splitlines()) == 3 and p.stderr == BAD_SUMMARY
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [Path(f["path"]).resolve() for f in doc["files"]] == [Path(BAD)]
    assert doc["files"][0]["phases"]["parse"] > 0


def test_two_jobs_give_every_finding_and_the_exit_code():
    one = tmemlint("--isolated", "--format", "concise", "-j", "1", BAD, GOOD)
    two = tmemlint("--isolated", "--format", "concise", "-j", "2", BAD, GOOD)
    assert (two.returncode, two.stdout, two.stderr) == (one.returncode, one.stdout, one.stderr)
    assert one.returncode == 1 and len(one.stdout.splitlines()) == 3 and one.stderr == BAD_SUMMARY


def test_a_file_that_cannot_be_read_still_gives_exit_code_2_and_its_message(tmp_path):
    p = tmemlint("--isolated", "--format", "concise", BAD, str(tmp_path / "missing.ptx"))
    assert p.returncode == 2
    assert len(p.stdout.splitlines()) == 3
    assert p.stderr == f"tmemlint: {tmp_path / 'missing.ptx'}: no such file or directory\n" + BAD_SUMMARY


def test_a_cache_miss_then_a_hit_give_the_same_output(tmp_path):
    """The miss writes the cache entry (``entry._write``) before the fast exit; the hit reads it back."""
    cache = str(tmp_path / "cache")
    extra = {"TMEMLINT_CACHE_DIR": cache, "TMEMLINT_NO_CACHE": "0"}
    miss = tmemlint("--isolated", "--format", "concise", BAD, **extra)
    entries = [n for _, _, names in os.walk(cache) for n in names]
    hit = tmemlint("--isolated", "--format", "concise", BAD, **extra)
    assert len(entries) == 1
    assert (miss.returncode, miss.stdout, miss.stderr) == (hit.returncode, hit.stdout, hit.stderr)
    assert miss.returncode == 1 and miss.stderr == BAD_SUMMARY


def test_every_test_starts_tmemlint_without_the_checkout_on_sys_path():
    """A test that starts ``python -m tmemlint`` (or ``-c`` code that imports it) with ``-P`` imports the installed
    package (``pip install .``), not the ``tmemlint/`` folder of the working directory (Python >= 3.11, the
    ``requires-python`` of pyproject.toml)."""
    import re

    from conftest import ROOT

    bare = [f"{p.name}:{n}" for p in sorted((ROOT / "tests").glob("*.py")) for n, line in
            enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r'sys\.executable, "-[mc]"(, "tmemlint|, [A-Z_a-z]+, )', line)]
    assert bare == []
