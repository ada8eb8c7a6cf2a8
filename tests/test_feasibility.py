"""The solver's questions (``tmemlint.analysis.feasibility``): a counted loop's values and the pruning of a branch
outcome that contradicts a loop's exit test; z3 is imported only when a question is asked."""

from __future__ import annotations

import subprocess
import sys

from conftest import FIXTURES, ROOT
from tmemlint.checks.context import FunctionContext
from tmemlint.checks.ordering import dealloc_unsynchronized
from tmemlint.frontend.parser import parse_file


def _ctx(name: str) -> FunctionContext:
    path = FIXTURES / "ptx" / name
    m = parse_file(path)
    return FunctionContext(m, m.functions[0], str(path))


def test_counted_loop_values_at_the_header_read():
    ctx = _ctx("recall_chunk_loop_past_alloc_bad.ptx")
    fe = ctx.feasibility
    iv = fe.induction("%r30")
    assert iv is not None and (iv.delta, iv.width) == (32, 32)
    add = next(i for i in ctx.function.instructions if i.span.line == 54)  # add.s32 %r31, %r22, %r30
    assert fe.loop_values(add, "%r30") == frozenset({0, 32, 64, 96, 128})
    assert fe.loop_values(add, "%r30") == frozenset({0, 32, 64, 96, 128})
    assert (fe.cost.queries, fe.cost.hits) == (1, 1)
    assert fe.answered == {"%r30"}


def test_step16_loop_values():
    ctx = _ctx("feasibility_chunk_step16_good.ptx")
    add = next(i for i in ctx.function.instructions if i.span.line == 54)
    assert ctx.feasibility.loop_values(add, "%r30") == frozenset({0, 16, 32, 48})


def test_exit_after_a_skipped_last_iteration_barrier_is_pruned():
    ctx = _ctx("recall_last_iteration_barrier_good.ptx")
    assert [f.code for f in ctx.findings] == []
    dealloc_unsynchronized(ctx)
    assert ctx.findings == []
    assert ctx.feasibility.cost.pruned >= 1


def test_a_file_without_counted_loops_never_imports_z3():
    probe = ("import sys; from tmemlint.engine import lint_file; "
             f"lint_file({str(FIXTURES / 'ptx' / 'constant_taddr_memory_access.ptx')!r}); print('z3' in sys.modules)")
    assert (FIXTURES / 'ptx' / 'constant_taddr_memory_access.ptx').is_file()
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "False", out.stderr
