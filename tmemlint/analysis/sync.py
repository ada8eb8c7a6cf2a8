"""The one synchronization classifier: what an instruction does to a barrier (``SyncEvent``), which barrier it
names (``BarrierKey``, and the finer ``AddressForm`` with its may-alias test), and the instruction classes the
ordering rules use (hand-overs, TMEM operands).  Every other module reads these; none classifies on its own.

Sources: PTX ISA 9.0 §9.7.13.1 (bar/barrier), §9.7.13.4 (barrier.cluster), §9.7.13.15 (mbarrier: init, inval,
arrive, arrive_drop, expect_tx, complete_tx, test_wait, try_wait, pending_count), §9.7.9.25
(``cp.async.mbarrier.arrive``), §9.7.9.24 (``cp.async.bulk`` with ``.mbarrier::complete_tx::bytes``), §9.7.9.22
(``mapa``: the address of the same variable in another CTA of the cluster), §9.7.13.3-4 (membar/fence),
§9.7.16.6 (tcgen05 memory consistency: which tcgen05 instructions are asynchronous), §9.7.16.8.4
(tcgen05.commit), §5.1.7 (the ``.shared::cta`` window is the CTA's own), reference §3, §3.1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tmemlint.analysis.values import Const, SymAddr, SymInside, ValueAnalysis, defined_regs
from tmemlint.ir import Address, Imm, Instruction, Operand, Reg, Sym

#: tcgen05 operations that read or write TMEM asynchronously (reference §3).
ASYNC_TCGEN05 = {"tcgen05.mma", "tcgen05.cp", "tcgen05.shift", "tcgen05.ld", "tcgen05.st"}
#: tcgen05 instructions with .sync.aligned semantics, executed by a whole warp (reference §2.1, §2.2).
WARP_COLLECTIVE = {"tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit", "tcgen05.ld",
                   "tcgen05.st", "tcgen05.wait::ld", "tcgen05.wait::st"}

#: State-space forms of an mbarrier operand: the CTA's own window (``.shared`` / ``.shared::cta``), the cluster's
#: window (``.shared::cluster``), or a generic address (no state space written).
LOCAL, CLUSTER, GENERIC = "shared::cta", "shared::cluster", "generic"

#: mbarrier operations that act only on the executing CTA's own barriers, in every form (reference §3.1).
NEVER_REMOTE = ("init", "inval", "try_wait", "test_wait", "pending_count")

#: Register copies and offsets followed back from an mbarrier operand to a ``mapa``.
_MAX_HOPS = 8

#: Definitions followed by ``address_form`` before it gives up.
_MAX_FORM_DEPTH = 12

#: Memory-ordering qualifiers (PTX ISA §8.4 "operation types", §9.7.13.4, §9.7.13.15).
_SEMANTICS = ("relaxed", "release", "acquire", "acq_rel", "sc")
#: Scope qualifiers (PTX ISA §8.5).
_SCOPES = ("cta", "cluster", "gpu", "sys")


# ---- barrier identity ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BarrierKey:
    """A barrier instance as the happens-before model counts phases on it: ``kind`` is ``"bar"`` (``ident``: the
    barrier id, None when not constant), ``"mbar"`` (``ident``: ``(variable, byte offset)``, the offset None when
    unknown; ``ident`` None when the address is not known) or ``"cluster"``."""

    kind: str
    ident: Any = None

    @property
    def exact(self) -> bool:
        """Whether the key names one barrier (a constant id, a variable at a known offset): only then are its
        phases counted."""
        if self.kind == "cluster":
            return True
        if self.kind == "bar":
            return self.ident is not None
        return self.ident is not None and self.ident[1] is not None

    def may_alias(self, other: "BarrierKey") -> bool:
        """Whether the two keys can name the same barrier instance."""
        if self.kind != other.kind:
            return False
        a, b = self.ident, other.ident
        if a is None or b is None or a == b:
            return True
        if self.kind == "mbar":
            return bool(a[0] == b[0] and (a[1] is None or b[1] is None))
        return False


def barrier_key(values: ValueAnalysis, inst: Instruction, operand: int) -> BarrierKey:
    """The ``BarrierKey`` of the mbarrier that (address) operand ``operand`` of ``inst`` names in the executing
    CTA: its value a shared variable at a byte offset (``("sym", name, offset)``), at an unknown offset
    (``"symx"``), or unknown."""
    v = values.value(inst, inst.operands[operand])
    match v:
        case SymAddr(name=name, offset=off):
            return BarrierKey("mbar", (name, off))
        case SymInside(name=name):
            return BarrierKey("mbar", (name, None))
    return BarrierKey("mbar", None)


@dataclass(frozen=True, slots=True)
class Term:
    """A term of an ``AddressForm``: ``kind`` ``"sym"`` (the address of shared variable or parameter ``name``),
    ``"merged"`` (register ``name`` where the definitions ``defs`` reach) or ``"def"`` (the value instruction
    ``defs[0]`` writes to register ``name``)."""

    kind: str
    name: str
    defs: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class AddressForm:
    """An mbarrier address as a linear form over the definitions it is computed from: ``sum(coefficient * term)
    + offset`` bytes, ``terms`` sorted.  Finer than ``BarrierKey`` (which needs a known value): a pipeline's stage
    address recomputed from the same stage register is one form, ``full[stage]`` and ``empty[stage]`` differ by
    their offset."""

    terms: tuple[tuple[Term, int], ...]
    offset: int

    def may_alias(self, other: "AddressForm | None") -> bool:
        """Whether the two addresses may be the same barrier: not when both are computed from the same terms with
        different offsets, or are two different variables at constant offsets; otherwise the analysis cannot tell
        them apart and takes them as the same (None: unknown, may be anything)."""
        if other is None:
            return True
        if self.terms == other.terms:
            return self.offset == other.offset
        return not (self._one_symbol() and other._one_symbol())

    def _one_symbol(self) -> bool:
        """Whether the form is a single shared variable's address (plus a constant)."""
        return len(self.terms) == 1 and self.terms[0][0].kind == "sym" and self.terms[0][1] == 1


def forms_may_alias(a: AddressForm | None, b: AddressForm | None) -> bool:
    """``AddressForm.may_alias`` where either form may be unknown (None: may be any barrier)."""
    return True if a is None else a.may_alias(b)


_Linear = tuple[dict[Term, int], int]


def _linear(values: ValueAnalysis, inst: Instruction, o: Operand, depth: int = 0) -> _Linear | None:
    """Operand ``o`` at ``inst`` as ``({term: coefficient}, constant)``, following single reaching definitions
    through mov/cvt/cvta/add/sub and shifts or multiplications by constants; None past ``_MAX_FORM_DEPTH``."""
    if type(o) is Imm:
        return {}, o.value
    if type(o) is Sym:
        return {Term("sym", o.name): 1}, o.offset  # smem_raw+135200: source mode folds field offsets into it
    if type(o) is not Reg or depth > _MAX_FORM_DEPTH:
        return None
    defs = values.reaching_defs(inst, o.name)
    if len(defs) != 1:
        return {Term("merged", o.name, tuple(defs)): 1}, 0
    d = values.insts[defs[0]]
    ops = d.operands
    leaf: _Linear = ({Term("def", o.name, (d.index,)): 1}, 0)
    if d.op in ("mov", "cvt", "cvta") and len(ops) == 2:
        return _linear(values, d, ops[1], depth + 1) or leaf
    if d.op in ("add", "sub") and len(ops) == 3:
        a, b = _linear(values, d, ops[1], depth + 1), _linear(values, d, ops[2], depth + 1)
        if a is None or b is None:
            return leaf
        sign = 1 if d.op == "add" else -1
        terms = dict(a[0])
        for t, c in b[0].items():
            terms[t] = terms.get(t, 0) + sign * c
        return {t: c for t, c in terms.items() if c}, a[1] + sign * b[1]
    if d.op in ("shl", "mul") and len(ops) == 3 and type(ops[2]) is Imm:
        a = _linear(values, d, ops[1], depth + 1)
        if a is None:
            return leaf
        k = (1 << ops[2].value) if d.op == "shl" else ops[2].value
        return {t: c * k for t, c in a[0].items()}, a[1] * k
    return leaf


def address_form(values: ValueAnalysis, inst: Instruction) -> AddressForm | None:
    """The ``AddressForm`` of the first address operand of ``inst`` (the mbarrier of a commit or a wait), or None
    when there is none or it cannot be followed."""
    addr = next((o for o in inst.operands if type(o) is Address), None)
    if addr is None or addr.base is None:
        return None
    form = _linear(values, inst, addr.base)
    if form is None:
        return None
    return AddressForm(tuple(sorted(form[0].items(), key=repr)), form[1] + addr.offset)


# ---- mbarrier operands and peers -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MbarrierOp:
    """One instruction's access to an mbarrier object.

    ``kind``: the operation (``arrive``, ``arrive_drop``, ``expect_tx``, ``complete_tx``, ``try_wait``,
    ``test_wait``, ``init``, ``inval``, ``pending_count``; ``cp.async.mbarrier.arrive`` for that instruction,
    ``complete_tx`` for a bulk copy's mbarrier operand); ``space``: ``LOCAL``, ``CLUSTER`` or ``GENERIC``;
    ``operand``: the index of the barrier's address operand in ``inst.operands``."""

    inst: Instruction
    kind: str
    space: str
    operand: int


def _space(parts: tuple[str, ...]) -> str:
    if "shared::cluster" in parts:
        return CLUSTER
    if "shared::cta" in parts or "shared" in parts:
        return LOCAL
    return GENERIC


def mbarrier_op(inst: Instruction) -> MbarrierOp | None:
    """The mbarrier access of ``inst``, or None when it has none."""
    op, parts = inst.op, inst.parts
    addrs = [k for k, o in enumerate(inst.operands) if type(o) is Address]
    if not addrs:
        return None
    if op == "mbarrier" and len(parts) > 1:
        return MbarrierOp(inst, parts[1], _space(parts), addrs[0])
    if op == "cp" and "async" in parts and "mbarrier" in parts and "arrive" in parts:
        return MbarrierOp(inst, "cp.async.mbarrier.arrive", _space(parts), addrs[0])
    if op == "cp" and "bulk" in parts and any(p.startswith("mbarrier::complete_tx") for p in parts):
        # the barrier lives in the destination's state space (the first shared one written): §9.7.9.24
        dst = next((p for p in parts if p.startswith("shared")), None)
        return MbarrierOp(inst, "complete_tx", _space((dst,)) if dst else GENERIC, addrs[-1])
    return None


def mapa_origin(values: ValueAnalysis, inst: Instruction, operand: int) -> Instruction | None:
    """The ``mapa`` instruction the address operand ``operand`` of ``inst`` comes from on every path, through
    register copies (``mov``, ``cvt``, ``cvta``) and additions of an offset; None when some reaching definition
    is not such a chain, or when the ``mapa`` maps to ``%cluster_ctarank`` itself (the executing CTA)."""
    o = inst.operands[operand]
    base = o.base if type(o) is Address else o
    if type(base) is not Reg:
        return None
    found: list[Instruction] = []
    if not _trace(values, inst, base.name, found, 0):
        return None
    return found[0] if found else None


def _trace(values: ValueAnalysis, at: Instruction, name: str, found: list[Instruction], depth: int) -> bool:
    """Whether every reaching definition of register ``name`` at ``at`` is a ``mapa`` chain (appended to
    ``found``)."""
    if depth > _MAX_HOPS or name.startswith("%") and "." in name:
        return False
    defs = values.reaching_defs(at, name)
    if not defs:
        return False
    for d in defs:
        src = values.insts[d]
        ops = src.operands
        if src.op == "mapa" and len(ops) >= 3:
            rank = ops[2]
            if type(rank) is Reg and values.value(src, rank) == ("sreg", "%cluster_ctarank"):
                return False  # the executing CTA's own barrier
            found.append(src)
            continue
        if src.op in ("mov", "cvt", "cvta") and len(ops) == 2 and type(ops[1]) is Reg:
            if not _trace(values, src, ops[1].name, found, depth + 1):
                return False
            continue
        if src.op in ("add", "sub") and len(ops) == 3:
            regs = [x for x in ops[1:] if type(x) is Reg]
            # exactly one operand is the address; the other an immediate or an offset that is not a mapa chain
            tried: list[tuple[Reg, list[Instruction]]] = []
            for r in regs:
                mine: list[Instruction] = []
                if _trace(values, src, r.name, mine, depth + 1):
                    tried.append((r, mine))
            if len(tried) != 1 or (src.op == "sub" and tried[0][0] is not ops[1]):
                return False
            found.extend(tried[0][1])
            continue
        return False
    return True


def peer_arrive_key(values: ValueAnalysis, inst: Instruction) -> BarrierKey | None:
    """The local mbarrier whose counterpart in a peer CTA ``inst`` may arrive on: an ``mbarrier.arrive*`` whose
    address comes from ``mapa`` of a local address on some path (PTX ISA §9.7.9.22: the same variable in CTA ``r``
    of the cluster), followed through single-definition register copies (``mov``/``cvt``).  A kernel whose CTAs
    run the same code receives, on its own barrier at that address, the arrival its peer makes with the same
    instruction; None for an arrive that is local on every path.  Unlike ``mapa_origin`` (a ``mapa`` on *every*
    path, for the local-form check of TM310), one remote path is enough here: a CTA-scope release on that path is
    the hazard of TM309 (an address chosen as ``leader ? local : mapa(local, peer)`` included)."""
    if not (inst.op == "mbarrier" and len(inst.parts) > 1 and inst.parts[1].startswith("arrive")):
        return None
    addr = next((o for o in inst.operands if type(o) is Address), None)
    if addr is None or type(addr.base) is not Reg:
        return None
    at, name = inst, addr.base.name
    for _ in range(4):  # through register copies (mapa, then mov/cvt to the arrive's register)
        defs = values.reaching_defs(at, name)
        for d in defs:
            src = values.insts[d]
            if src.op == "mapa" and len(src.operands) >= 2:
                return barrier_key(values, src, 1)
        if len(defs) != 1:
            return None
        src = values.insts[defs[0]]
        nxt = src.operands[1] if src.op in ("mov", "cvt") and len(src.operands) == 2 else None
        if type(nxt) is not Reg or nxt.name.startswith("%") and "." in nxt.name:
            return None
        at, name = src, nxt.name
    return None


# ---- synchronization events ----------------------------------------------------------------------------------


#: Opcodes that decide control flow from a predicate or register they read (a retry loop's ``@!%p bra WAIT``, a
#: ``@!%p trap``): a wait result that reaches one of them is tested.
_CONTROL = {"bra", "brx", "ret", "exit", "trap", "call"}

#: Def-use steps followed from a wait's result before it is taken as tested.
_MAX_TEST_STEPS = 256


def wait_result_tested(values: ValueAnalysis, inst: Instruction) -> bool:
    """Whether the result of ``mbarrier.try_wait`` / ``test_wait`` ``inst`` may decide what the thread does next:
    PTX ISA §9.7.13.15.16: ``test_wait`` does not block and ``try_wait`` returns False when its time limit elapses
    before the phase completes, so either acquires the phase only where the program goes on by its result being
    True (the retry loop ``@!%p bra WAIT``, a ``selp``/``setp`` of it then a branch, a loop exit on it).  Follows
    the def-use chains from the result register through instructions that compute registers; True when a chain
    reaches a control instruction (``_CONTROL``) or leaves the registers (a store, an instruction with no
    register result, a call), or the walk passes ``_MAX_TEST_STEPS`` (kept as a wait: the safe side for the
    rules, which then see the wait they expect); False only when every use of the result only computes registers
    none of which is ever tested, or there is none."""
    if not inst.operands or type(inst.operands[0]) is not Reg:
        return True
    work = [(inst.index, inst.operands[0].name)]
    seen: set[tuple[int, str]] = set()
    steps = 0
    while work:
        d, name = work.pop()
        if (d, name) in seen:
            continue
        seen.add((d, name))
        for u in values.uses_of(d, name):
            steps += 1
            if steps > _MAX_TEST_STEPS:
                return True
            user = values.insts[u]
            defs = defined_regs(user)
            if user.op in _CONTROL or not defs:
                return True
            work.extend((u, r.name) for r in defs)
    return False


@dataclass(frozen=True, slots=True)
class SyncEvent:
    """What one instruction does to a barrier or to memory ordering (``sync_event``).

    ``kind``: ``"bar"`` (``bar``/``barrier`` ``.sync``/``.arrive``/``.red``, §9.7.13.1), ``"cluster"``
    (``barrier.cluster.arrive``/``.wait``, §9.7.13.4), ``"mbarrier"`` (§9.7.13.15), ``"commit"``
    (``tcgen05.commit``, §9.7.16.8.4), ``"cp.async.mbarrier.arrive"`` (§9.7.9.25), ``"complete_tx"`` (a bulk
    copy's mbarrier operand, §9.7.9.24) or ``"fence"`` (``fence``/``membar``/``tcgen05.fence``, §9.7.13.3-4).
    ``op``: the operation in the ISA's words (``sync``, ``arrive``, ``red``, ``wait``; the mbarrier operation:
    ``init``, ``arrive``, ``arrive_drop``, ``expect_tx``, ``complete_tx``, ``try_wait``, ``test_wait``, ``inval``,
    ``pending_count``; ``arrive::one`` for a commit; the fence's qualifiers joined by dots).
    ``key``: the barrier instance (``BarrierKey("fence")`` for a fence: it names no barrier and is of a kind no
    barrier has); ``operand``: the index of the mbarrier's address operand.  ``arrives``: the thread releases
    (its earlier work is visible to whoever waits for the phase); ``waits``: it acquires (goes on only once the
    phase completed: a blocking barrier, a cluster wait, an mbarrier wait whose result is ``tested``).
    ``count``: a bar's participant count, an ``mbarrier.init``'s expected count, an arrive's arrival count (1
    when implicit; a ``cp.async.mbarrier.arrive``'s net count: 1 with ``.noinc``, 0 without, as it raises the
    pending count first), None when not a constant.  ``tx``: ``.expect_tx``/``complete_tx``.
    ``sem``, ``scope``: the memory-ordering and scope qualifiers written (None: the default).  ``space``:
    ``LOCAL``, ``CLUSTER`` or ``GENERIC`` for an mbarrier operand.  ``remote``: the address comes from ``mapa`` on
    every path (a peer CTA's barrier).  ``multicast``: ``tcgen05.commit … .multicast::cluster`` (its mask is the
    last operand).  ``parity``: the constant parity of a ``.parity`` wait."""

    inst: Instruction
    kind: str
    op: str
    key: BarrierKey = BarrierKey("fence")
    operand: int | None = None
    arrives: bool = False
    waits: bool = False
    count: int | None = None
    tx: bool = False
    sem: str | None = None
    scope: str | None = None
    space: str = GENERIC
    remote: bool = False
    multicast: bool = False
    parity: int | None = None
    tested: bool = True


def _const(values: ValueAnalysis, inst: Instruction, k: int) -> int | None:
    """Operand ``k`` of ``inst`` when it is a known integer constant."""
    if len(inst.operands) <= k:
        return None
    v = values.value(inst, inst.operands[k])
    return v.value if type(v) is Const and isinstance(v.value, int) else None


def _qualifier(parts: tuple[str, ...], among: tuple[str, ...]) -> str | None:
    return next((p for p in parts if p in among), None)


def sync_event(values: ValueAnalysis, inst: Instruction) -> SyncEvent | None:
    """The synchronization effect of ``inst`` (``SyncEvent``), or None when it has none."""
    op, parts = inst.op, inst.parts
    sem, scope = _qualifier(parts, _SEMANTICS), _qualifier(parts, _SCOPES)
    if op in ("bar", "barrier"):
        if len(parts) > 1 and parts[1] == "cluster":
            return SyncEvent(inst, "cluster", "wait" if "wait" in parts else "arrive", BarrierKey("cluster"),
                             arrives="arrive" in parts, waits="wait" in parts, sem=sem, scope="cluster")
        if len(parts) > 1 and parts[1] == "warp":
            return None  # bar.warp.sync: one warp
        at = 1 if "red" in parts else 0  # bar.red.popc.u32 d, a{, b}, {!}c: the barrier is a (§9.7.13.1)
        ident = _const(values, inst, at) if len(inst.operands) > at else None
        arrive_only = "arrive" in parts
        # the thread count b follows the barrier (bar.red: d, a, b, c when it has 4 operands)
        n = _const(values, inst, at + 1) if len(inst.operands) > at + (2 if "red" in parts else 1) else None
        return SyncEvent(inst, "bar", "arrive" if arrive_only else "red" if "red" in parts else "sync",
                         BarrierKey("bar", ident), arrives=True, waits=not arrive_only, count=n)
    if op in ("fence", "membar") or inst.family in ("tcgen05.fence::before_thread_sync",
                                                    "tcgen05.fence::after_thread_sync"):
        return SyncEvent(inst, "fence", ".".join(parts), BarrierKey("fence"), sem=sem, scope=scope)
    if inst.family == "tcgen05.commit":
        k = next((j for j, o in enumerate(inst.operands) if type(o) is Address), None)
        key = barrier_key(values, inst, k) if k is not None else BarrierKey("mbar", None)
        return SyncEvent(inst, "commit", "arrive::one", key, k, arrives=True, count=1,
                         space=_space(parts), multicast="multicast::cluster" in parts)
    m = mbarrier_op(inst)
    if m is None:
        return None
    key = barrier_key(values, inst, m.operand)
    if m.kind == "cp.async.mbarrier.arrive":
        return SyncEvent(inst, m.kind, "noinc" if "noinc" in parts else "arrive", key, m.operand, arrives=True,
                         count=1 if "noinc" in parts else 0, space=m.space)
    if op == "cp":
        return SyncEvent(inst, "complete_tx", "complete_tx", key, m.operand, tx=True, space=m.space)
    kind = m.kind
    remote = kind.startswith("arrive") and mapa_origin(values, inst, m.operand) is not None
    if kind.startswith("arrive"):
        count: int | None = 1
        if "expect_tx" not in parts and len(inst.operands) > m.operand + 1:
            count = _const(values, inst, m.operand + 1)
        return SyncEvent(inst, "mbarrier", kind, key, m.operand, arrives=True, count=count,
                         tx="expect_tx" in parts, sem=sem, scope=scope, space=m.space, remote=remote)
    if kind in ("try_wait", "test_wait"):
        tested = wait_result_tested(values, inst)
        parity = _const(values, inst, 2) if "parity" in parts else None
        return SyncEvent(inst, "mbarrier", kind, key, m.operand, waits=tested, sem=sem, scope=scope,
                         space=m.space, parity=parity, tested=tested)
    if kind == "init":
        return SyncEvent(inst, "mbarrier", kind, key, m.operand, count=_const(values, inst, m.operand + 1),
                         space=m.space)
    return SyncEvent(inst, "mbarrier", kind, key, m.operand, tx=kind in ("expect_tx", "complete_tx"), sem=sem,
                     scope=scope, space=m.space)


# ---- instruction classes (syntax only: no values needed) -------------------------------------------------------


def is_cta_barrier(inst: Instruction) -> bool:
    """A barrier that waits for other threads: ``bar.sync``/``bar.red``/``barrier.sync``/``barrier.red`` (not
    ``.arrive``), and ``barrier.cluster.wait`` (the whole cluster, so the CTA too)."""
    op = inst.op
    if op in ("bar", "barrier"):
        parts = inst.parts
        if len(parts) > 1 and parts[1] == "cluster":
            return "wait" in parts
        if len(parts) > 1 and parts[1] == "warp":
            return False  # bar.warp.sync: one warp only
        return "arrive" not in parts
    return False


def is_mbarrier_wait(inst: Instruction) -> bool:
    """``mbarrier.try_wait`` / ``mbarrier.test_wait`` (the completion side of an mbarrier)."""
    return inst.op == "mbarrier" and len(inst.parts) > 1 and inst.parts[1] in ("try_wait", "test_wait")


def is_sync(inst: Instruction) -> bool:
    """A point where this thread waits for others: a CTA or cluster barrier, or an mbarrier wait."""
    return is_cta_barrier(inst) or is_mbarrier_wait(inst)


def is_handover(inst: Instruction) -> bool:
    """An explicit signal to other threads that this thread is done with something: ``mbarrier.arrive*`` and
    ``bar.arrive``/``barrier.arrive`` (producer-side arrives).  Full barriers (``bar.sync``) are not counted:
    compilers place them between a tcgen05.ld and its wait for unrelated shared-memory reuse (Triton), and they
    do not by themselves release TMEM to a writer."""
    if inst.op in ("bar", "barrier"):
        return "arrive" in inst.parts and "cluster" not in inst.parts
    return inst.op == "mbarrier" and len(inst.parts) > 1 and inst.parts[1].startswith("arrive")


def cta_group(inst: Instruction) -> int | None:
    """1 or 2 from ``.cta_group::N``, or None."""
    p = inst.part_with_prefix("cta_group::")
    return int(p.split("::")[1]) if p else None


def tmem_operand_indices(inst: Instruction) -> list[int]:
    """Indices of the operands of a tcgen05 instruction that are TMEM addresses (PTX ISA §9.7.16.7-10):
    dealloc ``taddr``; ld ``[taddr]``; st, cp, shift ``[taddr]`` (first operand); mma ``[d]``, ``[a]`` when A is
    in TMEM, ``[sp-meta]``, ``[scale-A]``, ``[scale-B]`` (every bracketed operand)."""
    fam = inst.family
    ops = inst.operands
    if fam == "tcgen05.dealloc":
        return [0] if ops else []
    if fam == "tcgen05.ld":
        return [i for i, o in enumerate(ops) if type(o) is Address][:1]
    if fam in ("tcgen05.st", "tcgen05.cp", "tcgen05.shift"):
        return [0] if ops else []
    if fam == "tcgen05.mma":
        return [i for i, o in enumerate(ops) if type(o) is Address]
    return []
