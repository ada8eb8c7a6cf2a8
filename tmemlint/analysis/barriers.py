"""Which mbarrier an address names, as far as the code shows: a commit's and a wait's barrier compared.

A thin view of the one classifier (``analysis.sync``): ``barrier_identity`` is ``sync.address_form`` (the address
as a linear form over the definitions it is computed from, PTX ISA §9.7.13.15), ``may_be_same_barrier`` its
may-alias test (``sync.forms_may_alias``).
"""

from __future__ import annotations

from tmemlint.analysis.sync import AddressForm, address_form, forms_may_alias
from tmemlint.analysis.values import ValueAnalysis
from tmemlint.ir import Instruction


def barrier_identity(values: ValueAnalysis, inst: Instruction) -> AddressForm | None:
    """``sync.address_form``: what names the mbarrier of a commit or wait, or None."""
    return address_form(values, inst)


def may_be_same_barrier(commit: AddressForm | None, wait: AddressForm | None) -> bool:
    """``sync.forms_may_alias``: whether a wait on ``wait`` may be a wait for the commit to ``commit``."""
    return forms_may_alias(commit, wait)


__all__ = ["barrier_identity", "may_be_same_barrier"]
