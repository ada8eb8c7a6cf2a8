#!/usr/bin/env python3
"""Mutation testing for recall (issue 3, item 3): inject one TMEM fault at a time into correct real PTX and check
that tmemlint reports it with the right code on the right line, and nothing new elsewhere.

    python benchmarks/mutate.py [--out report.md] [--jobs N] [--no-ptxas] [--fault tm101-delete,...]
                                [--dump DIR] [FILE ...]

Inputs (correct code, no error-level finding): Triton ``../shared/corpus/triton/*.sm100.ptx`` and ``*.sm103.ptx``,
CuTe DSL ``fixtures/real/cute/*.ptx``, nvcc ``fixtures/nvcc/*_good.ptx``, ``examples/gemm_blockscaled_good.ptx`` and
the full-size kernels of ``fixtures/real/nvcc`` (DeepGEMM / ThunderKittens / CUTLASS styles, with and without
``-lineinfo``).

Fault classes (each mutant edits PTX text lines located through the IR of ``tmemlint.frontend.parse_text``):

=================  ======  ==========================================================================================
fault              code    edit
=================  ======  ==========================================================================================
tm101-delete       TM101   delete a dealloc the CTA executes; expected at the alloc(s) of its slot
tm101-branch       TM101   put that dealloc under ``@%p bra`` on ``%ctaid.x != 0`` (it runs in one branch only)
tm102-96 / -1024   TM102   alloc count replaced by a fresh register set by ``mov.b32 %rN, 96`` (1024); the deallocs
                           of the slot get the same count (one wrong NCOLS constant, not an alloc/dealloc mismatch)
tm201-ld / -st     TM201   ``ld.shared.b32`` / ``st.shared.b32`` through the TMEM address right after it is loaded
                           from the alloc slot; tm201-before-ld: ``ld.shared.b32`` through the address of a
                           tcgen05.ld right before it
tm301-move-wait    TM301   the ``tcgen05.wait::ld`` moved below the first read of a register it waits for
tm401-scale        TM401   the constant of the ``add`` that forms a scale-factor / tcgen05.cp address rewritten so
                           the column lies inside the accumulator of the MMA that reads it (bits 16-31, the byte
                           selector of CuTe's scale addresses, kept); expected at every MMA whose scale operand and
                           every cp whose destination uses that register
tm401-cp           TM401   one tcgen05.cp redirected (fresh ``add``) into the accumulator's columns
tm105-realloc      TM105   a copy of the alloc (same slot, same count, the relinquish's guard) right after the
                           relinquish, in the warp that relinquishes
tm104-dup          TM104   a dealloc the CTA executes duplicated (expected at the copy)
=================  ======  ==========================================================================================

Fresh registers extend the function's own declaration (``.reg .b32 %r<N>`` becomes ``%r<N+1>`` and the mutant
uses ``%rN``).  Per function, at most 4 tcgen05.ld anchors (tm201-before-ld) and 4 waits (tm301-move-wait) are
used (first, last, evenly spaced): nvcc epilogues repeat one ld/wait pair 16 times.

Where the accumulator goes (tm401): its column comes from tmemlint's value analysis, or, when that is not a
constant, from the harness's own small value-set evaluation of the address (``add``/``and`` with a mask of at most 3
bits/``shl``/``selp``/``or``/``mov``), which resolves the double-buffered accumulators of the nvcc kernels (``and.b32
%r41, %r116, 128`` → column 0 or 128; the fault is put inside stage 0, a fault on every other tile).  N comes from
the instruction descriptor (bits 17-22), through the same evaluation when the idesc is built with ``selp``/``or``
(CuTe DSL: N=128 in every alternative).  The scale column is put in the middle of the accumulator.

Each mutant must assemble (``ptxas -arch=sm_100a``, ``sm_103a`` for ``.sm103`` files); those ptxas rejects are
counted and skipped.  A mutant is *detected* when every expected (code, line) is reported; a finding is *spurious*
when it is error-level, on a line the mutation did not touch (inserted, replaced or moved lines are touched), and
not reported on the same original line of the unmutated file (lines mapped through the edit).  Two kinds of new
error are true consequences of the fault and listed apart: TM203 where a 512-column allocation's constant or
thread-indexed addresses lose their base (tm102 of a FlashAttention-4-style kernel), TM402 for footprints past
column 96 of a tm102-96
mutant, and TM302 at an ``mbarrier.arrive``/barrier the moved wait::ld no longer precedes.

Equivalent mutants are not generated: a dealloc that no warp class executes (Triton's warp-specialized kernels keep
a dealloc on a partition path whose guard ``%p1 = tid < 32`` is false for every warp that reaches it) is not a fault
to delete or duplicate; this is decided from tmemlint's lifecycle analysis (``FunctionContext.lifecycle.runs[k]
.executed``) and listed under "not applicable" with the reason.  Likewise a ``wait::ld`` whose loads are all read
before it already (TM301 cannot fire anew: the rule reports the first read per load), and scale operands whose
column cannot be placed statically.

The exit code is 0 when recall is 100 % with no spurious finding, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tmemlint.analysis.values import TOP, defined_regs, used_regs  # noqa: E402
from tmemlint.checks.context import FunctionContext  # noqa: E402
from tmemlint.analysis.values import is_register_copy as _is_copy  # noqa: E402
from tmemlint.checks.registry import load_all  # noqa: E402
from tmemlint.engine import Options, lint_text  # noqa: E402
from tmemlint.findings import Finding, Severity  # noqa: E402
from tmemlint.frontend.parser import parse_text  # noqa: E402
from tmemlint.ir import Address, Imm, Instruction, Reg  # noqa: E402

FAULTS = ("tm101-delete", "tm101-branch", "tm102-96", "tm102-1024", "tm201-ld", "tm201-st", "tm201-before-ld",
          "tm301-move-wait", "tm401-scale", "tm401-cp", "tm105-realloc", "tm104-dup")
#: fault class of the brief (1-7) per mutation kind, for the recall table
CLASS_OF = {"tm101-delete": "1 dealloc deleted / in one branch (TM101)",
            "tm101-branch": "1 dealloc deleted / in one branch (TM101)",
            "tm102-96": "2 alloc count in a register: 96 / 1024 (TM102)",
            "tm102-1024": "2 alloc count in a register: 96 / 1024 (TM102)",
            "tm201-ld": "3 ld/st.shared through the TMEM address (TM201)",
            "tm201-st": "3 ld/st.shared through the TMEM address (TM201)",
            "tm201-before-ld": "3 ld/st.shared through the TMEM address (TM201)",
            "tm301-move-wait": "4 wait::ld below the first use (TM301)",
            "tm401-scale": "5 scale / cp columns inside the accumulator (TM401)",
            "tm401-cp": "5 scale / cp columns inside the accumulator (TM401)",
            "tm105-realloc": "6 alloc after relinquish (TM105)", "tm104-dup": "7 dealloc twice (TM104)"}
COMPILERS = ("Triton", "CuTe DSL", "nvcc")
#: tcgen05.ld anchors per function for tm201-before-ld, and wait::ld per function for tm301-move-wait (first,
#: last and evenly spaced between): nvcc epilogues repeat the same ld/wait pair 16 times
MAX_LD_ANCHORS = 4
MAX_WAITS = 4


def spread(items: list, k: int) -> list:
    """At most ``k`` of ``items``: the first, the last and evenly spaced ones between."""
    n = len(items)
    if n <= k:
        return list(items)
    return [items[i] for i in sorted({round(j * (n - 1) / (k - 1)) for j in range(k)})]


# ---------------------------------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Source:
    """One correct input file: ``name`` as shown in the report (relative to the repository or ../shared)."""

    path: str
    name: str
    compiler: str
    arch: str


def default_sources() -> list[Source]:
    out = []
    tri = SHARED / "corpus" / "triton"
    if tri.is_dir():
        for p in sorted(list(tri.glob("*.sm100.ptx")) + list(tri.glob("*.sm103.ptx"))):
            out.append(Source(str(p), f"../shared/corpus/triton/{p.name}", "Triton",
                              "sm_103a" if ".sm103." in p.name else "sm_100a"))
    for p in sorted((ROOT / "fixtures" / "real" / "cute").glob("*.ptx")):
        out.append(Source(str(p), str(p.relative_to(ROOT)), "CuTe DSL", "sm_100a"))
    nvcc = (sorted((ROOT / "fixtures" / "nvcc").glob("*_good.ptx")) + [ROOT / "examples" / "gemm_blockscaled_good.ptx"]
            + sorted((ROOT / "fixtures" / "real" / "nvcc").glob("*.ptx")))
    for p in nvcc:
        if p.is_file():
            out.append(Source(str(p), str(p.relative_to(ROOT)), "nvcc", "sm_100a"))
    return out


def source_for(path: str) -> Source:
    """A Source for a file named on the command line (compiler guessed from its folder)."""
    p = Path(path).resolve()
    try:
        name = str(p.relative_to(ROOT))
    except ValueError:
        name = f"../shared/{p.relative_to(SHARED)}" if SHARED in p.parents else str(p)
    comp = "Triton" if "triton" in name else "CuTe DSL" if "cute" in name else "nvcc"
    return Source(str(p), name, comp, "sm_103a" if ".sm103." in p.name else "sm_100a")


# ---------------------------------------------------------------------------------------------------- edits


@dataclass
class Edits:
    """Line edits of one mutant, keyed by original 1-based line numbers.  Inserted lines carry a tag, so that
    expectations can name them; ``replace`` and ``delete`` lines count as touched."""

    replace: dict[int, str] = field(default_factory=dict)
    delete: set[int] = field(default_factory=set)
    before: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    after: dict[int, list[tuple[str, str]]] = field(default_factory=dict)

    def insert_before(self, line: int, text: str, tag: str = "") -> None:
        self.before.setdefault(line, []).append((tag, text))

    def insert_after(self, line: int, text: str, tag: str = "") -> None:
        self.after.setdefault(line, []).append((tag, text))


@dataclass
class Applied:
    text: str
    origin: list  # index new line (1-based; [0] unused) -> ("o", orig line) | ("t", tag)
    new_of_orig: dict[int, int]
    new_of_tag: dict[str, int]


def apply_edits(lines: list[str], ed: Edits) -> Applied:
    out: list[str] = []
    origin: list = [None]
    new_of_orig: dict[int, int] = {}
    new_of_tag: dict[str, int] = {}

    def add(text, org):
        out.append(text)
        origin.append(org)
        if org[0] == "t" and org[1]:
            new_of_tag[org[1]] = len(out)

    for n, line in enumerate(lines, 1):
        for tag, t in ed.before.get(n, ()):
            add(t, ("t", tag))
        if n not in ed.delete:
            add(ed.replace.get(n, line), ("o", n))
            new_of_orig[n] = len(out)
        for tag, t in ed.after.get(n, ()):
            add(t, ("t", tag))
    return Applied("\n".join(out) + "\n", origin, new_of_orig, new_of_tag)


# ---------------------------------------------------------------------------------------------------- mutants


@dataclass
class Mutant:
    """One injected fault.  ``expect``: groups ``(code, anchors)``, each satisfied when ``code`` is reported on one
    of its anchors (an original line number, or the tag of an inserted line); all groups must be satisfied.
    ``consequences``: findings that are true consequences of the fault on untouched lines (not counted as
    spurious, listed in the report): ``(code, original lines or None for any, past)``; with ``past`` the finding
    must say that a footprint ``covers columns [a, b)`` with ``b > past``."""

    source: Source
    fault: str
    description: str
    edits: Edits
    expect: list[tuple[str, tuple]]
    consequences: tuple = ()
    ptx_lines: list[int] = field(default_factory=list)  # original lines worth quoting in a report
    anchor: int = 0  # original line of the instruction the mutation is about (dealloc, alloc, wait, add, ...)
    #: what tmemlint's own analyses know that bears on detecting this mutant (shown with a miss)
    note: str = ""

    @property
    def mid(self) -> str:
        return f"{self.source.name}:{self.fault}:{self.description}"


@dataclass
class NotApplicable:
    source: Source
    fault: str
    line: int
    reason: str


def _code(line: str) -> str:
    i = line.find("//")
    return line if i < 0 else line[:i]


def _guard_text(inst: Instruction) -> str:
    if inst.guard is None:
        return ""
    return f"@{'!' if inst.guard.negated else ''}{inst.guard.reg.name} "


def _stmt(line: str) -> str:
    """The statement text of a line without its comment and surrounding blanks."""
    return _code(line).strip()


def _signed32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


class Fresh:
    """Fresh registers of one function for one mutant: ``%rN`` from ``.reg .b32 %r<N>`` (the declaration is
    bumped, a touched line), else a new declaration after the last ``.reg`` line of the function head."""

    _DECL = re.compile(r"^(\s*\.reg\s+\.(b32|u32|s32|pred)\s+)(%[A-Za-z_$][\w$]*)<(\d+)>(\s*;.*)$")

    def __init__(self, fa: "FileAnalysis", fn):
        self.fa = fa
        self.fn = fn
        first = min((i.span.line for i in fn.instructions), default=fn.span.line)
        self.decl: dict[str, tuple[int, str, int]] = {}
        self.last_reg_line = None
        for n in range(fn.span.line, first):
            line = fa.lines[n - 1]
            if re.match(r"^\s*\.reg\b", line):
                self.last_reg_line = n
            m = self._DECL.match(line)
            if not m:
                continue
            kind = "pred" if m.group(2) == "pred" else "b32"
            prefix = m.group(3)
            # prefer %r for b32 (nvcc also declares %f<...> as .b32)
            if kind in self.decl and not (kind == "b32" and prefix == "%r"):
                continue
            self.decl[kind] = (n, prefix, int(m.group(4)))
        self.used: dict[str, int] = {"b32": 0, "pred": 0}

    def get(self, kind: str = "b32") -> str:
        k = self.used[kind]
        self.used[kind] += 1
        if kind in self.decl:
            _n, prefix, count = self.decl[kind]
            return f"{prefix}{count + k}"
        return f"%mut_{'p' if kind == 'pred' else 'r'}{k}"

    def apply(self, ed: Edits) -> None:
        for kind, k in self.used.items():
            if not k:
                continue
            if kind in self.decl:
                n, prefix, count = self.decl[kind]
                m = self._DECL.match(self.fa.lines[n - 1])
                ed.replace[n] = f"{m.group(1)}{prefix}<{count + k}>{m.group(5)}"
            else:
                where = self.last_reg_line or self.fn.span.line
                ptype = ".pred" if kind == "pred" else ".b32"
                ed.insert_after(where, f"\t.reg {ptype} \t%mut_{'p' if kind == 'pred' else 'r'}<{k}>;")


class FileAnalysis:
    """The original file: text, IR, per-function analyses, and which lines hold exactly one statement."""

    def __init__(self, src: Source):
        load_all()
        self.src = src
        self.text = Path(src.path).read_text(encoding="utf-8", errors="replace")
        self.lines = self.text.splitlines()
        self.module = parse_text(self.text, src.name)
        self.contexts: list[FunctionContext] = []
        self.by_line: dict[int, list[Instruction]] = {}
        for fn in self.module.functions:
            for i in fn.instructions:
                self.by_line.setdefault(i.span.line, []).append(i)
            if not fn.has_body:
                continue
            ctx = FunctionContext(self.module, fn, src.name)
            if ctx.touches_tmem:
                self.contexts.append(ctx)

    def alone(self, inst: Instruction) -> bool:
        """The instruction is the only statement of its line (the line can be deleted, moved or duplicated)."""
        if inst.span.line != inst.span.end_line or len(self.by_line.get(inst.span.line, ())) != 1:
            return False
        code = _code(self.lines[inst.span.line - 1])
        return "{" not in code and "}" not in code

    def balanced(self, line: int) -> bool:
        code = _code(self.lines[line - 1])
        return code.count("{") == code.count("}")

    def stmt(self, inst: Instruction) -> str:
        return _stmt(self.lines[inst.span.line - 1])


def _executed(ctx) -> dict[int, list]:
    """instruction index -> warp classes (lifecycle runs) that execute it (allocs, deallocs, relinquishes)."""
    out: dict[int, list] = {}
    for run in ctx.lifecycle.runs:
        for idx in run.executed:
            out.setdefault(idx, []).append(run)
    return out


def _replace_last_operand(stmt: str, new: str) -> str:
    """``op a, b, c;`` -> ``op a, b, new;``."""
    body = stmt.rstrip()
    assert body.endswith(";"), stmt
    head, _, _last = body[:-1].rpartition(",")
    return f"{head}, {new};"


def _replace_first_address(stmt: str, new: str) -> str:
    return re.sub(r"\[[^\]]*\]", f"[{new}]", stmt, count=1)


def _reg_of_address(inst: Instruction, k: int) -> tuple[Reg, int] | None:
    if k >= len(inst.operands):
        return None
    o = inst.operands[k]
    if type(o) is Address and type(o.base) is Reg and o.coords is None:
        return o.base, o.offset
    return None


def _is_tmem(va, inst, k) -> bool:
    """Operand ``k`` of ``inst`` is a TMEM address of this kernel (column known or not)."""
    if k >= len(inst.operands):
        return False
    v = va.value(inst, inst.operands[k])
    return v is not TOP and v[0] == "tmem"


def column_set(va, insts, inst: Instruction, k: int, depth: int = 0):
    """``(slot, {column, ...})`` of TMEM operand ``k`` of ``inst``: tmemlint's value when its column is constant,
    else a small set resolved through the single definitions of the address register (``add``, ``and`` with a mask
    of at most 3 bits, ``shl``, ``selp``, ``mov``, constants).  None when not resolvable.  The harness's own view,
    used to place faults in double-buffered accumulators (``and.b32 %r41, %r116, 128; add.s32 %r42, %r41, %r6``)."""
    o = inst.operands[k] if k < len(inst.operands) else None
    if o is None:
        return None
    off = 0
    if type(o) is Address:
        if type(o.base) is not Reg or o.coords is not None:
            return None
        off, o = o.offset, o.base
    r = _value_set(va, insts, inst, o, depth)
    if r is None or r[0] is None:
        return None
    return r[0], {(c + off) & 0xFFFF for c in r[1]}


def _value_set(va, insts, at: Instruction, o, depth: int):
    """(slot or None, set of 32-bit integers: column/lane offsets or plain values) of operand ``o`` read at
    ``at``."""
    if depth > 12:
        return None
    if type(o) is Imm:
        return None, {o.value & 0xFFFFFFFF}
    if type(o) is not Reg:
        return None
    v = va.reg_value(at, o)
    if v is not TOP and v[0] == "c":
        return None, {v[1] & 0xFFFFFFFF}
    if v is not TOP and v[0] == "tmem" and v[2] is not None:
        return v[1], {(v[2] + ((v[3] or 0) << 16)) & 0xFFFFFFFF}
    di = va.single_def.get(o.name)
    if di is None:
        return None
    d = insts[di]
    ops = d.operands
    args = [_value_set(va, insts, d, x, depth + 1) for x in ops[1:]]
    if d.op == "and" and len(args) == 2:
        # x & MASK with a mask of at most 3 bits: one of the mask's submasks (x need not be known)
        for m in args:
            if m is not None and m[0] is None and len(m[1]) == 1 and bin(next(iter(m[1]))).count("1") <= 3:
                mask = next(iter(m[1]))
                subs = {0}
                for bit in (1 << i for i in range(32) if mask >> i & 1):
                    subs |= {x | bit for x in subs}
                return None, subs
        return None
    if d.op == "selp" and len(args) == 3:  # the predicate need not be known
        if args[0] is None or args[1] is None or args[0][0] != args[1][0]:
            return None
        return args[0][0], args[0][1] | args[1][1]
    if any(a is None for a in args):
        return None
    if d.op in ("mov", "cvt") and len(args) == 1:
        return args[0]
    if d.op == "add" and len(args) == 2:
        slots = [a[0] for a in args if a[0] is not None]
        if len(slots) > 1:
            return None
        return (slots[0] if slots else None), {(x + y) & 0xFFFFFFFF for x in args[0][1] for y in args[1][1]}
    if d.op == "shl" and len(args) == 2 and args[0][0] is None and len(args[1][1]) == 1:
        sh = next(iter(args[1][1]))
        return None, {(x << sh) & 0xFFFFFFFF for x in args[0][1]}
    if d.op == "or" and len(args) == 2 and args[0][0] is None and args[1][0] is None \
            and len(args[0][1]) * len(args[1][1]) <= 4096:
        return None, {x | y for x in args[0][1] for y in args[1][1]}
    return None


def _idesc_n(va, mma: Instruction, insts=None) -> int | None:
    """N of a tcgen05.mma from its instruction descriptor (bits 17-22 = N>>3, reference §2.6): tmemlint's value
    when constant, else the harness's value set when every possible descriptor has the same N (CuTe DSL builds the
    idesc with ``selp``/``or`` from constants and the scale address's byte selector); None otherwise."""
    k = 4 if mma.has("sp") else 3
    if k >= len(mma.operands):
        return None
    v = va.value(mma, mma.operands[k])
    if v is not TOP and v[0] == "c":
        vals = {v[1]}
    elif insts is not None:
        r = _value_set(va, insts, mma, mma.operands[k], 0)
        if r is None or r[0] is not None or not r[1]:
            return None
        vals = r[1]
    else:
        return None
    ns = {((x & 0xFFFFFFFF) >> 17 & 0x3F) << 3 for x in vals}
    return ns.pop() or None if len(ns) == 1 else None


def _scale_indices(mma: Instruction) -> tuple[int, int]:
    k = 4 if mma.has("sp") else 3
    return k + 1, k + 2


def generate(fa: FileAnalysis, faults=FAULTS) -> tuple[list[Mutant], list[NotApplicable]]:
    muts: list[Mutant] = []
    nas: list[NotApplicable] = []
    src = fa.src
    for ctx in fa.contexts:
        fn = ctx.function
        sites = ctx.sites
        va = ctx.values
        execd = _executed(ctx) if (sites.allocs or sites.deallocs) else {}

        def alloc_lines_of(slot):
            allocs = sites.allocs_of_slot(slot) if slot is not None else []
            return tuple(a.span.line for a in (allocs or sites.allocs))

        # ---- 1 / 7: deallocs ---------------------------------------------------------------------------------
        for d in sites.deallocs:
            L = d.span.line
            live = d.index in execd
            for fault in ("tm101-delete", "tm101-branch", "tm104-dup"):
                if fault not in faults:
                    continue
                if not live:
                    nas.append(NotApplicable(src, fault, L, "equivalent mutant: no warp class executes this dealloc "
                                                            "(lifecycle runs: " + ", ".join(
                                                                repr(r.klass) for r in ctx.lifecycle.runs) + ")"))
                    continue
                if not fa.alone(d):
                    nas.append(NotApplicable(src, fault, L, "the dealloc shares its line with other statements"))
                    continue
                slot = sites.freed_slot.get(d.index)
                ed = Edits()
                if fault == "tm101-delete":
                    ed.delete.add(L)
                    muts.append(Mutant(src, fault, f"delete the dealloc at line {L}", ed,
                                       [("TM101", alloc_lines_of(slot))], ptx_lines=[L, *alloc_lines_of(slot)],
                                       anchor=L))
                elif fault == "tm101-branch":
                    fr = Fresh(fa, fn)
                    r, p = fr.get("b32"), fr.get("pred")
                    lab = f"$L__mut_skip_{L}"
                    ed.insert_before(L, f"\tmov.u32 \t{r}, %ctaid.x;")
                    ed.insert_before(L, f"\tsetp.ne.u32 \t{p}, {r}, 0;")
                    ed.insert_before(L, f"\t@{p} bra \t{lab};")
                    ed.insert_after(L, f"{lab}:")
                    fr.apply(ed)
                    muts.append(Mutant(src, fault, f"the dealloc at line {L} only runs when %ctaid.x == 0 "
                                                   f"(@{p} bra over it)", ed,
                                       [("TM101", alloc_lines_of(slot))], ptx_lines=[L, *alloc_lines_of(slot)],
                                       anchor=L))
                else:
                    ed.insert_after(L, "\t" + fa.stmt(d), "dup")
                    muts.append(Mutant(src, fault, f"dealloc at line {L} duplicated", ed, [("TM104", ("dup",))],
                                       ptx_lines=[L], anchor=L))

        # ---- 2: column count in a register -----------------------------------------------------------------
        for a in sites.allocs:
            L = a.span.line
            for fault, value in (("tm102-96", 96), ("tm102-1024", 1024)):
                if fault not in faults:
                    continue
                if not fa.alone(a):
                    nas.append(NotApplicable(src, fault, L, "the alloc shares its line with other statements"))
                    continue
                slot = sites.slot_of[a.index]
                fr = Fresh(fa, fn)
                ed = Edits()
                r = fr.get("b32")
                ed.insert_before(L, f"\tmov.b32 \t{r}, {value};")
                ed.replace[L] = "\t" + _replace_last_operand(fa.stmt(a), r)
                anchors = [("TM102", (L,))]
                freed = []
                for d in sites.deallocs:
                    if sites.freed_slot.get(d.index) != slot or not fa.alone(d):
                        continue
                    rd = fr.get("b32")
                    ed.insert_before(d.span.line, f"\tmov.b32 \t{rd}, {value};")
                    ed.replace[d.span.line] = "\t" + _replace_last_operand(fa.stmt(d), rd)
                    anchors.append(("TM102", (d.span.line,)))
                    freed.append(d.span.line)
                fr.apply(ed)
                also = (f" (and the dealloc{'s' if len(freed) > 1 else ''} at {', '.join(map(str, freed))})"
                        if freed else "")
                cons = (("TM402", None, value),) if value < 512 else ()
                if sites.ncols.get(a.index) == 512:
                    # FlashAttention-4 style: addresses computed from constants or the thread index alone are the
                    # allocation's columns only because 512 columns start at column 0; the mutant takes that away
                    cons += (("TM203", None, None),)
                muts.append(Mutant(src, fault, f"alloc at line {L}: column count = {r} set to {value}{also}", ed,
                                   anchors, cons, ptx_lines=[L, *freed], anchor=L))

        # ---- 3: ld/st.shared through the TMEM address ------------------------------------------------------
        slots = {sites.slot_of[a.index] for a in sites.allocs}
        if any(f.startswith("tm201") for f in faults) and slots:
            for inst in fn.instructions:
                if inst.op not in ("ld", "ldu") or not inst.operands:
                    continue
                addr = next((o for o in inst.operands if type(o) is Address), None)
                dst = inst.operands[0]
                if addr is None or type(dst) is not Reg:
                    continue
                av = va.address_value(inst, addr)
                if av is TOP or av not in slots:
                    continue
                L = inst.span.line
                if not fa.balanced(L):
                    nas.append(NotApplicable(src, "tm201-ld", L, "unbalanced braces on the slot load's line"))
                    continue
                for fault in ("tm201-ld", "tm201-st"):
                    if fault not in faults:
                        continue
                    fr = Fresh(fa, fn)
                    ed = Edits()
                    if fault == "tm201-ld":
                        r = fr.get("b32")
                        new = f"{_guard_text(inst)}ld.shared.b32 \t{r}, [{dst.name}];"
                    else:
                        new = f"{_guard_text(inst)}st.shared.b32 \t[{dst.name}], {dst.name};"
                    ed.insert_after(L, "\t" + new, "acc")
                    fr.apply(ed)
                    muts.append(Mutant(src, fault, f"'{new}' after the slot load at line {L}", ed,
                                       [("TM201", ("acc",))], ptx_lines=[L], anchor=L))
            if "tm201-before-ld" in faults:
                lds = [i for i in fn.instructions if i.family == "tcgen05.ld" and _is_tmem(va, i, 1)
                       and _reg_of_address(i, 1) is not None]
                lds = spread(lds, MAX_LD_ANCHORS)
                for ld in lds:
                    L = ld.span.line
                    reg, off = _reg_of_address(ld, 1)
                    fr = Fresh(fa, fn)
                    ed = Edits()
                    r = fr.get("b32")
                    a = f"[{reg.name}+{off}]" if off else f"[{reg.name}]"
                    new = f"{_guard_text(ld)}ld.shared.b32 \t{r}, {a};"
                    ed.insert_before(L, "\t" + new, "acc")
                    fr.apply(ed)
                    muts.append(Mutant(src, "tm201-before-ld", f"'{new}' before the tcgen05.ld at line {L}", ed,
                                       [("TM201", ("acc",))], ptx_lines=[L], anchor=L))

        # ---- 4: wait::ld below the first use ---------------------------------------------------------------
        if "tm301-move-wait" in faults:
            muts_w, nas_w = _move_wait_mutants(fa, ctx)
            muts += muts_w
            nas += nas_w

        # ---- 5: scale factors / cp destinations inside the accumulator -------------------------------------
        if "tm401-scale" in faults or "tm401-cp" in faults:
            muts_s, nas_s = _scale_mutants(fa, ctx, faults)
            muts += muts_s
            nas += nas_s

        # ---- 6: alloc after relinquish ---------------------------------------------------------------------
        if "tm105-realloc" in faults:
            for rel in sites.relinquishes:
                L = rel.span.line
                runs = execd.get(rel.index, [])
                if not runs:
                    nas.append(NotApplicable(src, "tm105-realloc", L, "no warp class executes this relinquish"))
                    continue
                if not fa.balanced(L):
                    nas.append(NotApplicable(src, "tm105-realloc", L, "unbalanced braces on the relinquish's line"))
                    continue
                cands = [a for a in sites.allocs if any(a.index in r.executed for r in runs) and fa.alone(a)]
                if not cands:
                    nas.append(NotApplicable(src, "tm105-realloc", L, "the relinquishing warp allocates nothing"))
                    continue
                before = [a for a in cands if a.index < rel.index]
                a = before[-1] if before else cands[0]
                stmt = fa.stmt(a)
                if a.guard is not None:
                    stmt = stmt.split(None, 1)[1]
                new = _guard_text(rel) + stmt
                ed = Edits()
                ed.insert_after(L, "\t" + new, "realloc")
                muts.append(Mutant(src, "tm105-realloc", f"copy of the alloc at line {a.span.line} after the "
                                                         f"relinquish at line {L}", ed, [("TM105", ("realloc",))],
                                   ptx_lines=[a.span.line, L], anchor=L))
    return muts, nas


def _move_wait_mutants(fa: FileAnalysis, ctx) -> tuple[list[Mutant], list[NotApplicable]]:
    src = fa.src
    fn = ctx.function
    cfg = ctx.cfg
    muts, nas = [], []
    insts = fn.instructions
    for w in insts:
        if w.family != "tcgen05.wait::ld":
            continue
        L = w.span.line
        if w.guard is not None or not fa.alone(w):
            nas.append(NotApplicable(src, "tm301-move-wait", L, "guarded wait, or not alone on its line"))
            continue
        block = cfg.blocks[cfg.block_of[w.index]]
        # loads this wait completes: tcgen05.ld in the same block after the previous wait::ld
        lds = []
        for i in range(w.index - 1, block.start - 1, -1):
            if insts[i].family == "tcgen05.wait::ld":
                break
            if insts[i].family == "tcgen05.ld":
                lds.append(insts[i])
        if not lds:
            nas.append(NotApplicable(src, "tm301-move-wait", L, "no tcgen05.ld before it in its basic block"))
            continue
        clean: dict[str, Instruction] = {}
        early = []
        for ld in lds:
            regs = {r.name for r in defined_regs(ld)}
            read = next((insts[i] for i in range(ld.index + 1, w.index)
                         if regs & {r.name for r in used_regs(insts[i])}), None)
            if read is not None:
                early.append((ld, read))
            else:
                clean.update((r, ld) for r in regs)
        if not clean:
            nas.append(NotApplicable(src, "tm301-move-wait", L, "equivalent mutant: every load it waits for is "
                                                                 "read before it already (" + ", ".join(
                f"ld {ld.span.line} read at {u.span.line}" for ld, u in early) + "; TM301 reports the first read)"))
            continue
        use = None
        later_wait = None
        live = dict(clean)
        cast_at: dict[str, int] = {}  # register -> line of the bit-cast mov it was renamed by (the reported read)
        for i in range(w.index + 1, block.end):
            ins = insts[i]
            if ins.family == "tcgen05.wait::ld":  # completes every earlier load of the thread (reference §3)
                later_wait = ins
                break
            if _is_copy(ins) and ins.operands[1].name in live:  # a rename (also nvcc's mov.b32 %f, %r bit-cast)
                src_reg, dst_reg = ins.operands[1].name, ins.operands[0].name
                live[dst_reg] = live[src_reg]
                cast = dst_reg.rstrip("0123456789") != src_reg.rstrip("0123456789")
                if src_reg in cast_at or cast:
                    cast_at[dst_reg] = cast_at.get(src_reg, ins.span.line)
                continue
            if {r.name for r in used_regs(ins)} & set(live):
                use = ins
                break
            for r in defined_regs(ins):
                live.pop(r.name, None)
        if later_wait is not None:
            nas.append(NotApplicable(src, "tm301-move-wait", L, "equivalent mutant: the wait::ld at line "
                                     f"{later_wait.span.line} completes the same loads before their first read "
                                     "(a bit-cast mov before it is a rename, not a read)"))
            continue
        if use is None:
            nas.append(NotApplicable(src, "tm301-move-wait", L, "the loaded registers are not read in its basic block"))
            continue
        U = use.span.line
        if not fa.balanced(U) or len(fa.by_line.get(U, ())) != 1:
            nas.append(NotApplicable(src, "tm301-move-wait", L, f"the first read (line {U}) is not alone on its line"))
            continue
        ed = Edits()
        ed.delete.add(L)
        ed.insert_after(U, "\t" + fa.stmt(w), "wait")
        lds_read = sorted({live[r.name].span.line for r in used_regs(use) if r.name in live})
        between = frozenset(insts[i].span.line for i in range(w.index + 1, use.index))
        at = min((cast_at[r.name] for r in used_regs(use) if r.name in cast_at), default=U)
        muts.append(Mutant(src, "tm301-move-wait", f"wait::ld at line {L} moved below line {U} (first read of the "
                                                   f"tcgen05.ld at line {', '.join(map(str, lds_read))})", ed,
                           [("TM301", (at,))], (("TM302", between, None),), ptx_lines=[*lds_read, L, U], anchor=L))
    return spread(muts, MAX_WAITS), nas


def _scale_mutants(fa: FileAnalysis, ctx, faults) -> tuple[list[Mutant], list[NotApplicable]]:
    src = fa.src
    fn = ctx.function
    va = ctx.values
    insts = fn.instructions
    muts, nas = [], []
    mmas = [i for i in insts if i.family == "tcgen05.mma" and i.has("block_scale")]
    cps = [i for i in insts if i.family == "tcgen05.cp"]
    if not mmas:
        if cps:
            nas.append(NotApplicable(src, "tm401-cp", cps[0].span.line, "tcgen05.cp but no block-scaled MMA"))
        return muts, nas

    def acc(m):
        """(slot, {lo, ...}, n) of an MMA's accumulator (one lo per possible accumulator column; n None when the
        idesc is not constant)."""
        cs = column_set(va, insts, m, 0)
        if cs is None or not cs[1] or len(cs[1]) > 8:
            return None
        return cs[0], cs[1], _idesc_n(va, m, insts)

    def inside(slot, col, width, m) -> bool | None:
        """Whether columns [col, col+width) overlap m's accumulator for some possible accumulator column:
        True/False, None when unknown."""
        a = acc(m)
        if a is None:
            return None
        if a[0] != slot:
            return False
        _, los, n = a
        if n is not None:
            return any(col < lo + n and lo < col + width for lo in los)
        if any(lo <= col < lo + 8 for lo in los):  # N >= 8 for every shape
            return True
        return None

    def target(m) -> int:
        _, los, n = acc(m)
        lo = min(los)
        return lo + ((n // 2) & ~3) if n else lo

    def tmemlint_view(m) -> str:
        """What tmemlint's value analysis knows about an MMA's accumulator (for the report of a miss)."""
        k = 4 if m.has("sp") else 3
        iv = va.value(m, m.operands[k]) if k < len(m.operands) else TOP
        dv = va.value(m, m.operands[0])
        bits = []
        if iv is TOP or iv[0] != "c":
            bits.append(f"tmemlint's value of the idesc {m.operands[k].name if type(m.operands[k]) is Reg else ''} "
                        f"at line {m.span.line} is not a constant, so TM401 cannot decode N")
        if dv is TOP or dv[0] != "tmem" or dv[2] is None:
            bits.append(f"tmemlint's value of the accumulator address at line {m.span.line} has no constant column")
        return "; ".join(bits)

    def extent(m) -> str:
        _, los, n = acc(m)
        where = f"column {min(los)}" if len(los) == 1 else \
            f"column {min(los)} (its column is one of {sorted(los)}: a double-buffered accumulator)"
        return f"of N={n} at {where}" if n else f"at {where} (N unknown: the idesc is not a constant)"

    # registers used as scale operands / cp destinations, by their defining add
    users: dict[str, list[tuple[Instruction, int]]] = {}
    for m in mmas:
        for k in _scale_indices(m):
            ro = _reg_of_address(m, k)
            if ro is not None:
                users.setdefault(ro[0].name, []).append((m, k))
    for c in cps:
        ro = _reg_of_address(c, 0)
        if ro is not None:
            users.setdefault(ro[0].name, []).append((c, 0))

    if "tm401-scale" in faults:
        for name, uses in users.items():
            di = va.single_def.get(name)
            first = min(u.span.line for u, _ in uses)
            if di is None:
                nas.append(NotApplicable(src, "tm401-scale", first, f"{name} has several definitions"))
                continue
            d = insts[di]
            ops = d.operands
            if d.op != "add" or len(ops) != 3 or type(ops[1]) is not Reg or type(ops[2]) is not Imm \
                    or not fa.alone(d):
                nas.append(NotApplicable(src, "tm401-scale", d.span.line,
                                         f"{name} is not defined by 'add %r, %base, imm' alone on a line"))
                continue
            base = column_set(va, insts, d, 1)
            mma_users = [u for u, _ in uses if u.family == "tcgen05.mma"]
            m0 = mma_users[0] if mma_users else next((m for m in mmas if m.index > uses[0][0].index), mmas[0])
            a0 = acc(m0)
            if base is None or len(base[1]) != 1 or a0 is None or base[0] != a0[0]:
                nas.append(NotApplicable(src, "tm401-scale", d.span.line,
                                         f"the base of {name} or the accumulator of line {m0.span.line} is not a "
                                         f"TMEM address with a known column"))
                continue
            slot = a0[0]
            tcol = target(m0)
            colb = next(iter(base[1]))
            c32 = ops[2].value & 0xFFFFFFFF
            newc = _signed32((c32 & 0xFFFF0000) + tcol - colb)
            ed = Edits()
            stmt = fa.stmt(d)
            ed.replace[d.span.line] = "\t" + _replace_last_operand(stmt, str(newc))
            expect = []
            unknown = []
            for u, k in uses:
                off = u.operands[k].offset
                col = tcol + off
                if u.family == "tcgen05.mma":
                    hit = inside(slot, col, 4, u)
                else:
                    hits = [inside(slot, col, 4, m) for m in mmas]
                    hit = True if any(h is True for h in hits) else (None if None in hits else False)
                if hit is True:
                    expect.append(("TM401", (u.span.line,)))
                elif hit is None:
                    unknown.append(u.span.line)
            if not expect:
                nas.append(NotApplicable(src, "tm401-scale", d.span.line, f"no user of {name} lands in an accumulator "
                                                                          f"whose extent is known"))
                continue
            muts.append(Mutant(src, "tm401-scale",
                               f"'{stmt}' at line {d.span.line} -> constant {newc} (column {tcol}, inside the "
                               f"accumulator {extent(m0)} of the MMA at line {m0.span.line})", ed, expect,
                               ptx_lines=sorted({d.span.line, m0.span.line, *(u.span.line for u, _ in uses)}),
                               anchor=d.span.line, note=tmemlint_view(m0)))

    if "tm401-cp" in faults:
        seen = set()
        for c in cps:
            ro = _reg_of_address(c, 0)
            v = column_set(va, insts, c, 0)
            if ro is None or v is None or len(v[1]) != 1:
                nas.append(NotApplicable(src, "tm401-cp", c.span.line, "cp destination is not a register with a "
                                                                       "constant TMEM column"))
                continue
            if ro[0].name in seen:
                continue
            seen.add(ro[0].name)
            if not fa.alone(c):
                nas.append(NotApplicable(src, "tm401-cp", c.span.line, "the cp shares its line"))
                continue
            m0 = next((m for m in mmas if m.index > c.index), mmas[0])
            a0 = acc(m0)
            if a0 is None or a0[0] != v[0]:
                nas.append(NotApplicable(src, "tm401-cp", c.span.line, "no accumulator of the same allocation "
                                                                       "with a known column"))
                continue
            tcol = target(m0)
            # the new address = a register of the same allocation at a column <= tcol, plus a non-negative
            # constant: walk up 'add %r, %base, imm' definitions (the slot load has column 0)
            reg, col = ro[0], (next(iter(v[1])) - ro[1]) & 0xFFFF
            while col > tcol:
                di = va.single_def.get(reg.name)
                d = insts[di] if di is not None else None
                if d is None or d.op != "add" or len(d.operands) != 3 or type(d.operands[1]) is not Reg \
                        or type(d.operands[2]) is not Imm:
                    break
                up = column_set(va, insts, d, 1)
                if up is None or len(up[1]) != 1 or up[0] != v[0]:
                    break
                reg, col = d.operands[1], next(iter(up[1]))
            fr = Fresh(fa, fn)
            r = fr.get("b32")
            ed = Edits()
            ed.insert_before(c.span.line, f"\tadd.s32 \t{r}, {reg.name}, {tcol - col};")
            ed.replace[c.span.line] = "\t" + _replace_first_address(fa.stmt(c), r)
            fr.apply(ed)
            muts.append(Mutant(src, "tm401-cp", f"tcgen05.cp at line {c.span.line} writes column {tcol}, inside the "
                                                f"accumulator {extent(m0)} of the MMA at line {m0.span.line}", ed,
                               [("TM401", (c.span.line,))], ptx_lines=[c.span.line, m0.span.line],
                               anchor=c.span.line,
                               note="; ".join(x for x in (
                                   "only the cp moves: the MMAs' scale operands stay outside the accumulator",
                                   tmemlint_view(m0)) if x)))
    return muts, nas


# ---------------------------------------------------------------------------------------------------- running


def ptxas_check(text: str, arch: str) -> str | None:
    """None when ptxas accepts ``text``, else its first error line; "" (accepted) when ptxas is not installed."""
    exe = shutil.which("ptxas")
    if exe is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "m.ptx"
        p.write_text(text, encoding="utf-8")
        r = subprocess.run([exe, f"-arch={arch}", str(p), "-o", os.devnull], capture_output=True, text=True)
    if r.returncode == 0:
        return None
    err = [ln for ln in (r.stderr or r.stdout).splitlines() if "error" in ln.lower()] or [r.stderr.strip()]
    return err[0].replace(f"{p}, ", "")[:300]


def _fmt(f: Finding, line: int | None = None) -> str:
    return f"{line if line is not None else f.line}: {f.code} [{f.severity.value}] {f.message}"


@dataclass
class Result:
    mutant: Mutant
    status: str  # "detected", "missed", "rejected"
    ptxas: str | None = None
    missing: list[tuple[str, tuple]] = field(default_factory=list)  # expectation groups not met (new lines)
    expected_lines: list[tuple[str, list[int]]] = field(default_factory=list)
    spurious: list[str] = field(default_factory=list)
    consequences: list[str] = field(default_factory=list)
    touched_extra: list[str] = field(default_factory=list)
    reported: list[str] = field(default_factory=list)  # new findings (all severities), mutant lines
    excerpt: list[str] = field(default_factory=list)


def lint_options() -> Options:
    """The default rules plus TM301 (info, off by default since the rules catalog's severity policy): the benchmark
    seeds TM301's fault class too, so it checks that rule as a user who enables it would."""
    return Options(codes={c for c, r in load_all().items() if r.enabled} | {"TM301"})


def original_findings(text: str, name: str) -> list[Finding]:
    return lint_text(text, name, lint_options())


_COVERS = re.compile(r"covers columns \[(\d+), (\d+)\)")


def _is_consequence(m: Mutant, f: Finding, orig_line: int) -> bool:
    for code, lines, past in m.consequences:
        if f.code != code or (lines is not None and orig_line not in lines):
            continue
        if past is not None:
            c = _COVERS.search(f.message)
            if c is None or int(c.group(2)) <= past:
                continue
        return True
    return False


def evaluate(m: Mutant, fa_lines: list[str], orig: list[Finding], use_ptxas: bool = True) -> Result:
    ap = apply_edits(fa_lines, m.edits)
    res = Result(m, "detected")
    if use_ptxas:
        err = ptxas_check(ap.text, m.source.arch)
        if err is not None:
            res.status = "rejected"
            res.ptxas = err
            return res
    found = lint_text(ap.text, m.source.name, lint_options())
    touched = set(m.edits.replace) | set(m.edits.delete)
    orig_keys = {(f.code, f.line) for f in orig}
    orig_err = {(f.code, f.line) for f in orig if f.severity is Severity.ERROR}
    got = {(f.code, f.line) for f in found}

    def new_line(anchor) -> int | None:
        return ap.new_of_tag.get(anchor) if isinstance(anchor, str) else ap.new_of_orig.get(anchor)

    for code, anchors in m.expect:
        lines = [n for n in (new_line(a) for a in anchors) if n is not None]
        res.expected_lines.append((code, lines))
        if not any((code, n) in got for n in lines):
            res.missing.append((code, tuple(lines)))
    expected_keys = {(c, n) for c, ls in res.expected_lines for n in ls}
    for f in found:
        if (f.code, f.line) in expected_keys:
            continue
        org = ap.origin[f.line] if 0 < f.line < len(ap.origin) else None
        if org is None or org[0] == "t" or org[1] in touched:
            res.touched_extra.append(_fmt(f))
            continue
        o = org[1]
        if (f.code, o) in orig_keys:
            continue
        res.reported.append(_fmt(f))
        if f.severity is not Severity.ERROR or (f.code, o) in orig_err:
            continue
        if _is_consequence(m, f, o):
            res.consequences.append(_fmt(f) + f" (original line {o})")
        else:
            res.spurious.append(_fmt(f) + f" (original line {o})")
    for f in found:
        if (f.code, f.line) in expected_keys:
            res.reported.insert(0, _fmt(f))
    if res.missing:
        res.status = "missed"
    if res.missing or res.spurious:
        res.excerpt = _excerpt(ap, m, fa_lines)
        res.reported = [_fmt(f) for f in found if f.severity is not Severity.INFO]
    return res


def _excerpt(ap: Applied, m: Mutant, fa_lines: list[str]) -> list[str]:
    """Mutant lines around the edits and the expected lines (``>`` marks changed lines)."""
    want = set()
    for n, org in enumerate(ap.origin[1:], 1):
        if org[0] == "t" or org[1] in m.edits.replace:
            want.update(range(n - 2, n + 3))
    for ln in m.ptx_lines:
        n = ap.new_of_orig.get(ln)
        if n:
            want.add(n)
    out = []
    last = None
    lines = ap.text.splitlines()
    for n in sorted(x for x in want if 1 <= x <= len(lines)):
        if last is not None and n != last + 1:
            out.append("     ...")
        org = ap.origin[n]
        mark = ">" if org[0] == "t" or org[1] in m.edits.replace else " "
        text = lines[n - 1]
        out.append(f"{mark}{n:5d} | {text[:200]}{' ...' if len(text) > 200 else ''}")
        last = n
    if m.edits.delete:
        out.append("  deleted: " + "; ".join(f"line {d}: {fa_lines[d - 1].strip()[:160]}"
                                             for d in sorted(m.edits.delete)))
    return out


# -- worker entry points (top-level for ProcessPoolExecutor) --------------------------------------------------

_CACHE: dict[str, tuple[list[str], list[Finding]]] = {}


def _prepare(src: Source, faults, use_ptxas: bool):
    t0 = time.perf_counter()
    fa = FileAnalysis(src)
    orig = original_findings(fa.text, src.name)
    base_err = ptxas_check(fa.text, src.arch) if use_ptxas else None
    muts, nas = generate(fa, faults)
    return src, muts, nas, orig, base_err, time.perf_counter() - t0


def _run_one(m: Mutant, use_ptxas: bool) -> Result:
    key = m.source.path
    if key not in _CACHE:
        text = Path(m.source.path).read_text(encoding="utf-8", errors="replace")
        _CACHE[key] = (text.splitlines(), original_findings(text, m.source.name))
    lines, orig = _CACHE[key]
    return evaluate(m, lines, orig, use_ptxas)


# ---------------------------------------------------------------------------------------------------- report


def _revision() -> str:
    """The commit of the checkout, and whether tmemlint/ has uncommitted changes (the run used the working tree)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "tmemlint", "grammars"], cwd=ROOT).returncode
    except (OSError, subprocess.CalledProcessError):
        return "unknown revision"
    return f"commit {head}" + (" with uncommitted changes in tmemlint/ (the working tree was run)" if dirty else "")


def _ptxas_version() -> str:
    try:
        out = subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown"
    m = re.search(r"release ([\d.]+), (V[\d.]+)", out)
    return f"{m.group(1)} ({m.group(2)})" if m else "unknown"


def _pct(d: int, n: int) -> str:
    return "–" if n == 0 else f"{d}/{n} ({100.0 * d / n:.0f}%)"


def report(results: list[Result], nas: list[NotApplicable], sources: list[Source], base_bad: dict, seconds: float,
           use_ptxas: bool, orig_errors: dict) -> str:
    classes = list(dict.fromkeys(CLASS_OF[f] for f in FAULTS))
    out = ["# tmemlint mutation testing (recall)", ""]
    n_mut = len(results)
    rej = [r for r in results if r.status == "rejected"]
    run = [r for r in results if r.status != "rejected"]
    det = [r for r in run if r.status == "detected"]
    spur = [r for r in run if r.spurious]
    out.append(f"Generated by `python benchmarks/mutate.py` in {seconds:.0f} s: {len(sources)} correct input files, "
               f"{n_mut} mutants, {len(rej)} rejected by ptxas{'' if use_ptxas else ' (ptxas not run)'}, "
               f"{len(run)} checked, {len(det)} detected with the right code on the right line, "
               f"{len(spur)} with spurious error findings on untouched lines. "
               f"{len(nas)} candidate sites not applicable (listed below).")
    out.append("")
    out.append(f"tmemlint: {_revision()}; ptxas: {_ptxas_version() if use_ptxas else 'not run'}.")
    out.append("")
    out.append("Recall = mutants reported with the expected code on every expected line / mutants that assemble. "
               "Spurious = mutants with a new error-level finding on a line the mutation did not touch.")
    out.append("")
    # per class x compiler
    out.append("| fault class | " + " | ".join(COMPILERS) + " | all | spurious |")
    out.append("|---|" + "---|" * (len(COMPILERS) + 2))
    for cl in classes:
        row = [cl]
        rs = [r for r in run if CLASS_OF[r.mutant.fault] == cl]
        for comp in COMPILERS:
            rc = [r for r in rs if r.mutant.source.compiler == comp]
            row.append(_pct(sum(r.status == "detected" for r in rc), len(rc)))
        row.append(_pct(sum(r.status == "detected" for r in rs), len(rs)))
        row.append(str(sum(bool(r.spurious) for r in rs)))
        out.append("| " + " | ".join(row) + " |")
    row = ["**all**"]
    for comp in COMPILERS:
        rc = [r for r in run if r.mutant.source.compiler == comp]
        row.append(_pct(sum(r.status == "detected" for r in rc), len(rc)))
    row.append(_pct(len(det), len(run)))
    row.append(str(len(spur)))
    out.append("| " + " | ".join(row) + " |")
    out.append("")
    out.append("Per mutation kind:")
    out.append("")
    out.append("| kind | " + " | ".join(COMPILERS) + " | rejected by ptxas |")
    out.append("|---|" + "---|" * (len(COMPILERS) + 1))
    for fk in FAULTS:
        rs = [r for r in results if r.mutant.fault == fk]
        if not rs:
            continue
        row = [fk]
        for comp in COMPILERS:
            rc = [r for r in rs if r.mutant.source.compiler == comp and r.status != "rejected"]
            row.append(_pct(sum(r.status == "detected" for r in rc), len(rc)))
        row.append(str(sum(r.status == "rejected" for r in rs)))
        out.append("| " + " | ".join(row) + " |")
    out.append("")

    out.append("## Inputs")
    out.append("")
    out.append("| file | compiler | mutants | detected | missed | spurious | rejected | not applicable |")
    out.append("|---|---|---|---|---|---|---|---|")
    for s in sources:
        rs = [r for r in results if r.mutant.source == s]
        note = ""
        if s.name in base_bad:
            note = f" (original rejected by ptxas: {base_bad[s.name]}; skipped)"
        elif orig_errors.get(s.name):
            note = f" (original has {orig_errors[s.name]} error findings)"
        out.append(f"| {s.name}{note} | {s.compiler} | {len(rs)} | {sum(r.status == 'detected' for r in rs)} | "
                   f"{sum(r.status == 'missed' for r in rs)} | {sum(bool(r.spurious) for r in rs)} | "
                   f"{sum(r.status == 'rejected' for r in rs)} | {sum(n.source == s for n in nas)} |")
    out.append("")

    out.append("## Misses")
    out.append("")
    misses = [r for r in run if r.status == "missed"]
    if not misses:
        out.append("None.")
    else:
        groups: dict[tuple, list[Result]] = {}
        for r in misses:
            groups.setdefault((r.mutant.fault, r.mutant.source.compiler, _generic(r.mutant.note)), []).append(r)
        out.append("| kind | compiler | mutants | files | what tmemlint knows there |")
        out.append("|---|---|---|---|---|")
        for (fk, comp, note), rs in groups.items():
            files = ", ".join(sorted({f"`{Path(r.mutant.source.name).name}`" for r in rs}))
            out.append(f"| {fk} | {comp} | {len(rs)} | {files} | {note or '–'} |")
        out.append("")
    for r in misses:
        out += _detail(r, "missed")
    out.append("")
    out.append("## Spurious findings")
    out.append("")
    if not spur:
        out.append("None.")
    for r in spur:
        out += _detail(r, "spurious")
    out.append("")
    cons = [r for r in run if r.consequences]
    out.append("## Findings accepted as consequences of the fault")
    out.append("")
    out.append("Two kinds, listed here and not counted as spurious: tm102-96 mutants shrink the allocation to 96 "
               "columns, so operand footprints that end past column 96 are correctly reported as TM402 "
               "region-out-of-bounds on their (untouched) lines (accepted only when the message's `covers columns "
               "[a, b)` has b > 96); tm301-move-wait mutants whose wait is moved past an `mbarrier.arrive` / barrier "
               "/ MMA between the old wait and the first read leave the load pending there, a true TM302 (accepted "
               "only on the lines between the old wait and the first read).")
    out.append("")
    if not cons:
        out.append("None.")
    for r in cons:
        out.append(f"- `{r.mutant.source.name}` {r.mutant.fault}: {r.mutant.description}: "
                   f"{len(r.consequences)} finding(s), e.g. `{r.consequences[0]}`")
    out.append("")
    out.append("## Other findings on the touched lines")
    out.append("")
    out.append("Findings on inserted or edited lines besides the expected ones (not spurious by definition; "
               "counted per mutation kind and rule):")
    out.append("")
    extra: dict[tuple[str, str], int] = {}
    for r in run:
        for t in r.touched_extra:
            code = t.split(": ", 1)[1].split(" ", 1)[0]
            extra[(r.mutant.fault, code)] = extra.get((r.mutant.fault, code), 0) + 1
    if not extra:
        out.append("None.")
    for (fk, code), n in sorted(extra.items()):
        ex = next(t for r in run if r.mutant.fault == fk for t in r.touched_extra if f": {code} " in t)
        out.append(f"- {fk} / {code}: {n}, e.g. `{ex[:220]}`")
    out.append("")
    out.append("## Rejected by ptxas")
    out.append("")
    if not rej:
        out.append("None." if use_ptxas else "ptxas was not run.")
    for r in rej:
        out.append(f"- `{r.mutant.source.name}` {r.mutant.fault}: {r.mutant.description}: `{r.ptxas}`")
    out.append("")
    out.append("## Not applicable (no mutant generated)")
    out.append("")
    if not nas:
        out.append("None.")
    for n in nas:
        out.append(f"- `{n.source.name}:{n.line}` {n.fault}: {n.reason}")
    out.append("")
    out.append("## Every mutant")
    out.append("")
    out.append("| file | kind | mutation | expected | result |")
    out.append("|---|---|---|---|---|")
    for r in results:
        exp = ", ".join(f"{c}@{'/'.join(map(str, ls))}" for c, ls in r.expected_lines) or "–"
        res = r.status + (f", {len(r.spurious)} spurious" if r.spurious else "")
        if r.status == "rejected":
            res += f": {r.ptxas}"
        out.append(f"| {r.mutant.source.name} | {r.mutant.fault} | {r.mutant.description.replace('|', '/')} | "
                   f"{exp} | {res} |")
    out.append("")
    return "\n".join(out)


def _generic(note: str) -> str:
    """A note without its line numbers and register names, to group misses of one cause."""
    return re.sub(r" at line \d+", "", re.sub(r" %[\w$]+ ", " ", note))


def _detail(r: Result, what: str) -> list[str]:
    m = r.mutant
    out = [f"### `{m.source.name}` {m.fault} ({m.source.compiler})", ""]
    out.append(f"Mutation: {m.description}.")
    out.append("")
    if m.note and r.missing:
        out.append(f"What tmemlint knows here: {m.note}.")
        out.append("")
    exp = ", ".join(f"{c} at line {' or '.join(map(str, ls))}" for c, ls in r.expected_lines)
    out.append(f"Expected: {exp} (mutant line numbers).")
    if r.missing:
        out.append(f"Missing: {', '.join(f'{c} at {list(ls)}' for c, ls in r.missing)}.")
    if r.spurious:
        out.append("Spurious (error-level, untouched lines, not in the original's findings):")
        out += [f"- `{s}`" for s in r.spurious]
    out.append("")
    out.append("Linter output on the mutant (errors and warnings):")
    out.append("")
    out.append("```")
    out += r.reported or ["(nothing)"]
    out.append("```")
    out.append("")
    out.append("Mutant PTX:")
    out.append("")
    out.append("```")
    out += r.excerpt
    out.append("```")
    out.append("")
    return out


def mutant_file_name(m: Mutant, k: int) -> str:
    return f"{k:04d}_{Path(m.source.path).stem}_{m.fault}.ptx"


def dump_mutants(muts: list[Mutant], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    cache: dict[str, list[str]] = {}
    for k, m in enumerate(muts):
        if m.source.path not in cache:
            cache[m.source.path] = Path(m.source.path).read_text(encoding="utf-8", errors="replace").splitlines()
        ap = apply_edits(cache[m.source.path], m.edits)
        # the note goes last, so that line numbers are those of the report
        (folder / mutant_file_name(m, k)).write_text(
            ap.text + f"// mutant of {m.source.name}: {m.fault}: {m.description}\n", encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="PTX files (default: the Triton, CuTe DSL and nvcc corpus)")
    ap.add_argument("--out", help="write the Markdown report here")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-ptxas", action="store_true", help="do not assemble the mutants")
    ap.add_argument("--dump", metavar="DIR", help="also write every mutant's PTX to DIR")
    ap.add_argument("--fault", help="comma-separated mutation kinds (default: all): " + ", ".join(FAULTS))
    args = ap.parse_args(argv)
    faults = tuple(args.fault.split(",")) if args.fault else FAULTS
    bad = [f for f in faults if f not in FAULTS]
    if bad:
        ap.error(f"unknown fault kind(s): {', '.join(bad)}")
    use_ptxas = not args.no_ptxas and shutil.which("ptxas") is not None
    sources = [source_for(f) for f in args.files] if args.files else default_sources()
    t0 = time.perf_counter()
    all_muts: list[Mutant] = []
    nas: list[NotApplicable] = []
    base_bad: dict[str, str] = {}
    orig_errors: dict[str, int] = {}
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        for src, muts, na, orig, err, _secs in ex.map(_prepare, sources, [faults] * len(sources),
                                                      [use_ptxas] * len(sources)):
            orig_errors[src.name] = sum(f.severity is Severity.ERROR for f in orig)
            if err is not None:
                base_bad[src.name] = err
                continue
            all_muts += muts
            nas += na
        # big files first, so the pool stays busy
        order = sorted(range(len(all_muts)), key=lambda k: -os.path.getsize(all_muts[k].source.path))
        results_by = {}
        for k, res in zip(order, ex.map(_run_one, [all_muts[k] for k in order], [use_ptxas] * len(order),
                                        chunksize=1)):
            results_by[k] = res
    results = [results_by[k] for k in range(len(all_muts))]
    if args.dump:
        dump_mutants(all_muts, Path(args.dump))
    secs = time.perf_counter() - t0
    text = report(results, nas, sources, base_bad, secs, use_ptxas, orig_errors)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    # summary on stdout: the tables
    summary = text.split("## Inputs")[0]
    print(summary.rstrip())
    misses = [r for r in results if r.status == "missed"]
    spur = [r for r in results if r.spurious]
    for r in misses:
        print(f"MISSED   {r.mutant.source.name} {r.mutant.fault}: {r.mutant.description}; missing "
              f"{', '.join(f'{c}@{list(ls)}' for c, ls in r.missing)}")
    for r in spur:
        print(f"SPURIOUS {r.mutant.source.name} {r.mutant.fault}: {r.mutant.description}: {'; '.join(r.spurious)}")
    print(f"run time {secs:.1f} s")
    return 0 if not misses and not spur else 1


if __name__ == "__main__":
    sys.exit(main())
