"""Which happens-before questions TM206 and TM302 ask of ``SyncModel`` (issue 29): each pair of a rule needs two
verdicts, and the one that is asked first is the cheaper one, so that a pair the first verdict clears never asks the
costly one.  Findings stay the expected ones (the fixture pairs below, each accepted by ``ptxas -arch=sm_100a`` of
CUDA 13.0).

* TM206 (``checks.access._cross_warp_slot_store``): a store over the allocation slot races when it may follow the
  alloc *and* precede a read of the slot; the reads are asked first, and a store that every read precedes asks
  nothing about the alloc (the question "is a later store ordered before the kernel's first alloc?" is False only
  after the whole chain search over every third class's waits: on Triton's attn_fwd_desc_ws_d128 it ran 344 of
  the file's 534 path simulations).
* TM302 (``checks.ordering._released_for_others``): a load and the next write of its columns by another class race
  when the write's completion reaches the load and the readers hand nothing back per iteration; the handshake
  (barrier sites and CFG paths only) is looked for first, and a pair that has one asks no ``completes_before``.

The spies wrap the model's methods, so the tests run on the interpreted modules only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tmemlint.analysis import order
from tmemlint.analysis.order import SyncModel
from tmemlint.engine import lint_text
from tmemlint.options import Options

PTX = Path(__file__).resolve().parent.parent / "fixtures" / "ptx"

pytestmark = pytest.mark.skipif(not order.__file__.endswith(".py"), reason="SyncModel compiled (mypyc): no spy")


def _spy(monkeypatch, name: str) -> list[tuple[str, str, str]]:
    """Record ``(caller, a's family, b's family)`` for every call of ``SyncModel.<name>(a, ka, b, kb)``."""
    asked: list[tuple[str, str, str]] = []
    real = getattr(SyncModel, name)

    def spy(self, a, ka, b, kb):
        asked.append((sys._getframe(1).f_code.co_name, a.family, b.family))
        return real(self, a, ka, b, kb)

    monkeypatch.setattr(SyncModel, name, spy)
    return asked


def _lint(name: str) -> list[tuple[str, int, int]]:
    return sorted((f.code, f.line, f.column) for f in lint_text((PTX / name).read_text(), name, Options()))


def test_tm206_store_after_every_read_asks_nothing_of_the_alloc(monkeypatch):
    asked = _spy(monkeypatch, "must_happen_before")
    assert _lint("tm206_slot_reused_after_reads_good.ptx") == []
    mine = [q for q in asked if q[0] in ("_cross_warp_slot_store", "unordered")]
    assert mine and all(b != "tcgen05.alloc" for _, _, b in mine)  # only "read before the store?"


def test_tm206_store_before_a_read_still_races(monkeypatch):
    asked = _spy(monkeypatch, "must_happen_before")
    text = (PTX / "tm206_slot_reused_after_reads_bad.ptx").read_text()
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "expect: TM206" in s)
    assert _lint("tm206_slot_reused_after_reads_bad.ptx") == [("TM206", line, 2)]
    mine = [q for q in asked if q[0] in ("_cross_warp_slot_store", "unordered")]
    assert any(b == "tcgen05.alloc" for _, _, b in mine)  # the read is not ordered: then the alloc is asked


def test_tm302_handshake_spares_the_completion_question(monkeypatch):
    asked = _spy(monkeypatch, "completes_before")
    assert _lint("tm302_elected_release_good.ptx") == []
    assert not [q for q in asked if q[0] == "_released_for_others"]
    asked.clear()
    text = (PTX / "tm302_elected_release_bad.ptx").read_text()
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "expect: TM302" in s)
    assert ("TM302", line, 2) in _lint("tm302_elected_release_bad.ptx")
    assert ("_released_for_others", "tcgen05.mma", "tcgen05.ld") in asked
