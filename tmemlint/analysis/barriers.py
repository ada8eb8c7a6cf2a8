"""Which mbarrier an address names, as far as the code shows: a commit's and a wait's barrier compared.

An mbarrier address (PTX ISA §9.7.13.15) is usually computed: a shared variable plus a constant (``full[2]``), or
plus a stage register times the barrier size (``empty[stage]``).  ``barrier_identity`` writes it as a linear form
over the definitions it is computed from; two equal forms are the same barrier at run time, two forms on the same
terms with different constants (``full[stage]``, ``empty[stage]``) or on two different variables are two barriers;
anything else cannot be told apart.  ``analysis.order.BarrierKey`` is the coarser, value-based view the
happens-before model counts phases on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tmemlint.ir import Address, Imm, Instruction, Operand, Reg, Sym

if TYPE_CHECKING:  # pragma: no cover
    from tmemlint.analysis.values import ValueAnalysis

Term = tuple[str | int | tuple[int, ...], ...]
"""A term of a linear form, still a tagged tuple: ``("sym", name)``, ``("merged", register, definition indices)``
or ``("def", instruction index, register)``."""
LinearForm = tuple[dict[Term, int], int]
"""``({term: coefficient}, constant)``."""
BarrierIdentity = tuple[tuple[tuple[Term, int], ...], int]
"""``(((term, coefficient), …) sorted, constant)``: a linear form made hashable (``barrier_identity``)."""


def linear_form(values: "ValueAnalysis", inst: Instruction, o: Operand, depth: int = 0) -> LinearForm | None:
    """Operand ``o`` at ``inst`` as a linear form ``({term: coefficient}, constant)`` over the definitions it is
    computed from (symbols, kernel parameters, registers merged from several definitions, other instructions'
    results), following single reaching definitions through mov/cvt/cvta/add/sub and shifts or multiplications by
    constants; None past a few definitions."""
    if type(o) is Imm:
        return {}, o.value
    if type(o) is Sym:
        return {("sym", o.name): 1}, o.offset  # smem_raw+135200: source mode folds field offsets into the symbol
    if type(o) is not Reg or depth > 12:
        return None
    va = values
    defs = va._reaching(inst, o.name)
    if len(defs) != 1:
        return {("merged", o.name, tuple(defs)): 1}, 0
    d = va.insts[defs[0]]
    ops = d.operands
    leaf: LinearForm = ({("def", d.index, o.name): 1}, 0)
    if d.op in ("mov", "cvt", "cvta") and len(ops) == 2:
        return linear_form(values, d, ops[1], depth + 1) or leaf
    if d.op in ("add", "sub") and len(ops) == 3:
        a, b = linear_form(values, d, ops[1], depth + 1), linear_form(values, d, ops[2], depth + 1)
        if a is None or b is None:
            return leaf
        sign = 1 if d.op == "add" else -1
        terms = dict(a[0])
        for t, c in b[0].items():
            terms[t] = terms.get(t, 0) + sign * c
        return {t: c for t, c in terms.items() if c}, a[1] + sign * b[1]
    if d.op in ("shl", "mul") and len(ops) == 3 and type(ops[2]) is Imm:
        a = linear_form(values, d, ops[1], depth + 1)
        if a is None:
            return leaf
        k = (1 << ops[2].value) if d.op == "shl" else ops[2].value
        return {t: c * k for t, c in a[0].items()}, a[1] * k
    return leaf


def barrier_identity(values: "ValueAnalysis", inst: Instruction) -> BarrierIdentity | None:
    """What names the mbarrier of a commit or wait, such that equal identities are the same barrier at run time:
    the address as a linear form over the definitions it is computed from (``linear_form``: a pipeline's stage
    address recomputed from the same stage register is the same barrier; ``full[stage]`` and ``empty[stage]``
    differ by their constant).  None when there is no address operand or it cannot be followed."""
    addr = next((o for o in inst.operands if type(o) is Address), None)
    if addr is None or addr.base is None:
        return None
    form = linear_form(values, inst, addr.base)
    if form is None:
        return None
    return (tuple(sorted(form[0].items(), key=repr)), form[1] + addr.offset)


def may_be_same_barrier(commit: BarrierIdentity | None, wait: BarrierIdentity | None) -> bool:
    """Whether a wait on the barrier with identity ``wait`` may be a wait for the commit to ``commit``
    (``barrier_identity``): not when both are computed from the same terms with different constants (``full[s]``
    and ``empty[s]`` of one stage register) or are two different variables at constant offsets; otherwise the
    analysis cannot tell them apart and takes them as the same."""
    if commit is None or wait is None:
        return True
    if commit[0] == wait[0]:
        return commit[1] == wait[1]
    # two different shared variables, each at a constant offset: two barriers
    return not (_one_symbol(commit[0]) and _one_symbol(wait[0]))


def _one_symbol(terms: tuple[tuple[Term, int], ...]) -> bool:
    """Whether a linear form's terms are a single shared variable's address (``((("sym", name), 1),)``)."""
    return len(terms) == 1 and terms[0][0][0] == "sym" and terms[0][1] == 1


__all__ = ["barrier_identity", "linear_form", "may_be_same_barrier"]
