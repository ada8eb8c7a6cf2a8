"""The rule table without the rules: code, name, default severity, whether on by default, and summary of every
rule, for the commands that only print it (``tmemlint rules`` and ``tmemlint rule CODE``, answered by
``tmemlint.entry``), which then import no check and no analysis.  The rows are generated from the registry
(``tmemlint.checks``) by ``python -m tmemlint.docs --write-readme``, with README.md's rule table;
``tests/test_startup.py`` checks that they are current.  A leaf module: it imports nothing."""

# generated rows: begin
ROWS = (
    ('TM101', 'tmem-leak', 'error', True,
     'an allocation that reaches kernel exit on some feasible path without a matching dealloc'),
    ('TM102', 'invalid-ncols', 'error', True,
     'alloc or dealloc column count that is not a power of two in [32, 512]'),
    ('TM103', 'dealloc-mismatch', 'error', True,
     "dealloc whose column count differs from its allocation, or whose address is not the allocation's base"),
    ('TM104', 'double-dealloc', 'error', True,
     'dealloc of columns already freed, or with no allocation on some path'),
    ('TM105', 'alloc-after-relinquish', 'error', True,
     'tcgen05.alloc reachable after tcgen05.relinquish_alloc_permit'),
    ('TM106', 'column-oversubscription', 'error', True,
     'more than 512 TMEM columns live at once in a CTA (error), or per SM with several CTAs (warning)'),
    ('TM107', 'missing-relinquish', 'info', False,
     'no tcgen05.relinquish_alloc_permit after the last alloc'),
    ('TM108', 'alloc-warp', 'error', True,
     'alloc or dealloc executed by more than one warp'),
    ('TM109', 'divergent-collective', 'error', True,
     'a .sync.aligned tcgen05 instruction under a condition that differs between lanes of a warp'),
    ('TM110', 'cta-group-mix', 'error', True,
     '.cta_group::1 and .cta_group::2 in one kernel, including its callees'),
    ('TM111', 'pair-alloc-unsynchronized', 'error', True,
     'a .cta_group::2 alloc not preceded by a cluster barrier, or a paired dealloc without one after the work'),
    ('TM112', 'pair-issue-not-leader', 'error', True,
     'a .cta_group::2 mma/cp/shift/commit whose guard does not confine it to the leader CTA of the pair'),
    ('TM201', 'non-tcgen05-access', 'error', True,
     'ld/st/atom/red/cp.async whose address derives from a TMEM address'),
    ('TM202', 'slot-address-as-taddr', 'error', True,
     'the shared-memory address of the alloc slot used as a TMEM address'),
    ('TM203', 'unallocated-access', 'error', True,
     'a TMEM operand that does not derive from an allocation of this kernel'),
    ('TM204', 'lane-quadrant', 'error', True,
     'tcgen05.ld/st whose lane field is outside 32*(warpid%4) ... +31 where the warp is known'),
    ('TM205', 'slot-read-unsynchronized', 'error', True,
     'a warp other than the allocating one reads the alloc slot with no barrier after the alloc'),
    ('TM206', 'alloc-slot-aliased', 'warning', True,
     "a store to the alloc slot's bytes between the alloc and a later read of the slot"),
    ('TM301', 'ld-used-before-wait', 'info', False,
     'destination registers of tcgen05.ld read before tcgen05.wait::ld on some path (legal; off by default)'),
    ('TM302', 'tmem-reuse-before-wait-ld', 'error', True,
     'TMEM read by tcgen05.ld then overwritten, handed over or freed with no tcgen05.wait::ld in between'),
    ('TM303', 'st-not-waited', 'error', True,
     'tcgen05.st followed by an mma or ld of the same cells, a hand-over, or a dealloc, with no tcgen05.wait::st'),
    ('TM304', 'accumulator-read-before-complete', 'error', True,
     'tcgen05.ld of columns written by tcgen05.mma/cp with no completion (commit + mbarrier wait) between'),
    ('TM305', 'dealloc-unsynchronized', 'error', True,
     "dealloc with no synchronization after other warps' last tcgen05 access of the allocation"),
    ('TM306', 'missing-tcgen05-fence', 'info', False,
     'synchronization between tcgen05 operations without tcgen05.fence::before/after_thread_sync'),
    ('TM307', 'mma-operand-overwritten', 'error', True,
     'tcgen05.cp/st writes TMEM columns an earlier tcgen05.mma reads, with no completion of that MMA between'),
    ('TM308', 'cross-warp-tmem-race', 'error', True,
     'two warps access the same TMEM cells, one with tcgen05.st, with no hand-over between them'),
    ('TM309', 'remote-release-scope', 'warning', True,
     "data a peer CTA's paired tcgen05 op reads published with a CTA-scope remote arrive or acquired with a CTA-scope wait"),
    ('TM310', 'remote-barrier-local-form', 'error', True,
     "an mbarrier operation in the .shared/.shared::cta form on a peer CTA's barrier address (from mapa)"),
    ('TM311', 'arrive-count-overflow', 'error', True,
     'more arrivals reach an mbarrier phase than its expected count (a warp-wide arrive on a count-1 barrier)'),
    ('TM312', 'commit-target-recycled', 'error', True,
     'an mbarrier a multicast commit or remote arrive targets is invalidated, re-initialised or abandoned by exit before its CTA waited for it'),
    ('TM313', 'access-after-release', 'error', True,
     'tcgen05.ld/st/cp of columns after the thread released them to their producer, before waiting again'),
    ('TM314', 'single-issue-guard', 'error', True,
     'a single-thread tcgen05 mma/cp/shift/commit whose guard can hold for more than one thread of a warp'),
    ('TM315', 'wait-never-completes', 'error', True,
     'an mbarrier wait for a phase that no arrival can complete on some feasible path (the CTA hangs)'),
    ('TM401', 'scale-accumulator-overlap', 'error', True,
     'block-scale factor columns overlap the accumulator columns of a tcgen05.mma'),
    ('TM402', 'region-out-of-bounds', 'error', True,
     'an operand footprint that extends past the end of its allocation or past column 512'),
    ('TM403', 'operand-overlap', 'warning', True,
     "A-in-TMEM or sparsity metadata columns overlapping the MMA's own accumulator"),
    ('TM900', 'syntax-error', 'error', True,
     'the input is not valid PTX: file, line and column; the other files are still checked'),
    ('TM901', 'not-analysable', 'warning', True,
     'text that cannot be analysed statically; the message says what was skipped'),
    ('TM902', 'unused-suppression', 'warning', True,
     'a tmemlint suppression comment that suppressed nothing (or names an unknown rule)'),
    ('TM903', 'asm-operand-direction', 'error', True,
     'CUDA inline asm (source mode): an operand a tcgen05 instruction writes bound as an input, or one it only reads bound as an output'),
)
# generated rows: end


def rules_lines() -> list[str]:
    """The lines of ``tmemlint rules``: code, name, default severity (`` (off)`` for a rule that is off by default)
    and summary, as ``tmemlint.cli.rules_cmd`` prints them from the registry."""
    return [f"{code}  {name:<34} {sev + ('' if on else ' (off)'):<14} {summary}" for code, name, sev, on, summary in ROWS]


def resolve_prefix(selector: str) -> list[str]:
    """The codes a selector names (``tmemlint.checks.registry.resolve_prefix`` over ``ROWS``): a code, a name, a
    code prefix (``TM1``) or ``ALL``."""
    s = selector.strip()
    codes = [row[0] for row in ROWS]
    if s.upper() == "ALL":
        return sorted(codes)
    if s.upper() in codes:
        return [s.upper()]
    for code, name, *_ in ROWS:
        if name == s.lower():
            return [code]
    return sorted(c for c in codes if c.startswith(s.upper())) if s.upper().startswith("TM") else []
