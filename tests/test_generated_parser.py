"""The generated PTX parser (``tmemlint.frontend.ptx_lalr``, issue 29) is the grammar's: it was generated from
today's ``grammars/ptx.lark`` and gives the IR, and the errors, that Lark gives with the same grammar.

Lark's table construction iterates over sets, so a regenerated module differs from the committed one in the order
of its tables even for the same grammar: staleness is checked by the grammar's SHA-256 the module records, and the
language by parsing every fixture with both parsers."""

from __future__ import annotations

import pytest

from conftest import EXAMPLES, FIXTURES, ROOT
from tmemlint.frontend import generate, parser, ptx_lalr

PTX_FILES = sorted(FIXTURES.rglob("*.ptx")) + sorted(EXAMPLES.glob("*.ptx"))


def test_the_generated_parser_is_of_todays_grammar():
    """Fails after an edit of the grammar until ``python -m tmemlint.frontend.generate`` has been run."""
    grammar = (ROOT / "grammars" / "ptx.lark").read_text(encoding="utf-8")
    assert ptx_lalr.GRAMMAR_SHA256 == generate.grammar_sha256(grammar), \
        "grammars/ptx.lark changed: run python -m tmemlint.frontend.generate"
    assert parser.grammar_text() == grammar


def test_a_regenerated_module_loads_and_records_the_grammar(tmp_path):
    """The generator's output is a module that records the grammar's hash and loads without ``lark``'s loader."""
    text = generate.source(parser.grammar_text())
    assert f'GRAMMAR_SHA256 = "{ptx_lalr.GRAMMAR_SHA256}"' in text
    namespace: dict = {}
    exec(compile(text, str(tmp_path / "ptx_lalr.py"), "exec"), namespace)
    p = namespace["Lark_StandAlone"](transformer=parser.IRBuilder())
    m = p.parse(parser.normalize((FIXTURES / "nvcc" / "tm102_ncols_bad.ptx").read_text()))
    assert any(type(x).__name__ == "Function" for x in m)


def test_trim_fails_loudly_when_lark_writes_its_module_differently():
    """``generate.trim`` replaces exact lines of Lark's generator; a Lark version that writes them otherwise must stop
    the generation rather than leave ``logging`` and ``pickle`` on a check's start-up unnoticed."""
    text = generate.source(parser.grammar_text())
    assert "import logging" not in text and "import pickle" not in text
    with pytest.raises(ValueError, match="update TRIMS"):
        generate.trim(text)  # already trimmed: the lines are gone


def both(monkeypatch, text: str, path: str):
    """``parse_module`` of ``text`` with the generated parser, then with Lark (lark-cython when installed)."""
    out = []
    for lark in (False, True):
        monkeypatch.setattr(parser, "_pick", lambda _text, lark=lark: lark)
        try:
            out.append(repr(parser.parse_module(text, path)))
        except parser.PTXSyntaxError as e:
            out.append((type(e).__name__, e.message, e.line, e.column, e.end_column))
    return out


@pytest.mark.parametrize("path", PTX_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_same_module_from_both_parsers(monkeypatch, path):
    text = parser.normalize(parser.decode(path.read_bytes()))
    generated, lark = both(monkeypatch, text, str(path))
    assert generated == lark


HEADER = ".version 9.0\n.target sm_100a\n.address_size 64\n"


@pytest.mark.parametrize("text", [
    HEADER + ".visible .entry k()\n{\n  mov.u32 %r1 %r2;\n}\n",
    HEADER + ".visible .entry k()\n{\n  ret;\n",
    "int main() { return 0; }\n",
    HEADER + ".visible .entry k()\n{\n  mov.u32 %r1, `;\n}\n",
    HEADER + ".visible .entry k()\n{\n  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32\n}\n",
])
def test_same_error_from_both_parsers(monkeypatch, text):
    generated, lark = both(monkeypatch, text, "<t>")
    assert isinstance(generated, tuple) and generated == lark


def test_the_pure_lark_parser_agrees_on_errors(monkeypatch):
    """The reference error position (Lark's pure-Python parser, as before issue 29) is the generated parser's."""
    from lark.exceptions import UnexpectedInput

    text = HEADER + ".visible .entry k()\n{\n  mov.u32 %r1 %r2;\n}\n"
    with pytest.raises(UnexpectedInput) as ref:
        parser._parser(False).parse(text)
    with pytest.raises(parser.PTXSyntaxError) as got:
        monkeypatch.setattr(parser, "_pick", lambda _text: False)
        parser.parse_module(text, "<t>")
    assert (got.value.line, got.value.column) == (ref.value.line, ref.value.column)


def test_the_generated_parser_reads_the_first_chars_of_a_process_lark_the_rest(monkeypatch):
    parser._parser.cache_clear()
    monkeypatch.setattr(parser, "_generated", parser._Budget())
    monkeypatch.setattr(parser, "backend", lambda: "lark-cython")
    half = parser.STANDALONE_MAX_CHARS // 2
    assert not parser._pick("x" * half) and not parser._pick("x" * half)
    assert parser._pick("x")  # the budget is spent: lark-cython from here on
    assert parser._pick("x" * (parser.STANDALONE_MAX_CHARS + 1))
    monkeypatch.setattr(parser, "_generated", parser._Budget())
    assert parser._pick("x" * (parser.STANDALONE_MAX_CHARS + 1))
    monkeypatch.setattr(parser, "backend", lambda: "lark")
    assert not parser._pick("x" * (parser.STANDALONE_MAX_CHARS + 1))  # pure Lark is no faster than the generated one
