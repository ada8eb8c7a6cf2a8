"""Unit tests of ``SyncModel.pending_at`` (``analysis/order.py``): which tcgen05.ld are still in flight for the
thread that reaches an instruction, per warp class and feasible path.  Small hand-written kernels (each accepted
by ``ptxas -arch=sm_100a`` of CUDA 13.0 without a message) built with
``test_engine``'s prologue (warp 0 allocates, every warp passes ``bar.sync 0``; ``%r2`` = warp index, ``%r5`` = TMEM
base, ``%p9`` = a CTA-uniform flag from a parameter), each positive case with a one-instruction twin.

Source: PTX ISA 9.0 tcgen05.wait (``#tcgen05-instructions-tcgen05-wait``: ``wait::ld`` completes every prior
``tcgen05.ld`` issued by the executing thread), §9.7.16.6.4.5 (a register dependency orders the value, not the TMEM
read); ``../shared/docs/tcgen05-reference.md`` §3.1.
"""

from __future__ import annotations

from test_engine import build, swap

LD = "\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r40, %r41, %r42, %r43}, [%r5]; // @ld\n"
WAIT = "\ttcgen05.wait::ld.sync.aligned;\n"
ARRIVE = "\tmbarrier.arrive.shared::cta.b64 _, [bar0]; // @x\n"


def _pending(k, name: str = "x") -> tuple[int, ...]:
    """Indices of the loads in flight at the instruction marked ``name``."""
    return tuple(p.op.index for p in k.ctx.sync.pending_at(k.at[name], "ld").ops)


def test_wait_completes_own_load():
    body = LD + WAIT + ARRIVE
    k = build(body)
    assert _pending(k) == ()
    k2 = build(swap(body, WAIT, "\tadd.u32 %r44, %r40, 1;\n"))  # a register read instead of the wait
    assert _pending(k2) == (k2.at["ld"].index,)


def test_wait_on_one_path_only():
    """A wait under a CTA-uniform condition: the other path reaches the hand-over with the load in flight."""
    body = LD + "\t@%p9 bra SKIP;\n" + WAIT + "SKIP:\n" + ARRIVE
    k = build(body)
    assert _pending(k) == (k.at["ld"].index,)
    k2 = build(swap(body, "\t@%p9 bra SKIP;\n", "\tbra.uni SKIP2;\nSKIP2:\n"))  # the wait on every path
    assert _pending(k2) == ()


def test_wait_in_another_warp_does_not_complete():
    """Warp 1 loads; only warp 2 waits: warp 1's load is still in flight at its hand-over."""
    body = ("\tsetp.ne.u32 %p3, %r2, 1;\n\tsetp.ne.u32 %p4, %r2, 2;\n\t@%p3 bra NOLD;\n" + LD + "NOLD:\n"
            "\t@%p4 bra NOWAIT;\n" + WAIT + "NOWAIT:\n" + ARRIVE)
    k = build(body)
    ld = k.at["ld"].index
    assert _pending(k) == (ld,)
    assert tuple(p.op.index for p in k.ctx.sync.pending_at(k.at["x"], "ld", k.warp(1)).ops) == (ld,)
    assert k.ctx.sync.pending_at(k.at["x"], "ld", k.warp(2)).ops == ()  # warp 2 issued nothing
    k2 = build(swap(body, "\tsetp.ne.u32 %p4, %r2, 2;\n", "\tsetp.ne.u32 %p4, %r2, 1;\n"))  # warp 1 waits itself
    assert _pending(k2) == ()


def test_load_in_loop_wait_after_loop():
    """Loads in a counted loop, one wait after it: in flight in the loop (at the next iteration's load and at the
    in-loop hand-over), complete after the loop."""
    body = ("\tmov.u32 %r60, 0;\nLOOP:\n" + LD + "\tmbarrier.arrive.shared::cta.b64 _, [bar1]; // @inloop\n"
            "\tadd.u32 %r60, %r60, 1;\n\tsetp.lt.u32 %p5, %r60, 4;\n\t@%p5 bra LOOP;\n" + WAIT + ARRIVE)
    k = build(body)
    ld = k.at["ld"].index
    assert _pending(k, "inloop") == (ld,)
    assert _pending(k, "ld") == (ld,)  # the previous iteration's load
    assert _pending(k) == ()
    k2 = build(swap(body, WAIT, "\tadd.u32 %r61, %r40, 1;\n"))
    assert _pending(k2) == (k2.at["ld"].index,)


def test_guarded_read_on_lanes_0_15_then_handover():
    """The result is read only on lanes 0-15 (a guarded use): that read completes nothing, on either group of
    lanes; ``read`` tells which paths read it."""
    body = (LD + "\tand.b32 %r62, %r1, 31;\n\tsetp.lt.u32 %p6, %r62, 16;\n"
            "\t@%p6 st.global.u32 [%rd1], %r40; // @use\n" + ARRIVE)
    k = build(body)
    ld = k.at["ld"].index
    got = k.ctx.sync.pending_at(k.at["x"], "ld").ops
    assert tuple(p.op.index for p in got) == (ld,) and got[0].read
    k2 = build(swap(body, ARRIVE, WAIT + ARRIVE))
    assert _pending(k2) == ()


#: Warp 1 issues four loads (no wait); every warp passes ``bar.sync 0``; warp 0 then frees the columns.
MANY_LOADS = ("\tsetp.ne.u32 %p3, %r2, 1;\n"
              + "".join(f"\t@!%p3 tcgen05.ld.sync.aligned.32x32b.x4.b32 {{%r{40 + 4 * i}, %r{41 + 4 * i}, "
                        f"%r{42 + 4 * i}, %r{43 + 4 * i}}}, [%r5]; // @ld{i}\n" for i in range(4))
              + "\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n\ttcgen05.fence::after_thread_sync;\n"
              "\t@%p1 bra DONE;\n\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 128; // @free\n")


def test_completed_before_one_simulation_for_every_load():
    """``completed_before`` asked for each of warp 1's loads before warp 0's dealloc: the barrier orders each
    load's issue, no ``wait::ld`` its completion (False); the releases after every load come from one multi-anchor
    simulation (``ControlCaches.releases_batch``), so the questions after the first run no simulation."""
    k = build(MANY_LOADS)
    sync, w0, w1 = k.ctx.sync, k.warp(0), k.warp(1)
    assert sync.completed_before(k.at["ld0"], w1, k.at["free"], w0) is False
    ran = len(k.ctx.simulations)
    assert [sync.completed_before(k.at[f"ld{i}"], w1, k.at["free"], w0) for i in range(1, 4)] == [False] * 3
    assert len(k.ctx.simulations) == ran
    fence = "\ttcgen05.fence::before_thread_sync;\n"
    k2 = build(swap(MANY_LOADS, fence, WAIT + fence))  # warp 1 waits for its loads before the barrier
    assert [k2.ctx.sync.completed_before(k2.at[f"ld{i}"], k2.warp(1), k2.at["free"], k2.warp(0))
            for i in range(4)] == [True] * 4


#: Warp 1 issues four loads, each followed by its ``tcgen05.wait::ld``, on a branch no other warp takes; every warp
#: passes ``bar.sync 0``; warp 0 then frees the columns.
WAITED_LOADS = ("\tsetp.ne.u32 %p3, %r2, 1;\n\t@%p3 bra NOLOADS;\n"
                + "".join(f"\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {{%r{40 + 4 * i}, %r{41 + 4 * i}, "
                          f"%r{42 + 4 * i}, %r{43 + 4 * i}}}, [%r5]; // @ld{i}\n"
                          f"\ttcgen05.wait::ld.sync.aligned; // @w{i}\n" for i in range(4))
                + "NOLOADS:\n\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n"
                "\ttcgen05.fence::after_thread_sync;\n"
                "\t@%p1 bra DONE;\n\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 128; // @free\n")

#: Lane 0 of warp 1 arrives on bar1 between the first and the second wait: two property values meet after it.
LANE0_ARRIVE = ("\tand.b32 %r62, %r1, 31;\n\tsetp.eq.u32 %p6, %r62, 0;\n"
                "\t@%p6 mbarrier.arrive.shared::cta.b64 _, [bar1];\n")


def test_completed_before_one_single_valued_run_for_every_wait():
    """``completed_before`` for each of warp 1's four loads: each load's own wait is ordered before the dealloc
    (True).  The releases after the waits come from one multi-anchor run (``SyncModel._single_valued_releases``,
    kept: one property value at every point), so the questions after the first run no simulation, and each
    wait's entries are the one-anchor run's (``_releases_run``)."""
    k = build(WAITED_LOADS)
    sync, w0, w1 = k.ctx.sync, k.warp(0), k.warp(1)
    assert sync.completed_before(k.at["ld0"], w1, k.at["free"], w0) is True
    ran = len(k.ctx.simulations)
    assert [sync.completed_before(k.at[f"ld{i}"], w1, k.at["free"], w0) for i in range(1, 4)] == [True] * 3
    assert len(k.ctx.simulations) == ran
    assert k.ctx.control_caches.releases_single[(id(w1), "tcgen05.wait::ld", False)][1] is not None
    for i in range(4):
        w = k.at[f"w{i}"]
        assert sync.releases_after(w1, (w,)) == sync._releases_run(w1, (w,), False, False, False, False)
    assert sync.releases_after(w0, (k.at["w0"],)) == {}  # warp 0 never waits: no run, no entry


def test_single_valued_batch_split_falls_back_to_one_run_per_wait():
    """The twin with lane 0's arrive between the first two waits: the batch stops where the two property values
    meet (``StatesSplit``), is not kept, and every wait gets its own run, with the same entries as before."""
    k = build(swap(WAITED_LOADS, "\ttcgen05.wait::ld.sync.aligned; // @w0\n",
                   "\ttcgen05.wait::ld.sync.aligned; // @w0\n" + LANE0_ARRIVE))
    sync, w1 = k.ctx.sync, k.warp(1)
    sync.executes(w1, k.at["w0"])  # the class's identity replay, run first
    ran = len(k.ctx.simulations)
    got = [sync.releases_after(w1, (k.at[f"w{i}"],)) for i in range(4)]
    assert k.ctx.control_caches.releases_single[(id(w1), "tcgen05.wait::ld", False)][1] is None
    assert len(k.ctx.simulations) == ran + 1 + 4  # the stopped batch, then one run per wait
    assert k.ctx.simulations[ran].result is None
    assert got == [sync._releases_run(w1, (k.at[f"w{i}"],), False, False, False, False) for i in range(4)]


def test_pending_table_no_run_for_a_class_without_loads():
    """``_pending_table`` of warp 0, which issues no load: no simulation (its property stays empty,
    ``SyncModel._runs_none_of``), an empty table; warp 1's runs one."""
    k = build(MANY_LOADS)
    sync, w0, w1 = k.ctx.sync, k.warp(0), k.warp(1)
    sync.executes(w0, k.at["free"]), sync.executes(w1, k.at["free"])  # both identity replays first
    ran = len(k.ctx.simulations)
    assert sync._pending_table(w0, "ld") == {}
    assert len(k.ctx.simulations) == ran
    assert sync._pending_table(w1, "ld") != {}
    assert len(k.ctx.simulations) == ran + 1


def test_loop_keys_memoised_per_kind_class_and_instruction(monkeypatch):
    """TM302's ``_loop_keys`` (``checks.ordering``): computed once per (kind, class, instruction) in
    ``RuleCaches.loop_keys``; a repeated question scans no site (no ``_in_loop`` call)."""
    from tmemlint.checks import ordering

    body = ("\tmov.u32 %r60, 0;\nLOOP:\n" + LD + "\tbar.sync 1, 64; // @b1\n"
            "\tadd.u32 %r60, %r60, 1;\n\tsetp.lt.u32 %p5, %r60, 4;\n\t@%p5 bra LOOP;\n" + WAIT + ARRIVE)
    k = build(body)
    calls = []
    real = ordering._in_loop
    monkeypatch.setattr(ordering, "_in_loop", lambda ctx, a, b: calls.append((a.index, b.index)) or real(ctx, a, b))
    w1 = k.warp(1)
    keys = ordering._loop_keys(k.ctx, "wait", w1, k.at["ld"])
    assert [key for key in keys] == [k.ctx.sync.site(k.at["b1"]).key]
    first = len(calls)
    assert first == 2  # the two waiting sites warp 1 executes: bar.sync 0 of the prologue, bar.sync 1
    assert ordering._loop_keys(k.ctx, "wait", w1, k.at["ld"]) is keys
    assert len(calls) == first and len(k.ctx.rule_caches.loop_keys) == 1
    assert ordering._loop_keys(k.ctx, "commit", w1, k.at["ld"]) == []
    assert len(calls) == first and len(k.ctx.rule_caches.loop_keys) == 2  # no commit site: nothing to test
