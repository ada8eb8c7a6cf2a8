"""The noise budget (issue 26, item 5): with default settings, a correct file gives at most one finding per (rule,
source line) and at most ``MAX_WARNINGS`` warnings.  Correct files: the good twins and the pattern fixtures that
expect nothing (fixtures/), the correct example (examples/) and the Triton corpus (../shared/corpus/triton, every
file a correct program).  The same figures for the third-party corpus are in benchmarks/real_corpus_report.md
("Noise budget")."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from typer.testing import CliRunner

from conftest import EXAMPLES, FIXTURES, ROOT, SHARED
from tmemlint.cli import app

#: Warnings allowed on one correct file at the default settings.
MAX_WARNINGS = 20
_EXPECT = re.compile(r"//\s*expect(?:-ptx|-file)?:")


def correct_files() -> list[str]:
    """The correct inputs, relative to the repository root (see the module docstring)."""
    out = []
    for p in sorted(FIXTURES.rglob("*")):
        if p.suffix not in (".ptx", ".cu", ".cuh"):
            continue
        rel = p.relative_to(ROOT).as_posix()
        if "_bad" in rel:
            continue
        if "_good" in rel or not _EXPECT.search(p.read_text(encoding="utf-8", errors="replace")):
            out.append(rel)
    out += [p.relative_to(ROOT).as_posix() for p in sorted(EXAMPLES.glob("*good*")) if p.suffix in (".ptx", ".cu")]
    triton = SHARED / "corpus" / "triton"
    if triton.is_dir():
        out += [str(p) for p in sorted(triton.glob("*.ptx"))]
    return out


def budget(findings: list[dict]) -> dict[str, tuple[int, int, int]]:
    """Per file: (errors, warnings, the most findings of one rule on one source line)."""
    errors, warnings, per_line = Counter(), Counter(), Counter()
    for f in findings:
        errors[f["path"]] += f["severity"] == "error"
        warnings[f["path"]] += f["severity"] == "warning"
        per_line[(f["path"], f["code"], f["line"])] += 1
    most: Counter = Counter()
    for (path, _, _), n in per_line.items():
        most[path] = max(most[path], n)
    return {p: (errors[p], warnings[p], most[p]) for p in most}


@pytest.fixture(scope="module")
def measured(monkeypatch_module):
    monkeypatch_module.chdir(ROOT)
    files = correct_files()
    r = CliRunner().invoke(app, ["check", "--isolated", "--no-cache", "--format", "json", *files])
    assert r.exit_code in (0, 1), r.output
    return files, budget(json.loads(r.stdout))


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_the_correct_files_are_many(measured):
    files, _ = measured
    assert sum(f.startswith("fixtures/") for f in files) >= 150
    assert "examples/gemm_blockscaled_good.ptx" in files and "examples/gemm_blockscaled_good.cu" in files


def test_at_most_one_finding_per_rule_and_source_line(measured):
    _, got = measured
    assert {p: b for p, b in got.items() if b[2] > 1} == {}


def test_at_most_twenty_warnings_on_a_correct_file(measured):
    _, got = measured
    assert {p: b for p, b in got.items() if b[1] > MAX_WARNINGS} == {}
