"""Where a check's CPU time goes, per phase: ``tmemlint check --profile`` (a table on standard error) and
``--profile-json FILE`` (issue 29), as clang-tidy's ``--enable-check-profile`` and ``--store-check-profile``.

The unit is CPU seconds of this process (``time.process_time``: user + system, all threads), **exclusive**: the
time of a phase entered inside another (the path simulations a rule runs, the solver a simulation asks) is charged
to the inner phase only, so the phases of a file add up to the file's CPU time and the phases of a run to the
run's.  ``startup`` is the process's CPU time from its start (``resource.getrusage``: the interpreter, the imports,
the configuration and the search for files) until the first file is read.  The phase names are ``PHASES``
(``rule:TMxxx`` for each rule's own checking) and the counts ``COUNTS``.

Cost when off: ``ACTIVE`` is None, and each boundary is one module-level ``None`` test (``timed``'s wrapper,
``enter``); this module imports no clock until ``enable`` is called (``tests/test_startup.py`` checks that a plain
check imports neither ``resource`` nor an active profile).  The boundaries sit at the pipeline's stages
(``tmemlint.pipeline``), the context's analyses (``tmemlint.checks.context``), the solver's questions
(``tmemlint.analysis.feasibility``) and the output (``tmemlint.checkcmd``), never in a simulation's inner loop.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

#: The phases, in pipeline order (the table prints them in this order; ``rule:TMxxx`` ones after ``lifecycle``).
PHASES: tuple[str, ...] = (
    "startup",        # process start -> first file read: interpreter, imports, configuration, file search
    "read",           # reading and decoding the file
    "prepass",        # frontend.split.layout: the cut into functions, pruning, the line count
    "parser_load",    # frontend.parser: importing Lark and lark-cython and loading the LALR tables (once a process)
    "parse",          # frontend.parser: Lark (or the generated LALR parser) and the transformer to IR
    "cuda",           # frontend.cuda: source mode's tree-sitter parse and lowering
    "compile",        # compile mode: nvcc (its own CPU time is a child's, not counted here)
    "triage",         # whether a function touches TMEM, and its value-analysis cost (pipeline.value_work)
    "inline",         # analysis.inline: callees expanded at their calls (FunctionContext creation)
    "cfg",            # analysis.cfg
    "values",         # analysis.values (and analysis.calls' callee summaries)
    "threads",        # analysis.threads: the warp classes
    "sites",          # analysis.tmem: the TMEM sites
    "address_sets",   # analysis.regions: bounded address sets
    "executing",      # analysis.flow: which warp classes execute each instruction
    "sync",           # analysis.order (+ sync, mbarriers): building the model; ``sync:METHOD``: each query
    "lifecycle",      # analysis.lifecycle
    "simulation",     # analysis.paths: the path simulations (FunctionContext.simulate)
    "solver",         # analysis.feasibility: z3's questions (translation included)
    "solver_import",  # analysis.feasibility: importing z3 (once per process, on the first question)
    "witness",        # analysis.witness: the code flow of findings
    "lineinfo",       # -lineinfo relocation to the CUDA source (and source/compile mode's mapping back)
    "suppress",       # suppression comments, TM902, severities, fingerprints
    "output",         # rendering and writing the findings
    "driver",         # the rest: the pipeline's own code, the TM901 policy, the pool, presentation
)

#: The counts: ``files``, ``functions`` (analysed), ``instructions`` (of the analysed functions, callees expanded),
#: ``simulations`` (path simulations run), ``replays`` (identity-transfer simulations answered from a record),
#: ``sync_calls`` (the rules' calls of the sync model's public methods, ``analysis.order.SyncModel``),
#: ``hb_queries`` (those of them that ask whether one access is ordered before another: ``HB_QUERIES``),
#: ``solver_queries`` and ``solver_hits`` (``feasibility.SolverCost``).
COUNTS: tuple[str, ...] = ("files", "functions", "instructions", "simulations", "replays", "sync_calls",
                           "hb_queries", "solver_queries", "solver_hits")

#: The happens-before queries of ``analysis.order.SyncModel`` (counted as ``hb_queries``): whether one access is
#: ordered or completed before another.
HB_QUERIES = frozenset({"must_happen_before", "completes_before", "ordering", "all_happen_before", "chain",
                        "reclaims", "waits_own_completion", "released_before", "since_latest_wait",
                        "completed_before", "completion_ordering", "own_completion", "pending_at"})
#: The sync model's memoised look-ups, called tens of thousands of times per kernel (``executes``: 31,035 on
#: Triton's attn_fwd_desc_ws_d128, ``site``: 4,235): not timed (two clock reads each would cost more than the
#: look-up), their time stays with the caller; what they compute on first use is a simulation, timed as such.
LOOKUPS = frozenset({"executes", "site", "event", "form", "sites"})


@dataclass(slots=True)
class Record:
    """The exclusive CPU seconds per phase (``phases``) and the counts (``counts``) of one file (``path``) or of the
    run's own work outside files (``path`` ``""``); ``pid``: the process that measured it.  ``simulation_by``: the
    ``simulation`` seconds by the phase that asked for them (the innermost other phase: a rule, ``sync``, ...), and
    ``simulations_by`` the number of simulations each had run (not the replays of a recorded one)."""

    path: str
    pid: int
    phases: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    simulation_by: dict[str, float] = field(default_factory=dict)
    simulations_by: dict[str, int] = field(default_factory=dict)

    @property
    def cpu(self) -> float:
        """The record's CPU seconds: the sum of its phases."""
        return sum(self.phases.values())

    def merge(self, other: Record) -> None:
        """Add ``other``'s phases and counts (a part of this file analysed by another process)."""
        for k, v in other.phases.items():
            self.phases[k] = self.phases.get(k, 0.0) + v
        for k, n in other.counts.items():
            self.counts[k] = self.counts.get(k, 0) + n
        for k, v in other.simulation_by.items():
            self.simulation_by[k] = self.simulation_by.get(k, 0.0) + v
        for k, n in other.simulations_by.items():
            self.simulations_by[k] = self.simulations_by.get(k, 0) + n

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "pid": self.pid, "cpu_s": round(self.cpu, 6),
                "phases": {k: round(v, 6) for k, v in ordered(self.phases)}, "counts": dict(sorted(self.counts.items())),
                "simulation_by": {k: round(v, 6) for k, v in sorted(self.simulation_by.items(), key=lambda kv: -kv[1])},
                "simulations_by": dict(sorted(self.simulations_by.items(), key=lambda kv: -kv[1]))}


def ordered(phases: dict[str, float]) -> list[tuple[str, float]]:
    """``phases`` in ``PHASES`` order, the ``rule:`` phases (by code) after ``lifecycle``, the ``sync:`` ones (by
    method) after ``sync``, unknown names last."""
    def rank(name: str) -> tuple[int, str]:
        if name.startswith("rule:"):
            return (PHASES.index("lifecycle"), name)
        if name.startswith("sync:"):
            return (PHASES.index("sync"), name)
        return (PHASES.index(name) if name in PHASES else len(PHASES), name)

    return sorted(phases.items(), key=lambda kv: rank(kv[0]))


class Profile:
    """The running account: a stack of phases whose top is charged the CPU time since the last boundary."""

    def __init__(self, startup: float | None, clock: Callable[[], float], pid: int) -> None:
        """``startup``: the CPU seconds before this profile started, charged to ``startup`` as is the time until
        the first file (None: a worker, whose start-up is its parent's, starts in ``driver``)."""
        self.run = Record("", pid)
        if startup is not None:
            self.run.phases["startup"] = startup
        self._clock = clock
        self._last = clock()
        self._record = self.run
        self._stack: list[str] = ["startup" if startup is not None else "driver"]
        self._outer: list[tuple[Record, list[str]]] = []
        self._pid = pid
        #: the records of the files checked (``checkcmd`` sets them: this process's and the workers')
        self.files: list[Record] = []

    def _charge(self) -> None:
        now = self._clock()
        top = self._stack[-1]
        ph = self._record.phases
        d = now - self._last
        ph[top] = ph.get(top, 0.0) + d
        self._last = now
        if top == "simulation":
            asker = self._asker()
            by = self._record.simulation_by
            by[asker] = by.get(asker, 0.0) + d

    def _asker(self) -> str:
        """The innermost phase under the simulations on the stack (the one that asked for them)."""
        for name in reversed(self._stack):
            if name != "simulation":
                return name
        return "driver"

    def push(self, name: str) -> None:
        """Enter phase ``name`` (the time so far goes to the phase being left)."""
        self._charge()
        self._stack.append(name)
        if name == "simulation":
            asker = self._asker()
            n = self._record.simulations_by
            n[asker] = n.get(asker, 0) + 1

    def pop(self) -> None:
        """Leave the innermost phase."""
        self._charge()
        self._stack.pop()

    def count(self, name: str, n: int = 1) -> None:
        c = self._record.counts
        c[name] = c.get(name, 0) + n

    def merge(self, other: Record) -> None:
        """Add ``other`` (a part of the current file, measured by another process) to the current record."""
        self._record.merge(other)

    def begin_file(self, path: str) -> None:
        """Start the record of file ``path`` (its base phase: ``driver``); the run's ``startup`` ends here."""
        self._charge()
        if self._stack == ["startup"] and self._record is self.run:
            self._stack = ["driver"]
        self._outer.append((self._record, self._stack))
        self._record = Record(path, self._pid)
        self._record.counts["files"] = 1
        self._stack = ["driver"]

    def end_file(self) -> Record:
        """Close the current file's record and return it (the run's record is charged again)."""
        self._charge()
        done = self._record
        self._record, self._stack = self._outer.pop()
        return done

    def finish(self) -> Record:
        """Charge the time up to now and return the run's own record (the base phase is ``driver`` from here)."""
        self._charge()
        if self._stack == ["startup"]:
            self._stack = ["driver"]
        return self.run


#: The profile of this process, or None (the default: every boundary is one test of this name).
ACTIVE: Profile | None = None


def enable() -> Profile:
    """Start profiling this process: ``startup`` is its CPU time so far (``resource.getrusage``), and the clock is
    ``time.process_time`` from here (both user + system seconds of this process)."""
    global ACTIVE
    import os
    import resource
    import time

    ru = resource.getrusage(resource.RUSAGE_SELF)
    ACTIVE = Profile(ru.ru_utime + ru.ru_stime, time.process_time, os.getpid())
    return ACTIVE


def disable() -> None:
    global ACTIVE
    ACTIVE = None


def worker_profile() -> Profile:
    """The profile of a worker process: no start-up of its own (a forked worker's imports are its parent's)."""
    global ACTIVE
    import os
    import time

    ACTIVE = Profile(None, time.process_time, os.getpid())
    return ACTIVE


F = TypeVar("F", bound=Callable[..., Any])


def timed(name: str) -> Callable[[F], F]:
    """Decorator: calls of the function are phase ``name`` while a profile is active (one ``None`` test when
    not)."""
    def deco(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            p = ACTIVE
            if p is None:
                return f(*args, **kwargs)
            p.push(name)
            try:
                return f(*args, **kwargs)
            finally:
                p.pop()
        return wrapper  # type: ignore[return-value]
    return deco


class TimedProxy:
    """``obj`` with each call of a public method ``m`` charged to phase ``name:m`` and counted as ``calls``, and
    those of the methods in ``queries`` also as ``queried`` (used only while profiling: the sync model,
    ``FunctionContext.sync``: its calls and its happens-before queries, ``sync:ordering``, ...).  The ``LOOKUPS``
    are not timed."""

    def __init__(self, obj: object, name: str, calls: str, queries: frozenset[str] = frozenset(),
                 queried: str = "") -> None:
        self._obj = obj
        self._name = name
        self._calls = calls
        self._queries = queries
        self._queried = queried

    def __getattr__(self, attr: str) -> Any:
        got = getattr(self._obj, attr)
        if attr.startswith("_") or not callable(got):
            return got  # an attribute: read from the model each time (it may be rebound)
        if attr in LOOKUPS:
            self.__dict__[attr] = got  # a bound method: found without __getattr__ from now on
            return got
        name, calls = f"{self._name}:{attr}", self._calls
        queried = self._queried if attr in self._queries else ""

        def call(*args: Any, **kwargs: Any) -> Any:
            p = ACTIVE
            if p is None:
                return got(*args, **kwargs)
            p.count(calls)
            if queried:
                p.count(queried)
            p.push(name)
            try:
                return got(*args, **kwargs)
            finally:
                p.pop()
        self.__dict__[attr] = call  # found without __getattr__ from now on
        return call


# ---- the report ----------------------------------------------------------------------------------------------


def total(records: list[Record]) -> Record:
    """The sum of ``records`` (the run's and every file's, workers' included)."""
    out = Record("(total)", 0)
    for r in records:
        out.merge(r)
    return out


def as_json(run: Record, files: list[Record]) -> dict[str, Any]:
    """The ``--profile-json`` document: the unit, the total, the run's own record and each file's."""
    return {"tool": "tmemlint", "unit": "CPU seconds (user + system), exclusive per phase",
            "total": total([run] + files).as_json(), "run": run.as_json(), "files": [f.as_json() for f in files]}


#: In the table, a file's phases below this share (percent) are summed on one line; the total shows every phase.
FILE_LEAST = 1.0


def table(run: Record, files: list[Record]) -> str:
    """The ``--profile`` text: each file's phases (CPU seconds and share), then the total with the counts."""
    lines = ["===" + "-" * 74 + "===",
             "tmemlint check profile: CPU seconds per phase (user + system, exclusive)",
             "===" + "-" * 74 + "==="]

    def block(r: Record, title: str, least: float = 0.0) -> None:
        cpu = r.cpu
        lines.append(f"{title}: {cpu:.4f} s")
        small, rest = 0, 0.0
        for k, v in ordered(r.phases):
            share = 100.0 * v / cpu if cpu > 0 else 0.0
            if share < least:
                small, rest = small + 1, rest + v
                continue
            lines.append(f"  {v:10.4f}  {share:5.1f}%  {k}")
        if small:
            lines.append(f"  {rest:10.4f}  {100.0 * rest / cpu if cpu > 0 else 0.0:5.1f}%  ({small} phases of less "
                         f"than {least:g}% each)")
        if r.counts:
            lines.append("  counts: " + ", ".join(f"{k} {n:,}" for k, n in sorted(r.counts.items())))
        if r.simulation_by:
            lines.append("  simulations by the phase that asked: " + ", ".join(
                f"{k} {v:.4f} s ({r.simulations_by.get(k, 0):,})"
                for k, v in sorted(r.simulation_by.items(), key=lambda kv: -kv[1])))

    for f in files:
        block(f, f"file {f.path}", FILE_LEAST)
    block(run, "run (outside files)", FILE_LEAST)
    block(total([run] + files), f"total ({len(files)} file{'s' if len(files) != 1 else ''})")
    return "\n".join(lines) + "\n"
