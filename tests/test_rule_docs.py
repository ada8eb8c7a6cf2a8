"""Rule pages and rule fixtures: every registered rule has its page ``rules/<CODE>-<name>.md`` with the required
sections, every page belongs to a registered rule, and every rule with a check has a bad and a good fixture.

A *bad fixture* for CODE is a fixture file with an ``// expect: CODE`` (or ``expect-file:``) comment under
``fixtures/``, or a ``../shared/cases/*/expect.txt`` row naming CODE.  A *good fixture* for CODE is a file named
``*<code>*_good.*`` (code in lower case) under ``fixtures/``, or a shared case folder whose expect.txt names CODE
(its ``good.*`` is the fix)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, SHARED, expectations, needs_shared
from tmemlint.checks.registry import RULES, load_all
from tmemlint.docs import rule_doc, rule_doc_path

load_all()

RULES_DIR = ROOT / "rules"
#: The sections of a rule page, in this order (``## <name>`` headings), and nothing else at that level.
SECTIONS = ("What it reports", "Why it matters", "Bad", "Good", "How it is decided", "Limits", "Suppress")
#: Families by the code's first digit (the catalog's families; the same words as the SARIF tags).
FAMILIES = {"1": "lifecycle", "2": "addresses", "3": "ordering", "4": "regions", "9": "input"}
#: Pages are short: printed by ``tmemlint rule`` and embedded in SARIF ``help``.
PAGE_LINES = (40, 90)
FIXTURE_SUFFIXES = (".ptx", ".cu", ".cuh")

#: Rules with a check whose bad and/or good fixture does not exist yet: code → what is missing and why.  The test of
#: such a rule is an expected failure (strict): once the fixtures exist it passes, fails as XPASS, and the entry must
#: go.
MISSING_FIXTURES: dict[str, str] = {
    "TM203": "no good fixture: the bad one is the FA4 pattern fixtures/patterns/fa4_constant_tmem_addresses_bad.ptx, "
             "whose fix is named after the pattern (fa4_constant_tmem_addresses.ptx), not *tm203*_good.*",
}


def _page(code: str) -> Path:
    r = RULES[code]
    return RULES_DIR / f"{r.code}-{r.name}.md"


def _sections(text: str) -> dict[str, str]:
    """``## heading`` → the text up to the next ``## `` heading."""
    out: dict[str, str] = {}
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    for name, body in zip(parts[1::2], parts[2::2]):
        out[name.strip()] = body
    return out


ALL = sorted(RULES)
CHECKED = sorted(c for c, r in RULES.items() if r.check is not None)


# ---- pages --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("code", ALL)
def test_every_rule_has_its_page(code):
    path = _page(code)
    assert path.is_file(), f"{code} has no page {path.relative_to(ROOT)}"
    # the page `tmemlint rule CODE` prints and SARIF embeds is this file
    assert rule_doc_path(code) is not None
    assert rule_doc(code) == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("code", ALL)
def test_page_title_and_metadata(code):
    r = RULES[code]
    lines = _page(code).read_text(encoding="utf-8").splitlines()
    assert lines[0] == f"# {r.code} {r.name}"
    meta = next(x for x in lines[1:] if x.strip())
    assert meta.startswith(f"**Default severity:** {r.severity.value}"), meta
    assert ("**Default:** enabled" if r.enabled else "**Default:** opt-in") in meta, meta
    family = code[2]
    assert f"**Family:** {family}xx {FAMILIES[family]}" in meta, meta


@pytest.mark.parametrize("code", ALL)
def test_page_sections(code):
    text = _page(code).read_text(encoding="utf-8")
    assert tuple(re.findall(r"^## (.+)$", text, flags=re.M)) == SECTIONS
    sec = _sections(text)
    for name in SECTIONS:
        assert sec[name].strip(), f"{code}: section {name!r} is empty"
    for name in ("Bad", "Good"):
        assert re.search(r"^```ptx\n.+?^```$", sec[name], flags=re.M | re.S), f"{code}: {name} has no ```ptx block"
    if code[2] != "9":  # the input rules have no ISA section of their own
        assert "PTX ISA 9.0" in sec["Why it matters"] and "#" in sec["Why it matters"], \
            f"{code}: 'Why it matters' cites no PTX ISA 9.0 section or anchor"
    assert re.search(rf"tmemlint: disable(-next-line|-file)?=[\w,-]*\b{code}\b", sec["Suppress"]), \
        f"{code}: 'Suppress' shows no tmemlint: disable=… comment for the code"
    n = len(text.splitlines())
    assert PAGE_LINES[0] <= n <= PAGE_LINES[1], f"{code}: {n} lines, keep pages within {PAGE_LINES}"


def test_every_page_is_a_registered_rule():
    pages = sorted(p.name for p in RULES_DIR.glob("*.md"))
    assert pages, "no rule pages"
    want = {_page(c).name for c in RULES}
    stray = [p for p in pages if p not in want]
    assert not stray, f"pages without a registered rule (or with a stale name): {stray}"


# ---- fixtures -----------------------------------------------------------------------------------------------------

def _fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name.endswith(FIXTURE_SUFFIXES))


def _shared_codes() -> set[str]:
    """Codes named by the rows of ../shared/cases/*/expect.txt (``FILE[:LINE]: CODE``; ``clean`` is not a code)."""
    out: set[str] = set()
    for exp in sorted((SHARED / "cases").glob("*/expect.txt")) if SHARED.is_dir() else []:
        for row in exp.read_text(encoding="utf-8").splitlines():
            if ": " in row:
                want = row.rsplit(": ", 1)[1].strip()
                if want in RULES:
                    out.add(want)
    return out


def _bad_codes() -> set[str]:
    out = _shared_codes()
    for p in _fixture_files():
        lines, file_codes = expectations(p)
        out |= {c for _, c in lines} | file_codes
    return out


def _good_codes() -> set[str]:
    out = _shared_codes()  # a case folder naming CODE has the fix in its good.* file
    names = [p.name.lower() for p in _fixture_files()]
    for code in RULES:
        pat = re.compile(rf".*{code.lower()}.*_good\.[^/]+$")
        if any(pat.match(n) for n in names):
            out.add(code)
    return out


def _fixture_params():
    out = []
    for code in CHECKED:
        marks = [pytest.mark.xfail(strict=True, reason=MISSING_FIXTURES[code])] if code in MISSING_FIXTURES else []
        out.append(pytest.param(code, id=code, marks=marks))
    return out


@pytest.mark.parametrize("code", _fixture_params())
def test_rule_has_bad_and_good_fixture(code):
    assert code in _bad_codes(), f"{code}: no fixture with '// expect: {code}' and no shared case naming it"
    assert code in _good_codes(), f"{code}: no fixtures/**/*{code.lower()}*_good.* and no shared case naming it"


def test_missing_fixtures_allow_list_names_checked_rules():
    assert set(MISSING_FIXTURES) <= set(CHECKED), "the allow-list names codes that are not rules with a check"


@needs_shared
def test_shared_cases_count_as_fixtures():
    # the definitions above rely on the shared cases for some rules; make sure they are read
    assert {"TM102", "TM105", "TM109", "TM305"} <= _shared_codes()
