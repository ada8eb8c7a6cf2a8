"""Small PTX kernels shared by the integration tests (formats, SARIF, config, suppressions, baseline, server).

``NCOLS_96``: warp 0 allocates and frees 96 TMEM columns, so TM102 invalid-ncols fires on line 16 (the alloc,
columns 2-68) and line 18 (the dealloc, columns 2-56) and nothing else does."""

NCOLS_96 = """\
.version 8.7
.target sm_100a
.address_size 64

.visible .entry k()
.reqntid 128
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<6>;
\t.shared .align 4 .b32 slot;
\tmov.u32 %r1, %tid.x;
\tshr.u32 %r2, %r1, 5;
\tsetp.ne.u32 %p1, %r2, 0;
\tmov.u32 %r3, slot;
\t@%p1 bra DONE;
\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 96;
\tld.shared.u32 %r4, [%r3];
\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 96;
\ttcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
DONE:
\tret;
}
"""

ALLOC_LINE = 16
DEALLOC_LINE = 18
ALLOC_END_COLUMN = 68
DEALLOC_END_COLUMN = 56
TM102_ALLOC = "tcgen05.alloc column count 96 is not a power of two (nCols must be a power of two in [32, 512])"
TM102_DEALLOC = "tcgen05.dealloc column count 96 is not a power of two (nCols must be a power of two in [32, 512])"


def with_comment(text: str, line: int, comment: str) -> str:
    """``text`` with `` // comment`` appended to 1-based ``line`` (after any comment already there)."""
    lines = text.split("\n")
    lines[line - 1] = lines[line - 1] + " " + comment
    return "\n".join(lines)


def insert_line(text: str, before: int, new_line: str) -> str:
    """``text`` with ``new_line`` inserted so that it becomes 1-based line ``before``."""
    lines = text.split("\n")
    lines.insert(before - 1, new_line)
    return "\n".join(lines)
