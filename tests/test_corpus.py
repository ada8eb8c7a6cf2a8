"""Correct production code gives no error-level finding: the Triton corpus of ../shared and our real corpus."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, SHARED
from tmemlint.engine import lint_file
from tmemlint.findings import Severity


def _files():
    out = []
    if SHARED.is_dir():
        out += sorted((SHARED / "corpus" / "triton").glob("*.ptx"))
    out += sorted((FIXTURES / "real").rglob("*.ptx"))
    return [pytest.param(p, id=f"{p.parent.name}/{p.name}") for p in out]


@pytest.mark.parametrize("path", _files())
def test_no_error_on_correct_code(path):
    errors = [f"{f.line}: {f.code} {f.message}" for f in lint_file(path).findings if f.severity is Severity.ERROR]
    assert errors == []


def test_corpus_is_present():
    assert len(_files()) >= 4
