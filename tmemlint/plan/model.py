"""The TMEM plan of a kernel, computed from its PTX: the JSON model that every renderer draws from.

``build_plan(module, path)`` returns a dict following ``docs/plan-schema.md`` (``schema_version``
``SCHEMA_VERSION``).  Per kernel that touches TMEM it holds the header (target, ``cta_group``, allocation sites,
CTAs per SM and where that number came from), the region map (``tmemlint.analysis.regions``), the column budget,
the peak of simultaneously live columns, the reuse edges with the synchronization that guards each, the cost of
reading TMEM back, and a lifecycle timeline per region.  Lines are 1-based PTX lines; columns are TMEM columns
(32-bit cells, PTX ISA §9.7.16.2.1); lanes are TMEM lanes (rows).
"""

from __future__ import annotations

from tmemlint import __version__
from tmemlint.analysis.flow import Flow, executing_classes, warps_of
from tmemlint.analysis.idesc import ld_st_shape
from tmemlint.analysis.regions import Access, AddressSets, Region, build_regions, collect_accesses
from tmemlint.analysis.tmem import TMEM_COLUMNS
from tmemlint.checks.context import FunctionContext
from tmemlint.ir import Instruction, Module

#: Version of the JSON model (docs/plan-schema.md).  Minor: fields added; major: fields changed or removed.
SCHEMA_VERSION = "1.0"

#: Reuse-edge guard classes, from the riskiest down, with their risk rank (higher is riskier).
GUARDS = {
    "none": 5,
    "thread-barrier": 4,
    "mbarrier": 3,
    "same-thread-wait": 1,
    "mbarrier+tcgen05": 1,
    "pipelined": 0,
}

_NAME_PREFIX = {"accumulator": "acc", "A": "A", "scale-A": "SFA", "scale-B": "SFB", "metadata": "meta",
                "data": "data"}
#: §3 pipelined pairs (reader op, writer op) that need no synchronization in one thread.
_PIPELINED = {("mma", "mma"), ("cp", "mma"), ("shift", "mma"), ("mma", "shift"), ("shift", "cp")}


class PlanError(Exception):
    """The plan cannot be built: ``--kernel`` names no kernel of the file, or the file has no TMEM kernel."""


def _is(inst: Instruction, *families: str) -> bool:
    return inst.family in families


def _is_mbar_wait(inst: Instruction) -> bool:
    return inst.op == "mbarrier" and len(inst.parts) > 1 and inst.parts[1] in ("try_wait", "test_wait")


def _is_mbar_arrive(inst: Instruction) -> bool:
    return inst.op == "mbarrier" and len(inst.parts) > 1 and inst.parts[1].startswith("arrive")


def _is_bar(inst: Instruction) -> bool:
    """A CTA or cluster barrier (``bar.warp.sync`` orders one warp only and is not one)."""
    return inst.op in ("bar", "barrier") and not (len(inst.parts) > 1 and inst.parts[1] == "warp")


def _is_bar_wait(inst: Instruction) -> bool:
    if not _is_bar(inst):
        return False
    if len(inst.parts) > 1 and inst.parts[1] == "cluster":
        return "wait" in inst.parts
    return "arrive" not in inst.parts


def _slot_name(slot) -> str:
    if slot and slot[0] == "sym":
        return f"{slot[1]}+{slot[2]}" if slot[2] else str(slot[1])
    return f"unknown slot (alloc at instruction {slot[1]})" if slot and slot[0] == "inst" else repr(slot)


def _warp_text(warps: list[int]) -> str:
    if not warps:
        return "no warp"
    runs = []
    start = prev = warps[0]
    for w in warps[1:] + [None]:
        if w is not None and w == prev + 1:
            prev = w
            continue
        runs.append(f"{start}" if start == prev else f"{start}-{prev}")
        if w is not None:
            start = prev = w
    return ("warp " if len(warps) == 1 else "warps ") + ",".join(runs)


class _Kernel:
    """Builds the plan of one function (private: the public surface is ``build_plan``)."""

    def __init__(self, ctx: FunctionContext, ctas_per_sm: int | None):
        self.ctx = ctx
        self.fn = ctx.function
        self.insts = self.fn.instructions
        self.flow = Flow(ctx.cfg)
        self.va = ctx.values
        self.threads = ctx.threads
        self.sets = AddressSets(self.va, self.threads.n_threads)
        self.accesses = collect_accesses(self.insts, self.va, self.sets)
        self.rmap = build_regions(self.accesses)
        self.exec_by, self.exec_complete = executing_classes(ctx.cfg, self.va, self.threads)
        self.ctas_config = ctas_per_sm
        self.names: dict[int, str] = {}
        counters: dict[str, int] = {}
        for r in self.rmap.regions:
            p = _NAME_PREFIX[r.kind]
            n = counters.get(p, 0)
            counters[p] = n + 1
            self.names[id(r)] = f"{p}{n}"

    # ---- helpers ---------------------------------------------------------------------------------------
    def line(self, i: int) -> int:
        return self.insts[i].span.line

    def lines(self, idxs) -> list[int]:
        return sorted({self.line(i) for i in idxs})

    def warps(self, idx: int) -> list[int]:
        return warps_of(self.exec_by.get(idx, ()), self.threads)

    @staticmethod
    def ref(a: Access) -> dict:
        return {"op": a.op, "role": a.role, "line": a.inst.span.line}

    # ---- header ----------------------------------------------------------------------------------------
    def header(self) -> dict:
        groups = sorted({int(p.split("::")[1]) for i in self.insts if i.op == "tcgen05"
                         for p in i.parts if p.startswith("cta_group::")})
        sites = self.ctx.sites
        allocs = []
        self.slot_index: dict = {}
        for a in sites.allocs:
            slot = sites.slot_of[a.index]
            if slot not in self.slot_index:
                self.slot_index[slot] = len(self.slot_index)
            allocs.append({
                "allocation": self.slot_index[slot], "slot": _slot_name(slot), "line": a.span.line,
                "columns": sites.ncols.get(a.index), "warps": _warp_text(self.warps(a.index)),
            })
        deallocs = [{"allocation": self.slot_index.get(sites.freed_slot.get(d.index)), "line": d.span.line,
                     "columns": sites.ncols.get(d.index)} for d in sites.deallocs]
        mn = self.fn.directives.get("minnctapersm")
        if mn:
            ctas = {"value": int(mn[0]), "source": "minnctapersm"}
        elif self.ctas_config is not None:
            ctas = {"value": int(self.ctas_config), "source": "config"}
        else:
            ctas = {"value": 1, "source": "default"}
        tpc = self.fn.threads_per_cta()
        return {
            "kernel": self.fn.name,
            "is_entry": self.fn.is_entry,
            "line": self.fn.span.line,
            "target": ",".join(self.ctx.module.target) or None,
            "cta_group": groups[0] if len(groups) == 1 else (groups or None),
            "threads_per_cta": tpc[0] * tpc[1] * tpc[2] if tpc else None,
            "warp_classes": [_warp_text(list(k.warps)) for k in self.threads.classes],
            "allocations": allocs,
            "deallocations": deallocs,
            "ctas_per_sm": ctas,
        }

    # ---- regions ---------------------------------------------------------------------------------------
    def region_rows(self) -> list[dict]:
        rows = []
        for r in self.rmap.regions:
            packing = sorted({a.packing for a in r.writers + r.readers
                              if a.role not in ("ld",) or r.kind == "data"})
            rows.append({
                "name": self.names[id(r)],
                "kind": r.kind,
                "allocation": self.slot_index.get(r.slot),
                "lanes": [r.lane_lo, r.lane_hi],
                "columns": [r.lo, r.hi],
                "width": r.width,
                "packing": "; ".join(packing),
                "anchored": r.anchored,
                "writers": sorted((self.ref(a) for a in r.writers), key=lambda x: (x["line"], x["role"])),
                "readers": sorted((self.ref(a) for a in r.readers), key=lambda x: (x["line"], x["role"])),
            })
        return rows

    def unplaced_rows(self) -> list[dict]:
        out = []
        for a in self.rmap.unplaced:
            if a.addr is None:
                why = "TMEM address not derived from a known allocation at a known column"
            elif a.columns is None:
                why = "footprint width unknown (instruction descriptor or shape not constant)"
            else:
                why = "footprint outside every region"
            out.append({**self.ref(a), "reason": why})
        return sorted(out, key=lambda x: (x["line"], x["role"]))

    # ---- budget ----------------------------------------------------------------------------------------
    def budget(self, header: dict) -> dict:
        per_alloc: dict[int, set[int]] = {}
        for r in self.rmap.regions:
            k = self.slot_index.get(r.slot)
            per_alloc.setdefault(k, set()).update(range(r.lo, r.hi))
        allocated: dict[int, int | None] = {}
        for a in header["allocations"]:
            k = a["allocation"]
            c = a["columns"]
            if k in allocated and (allocated[k] is None or c is None):
                allocated[k] = None
            elif c is not None:
                allocated[k] = max(allocated.get(k) or 0, c)
            else:
                allocated[k] = None
        rows = []
        for k in sorted(allocated):
            raw = len(per_alloc.get(k, ()))
            alloc = allocated[k]
            rows.append({"allocation": k, "raw_columns": raw, "allocated_columns": alloc,
                         "waste_columns": alloc - raw if alloc is not None else None})
        raw_total = sum(len(v) for v in per_alloc.values())
        known = all(v is not None for v in allocated.values()) and bool(allocated)
        alloc_total = sum(allocated.values()) if known else None
        ctas = header["ctas_per_sm"]["value"]
        waste = alloc_total - raw_total if alloc_total is not None else None
        per_sm = alloc_total * ctas if alloc_total is not None else None
        return {
            "raw_columns": raw_total,
            "region_width_sum": sum(r.width for r in self.rmap.regions),
            "allocated_columns": alloc_total,
            "allocations": rows,
            "ctas_per_sm": ctas,
            "per_sm_columns": per_sm,
            "sm_limit": TMEM_COLUMNS,
            "fits": per_sm <= TMEM_COLUMNS if per_sm is not None else None,
            "waste_columns": waste,
            "waste_percent": round(100.0 * waste / alloc_total, 1) if alloc_total else None,
            "complete": not self.rmap.unplaced,
        }

    # ---- liveness and peak -----------------------------------------------------------------------------
    def _completion(self, a: Access) -> list[int]:
        """Where a read completes: the first tcgen05.wait::ld after an ld, the first commit after an MMA."""
        i = a.inst.index
        if a.role == "ld":
            got = self.flow.reach(i, lambda j: _is(self.insts[j], "tcgen05.wait::ld"), back_edges=False)
        else:
            got = self.flow.reach(i, lambda j: _is(self.insts[j], "tcgen05.commit"), back_edges=False)
        return sorted(got) or [i]

    def live_ranges(self) -> dict[int, tuple[int, int]]:
        """Instruction-index range in program order where each region is live: from its first access to the
        completion of its last (``_completion``), widened to every loop that both writes and reads it."""
        out = {}
        for r in self.rmap.regions:
            w = [a.inst.index for a in r.writers]
            rd = [j for a in r.readers for j in self._completion(a)]
            pts = w + rd + [a.inst.index for a in r.readers]
            if not pts:
                continue
            lo, hi = min(pts), max(pts)
            for llo, lhi in self.flow.loops:
                inside_w = any(llo <= j <= lhi for j in w)
                inside_r = any(llo <= a.inst.index <= lhi for a in r.readers)
                if inside_w and inside_r:
                    lo, hi = min(lo, llo), max(hi, lhi)
            out[id(r)] = (lo, hi)
        self._ranges = out
        return out

    def peak(self) -> dict:
        ranges = self.live_ranges()
        events = sorted({p for rg in ranges.values() for p in rg})
        best = (0, None, [])
        for p in events:
            live = [r for r in self.rmap.regions if id(r) in ranges and ranges[id(r)][0] <= p <= ranges[id(r)][1]]
            cols: dict = {}
            for r in live:
                cols.setdefault(r.slot, set()).update(range(r.lo, r.hi))
            total = sum(len(c) for c in cols.values())
            if total > best[0]:
                best = (total, p, live)
        total, p, live = best
        return {
            "columns": total,
            "line": self.line(p) if p is not None else None,
            "regions": [self.names[id(r)] for r in live],
        }

    # ---- reuse edges -----------------------------------------------------------------------------------
    def _overlapping_writers(self, r: Region) -> list[Access]:
        """Writers of any column of ``r`` (of this region or of a region aliasing it), not accumulating MMAs of
        the region itself being read back (those are the accumulation chain, not a reuse)."""
        out = []
        for other in self.rmap.regions:
            if other.slot != r.slot or not other.overlaps(r.lo, r.hi):
                continue
            for a in other.writers:
                if a not in out:
                    out.append(a)
        return out

    def reuse_edges(self) -> list[dict]:
        edges = []
        seen = set()
        for r in self.rmap.regions:
            readers = [a for a in r.readers]
            if not readers:
                continue
            writers = self._overlapping_writers(r)
            w_idx = {a.inst.index: a for a in writers}
            r_idx = {a.inst.index for a in readers}
            for rd in readers:
                ri = rd.inst.index
                rc = self.exec_by.get(ri, frozenset())
                # same thread: the first writers met after this read, with no other read of the region between
                hits = self.flow.reach(ri, lambda j: j in w_idx or j in r_idx)
                for wi in sorted(hits):
                    if wi not in w_idx or wi == ri:
                        continue
                    if not (rc & self.exec_by.get(wi, frozenset())):
                        continue
                    key = (id(r), ri, wi)
                    if key in seen:
                        continue
                    seen.add(key)
                    edges.append(self._same_thread_edge(r, rd, w_idx[wi]))
                # other warps: last reader of its iteration → first writer of the writer's iteration
                later_reads = self.flow.reach(ri, lambda j: j in r_idx, back_edges=False)
                if later_reads:
                    continue
                for wa in writers:
                    wi = wa.inst.index
                    wc = self.exec_by.get(wi, frozenset())
                    if not wc or not rc or (rc & wc):
                        continue
                    if self.flow.reach(wi, lambda j: j in w_idx, forward=False, back_edges=False):
                        continue
                    key = (id(r), ri, wi)
                    if key in seen:
                        continue
                    seen.add(key)
                    edges.append(self._cross_thread_edge(r, rd, wa))
        edges = self._prune(edges)
        edges.sort(key=lambda e: (e["reader"]["line"], e["writer"]["line"], e["region"]))
        return edges

    def _prune(self, edges: list[dict]) -> list[dict]:
        """Keep the last readers and the first writers: of two edges into the same writer, drop the one whose
        reader comes before the other's within one iteration; of two edges from the same reader, drop the one
        whose writer comes after the other's (a branch around an elected instruction otherwise makes every
        reader look last)."""
        idx = {}
        for e in edges:
            idx[id(e)] = (e["_ri"], e["_wi"])
        keep = []
        for e in edges:
            ri, wi = idx[id(e)]
            later_reader = any(o is not e and o["region"] == e["region"] and idx[id(o)][1] == wi
                               and idx[id(o)][0] != ri and self.flow.reachable(ri, idx[id(o)][0], back_edges=False)
                               and not self.flow.reachable(idx[id(o)][0], ri, back_edges=False)
                               for o in edges)
            earlier_writer = any(o is not e and o["region"] == e["region"] and idx[id(o)][0] == ri
                                 and idx[id(o)][1] != wi
                                 and self.flow.reachable(idx[id(o)][1], wi, back_edges=False)
                                 and not self.flow.reachable(wi, idx[id(o)][1], back_edges=False)
                                 for o in edges)
            if not later_reader and not earlier_writer:
                keep.append(e)
        for e in keep:
            del e["_ri"], e["_wi"]
        return keep

    def _edge(self, r: Region, rd: Access, wa: Access, same: bool, nxt: bool, guard: str, present: list[str],
              missing: list[str]) -> dict:
        return {
            "region": self.names[id(r)],
            "columns": [r.lo, r.hi],
            "reader": {**self.ref(rd), "warps": _warp_text(self.warps(rd.inst.index))},
            "writer": {**self.ref(wa), "warps": _warp_text(self.warps(wa.inst.index))},
            "same_thread": same,
            "next_iteration": nxt,
            "guard": guard,
            "risk": GUARDS[guard],
            "present": present,
            "missing": missing,
            "_ri": rd.inst.index,
            "_wi": wa.inst.index,
        }

    def _same_thread_edge(self, r: Region, rd: Access, wa: Access) -> dict:
        ri, wi = rd.inst.index, wa.inst.index
        f = self.flow
        nxt = f.only_via_back_edge(ri, wi)
        present, missing = [], []
        if rd.role == "ld":
            if f.must_pass(ri, wi, lambda j: _is(self.insts[j], "tcgen05.wait::ld")):
                present.append("tcgen05.wait::ld")
                guard = "same-thread-wait"
            else:
                missing.append("tcgen05.wait::ld between the tcgen05.ld and the overwrite")
                guard = "none"
        elif (rd.op, wa.op) in _PIPELINED and self._same_accumulator(rd, wa):
            present.append(f"issue order ({rd.op} then {wa.op} is a pipelined pair, §3)")
            guard = "pipelined"
        else:
            commits = f.reach(ri, lambda j: _is(self.insts[j], "tcgen05.commit"))
            commit = f.must_pass(ri, wi, lambda j: _is(self.insts[j], "tcgen05.commit"))
            bars = {self._mbarrier(self.insts[c]) for c in commits}
            wait = f.must_pass(ri, wi, lambda j: _is_mbar_wait(self.insts[j]) and self._waits_on(j, bars))
            if commit:
                present.append("tcgen05.commit")
            if wait:
                present.append("mbarrier wait on the committed barrier")
            if commit and wait:
                guard = "same-thread-wait"
            else:
                guard = "none"
                missing.append(f"completion of the {rd.op} before the {wa.op} (tcgen05.commit, then an mbarrier wait"
                               f" on it): {rd.op} then {wa.op} is not a pipelined pair (§3)")
        return self._edge(r, rd, wa, True, nxt, guard, present, missing)

    def _same_accumulator(self, rd: Access, wa: Access) -> bool:
        """§3 pipelines mma→mma only on the same accumulator and shape: both MMAs' D addresses and N agree."""
        if rd.op != "mma" or wa.op != "mma":
            return True
        d1 = next((a for a in self.accesses if a.inst is rd.inst and a.role == "d"), None)
        d2 = next((a for a in self.accesses if a.inst is wa.inst and a.role == "d"), None)
        return bool(d1 and d2 and d1.addr and d2.addr and d1.addr.offsets == d2.addr.offsets
                    and d1.columns == d2.columns)

    def _mbarrier(self, inst: Instruction):
        """The value of the mbarrier address operand of a commit or an mbarrier instruction (None: unknown)."""
        from tmemlint.ir import Address
        from tmemlint.analysis.values import TOP, is_stable

        for o in inst.operands:
            if type(o) is Address:
                v = self.va.address_value(inst, o)
                return v if v is not TOP and is_stable(v) else None
        return None

    def _waits_on(self, j: int, bars: set) -> bool:
        """Whether the mbarrier wait at ``j`` may wait on one of ``bars`` (an unknown address may be any)."""
        v = self._mbarrier(self.insts[j])
        return v is None or None in bars or v in bars

    def _cross_thread_edge(self, r: Region, rd: Access, wa: Access) -> dict:
        ri, wi = rd.inst.index, wa.inst.index
        f = self.flow
        insts = self.insts

        def mb_out(j):
            return _is_mbar_arrive(insts[j]) or _is(insts[j], "tcgen05.commit")

        def mb_in(j):
            return _is_mbar_wait(insts[j])

        outs_m = f.reach(ri, mb_out, back_edges=False) or f.reach(ri, mb_out)
        outs_b = f.reach(ri, lambda j: _is_bar(insts[j]), back_edges=False)
        ins_m = f.reach(wi, mb_in, forward=False, back_edges=False) or f.reach(wi, mb_in, forward=False)
        ins_b = f.reach(wi, lambda j: _is_bar_wait(insts[j]), forward=False, back_edges=False)
        present, missing = [], []
        mbar_out, mbar_in = bool(outs_m), bool(ins_m)
        bar_out, bar_in = bool(outs_b), bool(ins_b)
        outs = outs_m or outs_b
        ins = ins_m or ins_b
        if rd.role == "ld":
            waited = bool(outs) and all(f.must_pass(ri, h, lambda j: _is(insts[j], "tcgen05.wait::ld")) for h in outs)
            if waited:
                present.append("tcgen05.wait::ld")
            else:
                missing.append("tcgen05.wait::ld before the hand-over")
        else:
            waited = all(_is(insts[h], "tcgen05.commit") for h in outs) and bool(outs)
            if waited:
                present.append("tcgen05.commit")
            else:
                missing.append(f"tcgen05.commit tracking the {rd.op} before the hand-over")
        fb = bool(outs) and all(_is(insts[h], "tcgen05.commit") or f.must_pass(
            ri, h, lambda j: _is(insts[j], "tcgen05.fence::before_thread_sync")) for h in outs)
        fa = bool(ins) and all(f.must_pass(h, wi, lambda j: _is(insts[j], "tcgen05.fence::after_thread_sync"))
                               for h in ins)
        if mbar_out and mbar_in:
            present.append("mbarrier hand-over")
            if fb:
                present.append("tcgen05.fence::before_thread_sync")
            else:
                missing.append("tcgen05.fence::before_thread_sync before the arrive")
            if fa:
                present.append("tcgen05.fence::after_thread_sync")
            else:
                missing.append("tcgen05.fence::after_thread_sync after the wait")
            guard = "mbarrier+tcgen05" if (waited and fb and fa) else "mbarrier"
        elif (bar_out or mbar_out) and (bar_in or mbar_in):
            present.append("thread barrier")
            missing.append("an mbarrier hand-over with tcgen05 fences (a barrier alone orders threads, not the "
                           "asynchronous tcgen05 operations)")
            guard = "thread-barrier"
        else:
            missing.append("any synchronization between the reading and the writing warps")
            guard = "none"
        return self._edge(r, rd, wa, False, self.flow.loop_of(wi) is not None, guard, present, missing)

    # ---- readback --------------------------------------------------------------------------------------
    def readback(self) -> dict:
        lds = [i for i in self.insts if _is(i, "tcgen05.ld")]
        waits = [i for i in self.insts if _is(i, "tcgen05.wait::ld")]
        by_shape: dict[str, dict] = {}
        total_warp = 0
        total_cta = 0
        cta_known = self.threads.size_known
        for i in lds:
            s = ld_st_shape(i)
            a = next((x for x in self.accesses if x.inst is i), None)
            regs = a.registers if a else None
            key = f"{s[0]}.x{s[1]}" if s else i.opcode
            if i.has("pack::16b"):
                key += ".pack::16b"
            row = by_shape.setdefault(key, {"shape": key, "count": 0, "registers_per_thread": regs,
                                            "bytes_per_warp": regs * 128 if regs else None, "lines": []})
            row["count"] += 1
            row["lines"].append(i.span.line)
            if regs:
                total_warp += regs * 128
                total_cta += regs * 128 * len(self.warps(i.index))
        no_wait = []
        exits = [j for j in range(len(self.insts)) if self.insts[j].op in ("ret", "exit")]
        for i in lds:
            if any(not self.flow.must_pass(i.index, e, lambda j: _is(self.insts[j], "tcgen05.wait::ld"))
                   for e in exits):
                no_wait.append(i.span.line)
        held, held_line = self._pending_registers()
        return {
            "ld_count": len(lds),
            "by_shape": [by_shape[k] for k in sorted(by_shape)],
            "bytes_per_warp": total_warp,
            "bytes_per_cta": total_cta if cta_known else None,
            "max_registers_held": held,
            "max_registers_held_line": held_line,
            "wait_count": len(waits),
            "waits_per_ld": round(len(waits) / len(lds), 2) if lds else None,
            "lds_without_wait": no_wait,
        }

    def _pending_registers(self) -> tuple[int, int | None]:
        """Most 32-bit registers per thread that tcgen05.ld results hold before their tcgen05.wait::ld, over all
        program points (a forward may-analysis: the pending loads at a point are those on some path), and the
        line where that maximum is first reached."""
        regs = {a.inst.index: (a.registers or 0) for a in self.accesses if a.role == "ld"}
        if not regs:
            return 0, None
        n = len(self.insts)
        pending: list[frozenset] = [frozenset()] * n
        changed = True
        rounds = 0
        while changed and rounds < 50:
            changed = False
            rounds += 1
            for i in range(n):
                cur = frozenset().union(*(pending[p] for p, _ in self.flow.pred[i])) if self.flow.pred[i] \
                    else frozenset()
                inst = self.insts[i]
                if _is(inst, "tcgen05.wait::ld") and inst.guard is None:
                    out = frozenset()
                elif i in regs:
                    out = cur | {i}
                else:
                    out = cur
                if out != pending[i]:
                    pending[i] = out
                    changed = True
        best, where = 0, None
        for i in range(n):
            tot = sum(regs[j] for j in pending[i])
            if tot > best:
                best, where = tot, self.insts[i].span.line
        return best, where

    # ---- timeline --------------------------------------------------------------------------------------
    def timeline(self, edges: list[dict]) -> list[dict]:
        f = self.flow
        insts = self.insts
        sites = self.ctx.sites
        out = []
        for r in self.rmap.regions:
            w = [a.inst.index for a in r.writers]
            rd = [a.inst.index for a in r.readers]
            ld = [a.inst.index for a in r.readers if a.role == "ld"]
            async_w = [a.inst.index for a in r.writers if a.op in ("mma", "cp", "shift")]
            st_w = [a.inst.index for a in r.writers if a.op == "st"]
            commits = set()
            for i in async_w:
                commits |= f.reach(i, lambda j: _is(insts[j], "tcgen05.commit"), back_edges=False)
            waits = set()
            for i in rd:
                waits |= f.reach(i, lambda j: _is_mbar_wait(insts[j]) or _is_bar_wait(insts[j])
                                 or _is(insts[j], "tcgen05.wait::st"), forward=False, back_edges=False)
            st_waits = set()
            for i in st_w:
                st_waits |= f.reach(i, lambda j: _is(insts[j], "tcgen05.wait::st"), back_edges=False)
            wait_ld = set()
            for i in ld:
                wait_ld |= f.reach(i, lambda j: _is(insts[j], "tcgen05.wait::ld"), back_edges=False)
            release = set()
            for i in rd:
                release |= f.reach(i, lambda j: _is_mbar_arrive(insts[j]) or _is_bar(insts[j])
                                   or (_is(insts[j], "tcgen05.commit") and insts[i].family == "tcgen05.mma"),
                                   back_edges=False)
            name = self.names[id(r)]
            events = [
                ("alloc", [a.index for a in sites.allocs if sites.slot_of[a.index] == r.slot]),
                ("write", w),
                ("commit", sorted(commits | st_waits)),
                ("wait", sorted(waits)),
                ("read", rd),
                ("wait::ld", sorted(wait_ld)),
                ("release", sorted(release)),
                ("reuse", []),
                ("dealloc", [d.index for d in sites.deallocs if sites.freed_slot.get(d.index) == r.slot]),
            ]
            rows = []
            for stage, idxs in events:
                if stage == "reuse":
                    ls = sorted({e["writer"]["line"] for e in edges if e["region"] == name})
                else:
                    ls = self.lines(idxs)
                rows.append({"stage": stage, "lines": ls})
            rng = self._ranges.get(id(r))
            out.append({"region": name, "live": [self.line(rng[0]), self.line(rng[1])] if rng else None,
                        "events": rows})
        return out

    # ---- everything ------------------------------------------------------------------------------------
    def build(self) -> dict:
        h = self.header()
        regions = self.region_rows()
        budget = self.budget(h)
        peak = self.peak()
        edges = self.reuse_edges()
        riskiest = None
        if edges:
            best = max(edges, key=lambda e: (e["risk"], -e["reader"]["line"], -e["writer"]["line"]))
            riskiest = edges.index(best)
        timeline = self.timeline(edges)
        first = self.fn.span.line
        last = max([i.span.end_line for i in self.insts] + [first])
        return {
            **h,
            "program_lines": [first, last],
            "regions": regions,
            "unplaced": self.unplaced_rows(),
            "budget": budget,
            "peak": peak,
            "reuse_edges": edges,
            "riskiest_edge": riskiest,
            "readback": self.readback(),
            "timeline": timeline,
            "notes": self.notes(),
        }

    def notes(self) -> list[str]:
        out = []
        if not self.exec_complete:
            out.append("a warp-class path simulation exceeded its budget: warp attribution is approximate")
        if any(r.anchored for r in self.rmap.regions):
            out.append("some accesses add a varying offset (a loop over column chunks) to a known address: they "
                       "are placed in the region they start in")
        return out


def build_plan(module: Module, path: str, kernel: str | None = None, ctas_per_sm: int | None = None) -> dict:
    """The plan of every function of ``module`` that has a body and uses tcgen05 (or only ``kernel``).

    Returns the JSON model (``docs/plan-schema.md``).  Raises ``PlanError`` when ``kernel`` names no function of
    the module that uses tcgen05; a module without any such function gives an empty ``kernels`` list."""
    kernels = []
    names = []
    for fn in module.functions:
        if not fn.has_body:
            continue
        names.append(fn.name)
        if kernel is not None and fn.name != kernel:
            continue
        ctx = FunctionContext(module, fn, path)
        if not ctx.touches_tmem:
            if kernel is not None:
                raise PlanError(f"function {kernel} does not use Tensor Memory (no tcgen05 instruction)")
            continue
        kernels.append(_Kernel(ctx, ctas_per_sm).build())
    if kernel is not None and not kernels:
        known = ", ".join(names) or "none"
        raise PlanError(f"no kernel named {kernel!r} in {path} (functions: {known})")
    return {"schema_version": SCHEMA_VERSION, "tool": f"tmemlint {__version__}", "file": path, "kernels": kernels}


__all__ = ["GUARDS", "PlanError", "SCHEMA_VERSION", "build_plan"]
