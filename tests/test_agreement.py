"""Source mode agrees with compile mode (issue 27, item 3), as a measured property: on every ``.cu`` of fixtures/ and
examples/ (and of each project of fixtures/projects), the findings of both modes keyed by (code, file, line) are
equal, or the difference is one source mode may make (TM901 where it cannot see; compile-only findings on a kernel it
did not claim to have read), or it is listed with its reason in tests/data/agreement_differences.json.

Compile mode lints the committed ``.ptx`` beside a fixture (nvcc's ``-arch=sm_100a -ptx -lineinfo`` output, kept
current by tests/test_fixtures.py) and runs nvcc on the others; without nvcc those are skipped.  When a git-ignored
``.corpus/src/`` holds third-party sources (ThunderKittens, CUTLASS, ...), ``test_third_party_corpus_agrees`` runs
on its ``.cu`` files too when asked (slow: nvcc per file, tens of minutes; ``TMEMLINT_AGREEMENT_CORPUS=1``).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from agreement import ALLOWED, DIFFERENCES, Outcome, compare, ident, load_differences, table
from conftest import EXAMPLES, FIXTURES, ROOT
from test_fixtures import _options
from tmemlint.config import Overrides, Settings
from tmemlint.engine import Options

HAVE_NVCC = shutil.which("nvcc") is not None
CORPUS = ROOT / ".corpus" / "src"
KNOWN = load_differences()


def _fixture_files() -> list[Path]:
    files = sorted(p for p in FIXTURES.rglob("*.cu") if "projects" not in p.relative_to(FIXTURES).parts)
    return files + sorted(EXAMPLES.glob("*.cu"))


def _fixture_params() -> list:
    out = []
    for p in _fixture_files():
        rel = p.relative_to(ROOT).as_posix()
        has_ptx = p.with_suffix(".ptx").exists()
        marks = [] if has_ptx or HAVE_NVCC else [pytest.mark.skip(reason="no committed .ptx and nvcc is absent")]
        out.append(pytest.param(p, id=rel, marks=marks))
    return out


def _projects() -> list:
    projects = FIXTURES / "projects"
    marks = [] if HAVE_NVCC else [pytest.mark.skip(reason="nvcc (CUDA toolkit) is not installed")]
    return [pytest.param(p, id=p.name, marks=marks) for p in sorted(projects.iterdir())
            if p.is_dir() and any(p.rglob("*.cu"))]


def _disagreements(outcome: Outcome) -> list[str]:
    """The rows of ``outcome`` that are neither allowed nor explained, printed."""
    bad = [r for r in outcome.rows if r.kind not in ALLOWED and ident(r) not in KNOWN]
    return [f"{r.kind} {r.key.code} {r.key.path}:{r.key.line} [{r.severity}]" for r in bad]


def _stale(outcomes: list[Outcome]) -> list[str]:
    """Explained differences of the checked files that no longer occur (fixing one makes its entry go)."""
    checked = {o.checked for o in outcomes}
    seen = {ident(r) for o in outcomes for r in o.rows}
    return [f"{k}" for k in KNOWN if k[0] in checked and k not in seen]


@pytest.mark.parametrize("path", _fixture_params())
def test_fixture_modes_agree(path):
    ptx = path.with_suffix(".ptx")
    outcome = compare(path, _options(path), ptx=ptx if ptx.exists() else None)
    assert outcome.error == ""
    assert _disagreements(outcome) == []
    assert _stale([outcome]) == []


@pytest.mark.parametrize("project", _projects())
def test_project_modes_agree(project):
    kernel = next(iter(sorted(project.rglob("*.cu"))))
    opts = Settings(None, False, Overrides()).options_for(str(kernel))
    extra = _options(kernel)
    if extra is not None:
        opts = dataclasses.replace(opts, codes=extra.codes)
    outcome = compare(kernel.relative_to(project), opts, cwd=project, base=ROOT)
    assert outcome.error == ""
    assert _disagreements(outcome) == []
    assert _stale([outcome]) == []


def test_the_explained_differences_name_files_and_reasons():
    assert DIFFERENCES.exists()
    for (checked, file, line, code, kind), reason in KNOWN.items():
        assert kind in ("source-only", "compile-only") and code.startswith("TM") and line > 0
        assert reason.strip() and not os.path.isabs(checked) and not os.path.isabs(file)


@pytest.mark.skipif(not (CORPUS.is_dir() and HAVE_NVCC) or os.environ.get("TMEMLINT_AGREEMENT_CORPUS") != "1",
                    reason="TMEMLINT_AGREEMENT_CORPUS=1 runs it (needs .corpus/src, git-ignored third-party sources, "
                           "and nvcc)")
def test_third_party_corpus_agrees():
    """Each ``.cu`` of ``.corpus/src`` that nvcc compiles standalone (with the include folders the sources ship);
    the files nvcc rejects are not compared."""
    outcomes = []
    for cu in sorted(CORPUS.rglob("*.cu")):
        inc = tuple(str(d) for d in _corpus_includes(cu))
        opts = Options(include_dirs=inc, nvcc_args=_corpus_nvcc_args(cu), defines=_corpus_defines(cu))
        outcomes.append(compare(cu, opts, cwd=cu.parent))
    bad = [line for o in outcomes for line in _disagreements(o)]
    assert bad == [] and _stale(outcomes) == [], table(outcomes)


def _corpus_project(cu: Path) -> Path:
    return CORPUS / cu.relative_to(CORPUS).parts[0]


def _corpus_includes(cu: Path) -> list[Path]:
    """The include folders a project of the corpus ships (``include/``, ThunderKittens' ``prototype/``, DeepGEMM's
    ``deep_gemm/include``) and CUTLASS's, when the corpus has it (CuTe for DeepGEMM and FlashMLA)."""
    top = _corpus_project(cu)
    cands = [top / "include", top / "prototype", top / "deep_gemm" / "include", top / "csrc",
             CORPUS / "cutlass-min" / "include", CORPUS / "cutlass" / "include"]
    return [d for d in cands if d.is_dir()]


def _corpus_defines(cu: Path) -> dict[str, str]:
    """The macros a project's own build defines (ThunderKittens' common.mk for a B200: KITTENS_BLACKWELL, NDEBUG)."""
    return {"KITTENS_BLACKWELL": "1", "NDEBUG": "1"} if _corpus_project(cu).name == "ThunderKittens" else {}


def _corpus_nvcc_args(cu: Path) -> tuple[str, ...]:
    return ("-std=c++20", "--expt-relaxed-constexpr", "--expt-extended-lambda")
