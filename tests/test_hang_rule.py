"""TM315 (wait-never-completes, ``tmemlint/checks/barriers.py``) on variants of the fixture
fixtures/ptx/tm315_conditional_arrive_bad.ptx: reported where the engine proves the hang
(``SyncModel.never_completes``), silent wherever an arrival may come from a place it cannot see (a bulk copy's
``complete_tx``, a commit, a peer CTA, a callee, an aliased address) or the parity is not a constant."""

from __future__ import annotations

from pathlib import Path

import pytest

from tmemlint.engine import lint_text
from tmemlint.options import Options

BAD = Path(__file__).resolve().parent.parent / "fixtures" / "ptx" / "tm315_conditional_arrive_bad.ptx"
#: lane 0 of warp 0, before the conditional arrive: what a variant adds there runs on every path of that lane
LANE0 = "\t@%p3 bra \t$L_done;\n"
WAIT = "\tmbarrier.try_wait.parity.shared::cta.b64 \t%p5, [%r3], 0; // expect: TM315\n"
DECLS = "\t.reg .b32 \t%r<8>;\n"


def _tm315(text: str) -> list[int]:
    return [f.line for f in lint_text(text, "k.ptx", Options()) if f.code == "TM315"]


def _variant(lane0: str = "", wait: str | None = None, decls: str = "", head: str = "") -> str:
    text = BAD.read_text()
    assert LANE0 in text and WAIT in text and DECLS in text
    text = text.replace(LANE0, LANE0 + lane0, 1).replace(DECLS, DECLS + decls, 1)
    if wait is not None:
        text = text.replace(WAIT, wait, 1)
    return text.replace(".visible .entry", head + ".visible .entry", 1)


def test_the_fixture_is_reported_at_its_wait():
    text = BAD.read_text()
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "expect: TM315" in s)
    assert _tm315(text) == [line]


@pytest.mark.parametrize("lane0, wait, decls, head", [
    pytest.param("\tld.param.u64 \t%rd1, [hang_k_param_1];\n\tmov.u32 \t%r6, slot;\n"
                 "\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes \t[%r6], [%rd1], 16, [%r3];\n",
                 None, "\t.reg .b64 \t%rd<2>;\n", "", id="bulk-copy-complete-tx"),
    pytest.param("\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 \t[%r3];\n",
                 None, "", "", id="tcgen05-commit"),
    pytest.param("\tmapa.shared::cluster.u32 \t%r6, %r3, 0;\n"
                 "\tmbarrier.arrive.release.cluster.shared::cluster.b64 \t_, [%r6];\n", None, "", "",
                 id="remote-arrive-mapa"),
    pytest.param("\tcall.uni \thelper, (%r3);\n", None, "",
                 ".func helper(.param .b32 helper_param_0)\n{\n\t.reg .b32 \t%r<2>;\n"
                 "\tld.param.u32 \t%r1, [helper_param_0];\n"
                 "\tmbarrier.arrive.release.cta.shared::cta.b64 \t_, [%r1];\n\tret;\n}\n\n", id="arrive-in-func"),
    pytest.param("\tcall.uni \tunknown_fn, ();\n", None, "", ".extern .func unknown_fn();\n\n", id="unknown-call"),
    pytest.param("\tand.b32 \t%r6, %r1, 8;\n\tadd.s32 \t%r7, %r3, %r6;\n"
                 "\tmbarrier.arrive.release.cta.shared::cta.b64 \t_, [%r7];\n", None, "", "", id="aliased-arrive"),
    pytest.param("", "\tand.b32 \t%r6, %r1, 1;\n\tmbarrier.try_wait.parity.shared::cta.b64 \t%p5, [%r3], %r6;\n",
                 "", "", id="non-constant-parity"),
    pytest.param("", "\tand.b32 \t%r6, %r1, 8;\n\tadd.s32 \t%r7, %r3, %r6;\n"
                 "\tmbarrier.try_wait.parity.shared::cta.b64 \t%p5, [%r7], 0;\n", "", "", id="aliased-wait"),
])
def test_silent_where_an_arrival_may_come_from_elsewhere(lane0, wait, decls, head):
    text = _variant(lane0, wait, decls, head)
    if "hang_k_param_1" in text:
        text = text.replace(".param .u32 hang_k_param_0)", ".param .u32 hang_k_param_0, .param .u64 hang_k_param_1)")
    assert _tm315(text) == []
