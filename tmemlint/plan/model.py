"""The TMEM plan of a kernel, computed from its PTX: the JSON model that every renderer draws from.

``build_plan(module, path)`` returns a dict following ``docs/plan-schema.md`` (``schema_version``
``SCHEMA_VERSION``).  Per kernel that touches TMEM it holds the header (target, ``cta_group``, allocation sites,
CTAs per SM and where that number came from), the region map (``tmemlint.analysis.regions``), the column budget,
the peak of simultaneously live columns, the reuse edges with the synchronization that guards each, the cost of
reading TMEM back, and a lifecycle timeline per region.  Lines are 1-based PTX lines (source lines in CUDA
source mode); columns are TMEM columns (32-bit cells, PTX ISA §9.7.16.2.1); lanes are TMEM lanes (rows).

It runs on the checker's own analyses (``FunctionContext``) and the enabled rules with the same ``Options`` as
``tmemlint check``: integer TMEM addresses are columns of an allocation whose base the code proves (512 columns, or
a trap-checked base); addresses are re-evaluated per issuing warps; a loop-advanced address gets every iteration's
columns (``tmemlint.plan.loops``); every stage of a stage-indexed address is its own region
(``build_regions(split_stages=True)``); the checker's findings mark regions and reuse edges, and an edge is at risk
only when a finding names it or ``analysis.order`` finds the two warps unordered.
"""

from __future__ import annotations

from tmemlint.plan import PlanError
from tmemlint.version import __version__
from tmemlint.analysis.flow import Flow, executing_classes, warps_of
from tmemlint.analysis.order import BarrierKey, Chain, Hop
from tmemlint.analysis.idesc import ld_st_shape
from tmemlint.analysis.regions import Access, AddressSets, Region, build_regions, collect_accesses
from tmemlint.analysis.tmem import TMEM_COLUMNS
from tmemlint.analysis.values import SymAddr, defined_regs
from tmemlint.checks.context import FunctionContext
from tmemlint.checks.registry import codes_tagged
from tmemlint.ir import Instruction, Module
from tmemlint.names import demangle

#: Version of the JSON model (docs/plan-schema.md).  Minor: fields added; major: fields changed or removed.
SCHEMA_VERSION = "2.1"

#: Reuse-edge guard classes, from the riskiest down, with their risk rank (higher is riskier).
GUARDS = {
    "none": 5,
    "thread-barrier": 4,
    "mbarrier": 3,
    "conditional-wait": 2,
    "same-thread-wait": 1,
    "mbarrier+tcgen05": 1,
    "barrier+tcgen05": 1,
    "pipelined": 0,
}

_NAME_PREFIX = {"accumulator": "acc", "A": "A", "scale-A": "SFA", "scale-B": "SFB", "metadata": "meta",
                "data": "data"}
#: §3 pipelined pairs (reader op, writer op) that need no synchronization in one thread.  mma→mma is pipelined
#: only on the same accumulator, which an edge (an operand read, then a write of its columns) never is.
_PIPELINED = {("cp", "mma"), ("shift", "mma"), ("mma", "shift"), ("shift", "cp")}
#: Roles whose instruction every thread of a warp executes (.sync.aligned); the others are issued by one thread.
_WARP_WIDE = {"ld", "st"}


#: The roles whose addresses define a region of each kind (its stages come from their column sets).
_KIND_ROLES = {"accumulator": ("d",), "A": ("a",), "scale-A": ("scale-a",), "scale-B": ("scale-b",),
               "metadata": ("sp",), "data": ("st", "cp", "shift")}
#: Rules whose findings at an access's line are not about its region: the registry's rules tagged with one of
#: these (allocation sites, registers, the input).
_NOT_REGION_TAGS = ("allocation", "registers", "input")
#: Rules whose findings concern the order of a read and a later write of the same cells (attached to reuse
#: edges): the registry's rules tagged ``plan-edge``.
_EDGE_TAG = "plan-edge"


def _source(inst: Instruction) -> str | None:
    """``file:line`` of the instruction's outermost source position (the line of the kernel an inlined helper was
    called from; PTX ISA §11.5.3 ``.loc ... inlined_at``), the file by its base name; None without line info."""
    pos = getattr(inst, "src", None)
    if pos is None or not getattr(pos, "line", 0):
        return None
    outer = pos.inlined_at[-1] if pos.inlined_at else pos
    return f"{str(outer.file).replace(chr(92), '/').rsplit('/', 1)[-1]}:{outer.line}"


def _finding_ref(f) -> dict:
    """A checker finding as the plan shows it: ``{code, severity, line, message}`` (PTX lines, or source lines in
    source mode)."""
    return {"code": f.code, "severity": f.severity.value, "line": f.line, "message": f.message}


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
    if type(slot) is SymAddr:
        return f"{slot.name}+{slot.offset}" if slot.offset else str(slot.name)
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


def _lines_text(insts: tuple[Instruction, ...], most: int = 4) -> str:
    """The lines of ``insts`` (``most`` of them, then how many more)."""
    lines = sorted({i.span.line for i in insts})
    more = f" and {len(lines) - most} more" if len(lines) > most else ""
    return (", ".join(map(str, lines[:most])) + more) or "?"


class _Kernel:
    """Builds the plan of one function (private: the public surface is ``build_plan``)."""

    def __init__(self, ctx: FunctionContext, ctas_per_sm: int | None, findings: list | None = None):
        self.ctx = ctx
        self.findings = findings or []
        self.fn = ctx.function
        self.insts = self.fn.instructions
        self.flow = Flow(ctx.cfg)
        self.va = ctx.values
        self.threads = ctx.threads
        self.sets = ctx.address_sets
        self.exec_by, self.exec_complete = executing_classes(ctx.cfg, self.va, self.threads)
        self.accesses = collect_accesses(self.insts, self.va, self.sets)
        self._refine_by_warps()
        self.rmap = build_regions(self.accesses, split_stages=True)
        self.fragments: dict[int, list[Region]] = {}
        self.rmap.regions = self._logical_regions(self.rmap.regions)
        self.ctas_config = ctas_per_sm
        self._lanes: dict[int, tuple[int, int]] = {}
        self.names: dict[int, str] = {}
        counters: dict[str, int] = {}
        for r in self.rmap.regions:
            p = _NAME_PREFIX[r.kind]
            n = counters.get(p, 0)
            counters[p] = n + 1
            self.names[id(r)] = f"{p}{n}"
        self._name_tensors()

    # ---- logical regions -------------------------------------------------------------------------------
    def _lifetime(self, r: Region) -> tuple:
        """What a fragment's lifetime is made of: its writers' operations and roles, its readers' roles, and the
        barriers its hand-over arrives on (the mbarrier of the first tcgen05.commit or arrive after each read and
        after each asynchronous write; ``analysis.order``'s barrier instances)."""
        insts = self.insts
        keys: set = set()
        for a in r.readers + [w for w in r.writers if w.op in ("mma", "cp")]:
            for j in self.flow.reach(a.inst.index, lambda j: _is(insts[j], "tcgen05.commit") or _is_mbar_arrive(
                    insts[j]), back_edges=False):
                site = self.ctx.sync.site(insts[j])
                keys.add(site.key if site is not None else None)
        return (frozenset((a.op, a.role) for a in r.writers), frozenset(a.role for a in r.readers),
                frozenset(repr(k) for k in keys))

    def _written_together(self, a: Region, b: Region) -> bool:
        """Whether some writer of ``a`` and some writer of ``b`` are in one basic block: the pieces of one tensor
        are written in the same pass (two N=128 MMAs issued back to back), two unrolled pipeline stages are not."""
        blocks = {self.ctx.cfg.block_of[w.inst.index] for w in a.writers}
        return any(self.ctx.cfg.block_of[w.inst.index] in blocks for w in b.writers)

    def _logical_regions(self, frags: list[Region]) -> list[Region]:
        """Adjacent fragments (the per-instruction footprints of ``build_regions``) of the same allocation, kind
        (not ``data``), lanes, stage and lifetime (``_lifetime``: the same writers' roles, the same hand-over
        barrier) are one logical region: ThunderKittens' four 4-column scale-factor pieces of a stage are one
        16-column stage buffer, FlashMLA's O written by two N=128 MMAs is one 256-column accumulator.  The
        fragments stay listed in ``self.fragments``.  Fragments merge only when they are written together
        (``_written_together``)."""
        out: list[Region] = []
        sig: dict[int, tuple] = {}
        for r in frags:
            st = self.stage_of(r)
            key = (r.slot, r.kind, r.lane_lo, r.lane_hi, (st["index"], st["of"]) if st else None, self._lifetime(r))
            prev = out[-1] if out else None
            if prev is not None and r.kind != "data" and prev.hi == r.lo and sig[id(prev)] == key \
                    and self._written_together(self.fragments[id(prev)][-1], r):
                parts = self.fragments[id(prev)]
                if len(parts) == 1:  # the first merge: the logical region is a new object over its fragments
                    merged = Region(prev.slot, prev.lo, prev.hi, prev.kind, prev.lane_lo, prev.lane_hi,
                                    list(prev.writers), list(prev.readers), prev.anchored)
                    out[-1] = merged
                    self.fragments[id(merged)] = parts
                    sig[id(merged)] = key
                    prev = merged
                prev.hi = r.hi
                prev.anchored = prev.anchored or r.anchored
                prev.writers += [a for a in r.writers if a not in prev.writers]
                prev.readers += [a for a in r.readers if a not in prev.readers]
                self.fragments[id(prev)].append(r)
                continue
            out.append(r)
            self.fragments[id(r)] = [r]
            sig[id(r)] = key
        return out

    def _name_tensors(self) -> None:
        """The logical tensor of each region: the stages of one stage-indexed buffer are one tensor
        (``SFA[stage 0..4]``), each other region is a tensor of its own.  ``self.tensor[id(r)]`` is the tensor's
        name (the kind's prefix, numbered when the kind has several tensors) and ``self.label[id(r)]`` the
        region's (``SFA[stage 2]``)."""
        groups: dict[tuple, list[Region]] = {}
        for r in self.rmap.regions:
            st = self.stage_of(r)
            key = (r.kind, r.slot, tuple(st["starts"])) if st else (r.kind, r.slot, id(r))
            groups.setdefault(key, []).append(r)
        per_prefix: dict[str, int] = {}
        for key in groups:
            p = _NAME_PREFIX[key[0]]
            per_prefix[p] = per_prefix.get(p, 0) + 1
        seen: dict[str, int] = {}
        self.tensor: dict[int, str] = {}
        self.label: dict[int, str] = {}
        self.tensor_stages: dict[int, int] = {}
        for key, rs in groups.items():
            p = _NAME_PREFIX[key[0]]
            n = seen.get(p, 0)
            seen[p] = n + 1
            t = p if per_prefix[p] == 1 else f"{p}{n}"
            for r in rs:
                st = self.stage_of(r)
                self.tensor[id(r)] = f"{t}[stage 0..{st['of'] - 1}]" if st else t
                self.label[id(r)] = f"{t}[stage {st['index']}]" if st else t

    def _refine_by_warps(self) -> None:
        """Re-evaluate the address of every access whose instruction only some warps execute with the thread
        indices of those warps (``AddressSets(warps=...)``): ThunderKittens' ``(warp & 3) * 256`` issued by warps
        0-1 only is the column set {0, 256}, not {0, 256, 512, 768}."""
        all_classes = frozenset(range(len(self.threads.classes)))
        groups: dict[tuple, list[Access]] = {}
        for a in self.accesses:
            cls = self.exec_by.get(a.inst.index)
            if not cls or cls == all_classes or not self.exec_complete:
                continue
            groups.setdefault(tuple(warps_of(cls, self.threads)), []).append(a)
        base = self.sets
        self._resolve_loops()
        self._infer_widths()
        for ws, accs in groups.items():
            sets = AddressSets(self.va, self.threads.n_threads, base.constant_slot, warps=ws, local=base.local)
            for a in accs:
                got = sets.address(a.inst, a.op_index)
                if got is not None and a.addr is not None and got.slot == a.addr.slot \
                        and got.offsets <= a.addr.offsets and got.offsets:
                    a.addr = got

    def _infer_widths(self) -> None:
        """An MMA whose instruction descriptor is a runtime value (a kernel parameter: CUTLASS's tutorials) has no
        known N; its accumulator is then as wide as the contiguous tcgen05.ld readback that starts at its columns,
        up to the next stage or the next other operand (``self.inferred`` lists the lines)."""
        self.inferred: list[int] = []
        lds = [a for a in self.accesses if a.role == "ld" and a.addr is not None and a.addr.exact and a.columns]
        if not lds:
            return
        starts_of_others = {}
        for a in self.accesses:
            if a.addr is not None and a.role != "ld" and a.intervals():
                starts_of_others.setdefault(a.addr.slot, set()).update(lo for lo, _ in a.intervals())
        for a in self.accesses:
            if a.role != "d" or a.columns is not None or a.addr is None or not a.addr.exact:
                continue
            slot = a.addr.slot
            ivs = sorted(iv for x in lds if x.addr.slot == slot for iv in x.intervals())
            stops = set(a.addr.columns) | starts_of_others.get(slot, set())
            widths = set()
            for c in a.addr.columns:
                e = c
                grew = True
                while grew:
                    grew = False
                    for lo, hi in ivs:
                        if lo <= e < hi and not any(e < t < hi for t in stops):
                            e, grew = hi, True
                        elif lo == e and not any(e < t < hi for t in stops):
                            e, grew = hi, True
                    if any(t == e for t in stops if t != c):
                        break
                if e > c:
                    widths.add(e - c)
            if len(widths) == 1:
                a.columns = widths.pop()
                self.inferred.append(a.inst.span.line)

    def _resolve_loops(self) -> None:
        """Accesses anchored by a loop-varying offset (``taddr + 32·chunk``) get every iteration's columns when
        the loop is counted (``tmemlint.plan.loops``)."""
        from tmemlint.plan.loops import LoopColumns

        lc = None
        for a in self.accesses:
            if a.addr is not None and a.addr.exact or self.flow.loop_of(a.inst.index) is None:
                continue
            if a.addr is None and self.sets.constant_slot is None:
                continue
            lc = lc or LoopColumns(self.insts, self.va, self.sets, self.flow)
            got = lc.address(a.inst, a.op_index)
            if got is not None and got.exact and (a.addr is None or got.slot == a.addr.slot):
                a.addr = got

    # ---- helpers ---------------------------------------------------------------------------------------
    def line(self, i: int) -> int:
        return self.insts[i].span.line

    def lines(self, idxs) -> list[int]:
        return sorted({self.line(i) for i in idxs})

    def warps(self, idx: int) -> list[int]:
        return warps_of(self.exec_by.get(idx, ()), self.threads)

    @staticmethod
    def ref(a: Access) -> dict:
        """``{op, role, line}`` of an access, with ``source`` (``file:line`` from ``.loc``: the outermost position
        of the call chain, the kernel's own line) when the PTX has line info."""
        out = {"op": a.op, "role": a.role, "line": a.inst.span.line}
        src = _source(a.inst)
        if src is not None:
            out["source"] = src
        return out

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
        # the number TM106 uses (checks.lifecycle.ctas_per_sm): the configuration first, then .minnctapersm
        mn = self.fn.directives.get("minnctapersm")
        if self.ctas_config:
            ctas = {"value": int(self.ctas_config), "source": "config"}
        elif mn and int(mn[0]) >= 1:
            ctas = {"value": int(mn[0]), "source": "minnctapersm"}
        else:
            ctas = {"value": 1, "source": "default"}
        tpc = self.fn.threads_per_cta()
        return {
            "kernel": self.fn.name,
            "demangled": demangle(self.fn.name),
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
    def access_lanes(self, a: Access) -> set[int]:
        """TMEM lanes one access covers.  ld/st: the lane quarter of each issuing warp (PTX ISA §9.7.16.2.1: warp
        w reaches lanes 32·(w % 4) … +31; a 16-lane shape starts at the address's lane within the quarter); mma D:
        from the address's lane and the datapath of M and cta_group (``accumulator_footprint``); MMA operands and
        cp: their shapes' lanes from the address's lane."""
        width = a.lanes or (32 if a.role in ("ld", "st") else 128)
        starts = a.addr.lanes if a.addr is not None and a.addr.offsets else [0]
        out: set[int] = set()
        if a.role in ("ld", "st"):
            ws = self.warps(a.inst.index)
            if ws:
                for w in ws:
                    for l0 in starts:
                        q = 32 * (w % 4) + (l0 % 32 if width < 32 else 0)
                        out.update(range(q, min(q + width, 32 * (w % 4) + 32)))
                return out
        for l0 in starts:
            out.update(range(l0, min(l0 + width, 128)))
        return out

    def region_lanes(self, r: Region) -> tuple[int, int]:
        lanes: set[int] = set()
        for a in r.writers + r.readers:
            lanes |= self.access_lanes(a)
        return (min(lanes), max(lanes) + 1) if lanes else (r.lane_lo, r.lane_hi)

    def stage_of(self, r: Region) -> dict | None:
        """When ``r`` is one of the columns of a stage-indexed address (one access whose column set has several
        starts): ``{index, of, starts}``, else None."""
        best = None
        roles = _KIND_ROLES[r.kind]
        for a in r.writers + r.readers:
            if a.role not in roles or a.addr is None or len(a.addr.columns) < 2 or r.lo not in a.addr.columns:
                continue
            cols = a.addr.columns
            if best is None or len(cols) > len(best):
                best = cols
        if best is None:
            return None
        return {"index": best.index(r.lo), "of": len(best), "starts": best}

    def formulas(self, r: Region, stage: dict | None, lanes: tuple[int, int]) -> tuple[str, str]:
        """TLane and TCol of a region, in words (PTX ISA §9.7.16.2.1, the datapath layouts of §9.7.16.10.5)."""
        d = next((a for a in r.writers if a.role == "d" and a.idesc is not None), None)
        if r.kind == "accumulator" and d is not None:
            m = d.idesc.m
            cg = 2 if d.inst.has("cta_group::2") else 1
            if cg == 2 and m == 256:
                tl = "lane = row mod 128 of the M=256 tile (rows [0, 128) in CTA rank 0, [128, 256) in rank 1)"
            elif cg == 2 and m == 128:
                tl = "lane = 2x2 datapath of the M=128 tile (layout B: 64 rows per CTA over 128 lanes)"
            elif m == 64:
                tl = "lane = half datapath of the M=64 tile (layout F)"
            else:
                tl = f"lane = row of the M={m} tile"
            col = f"column = base + {r.lo} + n, n in [0, {r.width})"
        elif r.kind in ("scale-A", "scale-B"):
            tl = "lane = row of the scale matrix (duplicated to every 32-lane partition)"
            col = f"column = base + {r.lo} + k, k in [0, {r.width})"
        elif r.kind == "A":
            tl = "lane = row of A"
            col = f"column = base + {r.lo} + 8·kslice + k"
        else:
            tl = "lane = 32·(warp % 4) + lane id" if lanes[1] - lanes[0] > 0 else "lane unknown"
            col = f"column = base + {r.lo} + j, j in [0, {r.width})"
        if stage is not None:
            st = stage["starts"]
            steps = {b - a for a, b in zip(st, st[1:])}
            if len(steps) == 1:
                col = col.replace(f"base + {r.lo}", f"base + {st[0]} + {steps.pop()}·stage (stage {stage['index']} of "
                                                  f"{stage['of']})")
            else:
                col = col.replace(f"base + {r.lo}", f"base + {{{', '.join(map(str, st))}}}[stage] (stage "
                                                  f"{stage['index']} of {stage['of']})")
        if r.kind in ("accumulator", "data") and any(a.role in ("ld", "st") for a in r.readers + r.writers):
            tl += "; read/written by warps: lane = 32·(warp % 4) + lane id"
        return tl, col

    def fragment(self, r: Region) -> str | None:
        """The part of the tile this CTA holds under ``cta_group::2`` (PTX ISA §9.7.16.10.5), else None."""
        d = next((a for a in r.writers if a.role == "d" and a.idesc is not None and a.inst.has("cta_group::2")), None)
        if d is None:
            return None
        m, n = d.idesc.m, d.idesc.n
        if m == 256:
            return (f"per CTA: 128 rows x {n} columns of the 256 x {n} tile (rank 0 rows [0, 128), rank 1 rows "
                    f"[128, 256)); the pair holds 2 x {r.width} columns")
        if m == 128:
            return (f"per CTA: 64 rows of the 128 x {n} tile over 128 lanes x {r.width} columns (layout B); the pair "
                    f"holds the whole tile")
        return f"per CTA: M={m}, N={n} over the pair"

    def region_findings(self, r: Region) -> list[dict]:
        lines = {a.inst.span.line for a in r.writers + r.readers}
        return [_finding_ref(f) for f in self.findings if f.code not in codes_tagged(*_NOT_REGION_TAGS)
                and f.line in lines]

    def region_rows(self) -> list[dict]:
        rows = []
        for r in self.rmap.regions:
            self._lanes[id(r)] = self.region_lanes(r)
        for r in self.rmap.regions:
            packing = sorted({a.packing for a in r.writers + r.readers
                              if a.role not in ("ld",) or r.kind == "data"})
            lanes = self._lanes[id(r)]
            stage = self.stage_of(r)
            tl, tc = self.formulas(r, stage, lanes)
            overlaps = [self.names[id(o)] for o in self.rmap.regions if o is not r and o.slot == r.slot
                        and o.overlaps(r.lo, r.hi) and self._lanes[id(o)][0] < lanes[1]
                        and lanes[0] < self._lanes[id(o)][1]]
            rows.append({
                "name": self.names[id(r)],
                "tensor": self.tensor[id(r)],
                "label": self.label[id(r)],
                "kind": r.kind,
                "allocation": self.slot_index.get(r.slot),
                "lanes": [lanes[0], lanes[1]],
                "columns": [r.lo, r.hi],
                "width": r.width,
                "stage": stage,
                "tlane": tl,
                "tcol": tc,
                "fragment": self.fragment(r),
                "packing": "; ".join(packing),
                "anchored": r.anchored,
                "overlaps": overlaps,
                "findings": self.region_findings(r),
                "writers": sorted((self.ref(a) for a in r.writers), key=lambda x: (x["line"], x["role"])),
                "readers": sorted((self.ref(a) for a in r.readers), key=lambda x: (x["line"], x["role"])),
                "fragments": [{"columns": [f.lo, f.hi], "width": f.width,
                               "writers": sorted((self.ref(a) for a in f.writers), key=lambda x: (x["line"], x["role"])),
                               "readers": sorted((self.ref(a) for a in f.readers), key=lambda x: (x["line"], x["role"]))}
                              for f in self.fragments.get(id(r), [r])],
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
            "complete": not self.rmap.unplaced and not any(r.anchored for r in self.rmap.regions),
            "anchored_accesses": sum(1 for a in self.accesses if a.addr is not None and not a.addr.exact),
            "unplaced_accesses": len(self.rmap.unplaced),
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
                    wa = w_idx[wi]
                    if self._relation(rd, wa) == "same thread":
                        edges.append(self._same_thread_edge(r, rd, wa))
                    else:  # a warp's ld then one elected thread's mma: the other threads hand over
                        edges.append(self._handover_edge(r, rd, wa, self.flow.only_via_back_edge(ri, wi)))
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
                    edges.append(self._handover_edge(r, rd, wa))
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
              missing: list[str], ordered: bool | None = None) -> dict:
        rw, ww = self.warps(rd.inst.index), self.warps(wa.inst.index)
        relation = self._relation(rd, wa)
        rl, wl = rd.inst.span.line, wa.inst.span.line
        found = [_finding_ref(f) for f in self.findings if f.code in codes_tagged(_EDGE_TAG) and f.line in (rl, wl)
                 and (not f.related or {x.line for x in f.related} & {rl, wl} or f.line == wl)]
        return {
            "region": self.names[id(r)],
            "columns": [r.lo, r.hi],
            "reader": {**self.ref(rd), "warps": _warp_text(rw)},
            "writer": {**self.ref(wa), "warps": _warp_text(ww)},
            "same_thread": relation == "same thread",
            "relation": relation,
            "next_iteration": nxt,
            "guard": guard,
            "risk": GUARDS[guard],
            "ordered": ordered,
            "present": present,
            "missing": missing,
            "findings": found,
            "_ri": rd.inst.index,
            "_wi": wa.inst.index,
        }

    def _relation(self, rd: Access, wa: Access) -> str:
        """``same thread`` when the very threads that read also write (one warp class, the same warps, the same
        issue granularity: warp-wide ld/st or one thread's mma/cp/shift); ``same warp, other lanes`` /
        ``same warps, other threads`` when the warps overlap; else ``other warps``."""
        rc = self.exec_by.get(rd.inst.index, frozenset())
        wc = self.exec_by.get(wa.inst.index, frozenset())
        rw, ww = self.warps(rd.inst.index), self.warps(wa.inst.index)
        if rc & wc and rw == ww and (rd.role in _WARP_WIDE) == (wa.role in _WARP_WIDE):
            return "same thread"
        if set(rw) & set(ww):
            return "same warp, other lanes" if len(rw) == 1 and rw == ww else "same warps, other threads"
        return "other warps"

    def _ld_completed_at(self, ld, at) -> bool:
        """Whether the tcgen05.ld ``ld`` has completed for its issuing thread when that thread reaches ``at``: the
        happens-before engine's answer (``SyncModel.pending_at``: a tcgen05.wait::ld of the thread on every feasible
        path of its warp class; a register read of the result does not complete it, PTX ISA §9.7.16.6.4.5)."""
        return all(p.op is not ld for p in self.ctx.sync.pending_at(at, "ld").ops)

    def _same_thread_edge(self, r: Region, rd: Access, wa: Access) -> dict:
        ri, wi = rd.inst.index, wa.inst.index
        f = self.flow
        nxt = f.only_via_back_edge(ri, wi)
        present, missing = [], []
        if rd.role == "ld":
            # the happens-before engine's completion of the load (``SyncModel.pending_at``): a wait::ld of the
            # thread on every path; a read of the result registers does not complete it (PTX ISA §9.7.16.6.4.5)
            if self._ld_completed_at(rd.inst, wa.inst):
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
            keys = [s.key for c in commits if (s := self.ctx.sync.site(self.insts[c])) is not None]
            wait = f.must_pass(ri, wi, lambda j: _is_mbar_wait(self.insts[j]) and self._waits_on(j, keys))
            if commit:
                present.append("tcgen05.commit")
            if wait:
                present.append("mbarrier wait on the committed barrier")
            some_wait = not wait and bool(f.reach(ri, lambda j: _is_mbar_wait(self.insts[j])
                                                  and self._waits_on(j, keys) and f.reachable(j, wi)))
            if commit and wait:
                guard = "same-thread-wait"
            elif commit and some_wait:
                present.append("mbarrier wait on the committed barrier on some paths only (a conditional wait, "
                               "e.g. skipped while the stages fill)")
                guard = "conditional-wait"
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

    def _waits_on(self, j: int, keys: list) -> bool:
        """Whether the mbarrier wait at ``j`` may wait on one of the barrier instances ``keys`` (the commits' mbarriers;
        a wait on ``full_bar`` is not the wait on a commit to ``empty_bar``; an address not known exactly may be
        any: ``BarrierKey.may_alias``)."""
        s = self.ctx.sync.site(self.insts[j])
        return s is None or any(s.key.may_alias(x) for x in keys)

    def _chains(self, rd: Access, wa: Access) -> list[tuple[bool, Chain]]:
        """The happens-before engine's answer (``SyncModel.chain``) for every pair of a warp class that executes the
        read ``rd`` and one that executes the write ``wa``, with whether the two classes differ: the question a
        rule asks of that pair.  A ``tcgen05.ld`` is ordered before the write by the thread synchronization after
        it (its own completion is the thread's ``tcgen05.wait::ld``: TM302, TM313); an MMA, cp or shift that reads
        the columns only once it has *completed*, i.e. through a ``tcgen05.commit`` of its issuer whose phase the
        writer's side waits for (PTX ISA §9.7.16.8.4; TM307's ``completes_before``).  A question the engine cannot
        answer (a recursion past Python's limit) is undecided."""
        classes = self.threads.classes
        completion = rd.op != "ld"
        out: list[tuple[bool, Chain]] = []
        for ka in sorted(self.exec_by.get(rd.inst.index, ())):
            for kb in sorted(self.exec_by.get(wa.inst.index, ())):
                try:
                    got = self.ctx.sync.chain((rd.inst,), classes[ka], wa.inst, classes[kb], completion=completion)
                except RecursionError:
                    got = Chain(None)
                out.append((ka != kb, got))
        return out

    def _handover_edge(self, r: Region, rd: Access, wa: Access, nxt: bool | None = None) -> dict:
        """The reuse edge from ``rd`` to a write ``wa`` by other threads, as the happens-before engine orders it
        (``_chains``): ``ordered`` is its verdict over the pairs of different warp classes (False when one pair is
        not ordered, None when one is undecided or every pair is one class's lanes; False too when the chain exists but a
        ``tcgen05.ld`` is not completed by its own thread's ``wait::ld`` before the chain's release: the chain orders
        the threads, not the TMEM read still in flight, catalog TM302 row, reference §3.1); ``present`` names the chain it
        found (the barrier instances, their arrive and wait sites, the warp classes through which it runs),
        ``missing`` the edge it lacks (``Ordering.missing``).  The guard class and the canonical pattern's other
        parts (reference §3) are read off that chain: the reader's completion (``tcgen05.wait::ld`` on the
        thread's path to the chain's arrive, or the commit that the engine's completion question requires) and
        the tcgen05 fences around its arrive and its last wait (``SyncModel.fencing``)."""
        wi = wa.inst.index
        f = self.flow
        insts = self.insts
        chains = self._chains(rd, wa)
        cross = [c for other, c in chains if other]
        ordered: bool | None = None
        if cross:
            verdicts = [c.verdict for c in cross]
            ordered = False if False in verdicts else None if None in verdicts else True
        # the pair shown: the first not ordered, else the first undecided, else the first ordered (cross-class pairs
        # before one class's lanes)
        pool = cross or [c for _, c in chains]
        pick = next((c for c in pool if c.verdict is False), None) or \
            next((c for c in pool if c.verdict is None), None) or (pool[0] if pool else Chain(None))
        present: list[str] = []
        missing: list[str] = []
        hops = pick.hops
        releases = [i for h in hops[:1] for i in h.releases]
        waits = [i for h in hops[-1:] for i in h.waits]
        if rd.role == "ld":
            done = bool(releases) and all(self._ld_completed_at(rd.inst, h) for h in releases)
            if done:
                present.append("tcgen05.wait::ld")
            else:
                missing.append("tcgen05.wait::ld before the hand-over")
                if ordered:  # the chain orders the threads, not the TMEM read still in flight (reference §3.1)
                    ordered = False
        else:
            done = pick.verdict is True or (pick.verdict is None and bool(releases))  # releases: its commits
            if done:
                present.append("tcgen05.commit")
            elif pick.verdict is False and pick.missing == "release":
                missing.append(f"tcgen05.commit tracking the {rd.op} before the hand-over")
        sync = self.ctx.sync
        fb = bool(releases) and all(i.family == "tcgen05.commit" or not sync.fencing(i).unfenced_before
                                    for i in releases)
        fa = bool(waits) and all(sync.fencing(i).unfenced_after is None for i in waits)
        if hops:
            # the guard is the kind of the hand-over the writer waits on (the last hop: an mbarrier among the
            # instances that order it; a ``__syncthreads`` counted in a loop may order the pair too, the engine's
            # documented limit); the readers' own rendezvous before it (a named barrier among the epilogue warps,
            # then one elected arrive) is a hop of the chain too
            mbar = any(k.kind == "mbar" for k in hops[-1].keys)
            present.append(self._chain_text(hops, pick.verdict))
            if mbar:
                if not fb:
                    missing.append("tcgen05.fence::before_thread_sync before the arrive")
                if not fa:
                    missing.append("tcgen05.fence::after_thread_sync after the wait")
                if fb:
                    present.append("tcgen05.fence::before_thread_sync")
                if fa:
                    present.append("tcgen05.fence::after_thread_sync")
                guard = "mbarrier+tcgen05" if (done and fb and fa) else "mbarrier"
            elif done and fb and fa:
                present += ["tcgen05.fence::before_thread_sync", "tcgen05.fence::after_thread_sync"]
                guard = "barrier+tcgen05"
            else:
                missing.append("tcgen05 fences around the barrier (a barrier alone orders threads, not the "
                               "asynchronous tcgen05 operations)")
                guard = "thread-barrier"
        else:
            missing.append(self._missing_text(rd, pick))
            guard = "none"
        if nxt is None:
            nxt = self.flow.loop_of(wi) is not None
        return self._edge(r, rd, wa, False, nxt, guard, present, missing, ordered)

    def _keys_text(self, keys: tuple[BarrierKey, ...]) -> str:
        """Barrier instances in words: ``mbarrier acc_empty``, ``mbarrier full_bar+8``, ``barrier 1``, ``the
        cluster barrier``."""
        out = []
        for k in sorted(keys, key=lambda k: (k.kind != "mbar", repr(k))):  # the mbarriers first
            if k.kind == "cluster":
                out.append("the cluster barrier")
            elif k.kind == "bar":
                out.append(f"barrier {k.ident}" if k.ident is not None else "a barrier (id in a register)")
            elif k.ident is None:
                out.append("an mbarrier (address not known)")
            else:
                var, off = k.ident
                name = demangle(str(var)).rsplit("::", 1)[-1]  # a function's local static: its own name
                out.append(f"mbarrier {name}" + ("" if off == 0 else f"+{off}" if off is not None
                                                  else " (offset not known: any of its stages)"))
        return ", ".join(out) or "no barrier"

    def _chain_text(self, hops: tuple[Hop, ...], verdict: bool | None) -> str:
        """The chain ``SyncModel.chain`` found, in words: per hop, the instances, the arrive and wait lines, and
        the warp classes; an undecided chain says so."""
        parts = []
        for h in hops:
            rel, wai = _lines_text(h.releases), _lines_text(h.waits)
            parts.append(f"{self._keys_text(h.keys)}: {_warp_text(list(h.releaser.warps))} arrive at lines "
                         f"{rel}, {_warp_text(list(h.waiter.warps))} wait at lines {wai}")
        via = "" if len(hops) == 1 else f" through {len(hops) - 1} other warp class{'es' if len(hops) > 2 else ''}"
        head = "happens-before chain" if verdict else \
            "synchronization whose order the happens-before analysis cannot decide on every pair of paths"
        return head + via + ": " + "; then ".join(parts)

    def _missing_text(self, rd: Access, c: Chain) -> str:
        """The edge the engine finds missing (``Chain.missing``), in words."""
        if c.verdict is None:
            return ("an ordering the happens-before analysis can prove: it cannot decide the order of the reading "
                    "and the writing warps")
        if c.missing == "release":
            what = "no tcgen05.commit after it" if rd.op != "ld" else "no arrive or barrier after it"
            return f"a hand-over after the {rd.op}: the reading warps make {what}"
        if c.missing == "wait":
            return (f"a wait of the writing warps on the barrier the readers arrive on ({self._keys_text(c.released)})"
                    f" before the write")
        if c.missing == "phase":
            return (f"the writing warps' wait on {self._keys_text(c.waited)} comes before the readers' arrival (an "
                    f"earlier phase)")
        return "any synchronization between the reading and the writing warps"

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
            cols = a.columns if a else None
            lanes = a.lanes if a else None
            frag = (f"each warp reads {lanes} lanes of its quarter (lane = 32·(warp % 4) + lane id) x {cols} columns: "
                    f"{regs} registers per thread" if regs and cols and lanes else None)
            row = by_shape.setdefault(key, {"shape": key, "count": 0, "registers_per_thread": regs,
                                            "bytes_per_warp": regs * 128 if regs else None, "lanes": lanes,
                                            "columns": cols, "fragment": frag, "lines": []})
            row["count"] += 1
            row["lines"].append(i.span.line)
            reps = self._readback_trips(i.index)
            row["executions"] = row.get("executions", 0) + reps
            if regs:
                total_warp += regs * 128 * reps
                total_cta += regs * 128 * len(self.warps(i.index)) * reps
        no_wait = []
        exits = [j for j in range(len(self.insts)) if self.insts[j].op in ("ret", "exit")]
        for i in lds:
            if any(not self._ld_completed_at(i, self.insts[e]) for e in exits):
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

    def _readback_trips(self, idx: int) -> int:
        """How often one pass executes the tcgen05.ld at ``idx``: the trip count of its innermost loop when that
        loop is a counted readback loop (no tcgen05.mma in it: ``tmemlint.plan.loops``), else 1."""
        loop = self.flow.loop_of(idx)
        if loop is None or any(_is(self.insts[j], "tcgen05.mma") for j in range(loop[0], loop[1] + 1)):
            return 1
        from tmemlint.plan.loops import LoopColumns

        self._lc = getattr(self, "_lc", None) or LoopColumns(self.insts, self.va, self.sets, self.flow)
        try:
            return self._lc.trip_count(loop) or 1
        except (RecursionError, ValueError):
            return 1

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
        riskiest = weakest = None
        for e in edges:
            e["at_risk"] = bool(e["findings"]) or e["ordered"] is False
            if e["findings"] and not e["missing"]:  # the checker knows what is missing: say it
                e["missing"] = [f"{f['code']}: {f['message']}" for f in e["findings"]]
            elif e["ordered"] is False and not e["missing"]:
                e["missing"] = ["an ordering between the reading and the writing warps (analysis.order finds none)"]
        if edges:
            weakest = edges.index(max(edges, key=lambda e: (e["risk"], -e["reader"]["line"], -e["writer"]["line"])))
            risky = [e for e in edges if e["at_risk"]]
            if risky:
                sev = {"error": 3, "warning": 2, "info": 1}
                best = max(risky, key=lambda e: (max((sev.get(f["severity"], 0) for f in e["findings"]), default=0),
                                                 e["risk"], -e["reader"]["line"], -e["writer"]["line"]))
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
            "weakest_edge": weakest,
            "ordering_verdict": self.verdict(edges, riskiest, weakest),
            "falsify": self.falsify(edges, riskiest, weakest),
            "findings": [_finding_ref(f) for f in self.findings],
            "readback": self.readback(),
            "timeline": timeline,
            "assumptions": self.assumptions(h, budget),
            "notes": self.notes(),
        }

    def verdict(self, edges: list[dict], riskiest: int | None, weakest: int | None) -> str:
        """One sentence on the ordering of the reuses: what is missing, or that nothing is."""
        if not edges:
            return "no column is read and then written again: no reuse to order"
        if riskiest is not None:
            e = edges[riskiest]
            why = "; ".join(f"{f['code']} line {f['line']}" for f in e["findings"]) or \
                ("missing: " + "; ".join(e["missing"]) if e["missing"] else
                 "the happens-before analysis finds no synchronization ordering the two warps")
            return (f"at risk: {e['region']} read at line {e['reader']['line']} ({e['reader']['op']}) and rewritten at "
                    f"line {e['writer']['line']} ({e['writer']['op']}): {why}")
        e = edges[weakest]
        return (f"nothing is missing: the checker reports no ordering fault on any of the {len(edges)} reuse edges; "
                f"the weakest ordering is {e['region']} line {e['reader']['line']} -> line {e['writer']['line']} "
                f"({e['guard']}{': ' + '; '.join(e['missing']) if e['missing'] else ''})")

    def falsify(self, edges: list[dict], riskiest: int | None, weakest: int | None) -> str | None:
        """How to show the plan wrong on hardware for the riskiest (or weakest) edge."""
        k = riskiest if riskiest is not None else weakest
        if k is None:
            return None
        e = edges[k]
        w, r = e["writer"], e["reader"]
        by = "; ".join(e["present"]) or "nothing"
        return (f"on a B200, build with ptxas -g-tmem-access-check (it traps on a TMEM access outside the allocation "
                f"or outside the issuing warp's lanes: the region map would be wrong), then delay the {r['op']} at "
                f"line {r['line']} (e.g. __nanosleep before it) and compare the results that {e['region']} columns "
                f"[{e['columns'][0]}, {e['columns'][1]}) feed with a reference over many runs: if the {w['op']} at "
                f"line {w['line']} can overtake it, they differ; if the plan is right (ordered by: {by}), they never "
                f"do")

    def assumptions(self, header: dict, budget: dict) -> list[dict]:
        """What the plan took for granted, and whether the code says so (``from_code``)."""
        out = []
        c = header["ctas_per_sm"]
        out.append({"text": f"{c['value']} CTA(s) per SM ({c['source']})", "from_code": c["source"] == "minnctapersm"})
        if self.sets.constant_slot is not None:
            out.append({"text": "integer TMEM addresses are columns of the allocation, whose base is column 0 "
                                "(one allocation of 512 columns, or a base the code traps on unless it is 0)",
                        "from_code": True})
        if header["threads_per_cta"] is None:
            out.append({"text": "block size not declared (.reqntid/.maxntid): warp attribution assumes up to 1024 "
                                "threads", "from_code": False})
        else:
            out.append({"text": f"{header['threads_per_cta']} threads per CTA (.reqntid/.maxntid)", "from_code": True})
        if self.inferred:
            shown = ", ".join(map(str, self.inferred[:6])) + (" …" if len(self.inferred) > 6 else "")
            out.append({"text": f"the instruction descriptor of the MMAs at lines {shown} is a runtime value: their "
                                "accumulator width is the tcgen05.ld readback that starts at their columns",
                        "from_code": False})
        if any(r.anchored for r in self.rmap.regions):
            out.append({"text": "an address with a loop-varying offset is placed at its known part (the plan is "
                                "incomplete there)", "from_code": False})
        out.append({"text": "an elected thread issues the single-thread tcgen05 operations (mma, cp, commit) of "
                            "its warp in program order", "from_code": False})
        out.append({"text": "the checker's findings are those of `tmemlint check` with the same configuration",
                    "from_code": False})
        return out

    def notes(self) -> list[str]:
        out = []
        if not self.exec_complete:
            out.append("a warp-class path simulation exceeded its budget: warp attribution is approximate")
        if any(r.anchored for r in self.rmap.regions):
            out.append("some accesses add a varying offset (a loop over column chunks) to a known address: they "
                       "are placed in the region they start in")
        return out


def _kernel_matches(fn_name: str, wanted: str) -> bool:
    """``--kernel``: the PTX name, the demangled name, the demangled name without its parameters, or a
    substring of either."""
    if wanted == fn_name:
        return True
    d = demangle(fn_name)
    return wanted == d or wanted == d.split("(", 1)[0] or wanted in fn_name or wanted in d


def build_plan(module: Module, path: str, kernel: str | None = None, ctas_per_sm: int | None = None,
               options=None, text: str | None = None) -> dict:
    """The plan of every function of ``module`` that has a body and uses tcgen05 (or only ``kernel``).

    ``options``: the ``Options`` of ``tmemlint check`` (rules, ``ctas_per_sm``); ``text``: the file's text, whose
    suppression comments then apply to the findings the plan shows (lines of ``module`` must be its lines).
    Returns the JSON model (``docs/plan-schema.md``).  Raises ``PlanError`` when ``kernel`` names no function of
    the module that uses tcgen05; a module without any such function gives an empty ``kernels`` list."""
    from tmemlint.pipeline import analyse_function, check

    kernels = []
    names = []
    for fn in module.functions:
        if not fn.has_body:
            continue
        names.append(fn.name)
        if kernel is not None and not _kernel_matches(fn.name, kernel):
            continue
        if options is None:
            from tmemlint.options import Options

            options = Options(ctas_per_sm=ctas_per_sm)
        analysed = analyse_function(module, fn, path, options)  # the contexts and rules of ``tmemlint check``
        if analysed is None:
            if kernel is not None and (kernel == fn.name or kernel == demangle(fn.name)):
                raise PlanError(f"function {kernel} does not use Tensor Memory (no tcgen05 instruction)")
            continue
        ctas = ctas_per_sm if ctas_per_sm is not None else options.ctas_per_sm
        findings = check([analysed]) if options.codes != set() else []
        if text is not None and findings:  # the suppression comments of the file apply, as in check
            from tmemlint.suppress import apply_suppressions

            findings = apply_suppressions(findings, text, path, options.wants, report_unused=False)
        kernels.append(_Kernel(analysed.context, ctas, findings).build())
    if kernel is not None and not kernels:
        known = ", ".join(demangle(n) for n in names) or "none"
        raise PlanError(f"no kernel named {kernel!r} in {path} (functions: {known})")
    return {"schema_version": SCHEMA_VERSION, "tool": f"tmemlint {__version__}", "file": path, "kernels": kernels}


def plan_unit(unit, kernel: str | None = None, ctas_per_sm: int | None = None) -> dict:
    """The plan of a ``pipeline.Unit`` loaded with ``whole=True`` (``build_plan`` on its module, with its options
    and, when the module's lines are the text's, its suppression comments).  Raises ``PlanError`` when there is
    nothing to plan: nvcc refused the file (compile mode), or the text is not PTX (the TM900 message as ``check``
    prints it), or is past a limit."""
    if unit.refusal is not None:
        raise PlanError(f"{unit.path}: {unit.refusal}")
    stop = [d for d in unit.diagnostics if d.code == "TM900"] if unit.language == "ptx" else []
    if unit.module is None or stop:
        d = (stop or unit.diagnostics or [None])[0]
        if d is None:
            raise PlanError(f"{unit.path}: nothing to plan (past a limit)")
        if unit.language != "ptx":  # compile mode: the PTX nvcc made does not parse
            raise PlanError(f"{unit.path}: {d.message}")
        raise PlanError(f"{unit.path}:{d.line}:{d.column}: {d.code} [{d.severity.value}] {d.message} ({d.name})")
    try:
        return build_plan(unit.module, unit.path, kernel, ctas_per_sm, options=unit.options,
                          text=unit.text if unit.ptx is None else None)
    except RecursionError:
        raise PlanError(f"{unit.path}: too deeply nested to plan") from None


__all__ = ["GUARDS", "PlanError", "SCHEMA_VERSION", "build_plan", "plan_unit"]
