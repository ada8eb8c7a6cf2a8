"""Baselines: --write-baseline records today's findings by fingerprint; --baseline reports only new ones, also
after lines were inserted above them and from another current folder."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ptx_samples import NCOLS_96, insert_line
from tmemlint.cli import app
from tmemlint.engine import Options, lint_text
from tmemlint.fingerprint import FINGERPRINT_KEY


def run(*args: str):
    return CliRunner().invoke(app, ["check", "--isolated", "--select", "TM102", "--format", "concise", *args])


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.ptx").write_text(NCOLS_96)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "src" / "k.ptx"


def test_write_baseline_file(kernel, tmp_path):
    r = run("--write-baseline", "base.json", "src/k.ptx")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "tmemlint: wrote 2 findings to base.json\n")
    data = json.loads((tmp_path / "base.json").read_text())
    fps = [f.fingerprint for f in lint_text(NCOLS_96, "src/k.ptx", Options({"TM102"}))]
    assert data == {"tool": "tmemlint", "version": 2, "fingerprint": FINGERPRINT_KEY, "findings": sorted([
        {"path": "src/k.ptx", "code": "TM102", "fingerprint": fps[0],
         "message": "tcgen05.alloc column count 96 is not a power of two (nCols must be a power of two in [32, 512])"},
        {"path": "src/k.ptx", "code": "TM102", "fingerprint": fps[1],
         "message": "tcgen05.dealloc column count 96 is not a power of two (nCols must be a power of two in "
                    "[32, 512])"},
    ], key=lambda r: r["fingerprint"])}


def test_baseline_hides_known_findings_and_survives_line_shifts(kernel, tmp_path):
    assert run("--write-baseline", "base.json", "src/k.ptx").exit_code == 0
    r = run("--baseline", "base.json", "src/k.ptx")
    assert (r.exit_code, r.stdout) == (0, "")
    kernel.write_text(insert_line(insert_line(NCOLS_96, 8, "\t// new"), 2, "// header"))
    assert run("--baseline", "base.json", "src/k.ptx").stdout == ""
    # a new fault: a third bad alloc count, on a different instruction text
    text = insert_line(NCOLS_96, 17, "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 160;")
    kernel.write_text(text)
    r = run("--baseline", "base.json", "src/k.ptx")
    assert r.exit_code == 1
    assert r.stdout == ("src/k.ptx:17:2: TM102 [error] tcgen05.alloc column count 160 is not a power of two "
                        "(nCols must be a power of two in [32, 512])\n")


def test_baseline_text_summary_counts_hidden(kernel):
    run("--write-baseline", "base.json", "src/k.ptx")
    kernel.write_text(NCOLS_96.replace("[%r3], 96;", "[%r3], 80;"))
    r = CliRunner().invoke(app, ["check", "--isolated", "--select", "TM102", "--baseline", "base.json", "src/k.ptx"])
    assert r.exit_code == 1
    assert r.stderr == "Found 1 error in 1 file (1 more in the baseline)\n"


def test_baseline_paths_are_relative_to_the_baseline_file(kernel, tmp_path, monkeypatch):
    run("--write-baseline", "base.json", "src/k.ptx")
    monkeypatch.chdir(tmp_path / "src")
    r = run("--baseline", "../base.json", "k.ptx")
    assert (r.exit_code, r.stdout) == (0, "")


def test_duplicate_findings_on_identical_lines_are_counted(kernel):
    text = insert_line(NCOLS_96, 17, "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 96;")
    kernel.write_text(text)
    run("--write-baseline", "base.json", "src/k.ptx")
    kernel.write_text(insert_line(text, 17, "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 96;"))
    r = run("--baseline", "base.json", "src/k.ptx")
    assert r.exit_code == 1
    assert len(r.stdout.splitlines()) == 1  # the third identical alloc is new


@pytest.mark.parametrize("content,message", [
    (None, "tmemlint: base.json: cannot read baseline: No such file or directory\n"),
    ("{", "tmemlint: base.json: not a tmemlint baseline (invalid JSON: Expecting property name enclosed in double "
          "quotes: line 1 column 2 (char 1))\n"),
    ("[]", "tmemlint: base.json: not a tmemlint baseline (write one with --write-baseline)\n"),
    ('{"tool": "tmemlint", "fingerprint": "old/v0", "findings": []}',
     "tmemlint: base.json: baseline uses fingerprints 'old/v0', this tmemlint uses 'tmemlint/v2'; write it again "
     "with --write-baseline\n"),
    ('{"tool": "tmemlint", "fingerprint": "tmemlint/v2", "findings": [{"path": 1}]}',
     "tmemlint: base.json: malformed baseline entry {'path': 1}\n"),
])
def test_bad_baseline_is_exit_2(kernel, tmp_path, content, message):
    if content is not None:
        (tmp_path / "base.json").write_text(content)
    r = run("--baseline", "base.json", "src/k.ptx")
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", message)


def test_unwritable_baseline_is_exit_2(kernel):
    r = run("--write-baseline", "nodir/base.json", "src/k.ptx")
    assert (r.exit_code, r.stderr) == (2, "tmemlint: nodir/base.json: cannot write baseline: No such file or "
                                          "directory\n")
