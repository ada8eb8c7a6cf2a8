"""Issue and mbarrier rules of issue 24: single-thread issue (TM314), peer barriers addressed in the local form
(TM310), arrivals beyond a phase's count (TM311), and multicast targets recycled before their phase (TM312).

Sources: PTX ISA 9.0 Table 46 (``#tcgen05-ops-execution-granularity``), §9.7.13.15 (``#parallel-synchronization-
and-communication-instructions-mbarrier``), §9.7.9.22 (``mapa``), reference §3.1."""

from __future__ import annotations

from tmemlint.checks.registry import rule

#: tcgen05 instructions with single-thread semantics (PTX ISA Table 46): each thread that executes one issues it.
SINGLE_THREAD = ("tcgen05.mma", "tcgen05.cp", "tcgen05.shift", "tcgen05.commit")


@rule("TM314", "single-issue-guard", "error",
      "a single-thread tcgen05 mma/cp/shift/commit whose guard can hold for more than one thread of a warp")
def single_issue_guard(ctx):
    """PTX ISA 9.0 Table 46 (``#tcgen05-ops-execution-granularity``): ``tcgen05.mma``, ``cp``, ``shift`` and
    ``commit`` are issued by a single thread; executed by several lanes of a warp, each lane issues its own
    operation (32 MMAs into the same accumulator, 32 arrivals of the commit).

    Followed on the paths of each warp class (the happens-before model's per-class fact sets, ``ctx.sync``): at each
    such instruction, the thread predicates of the path and of its own guard (``elect.sync``, ``%tid.x``/``%laneid``
    tests, a role entered by a thread test) are evaluated for the 32 lanes of every warp of the class
    (``threads.lanes_on_path``).  Reported when more than one lane satisfies them on some path.  Nothing is said
    when a path's facts involve a per-thread value the analysis cannot evaluate, when a class has too many paths
    there, or in a ``.func`` (its caller's lane test is not visible)."""
    from tmemlint.analysis.control import divergent_defs
    from tmemlint.analysis.threads import UNKNOWN_LANES, lanes_on_path

    if not ctx.function.is_entry:
        return
    insts = [i for i in ctx.function.instructions if i.op == "tcgen05" and i.family in SINGLE_THREAD]
    if not insts:
        return
    nonuniform = divergent_defs(ctx)
    for inst in insts:
        worst = None
        for klass in ctx.threads.classes:
            sets = ctx.sync.fact_sets(klass, inst)
            if sets is None:
                continue  # too many paths reach it: not decided
            for facts in sets:
                n = lanes_on_path(klass, facts, nonuniform)
                if n != UNKNOWN_LANES and n > 1 and (worst is None or n > worst[0]):
                    worst = (n, klass)
        if worst is None:
            continue
        n, klass = worst
        what = inst.family.split(".", 1)[1]
        ctx.report("TM314", inst, f"tcgen05.{what} has single-thread semantics, but on some path of {klass!r} up to "
                                  f"{n} lanes of a warp execute it (no elect.sync, lane or thread-index test "
                                  f"confines it to one thread): each lane issues its own {what}")
