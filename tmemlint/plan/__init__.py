"""``tmemlint plan``: the TMEM resource report of a kernel (regions, column budget, liveness, reuse, readback),
built from the analyses as a versioned JSON model (``model``) and rendered as text (``render_text``) or as a
picture (``render_svg``)."""
