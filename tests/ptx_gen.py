"""Hypothesis strategies for the robustness tests and the fuzzing target (``fuzz/fuzz_lint.py``).

``programs()`` draws a ``Program``: one ``.entry`` kernel in which warp 0 allocates 128 TMEM columns
(``setp.eq.u32 %p0, %warp, 0; @%p0 tcgen05.alloc … [slot], 128;``), every warp loads the TMEM address from the slot
after ``bar.sync 0``, and then a random tree of guarded branches (on kernel parameters and on the warp index
``%tid.x >> 5``), nested ``{ }`` scopes, early ``ret``s and deallocs by warp 0 runs to ``ret``.  The generator knows
the ground truth: ``Program.leaks`` is True exactly when some assignment of the kernel parameters lets warp 0 reach
``ret`` without a dealloc, and ``Program.double_frees`` when one lets it dealloc twice.  Conditions on one
parameter are all computed the same way (``setp.ne.u32 %pN, %rparam, 0``), so a parameter is one boolean along a
path; the warp conditions are decided for warp 0.

``mutations()`` draws a text mutation (line deleted or duplicated, truncation, random bytes, operands swapped)
applied by ``mutate``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from hypothesis import strategies as st

N_PARAMS = 3
_WARP_OPS = {"eq": lambda w, k: w == k, "ne": lambda w, k: w != k, "lt": lambda w, k: w < k,
             "ge": lambda w, k: w >= k}
_FILLERS = ("add.s32 %r20, %r20, 1;", "mul.lo.u32 %r21, %r20, 3;", "xor.b32 %r22, %r21, %r20;",
            "mov.u32 %r23, %ctaid.x;", "and.b32 %r24, %r23, 7;")


@dataclass(frozen=True)
class Dealloc:
    """``tcgen05.dealloc`` of the allocation by warp 0: ``form`` 0 guarded by ``@%p0``, 1 skipped by
    ``@!%p0 bra``, 2 guarded by a predicate recomputed from the warp index."""

    form: int


@dataclass(frozen=True)
class Filler:
    """An ordinary instruction that touches neither TMEM nor control flow."""

    text: str


@dataclass(frozen=True)
class Ret:
    """An early ``ret`` (always the last item of its sequence)."""


@dataclass(frozen=True)
class If:
    """``if cond then … else …`` as a guarded ``bra``: ``cond`` is ``("param", i, negated)`` (kernel parameter i is
    non-zero, or zero when negated) or ``("warp", op, k)`` (``warp op k`` with op in eq/ne/lt/ge); ``layout``
    chooses which side falls through."""

    cond: tuple
    then: tuple
    other: tuple
    layout: int


@dataclass(frozen=True)
class Scope:
    """A nested ``{ }`` scope with its own label names."""

    body: tuple


@dataclass
class Program:
    """A generated kernel: ``text`` (valid PTX for ``ptxas -arch=sm_100a``) and its ground truth: ``leaks`` (some
    parameter assignment lets warp 0 reach ``ret`` with no dealloc), ``double_frees`` (one lets it dealloc twice),
    ``alloc_line`` (1-based line of the alloc)."""

    body: tuple
    text: str = ""
    leaks: bool = False
    double_frees: bool = False
    alloc_line: int = 0
    counts: list = field(default_factory=list)


def _items(depth: int):
    leaf = st.one_of(st.builds(Dealloc, st.integers(0, 2)), st.builds(Filler, st.sampled_from(_FILLERS)))
    if depth <= 0:
        return leaf
    cond = st.one_of(st.tuples(st.just("param"), st.integers(0, N_PARAMS - 1), st.booleans()),
                     st.tuples(st.just("warp"), st.sampled_from(sorted(_WARP_OPS)), st.integers(0, 3)))
    sub = _seqs(depth - 1)
    return st.one_of(leaf, leaf, st.builds(If, cond, sub, sub, st.integers(0, 1)), st.builds(Scope, sub))


def _seqs(depth: int):
    return st.tuples(st.lists(_items(depth), max_size=4), st.booleans()).map(
        lambda t: tuple(t[0]) + ((Ret(),) if t[1] else ()))


def _run(seq: tuple, env: tuple, count: int) -> tuple[int, bool]:
    """Warp 0 runs ``seq`` under parameter truth values ``env``: ``(deallocs so far, returned)``."""
    for item in seq:
        if isinstance(item, Dealloc):
            count += 1
        elif isinstance(item, Ret):
            return count, True
        elif isinstance(item, Scope):
            count, done = _run(item.body, env, count)
            if done:
                return count, True
        elif isinstance(item, If):
            kind, a, b = item.cond
            taken = (env[a] != b) if kind == "param" else _WARP_OPS[a](0, b)
            count, done = _run(item.then if taken else item.other, env, count)
            if done:
                return count, True
    return count, False


class _Emitter:
    def __init__(self):
        self.lines: list[str] = []
        self.label = 0
        self.pred = 1

    def fresh_label(self, stem: str) -> str:
        self.label += 1
        return f"{stem}_{self.label}"

    def fresh_pred(self) -> str:
        self.pred += 1
        return f"%p{self.pred}"

    def seq(self, seq: tuple, indent: str) -> None:
        for item in seq:
            if isinstance(item, Filler):
                self.lines.append(indent + item.text)
            elif isinstance(item, Ret):
                self.lines.append(indent + "ret;")
            elif isinstance(item, Dealloc):
                dealloc = "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 128;"
                if item.form == 0:
                    self.lines.append(indent + "@%p0 " + dealloc)
                elif item.form == 1:
                    skip = self.fresh_label("SKIP")
                    self.lines += [indent + f"@!%p0 bra {skip};", indent + dealloc, f"{skip}:"]
                else:
                    p = self.fresh_pred()
                    self.lines += [indent + f"setp.eq.u32 {p}, %r2, 0;", indent + f"@{p} " + dealloc]
            elif isinstance(item, Scope):
                self.lines.append(indent + "{")
                self.seq(item.body, indent + "\t")
                self.lines.append(indent + "}")
            elif isinstance(item, If):
                kind, a, b = item.cond
                p = self.fresh_pred()
                if kind == "param":
                    self.lines.append(indent + f"setp.{'eq' if b else 'ne'}.u32 {p}, %r{10 + a}, 0;")
                else:
                    self.lines.append(indent + f"setp.{a}.u32 {p}, %r2, {b};")
                end = self.fresh_label("END")
                side = self.fresh_label("ELSE" if item.layout == 0 else "THEN")
                first, second = (item.then, item.other) if item.layout == 0 else (item.other, item.then)
                self.lines.append(indent + (f"@!{p} bra {side};" if item.layout == 0 else f"@{p} bra {side};"))
                self.seq(first, indent + "\t")
                self.lines.append(indent + f"bra.uni {end};")
                self.lines.append(f"{side}:")
                self.seq(second, indent + "\t")
                self.lines.append(f"{end}:")


def render(body: tuple) -> Program:
    """The PTX text and ground truth of a generated kernel body."""
    em = _Emitter()
    em.seq(body, "\t")
    params = ", ".join(f".param .u32 n{i}" for i in range(N_PARAMS))
    head = [".version 8.7", ".target sm_100a", ".address_size 64", "",
            f".visible .entry k({params})", ".reqntid 128", "{",
            f"\t.reg .pred %p<{em.pred + 1}>;", "\t.reg .b32 %r<32>;", "\t.shared .align 4 .b32 slot;",
            "\tmov.u32 %r1, %tid.x;", "\tshr.u32 %r2, %r1, 5;", "\tsetp.eq.u32 %p0, %r2, 0;"]
    head += [f"\tld.param.u32 %r{10 + i}, [n{i}];" for i in range(N_PARAMS)]
    head += ["\tmov.u32 %r20, 0;", "\tmov.u32 %r3, slot;",
             "\t@%p0 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 128;"]
    alloc_line = len(head)
    head += ["\t@%p0 tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;",
             "\ttcgen05.fence::before_thread_sync;", "\tbar.sync 0;", "\ttcgen05.fence::after_thread_sync;",
             "\tld.shared.b32 %r4, [%r3];"]
    lines = head + em.lines + ["\tret;", "}", ""]
    counts = [_run(body, env, 0)[0] for env in itertools.product((False, True), repeat=N_PARAMS)]
    return Program(body, "\n".join(lines), min(counts) == 0, max(counts) >= 2, alloc_line, counts)


def programs(depth: int = 3):
    """Strategy: generated kernels (``Program``) with branch nesting up to ``depth``."""
    return _seqs(depth).map(render)


# ---- mutations of real files ----

def mutate(data: bytes, kind: str, a: int, b: int, blob: bytes) -> bytes:
    """Apply one mutation to ``data``: ``delete`` line a, ``duplicate`` line a, ``truncate`` at byte a, ``bytes``
    (insert ``blob`` at byte a), ``swap`` the first two operands of line a, ``move`` line a to before line b."""
    lines = data.split(b"\n")
    n = len(lines)
    if kind == "delete":
        del lines[a % n]
    elif kind == "duplicate":
        lines.insert(a % n, lines[a % n])
    elif kind == "truncate":
        return data[: a % (len(data) + 1)]
    elif kind == "bytes":
        k = a % (len(data) + 1)
        return data[:k] + blob + data[k:]
    elif kind == "swap":
        line = lines[a % n]
        head, sep, rest = line.partition(b" ")
        ops = rest.rstrip(b";").split(b",")
        if sep and len(ops) >= 2:
            ops[0], ops[1] = ops[1].strip(), b" " + ops[0].strip()
            lines[a % n] = head + sep + b",".join(ops) + (b";" if rest.endswith(b";") else b"")
    elif kind == "move":
        line = lines.pop(a % n)
        lines.insert(b % n, line)
    return b"\n".join(lines)


def mutations():
    """Strategy: ``(kind, a, b, blob)`` arguments for ``mutate``."""
    return st.tuples(st.sampled_from(["delete", "duplicate", "truncate", "bytes", "swap", "move"]),
                     st.integers(0, 1 << 20), st.integers(0, 1 << 20), st.binary(min_size=1, max_size=8))
