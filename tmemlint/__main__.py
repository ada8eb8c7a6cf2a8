"""``python -m tmemlint``: the same as the ``tmemlint`` command."""

from tmemlint.cli import main

main()
