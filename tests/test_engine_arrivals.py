"""``SyncModel.arrivals_needed`` / ``may_arrive_with`` / ``joint_paths_feasible``: a wait for phase 0 of an mbarrier
returns only after one of the arrive sites that may alias it ran (PTX ISA §9.7.13.15.1-2: a phase completes when its
pending arrival count reaches zero; ``mbarrier.init``'s expected count is at least 1), so a choice of paths that
passes such a wait while every one of those sites lies off the chosen paths is infeasible.  Also the primitive they
read (``arrive_sites`` / ``phase_arrivals``: the sites of each kind that may complete phase k, and the (k + 1) ×
count arrivals it takes), a loop's phase-bit wait (its first execution decides), and TM312 past its joint budget.
Each positive case has a counter-example twin; every kernel built here passes ``ptxas -arch=sm_100a``."""

from __future__ import annotations

from pathlib import Path

from test_engine import BAR0, BAR1, MBAR, PRE, analyse, build, swap

from tmemlint.analysis.order import ArriveSite, JointChoice, NeededArrival

#: warp 0's arrive on bar0 in ``MBAR``
ARRIVE = "\t@%p15 mbarrier.arrive.shared::cta.b64 %rd1, [bar0]; // @arrive\n"
#: warp 0 skips its arrive when the kernel's ``flag`` parameter is 0 (a CTA-uniform branch warp 1 does not test);
#: ``@skip`` marks the skipping path
GATED = (swap(MBAR, ARRIVE, "\t@!%p9 bra SKIP;\n" + ARRIVE)
         + "\tbra.uni DONE;\nSKIP:\n\tld.param.u32 %r61, [flag]; // @skip\n")


def _needs(k, klass, at, facts):
    """``arrivals_needed``: (barrier, its arrive sites, phase 0's arrivals ``PhaseArrivals.needed``) per need."""
    got = k.ctx.sync.arrivals_needed(klass, at, facts)
    assert all(type(n) is NeededArrival and n.phase.phase == 0 for n in got)
    return [(n.barrier, n.sites, n.phase.needed) for n in got]


def _one(sets):
    assert sets, sets
    return sorted(sets, key=repr)


def test_a_wait_for_phase_0_needs_one_of_its_arrive_sites():
    k = build(GATED)
    w0, w1 = k.warp(0), k.warp(1)
    for fb in _one(k.ctx.sync.fact_sets(w1, k.at["b"])):
        assert _needs(k, w1, k.at["b"], fb) == [(BAR0, (k.at["arrive"],), 1)]
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


# ---- the primitive: arrive_sites / phase_arrivals ---------------------------------------------------------------

def test_arrive_sites_name_a_local_arrive_and_phase_k_needs_k_plus_1_counts():
    k = build(GATED)
    sync = k.ctx.sync
    assert sync.arrive_sites(BAR0) == (ArriveSite(k.at["arrive"], "local", BAR0, 1, False, "arrive"),)
    p = sync.phase_arrivals(BAR0, 2)
    assert (p.sites, p.local, p.needed, p.phase) == (sync.arrive_sites(BAR0), True, 3, 2)
    (stray,) = sync.arrive_sites(BAR1)  # thread 64's arrive on bar1 (``STRAY``): not one of bar0's
    assert stray.kind == "local" and stray.inst is not k.at["arrive"]


def test_phase_arrivals_count_the_expected_count_of_the_init():
    # twin: bar0 initialised with an expected count of 2: phase 2 takes 6 arrivals
    k = build(GATED, pre=swap(PRE, "[bar0], 1;", "[bar0], 2;"))
    assert k.ctx.sync.phase_arrivals(BAR0, 2).needed == 6
    assert k.ctx.sync.phase_arrivals(BAR0, 0).needed == 2


def test_a_multicast_commit_is_an_arrive_site_from_other_ctas_too():
    # twin: warp 0 commits to bar0 with .multicast::cluster instead of arriving: its arrival lands on bar0 in every
    # CTA of the mask, so the barrier's arrivals are not all this CTA's (no one arriver, PTX ISA §9.7.16.8.4)
    k = build(swap(GATED, ARRIVE, "\t.reg .b16 %rs<2>;\n\tmov.b16 %rs1, 3;\n\t@%p15 tcgen05.commit.cta_group::1"
                                  ".mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [bar0], %rs1; // @arrive\n"))
    sync = k.ctx.sync
    (site,) = sync.arrive_sites(BAR0)
    assert (site.inst, site.kind, site.arrives) == (k.at["arrive"], "multicast", True)
    assert sync.phase_arrivals(BAR0, 0).local is False


def test_a_remote_arrive_lands_where_its_mapa_maps_and_nowhere_else():
    # twin: warp 0's arrive goes through mapa of bar1 (a peer CTA's bar1): an arrive site of bar1, not of bar0
    k = build(swap(GATED, ARRIVE, "\tmov.u32 %r62, bar1;\n\tmapa.shared::cluster.u32 %r63, %r62, 0;\n"
                                  "\t@%p15 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r63]; // @arrive\n"))
    sync = k.ctx.sync
    assert sync.arrive_sites(BAR0) == ()
    kinds = [(a.inst, a.kind) for a in sync.arrive_sites(BAR1)]
    assert (k.at["arrive"], "remote") in kinds
    assert sync.phase_arrivals(BAR1, 0).local is False


def test_transaction_count_operations_are_sites_but_arrive_on_nothing():
    # twin: an mbarrier.expect_tx on bar0 before the arrive: a site of bar0 (it delays the phase), not an arrival
    k = build(swap(GATED, ARRIVE, "\tmbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar0], 16; // @tx\n" + ARRIVE))
    sync = k.ctx.sync
    tx = [a for a in sync.arrive_sites(BAR0) if a.inst is k.at["tx"]]
    assert [(a.kind, a.arrives, a.count) for a in tx] == [("expect_tx", False, 0)]
    assert sync.phase_arrivals(BAR0, 0).sites == tuple(a for a in sync.arrive_sites(BAR0) if a.arrives)
    assert [a.inst for a in sync.phase_arrivals(BAR0, 0).sites] == [k.at["arrive"]]


#: warp 1 of ``GATED`` waits on bar0 in a k-loop (one trip) whose parity is the register %r70 (the phase bit)
LOOP_WAIT = ("\tmov.b32 %r70, 0;\n\tmov.b32 %r71, 0;\nKLOOP:\nWAIT:\n"
             "\tmbarrier.try_wait.parity.shared::cta.b64 %p7, [bar0], %r70; // @wait\n\t@!%p7 bra WAIT;\n"
             "\txor.b32 %r70, %r70, 1;\n\tadd.s32 %r71, %r71, 1;\n\tsetp.lt.u32 %p11, %r71, 1;\n\t@%p11 bra KLOOP;\n")
LOOPED = swap(GATED, "WAIT:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p7, [bar0], 0; // @wait\n\t@!%p7 bra WAIT;\n",
              LOOP_WAIT)


def test_a_loop_wait_whose_first_execution_names_parity_0_needs_an_arrival():
    k = build(LOOPED)
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.site(k.at["wait"]).parity is None  # the parity is a register, not a constant
    fb = _one(k.ctx.sync.fact_sets(w1, k.at["b"]))[0]
    assert _needs(k, w1, k.at["b"], fb) == [(BAR0, (k.at["arrive"],), 1)]
    for fs in _one(k.ctx.sync.fact_sets(w0, k.at["skip"])):
        assert k.ctx.sync.joint_paths_feasible(((w1, k.at["b"], fb), (w0, k.at["skip"], fs))) is False


def test_a_loop_wait_whose_first_execution_names_parity_1_needs_nothing():
    # twin: the phase bit starts at 1: the first wait names the phase before a fresh barrier's phase 0 and returns
    # at once (PTX ISA §9.7.13.15.16), so passing it says nothing of the arrivals
    k = build(swap(LOOPED, "\tmov.b32 %r70, 0;\n", "\tmov.b32 %r70, 1;\n"))
    w0, w1 = k.warp(0), k.warp(1)
    fb = _one(k.ctx.sync.fact_sets(w1, k.at["b"]))[0]
    assert k.ctx.sync.arrivals_needed(w1, k.at["b"], fb) == ()
    for fs in _one(k.ctx.sync.fact_sets(w0, k.at["skip"])):
        assert k.ctx.sync.joint_paths_feasible(((w1, k.at["b"], fb), (w0, k.at["skip"], fs))) is True
