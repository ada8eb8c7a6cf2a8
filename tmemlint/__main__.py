"""``python -m tmemlint``: the same as the ``tmemlint`` command."""

from tmemlint.entry import console

console()
