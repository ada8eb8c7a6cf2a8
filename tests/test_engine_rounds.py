"""Unit tests of ``SyncModel.since_latest_wait`` (``analysis/order.py``), the happens-before question TM309 asks
("which writes does this remote arrive publish", rules catalog TM309), asked directly on the relayed-``cp.async``
fixture pair (CUTLASS #3324's shape, ``fixtures/ptx/tm309_relayed_cp_async_{bad,good}.ptx``) and on the
direct-publication fixture.  PTX ISA 9.0 §8.7 (a release orders the thread's earlier memory operations),
§9.7.13.15.13 (``mbarrier.arrive``), §9.7.13.15.16 (``try_wait``: ``.acquire.cta`` by default)."""

from __future__ import annotations

from pathlib import Path

from tmemlint import pipeline
from tmemlint.checks.context import FunctionContext
from tmemlint.checks.hazards import RELAYED_CP_ASYNC, _publishes

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ptx"


def _context(name: str) -> FunctionContext:
    unit = pipeline.load(FIXTURES / name)
    contexts = [a.context for a in pipeline.analyse(unit) if a.context is not None]
    assert len(contexts) == 1
    return contexts[0]


def _at(ctx: FunctionContext, line: int):
    return next(i for i in ctx.function.instructions if i.span.line == line)


def test_relay_round_starts_at_the_cta_scope_wait_on_the_cp_async_barrier():
    ctx = _context("tm309_relayed_cp_async_bad.ptx")
    arrive, wait, fence = _at(ctx, 78), _at(ctx, 71), _at(ctx, 73)
    assert arrive.opcode.startswith("mbarrier.arrive") and wait.opcode.startswith("mbarrier.try_wait")
    events = frozenset({wait.index, fence.index})
    rounds = {tuple(i.span.line for i in r) for k in ctx.threads.classes if ctx.sync.executes(k, arrive)
              for r in ctx.sync.since_latest_wait(k, arrive, events)}
    # the producer warp's only path: the CTA-scope wait (the latest wait, kept as the round's first event), then
    # fence.proxy.async, then the remote arrive
    assert rounds == {(71, 73)}
    assert _publishes(ctx) == {arrive.index: RELAYED_CP_ASYNC}


def test_a_later_wait_ends_the_round():
    ctx = _context("tm309_relayed_cp_async_bad.ptx")
    arrive, fence = _at(ctx, 78), _at(ctx, 73)
    # without the cp.async wait among the events, the round since that wait holds only the fence
    rounds = {tuple(i.span.line for i in r) for k in ctx.threads.classes if ctx.sync.executes(k, arrive)
              for r in ctx.sync.since_latest_wait(k, arrive, frozenset({fence.index}))}
    assert rounds == {(73,)}
    # the epilogue's release (line 111) comes after its wait on mma_done: the producer's events are not in its round
    epilogue_arrive = _at(ctx, 111)
    assert {r for k in ctx.threads.classes if ctx.sync.executes(k, epilogue_arrive)
            for r in ctx.sync.since_latest_wait(k, epilogue_arrive, frozenset({fence.index}))} == {()}


def test_a_class_that_does_not_reach_the_arrive_has_no_round():
    ctx = _context("tm309_relayed_cp_async_bad.ptx")
    arrive = _at(ctx, 78)
    others = [k for k in ctx.threads.classes if not ctx.sync.executes(k, arrive)]
    assert others and all(ctx.sync.since_latest_wait(k, arrive, frozenset({arrive.index})) == frozenset()
                          for k in others)
