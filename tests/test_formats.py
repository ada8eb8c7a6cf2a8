"""Output formats: text (code frame, colour), concise, json (unchanged schema), github workflow commands, and
--statistics; exact text and exit codes."""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

from ptx_samples import ALLOC_END_COLUMN, DEALLOC_END_COLUMN, NCOLS_96, TM102_ALLOC, TM102_DEALLOC
from tmemlint import cli
from tmemlint.cli import app
from tmemlint.findings import Finding, Related, Severity
from tmemlint.report.concise import format_concise
from tmemlint.report.github import escape_property, format_github
from tmemlint.report.text import code_frame, format_text

ALLOC_TEXT = "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 96;"
DEALLOC_TEXT = "\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 96;"


def run(*args: str):
    """``tmemlint check ARGS`` in-process; returns the click Result (stdout, stderr, exit_code)."""
    return CliRunner().invoke(app, ["check", *args])


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    (tmp_path / "k.ptx").write_text(NCOLS_96)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return tmp_path / "k.ptx"


def test_text_has_code_frame_and_caret(kernel):
    r = run("--isolated", "--select", "TM102", "k.ptx")
    assert r.exit_code == 1
    assert r.stdout == (
        f"k.ptx:16:2: TM102 [error] {TM102_ALLOC} (invalid-ncols)\n"
        f"  16 | {ALLOC_TEXT}\n"
        f"     | \t{'^' * (ALLOC_END_COLUMN - 2)}\n"
        "\n"
        f"k.ptx:18:2: TM102 [error] {TM102_DEALLOC} (invalid-ncols)\n"
        f"  18 | {DEALLOC_TEXT}\n"
        f"     | \t{'^' * (DEALLOC_END_COLUMN - 2)}\n")
    assert r.stderr == "Found 2 errors in 1 file\n"
    assert "\x1b[" not in r.stdout


def test_text_related_notes_and_colour():
    f = Finding("a.ptx", 2, 3, 2, 6, "TM101", "tmem-leak", Severity.ERROR, "leaks",
                [Related("a.ptx", 4, 1, "exits here")])
    src = {"a.ptx": "l1\n  abcdef\nl3\nret;\n"}
    assert format_text([f], src) == ("a.ptx:2:3: TM101 [error] leaks (tmem-leak)\n"
                                     "  2 |   abcdef\n"
                                     "    |   ^^^\n"
                                     "  a.ptx:4:1: note: exits here\n")
    assert format_text([f]) == "a.ptx:2:3: TM101 [error] leaks (tmem-leak)\n  a.ptx:4:1: note: exits here\n"
    coloured = format_text([f], src, color=True)
    assert "\x1b[1;31mTM101\x1b[0m" in coloured and "\x1b[1;31m^^^\x1b[0m" in coloured
    assert format_text([]) == ""


def test_code_frame_ranges():
    assert code_frame("\tadd.f32 %f1, %f2;", 7, 2, None) == ["  7 | \tadd.f32 %f1, %f2;", "    | \t" + "^" * 17]
    assert code_frame("ab", 120, 2, 2) == ["  120 | ab", "      |  ^"]  # empty range: one caret
    assert code_frame("abc", 1, 9, 12) == ["  1 | abc", "    |    ^"]  # past the end: one caret after


class _Tty:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize("tty,no_color,want", [(True, None, True), (True, "1", False), (False, None, False),
                                               (True, "", True)])
def test_colour_only_on_tty_without_no_color(monkeypatch, tty, no_color, want):
    monkeypatch.setattr(sys, "stdout", _Tty(tty))
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    assert cli.use_color() is want


def test_concise(kernel):
    r = run("--isolated", "--select", "TM102", "--format", "concise", "k.ptx")
    assert r.exit_code == 1
    assert r.stdout == (f"k.ptx:16:2: TM102 [error] {TM102_ALLOC}\n"
                        f"k.ptx:18:2: TM102 [error] {TM102_DEALLOC}\n")
    assert r.stderr == "Found 2 errors in 1 file\n"
    f = Finding("x.ptx", 1, 1, 1, 2, "TM301", "ld-used-before-wait", Severity.WARNING, "m")
    assert format_concise([f]) == "x.ptx:1:1: TM301 [warning] m\n"


def test_json_schema_unchanged(kernel):
    r = run("--isolated", "--select", "TM102", "--format", "json", "k.ptx")
    assert r.exit_code == 1
    assert r.stderr == ""  # json and sarif: the document only
    fp = [f["fingerprint"] for f in json.loads(r.stdout)]
    assert all(len(x) == 32 for x in fp) and fp[0] != fp[1]
    assert json.loads(r.stdout) == [
        {"path": "k.ptx", "line": 16, "column": 2, "end_line": 16, "end_column": ALLOC_END_COLUMN, "code": "TM102",
         "name": "invalid-ncols", "severity": "error", "message": TM102_ALLOC, "related": [],
         "url": "https://github.com/tmemlint/tmemlint/blob/v0.3.0/rules/TM102-invalid-ncols.md", "function": "k",
         "function_demangled": "k", "fingerprint": fp[0], "flow": []},
        {"path": "k.ptx", "line": 18, "column": 2, "end_line": 18, "end_column": DEALLOC_END_COLUMN,
         "code": "TM102", "name": "invalid-ncols", "severity": "error", "message": TM102_DEALLOC, "related": [],
         "url": "https://github.com/tmemlint/tmemlint/blob/v0.3.0/rules/TM102-invalid-ncols.md", "function": "k",
         "function_demangled": "k", "fingerprint": fp[1], "flow": []},
    ]


def test_github_workflow_commands(kernel):
    r = run("--isolated", "--select", "TM102", "--format", "github", "k.ptx")
    assert r.exit_code == 1
    assert r.stdout == (
        f"::error file=k.ptx,line=16,col=2,endColumn={ALLOC_END_COLUMN},title=TM102::{TM102_ALLOC} (invalid-ncols)\n"
        f"::error file=k.ptx,line=18,col=2,endColumn={DEALLOC_END_COLUMN},title=TM102::{TM102_DEALLOC} "
        "(invalid-ncols)\n")


def test_github_levels_and_escaping():
    fs = [Finding("a,b:c.ptx", 3, 4, 3, 9, "TM301", "ld-used-before-wait", Severity.WARNING, "50% done\nnext"),
          Finding("d.ptx", 5, 1, 7, 2, "TM107", "missing-relinquish", Severity.INFO, "x")]
    assert format_github(fs) == (
        "::warning file=a%2Cb%3Ac.ptx,line=3,col=4,endColumn=9,title=TM301::50%25 done%0Anext (ld-used-before-wait)\n"
        "::notice file=d.ptx,line=5,col=1,endLine=7,title=TM107::x (missing-relinquish)\n")
    assert escape_property("a:b,c%\r") == "a%3Ab%2Cc%25%0D"


def test_statistics(kernel):
    r = run("--isolated", "--select", "TM102", "--statistics", "k.ptx")
    assert r.exit_code == 1
    assert r.stdout == "    2  TM102  invalid-ncols\n"
    r = run("--isolated", "--select", "TM102", "--statistics", "--format", "json", "k.ptx")
    assert json.loads(r.stdout) == [{"code": "TM102", "name": "invalid-ncols", "count": 2}]
    fs = [Finding("a", 1, 1, 1, 2, c, n, Severity.ERROR, "m") for c, n in
          [("TM301", "ld-used-before-wait"), ("TM101", "tmem-leak"), ("TM301", "ld-used-before-wait")]]
    assert cli.statistics(fs) == [("TM301", "ld-used-before-wait", 2), ("TM101", "tmem-leak", 1)]


def test_clean_file_prints_nothing(tmp_path, monkeypatch):
    (tmp_path / "ok.ptx").write_text(NCOLS_96.replace(", 96;", ", 128;"))
    monkeypatch.chdir(tmp_path)
    for fmt in ("text", "concise", "json", "github"):
        r = run("--isolated", "--format", fmt, "ok.ptx")
        assert r.exit_code == 0, fmt
        assert r.stdout == ("[]\n" if fmt == "json" else ""), fmt
