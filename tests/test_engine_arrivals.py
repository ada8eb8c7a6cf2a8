"""``SyncModel.arrivals_needed`` / ``may_arrive_with`` / ``joint_paths_feasible``: a wait for phase 0 of an mbarrier
returns only after one of the arrive sites that may alias it ran (PTX ISA §9.7.13.15.1-2: a phase completes when its
pending arrival count reaches zero; ``mbarrier.init``'s expected count is at least 1), so a choice of paths that
passes such a wait while every one of those sites lies off the chosen paths is infeasible."""

from __future__ import annotations

from pathlib import Path

from test_engine import BAR0, BAR1, MBAR, analyse, build, swap

from tmemlint.analysis.order import JointChoice, NeededArrival

#: warp 0's arrive on bar0 in ``MBAR``
ARRIVE = "\t@%p15 mbarrier.arrive.shared::cta.b64 %rd1, [bar0]; // @arrive\n"
#: warp 0 skips its arrive when the kernel's ``flag`` parameter is 0 (a CTA-uniform branch warp 1 does not test);
#: ``@skip`` marks the skipping path
GATED = (swap(MBAR, ARRIVE, "\t@!%p9 bra SKIP;\n" + ARRIVE)
         + "\tbra.uni DONE;\nSKIP:\n\tld.param.u32 %r61, [flag]; // @skip\n")


def _one(sets):
    assert sets, sets
    return sorted(sets, key=repr)


def test_a_wait_for_phase_0_needs_one_of_its_arrive_sites():
    k = build(GATED)
    w0, w1 = k.warp(0), k.warp(1)
    for fb in _one(k.ctx.sync.fact_sets(w1, k.at["b"])):
        assert k.ctx.sync.arrivals_needed(w1, k.at["b"], fb) == (NeededArrival(BAR0, (k.at["arrive"],)),)
    # before its wait warp 1 needs nothing
    for fw in _one(k.ctx.sync.fact_sets(w1, k.at["wait"])):
        assert k.ctx.sync.arrivals_needed(w1, k.at["wait"], fw) == ()
    # warp 0's path that skips the arrive (flag == 0) cannot run with warp 1's load: its wait never returned
    fb = _one(k.ctx.sync.fact_sets(w1, k.at["b"]))[0]
    for fs in _one(k.ctx.sync.fact_sets(w0, k.at["skip"])):
        assert k.ctx.sync.joint_paths_feasible(((w1, k.at["b"], fb), (w0, k.at["skip"], fs))) is False
    # the path through the arrive can
    for fa in _one(k.ctx.sync.fact_sets(w0, k.at["arrive"])):
        assert k.ctx.sync.joint_paths_feasible(((w1, k.at["b"], fb), (w0, k.at["arrive"], fa))) is True


def test_an_arrive_on_another_path_that_can_complete_the_phase_keeps_the_paths_feasible():
    # counter-example: warp 1 waits on bar1 instead, which warp 0 arrives on only when ``flag`` is set, but which
    # thread 64's unconditional arrive (``STRAY``) completes as well: warp 0's skipping path stays feasible
    body = swap(swap(GATED, ARRIVE, ARRIVE.replace("[bar0]", "[bar1]")), "[bar0], 0; // @wait", "[bar1], 0; // @wait")
    k = build(body)
    w0, w1 = k.warp(0), k.warp(1)
    fb = _one(k.ctx.sync.fact_sets(w1, k.at["b"]))[0]
    (need,) = k.ctx.sync.arrivals_needed(w1, k.at["b"], fb)
    assert need.barrier == BAR1 and k.at["arrive"] in need.sites and len(need.sites) == 2
    for fs in _one(k.ctx.sync.fact_sets(w0, k.at["skip"])):
        assert k.ctx.sync.may_arrive_with(need, (fb, fs)) is True
        assert k.ctx.sync.joint_paths_feasible(((w1, k.at["b"], fb), (w0, k.at["skip"], fs))) is True


def test_a_wait_for_a_parity_in_a_register_needs_nothing():
    # the parity is not a constant 0: the wait may name the phase before a fresh barrier's phase 0 and return at once
    k = build(swap(GATED, "[bar0], 0; // @wait", "[bar0], %r9; // @wait"))
    w1 = k.warp(1)
    for fb in _one(k.ctx.sync.fact_sets(w1, k.at["b"])):
        assert k.ctx.sync.arrivals_needed(w1, k.at["b"], fb) == ()


def test_joint_choice_skips_the_path_whose_wait_never_returned():
    # warp 0 at the end of its skipping path (flag == 0) or of its arriving path, warp 1 at its load: only the
    # arriving path runs with warp 1 past its wait
    k = build(GATED)
    w0, w1 = k.warp(0), k.warp(1)
    fb = _one(k.ctx.sync.fact_sets(w1, k.at["b"]))[0]
    skip = tuple((k.at["skip"], f) for f in _one(k.ctx.sync.fact_sets(w0, k.at["skip"])))
    arrive = tuple((k.at["arrive"], f) for f in _one(k.ctx.sync.fact_sets(w0, k.at["arrive"])))
    got = k.ctx.sync.joint_choice(((w1, k.at["b"], fb),), ((w0, skip + arrive),))
    assert got.decided and got.paths is not None and got.paths[1][1] is k.at["arrive"]
    assert k.ctx.sync.joint_choice(((w1, k.at["b"], fb),), ((w0, skip),)) == JointChoice(None, True)
    # a budget of no complete choice: undecided
    assert k.ctx.sync.joint_choice(((w1, k.at["b"], fb),), ((w0, skip),), budget=0) == JointChoice(None, False)


_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ptx"


def test_a_remote_arrive_lands_on_the_barrier_its_mapa_maps():
    # the producer's second remote arrive goes to mma_done of CTA 1 instead (mapa of mma_done, PTX ISA §9.7.9.22):
    # of the two, only the arrive through mapa(a_full) can complete a_full's phase 0
    text = (_FIXTURES / "tm312_waited_arrival_good.ptx").read_text()
    text = text.replace("\tmapa.shared::cluster.u32 %r13, %r6, 1;\n",
                        "\tmov.u32 %r7, mma_done;\n\tmapa.shared::cluster.u32 %r13, %r7, 1;\n")
    text = text.replace("b64 _, [%r12];", "b64 _, [%r12]; // @to_a_full")
    text = text.replace("b64 _, [%r13];", "b64 _, [%r13]; // @to_mma_done")
    text = text.replace("[mma_done], %rs1;", "[mma_done], %rs1; // @commit")
    k = analyse(text)
    mma = k.warp(0)
    needs = {n.barrier.ident: n.sites for f in _one(k.ctx.sync.fact_sets(mma, k.at["commit"]))
             for n in k.ctx.sync.arrivals_needed(mma, k.at["commit"], f)}
    assert needs == {("a_full", 0): (k.at["to_a_full"],)}


def test_wait_paths_keep_the_senders_own_thread_apart_from_its_warps_other_lanes():
    # only the leader CTA's thread 0 waits on a_full after its commit; the other lanes of its warp go straight to the
    # exit: along the commit's own path (thread 0, leader CTA) only the waiting path remains, and it needs a_full
    text = (_FIXTURES / "tm312_waited_arrival_leader_good.ptx").read_text()
    text = text.replace("[mma_done], %rs1;\nWAIT_A:", "[mma_done], %rs1; // @commit\nWAIT_A:")
    text = text.replace("\tret;", "\tret; // @exit")
    k = analyse(text)
    mma = k.warp(0)
    every = k.ctx.sync.wait_paths(mma, k.at["exit"])
    assert len(every) == 2
    (raw,) = k.ctx.sync.fact_sets(mma, k.at["commit"])
    (own,) = k.ctx.sync.wait_paths(mma, k.at["exit"], raw)
    assert [n.barrier.ident for n in k.ctx.sync.arrivals_needed(mma, k.at["exit"], own)] == [("a_full", 0)]


def _codes(name: str) -> list[tuple[str, int]]:
    from tmemlint.engine import lint_file

    return sorted((f.code, f.line) for f in lint_file(_FIXTURES / name).findings)


def test_tm312_past_its_joint_budget_says_undecided_instead_of_guessing(monkeypatch):
    # with no joint choice allowed, the exit paths of the waited-arrival fixtures are undecided: no TM312 (the
    # pairwise witness was a guess, and the good twin's is infeasible), a TM901 note naming the commit instead
    import tmemlint.checks.barriers as barriers

    bad = _codes("tm312_waited_arrival_bad.ptx")
    assert "TM312" in {c for c, _ in bad}
    assert "TM312" not in {c for c, _ in _codes("tm312_waited_arrival_good.ptx")}
    monkeypatch.setattr(barriers, "_JOINT_BUDGET", 0)
    for name in ("tm312_waited_arrival_good.ptx", "tm312_waited_arrival_bad.ptx"):
        from tmemlint.engine import lint_file

        found = lint_file(_FIXTURES / name).findings
        assert "TM312" not in {f.code for f in found}, name
        notes = [f.message for f in found if f.code == "TM901"]
        assert any("TM312" in m and "not decided within 0 joint choices" in m for m in notes), (name, notes)
