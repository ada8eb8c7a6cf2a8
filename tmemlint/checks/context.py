"""What a check sees: one function with its analyses, computed once on first use and shared by all rules."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from tmemlint.analysis.cfg import CFG, build_cfg
from tmemlint.analysis.lifecycle import Lifecycle
from tmemlint.analysis.order import SyncModel
from tmemlint.analysis.paths import BudgetExceeded, PropertySimulation
from tmemlint.analysis.regions import AddressSets
from tmemlint.analysis.threads import ThreadModel, thread_model
from tmemlint.analysis.tmem import TmemSites, tmem_sites
from tmemlint.analysis.values import ValueAnalysis
from tmemlint.checks.registry import RULES
from tmemlint.findings import Finding, Group, Related, Severity
from tmemlint.ir import Function, Instruction, Module, Span


@dataclass(frozen=True, slots=True)
class Grouping:
    """How ``FunctionContext.report`` merges the findings of one root cause (rules catalog "Grouping").  Reports of
    one rule with the same ``key`` become one finding at ``at`` (the instruction that needs the missing completion,
    e.g. the ``tcgen05.st`` with no ``wait::st``), with message ``headline`` (``{n}``: the number of affected
    places, ``{s}``: the plural ending) followed by the places; each report's own place (its ``where``, described
    by ``place``) becomes a related place and a code-flow step after ``at``."""

    key: object
    at: Instruction
    headline: str
    place: str


class FunctionContext:
    """Analyses of ``function`` in ``module`` for the rules, and ``report`` to emit findings."""

    def __init__(self, module: Module, function: Function, path: str):
        self.module = module
        self.function = function
        self.path = path
        self.findings: list[Finding] = []
        self._groups: dict[tuple, Finding] = {}  # (code, Grouping.key) -> the finding that merges them
        self.bounded: list[str] = []

    @cached_property
    def cfg(self) -> CFG:
        return build_cfg(self.function)

    @cached_property
    def values(self) -> ValueAnalysis:
        from tmemlint.analysis.calls import call_returns, callee_slots

        return ValueAnalysis(self.cfg).analyse(callee_slots(self.module, self.function),
                                               call_returns(self.module, self.function))

    @cached_property
    def threads(self) -> ThreadModel:
        from tmemlint.analysis.calls import callee_thread_predicates

        return thread_model(self.function, self.values, callee_thread_predicates(self.module, self.function))

    @cached_property
    def sites(self) -> TmemSites:
        return tmem_sites(self.function, self.values)

    @cached_property
    def address_sets(self) -> AddressSets:
        """Bounded sets of TMEM addresses and integers per operand (``tmemlint.analysis.regions``): a
        double-buffered accumulator at ``base + (stage & 1) * 128`` has the column set {0, 128}."""
        from tmemlint.analysis.tmem import TMEM_COLUMNS, trap_checked_bases

        sites = self.sites
        slots = {sites.slot_of[a.index] for a in sites.allocs}
        known = len(slots) == 1 and (any(sites.ncols.get(a.index) == TMEM_COLUMNS for a in sites.allocs)
                                     or 0 in trap_checked_bases(self.function, self.values))
        return AddressSets(self.values, self.threads.n_threads, next(iter(slots)) if known else None)

    @cached_property
    def lifecycle(self) -> Lifecycle:
        return Lifecycle(self)

    @cached_property
    def sync(self) -> SyncModel:
        """Happens-before between warp classes through barrier instances (``tmemlint.analysis.order``)."""
        return SyncModel(self)

    @cached_property
    def touches_tmem(self) -> bool:
        """Whether the function has a tcgen05 instruction, or calls a ``.func`` that allocates, frees or
        relinquishes TMEM (``analysis.calls``)."""
        if any(i.op == "tcgen05" for i in self.function.instructions):
            return True
        from tmemlint.analysis.calls import lifecycle_calls

        return bool(lifecycle_calls(self.module, self.function))

    def simulate(self, transfer, init, observe=None, classes=None, relevant=None) -> list:
        """Run a ``PropertySimulation`` per warp class (all classes, or ``classes``); returns
        ``[(klass, exits)]``.  ``relevant(inst)`` says which instructions ``transfer``/``observe`` look at (None:
        all).  A class whose simulation exceeds its budget is skipped and noted in ``bounded`` (TM901)."""
        out = []
        for klass in classes if classes is not None else self.threads.classes:
            sim = PropertySimulation(self.cfg, self.values, klass, transfer, init,
                                     observe=(lambda p, i, f, k=klass: observe(k, p, i, f)) if observe else None,
                                     relevant=relevant)
            try:
                out.append((klass, sim.run()))
            except BudgetExceeded:
                self.bounded.append(f"path simulation of {klass!r} exceeded its budget")
        return out

    def related(self, where: Instruction | Span, message: str) -> Related:
        span = where.span if isinstance(where, Instruction) else where
        return Related(self.path, span.line, span.column, message)

    def report(self, code: str, where: Instruction | Span, message: str,
               related: list[tuple[Instruction | Span, str]] = (), flow: list[tuple[Instruction | Span, str]] = (),
               severity: Severity | None = None, group: Grouping | None = None):
        """Emit a finding of rule ``code`` at ``where`` (an instruction: its whole text is the range), with the
        rule's default severity unless ``severity`` is given (rules with two severities, e.g. TM106).  With
        ``group``, reports of the same root cause are merged into one finding at ``group.at`` (``Grouping``);
        ``message`` is then not used, ``related`` places other than ``group.at`` are kept."""
        r = RULES[code]
        span = where.span if isinstance(where, Instruction) else where
        if group is not None:
            place = Related(self.path, span.line, span.column, group.place)
            hit = self._groups.get((code, group.key))
            if hit is None:
                at = group.at.span
                first = next((m for w, m in related if w is group.at), "the instruction that needs the completion")
                hit = Finding(self.path, at.line, at.column, at.end_line, at.end_column, code, r.name,
                              severity or r.severity, "", [], [self.related(group.at, first)], self.function.name,
                              group=Group(group.headline))
                self._groups[(code, group.key)] = hit
                self.findings.append(hit)
            hit.absorb(Finding(self.path, span.line, span.column, span.end_line, span.end_column, code, r.name,
                               severity or r.severity, "",
                               [place] + [self.related(w, m) for w, m in related if w is not group.at], [place],
                               self.function.name, group=Group(group.headline, (place,))))
            hit.related.sort(key=lambda x: (x.path, x.line, x.column))
            return
        self.findings.append(Finding(
            self.path, span.line, span.column, span.end_line, span.end_column, code, r.name, severity or r.severity, message,
            [self.related(w, m) for w, m in related], [self.related(w, m) for w, m in flow], self.function.name))
