"""One pipeline (issue 25): ``check``, ``tmemlint plan``, the language server and the Python API read a file the
same way (``tmemlint.pipeline``) and give the same findings -- a rule's crash included, which every one of them
reports as the same TM901."""

from __future__ import annotations

from pathlib import Path

import pytest

import tmemlint
from tmemlint import pipeline
from tmemlint.checks.registry import RULES, load_all
from tmemlint.engine import lint_file
from tmemlint.options import Options
from tmemlint.plan.model import PlanError, plan_unit

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*") if p.is_file() and p.name.endswith(pipeline.SEARCHED_SUFFIXES))


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def _key(code: str, line: int, message: str) -> tuple:
    return code, line, message


def _checked(path: Path, options: Options) -> list[tuple]:
    """What ``check`` reports for the file (findings of its own lines), as (code, line, message)."""
    res = lint_file(path, _rel(path), options)
    return sorted(_key(f.code, f.line, f.message) for f in res.findings if f.path == _rel(path))


def _planned(path: Path, options: Options) -> list[tuple] | None:
    """The findings the plan shows, over all its kernels; None when the file cannot be planned."""
    unit = pipeline.load(path.read_bytes(), options, name=_rel(path), whole=True)
    try:
        model = plan_unit(unit, ctas_per_sm=options.ctas_per_sm)
    except PlanError:
        return None
    return sorted({_key(f["code"], f["line"], f["message"]) for k in model["kernels"] for f in k["findings"]})


def _comparable(found: list[tuple], path: Path) -> list[tuple]:
    """``check``'s findings that a plan shows: the rules' findings on the functions it plans (not TM900, which
    stops a PTX plan, nor TM902, a finding about the file's comments)."""
    return sorted({f for f in found if f[0] not in ("TM900", "TM902")})


@pytest.mark.parametrize("path", [p for p in FIXTURES if p.suffix == ".ptx"], ids=_rel)
def test_plan_shows_the_findings_of_check_on_ptx(path):
    opts = Options()
    planned = _planned(path, opts)
    checked = _checked(path, opts)
    if planned is None:
        assert any(c == "TM900" for c, _, _ in checked) or not checked
        return
    assert planned == _comparable(checked, path)


@pytest.mark.parametrize("path", [p for p in FIXTURES if p.suffix != ".ptx"], ids=_rel)
def test_plan_shows_the_findings_of_check_on_cuda(path):
    """Source mode: ``check`` moves findings into the headers they are in, merges those of one place and drops
    those that depend on functions it cannot see (``lineinfo.with_inline_context``); every finding it keeps
    in the file's own lines is one the plan shows, but the front end's own diagnostics (what source mode could
    not read: the plan says them on standard error and omits them)."""
    opts = Options()
    planned = _planned(path, opts)
    unit = pipeline.load(path.read_bytes(), opts, name=_rel(path), whole=True)
    front = {(d.code, d.message) for d in getattr(unit.cuda, "diagnostics", ())}
    checked = [f for f in _comparable(_checked(path, opts), path) if (f[0], f[2]) not in front]
    assert planned is not None
    assert [f for f in checked if f not in planned] == []


@pytest.mark.parametrize("path", FIXTURES, ids=_rel)
def test_api_and_server_give_the_findings_of_check(path):
    from tmemlint.server.incremental import lint_incremental

    opts = Options()
    res = lint_file(path, _rel(path), opts)
    want = [(f.path, f.line, f.column, f.code, f.message, f.severity) for f in res.findings]
    text = path.read_bytes()
    api = tmemlint.check(text, name=_rel(path))
    assert [(f.path, f.line, f.column, f.code, f.message, f.severity) for f in api] == want
    server, _ = lint_incremental(res.text, _rel(path), opts, {})
    assert [(f.path, f.line, f.column, f.code, f.message, f.severity) for f in server] == want


CRASHING = ROOT / "examples" / "gemm_leak_bad.ptx"


@pytest.fixture
def crashing_rule(monkeypatch):
    """TM203's check raises: every consumer reports the same TM901 for it and keeps the other rules' findings."""
    from dataclasses import replace

    load_all()

    def boom(ctx):
        raise ValueError("injected")

    monkeypatch.setitem(RULES, "TM203", replace(RULES["TM203"], check=boom))
    return "TM203 skipped for function"


def test_a_rule_crash_is_the_same_tm901_everywhere(crashing_rule):
    from tmemlint.server.hover import hover_markdown  # noqa: F401 - the server's modules import
    from tmemlint.server.incremental import lint_incremental

    opts = Options()
    checked = lint_file(CRASHING, "k.ptx", opts).findings
    crash = [(f.code, f.line, f.message) for f in checked if crashing_rule in f.message]
    assert crash and all(c == "TM901" and "internal error (ValueError: injected)" in m for c, _, m in crash)
    assert any(f.code == "TM101" for f in checked)  # the other rules still ran

    text = CRASHING.read_text()
    assert [(f.code, f.line, f.message) for f in tmemlint.check(text, name="k.ptx")
            if crashing_rule in f.message] == crash
    server, _ = lint_incremental(text, "k.ptx", opts, {})
    assert [(f.code, f.line, f.message) for f in server if crashing_rule in f.message] == crash
    model = tmemlint.plan(text, name="k.ptx")  # the API's plan
    assert [(f["code"], f["line"], f["message"]) for k in model["kernels"] for f in k["findings"]
            if crashing_rule in f["message"]] == crash
    unit = pipeline.load(text, opts, name="k.ptx", whole=True)  # tmemlint plan, the server's plan and hover
    model = plan_unit(unit)
    assert [(f["code"], f["line"], f["message"]) for k in model["kernels"] for f in k["findings"]
            if crashing_rule in f["message"]] == crash


def test_one_suffix_table_and_one_front_end_dispatch():
    """Only ``tmemlint.pipeline`` names file suffixes, calls a front end or builds a function context."""
    calls = ("parse_cuda(", "parse_text(", "parse_isolating(", "parse_module(", "compile_to_ptx(",
             "FunctionContext(", '".cuh"', '".ptx",')
    where = {}
    for p in (ROOT / "tmemlint").rglob("*.py"):
        rel = str(p.relative_to(ROOT / "tmemlint"))
        if rel.startswith("frontend/") or rel == "compile.py":  # the front ends themselves
            continue
        for line in p.read_text(encoding="utf-8").splitlines():
            code = line.split("#", 1)[0]
            if any(c in code for c in calls) and not code.lstrip().startswith(("def ", '"', "``")):
                where.setdefault(rel, []).append(line.strip())
    assert set(where) == {"pipeline.py"}, where
