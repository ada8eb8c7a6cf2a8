"""``tmemlint plan --design design.toml``: the TMEM plan of a kernel not yet written, from its objects.

A design lists TMEM objects (``[[object]]``: ``name``, ``kind`` ∈ accumulator, A, scale-A, scale-B, data;
``dtype``; ``m`` × ``n`` tile; ``stages``; ``aliases`` = the name of an object it is laid over, e.g. P over S; ``live = [first, last]`` = the
phases it is live in, for the peak) and
``[design]`` settings (``cta_group``, ``ctas_per_sm``).  Column counts per stage (PTX ISA §9.7.16.2.1 cells of 32
bits, datapath layouts of §9.7.16.10.5, the reference's §2.5): an accumulator holds N cells per row, whatever its
dtype (M=128 with ``cta_group::2`` splits N over the pair: N/2 per CTA); an A operand in TMEM packs
``32 / bits(dtype)`` elements per cell (``n`` is K); scale factors take 4 columns per 128 rows this CTA holds
(scale-A: M / cta_group rows; scale-B: N rows);
``data`` packs like A.  Objects are laid out in the order given, aliases at their target's offset; the allocation is
the next power of two ≥ 32 of the columns used.  The output model is a dict (``plan_design``), rendered as text
(``render_design``) or as a C++ header of ``constexpr`` offsets (``render_cuda``); ``compare`` says where a
kernel's plan departs from it.
"""

from __future__ import annotations

import re
import tomllib

KINDS = ("accumulator", "A", "scale-A", "scale-B", "data")
_BITS = {"f32": 32, "s32": 32, "tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8, "f8": 8, "i8": 8, "u8": 8,
         "ue8m0": 8, "ue4m3": 8, "e2m3": 6, "e3m2": 6, "f6": 6, "e2m1": 4, "f4": 4}
_PREFIX = {"accumulator": "acc", "A": "A", "scale-A": "SFA", "scale-B": "SFB", "data": "data"}


class DesignError(Exception):
    """The design file cannot be read or describes an impossible layout (the message says which object)."""


def load_design(path: str) -> dict:
    """The parsed TOML of ``path``.  Raises DesignError."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise DesignError(f"cannot read: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise DesignError(f"not valid TOML: {e}") from None


def _int(obj: dict, key: str, default: int | None, where: str) -> int:
    v = obj.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise DesignError(f"{where}: '{key}' must be a positive integer (got {v!r})")
    return v


def _columns(o: dict, cta_group: int, where: str) -> tuple[int, int]:
    """``(columns per stage, lanes)`` of one object."""
    kind = o["kind"]
    m = _int(o, "m", 128, where)
    if kind in ("scale-A", "scale-B"):
        # 4 columns (one 32-bit cell of 4 byte scales per row) per 128 rows held by this CTA: A's M rows are split
        # over the pair under cta_group::2, B's N rows are not (DeepGEMM N=128: 4 columns; ThunderKittens N=256: 8)
        rows = m // cta_group if kind == "scale-A" else _int(o, "n", 128, where)
        return 4 * max(1, -(-rows // 128)), 128
    n = _int(o, "n", None, where)
    lanes = 64 if m == 64 and cta_group == 1 else 128
    if kind == "accumulator":
        cols = n // 2 if (cta_group == 2 and m == 128) else n
        return cols, lanes
    dtype = o.get("dtype", "bf16")
    bits = _BITS.get(dtype)
    if bits is None:
        raise DesignError(f"{where}: unknown dtype {dtype!r} (one of {', '.join(sorted(_BITS))})")
    return -(-n * bits // 32), lanes


def plan_design(d: dict, ctas_per_sm: int | None = None) -> dict:
    """The plan of a design (see the module docstring): objects with their column offsets per stage, the budget,
    the per-SM fit and the lifecycle each object's reuse needs.  Raises DesignError."""
    top = d.get("design", {})
    cta_group = top.get("cta_group", 1)
    if cta_group not in (1, 2):
        raise DesignError(f"[design]: cta_group must be 1 or 2 (got {cta_group!r})")
    ctas = ctas_per_sm or top.get("ctas_per_sm", 1)
    objs = d.get("object", [])
    if not isinstance(objs, list) or not objs:
        raise DesignError("no [[object]]: a design lists its TMEM objects")
    placed: dict[str, dict] = {}
    col = 0
    out = []
    for k, o in enumerate(objs):
        where = f"object {k + 1}" + (f" ({o.get('name')})" if isinstance(o, dict) and o.get("name") else "")
        if not isinstance(o, dict) or not isinstance(o.get("name"), str) or not re.fullmatch(r"[A-Za-z_]\w*",
                                                                                              o["name"]):
            raise DesignError(f"{where}: 'name' must be an identifier")
        if o.get("kind") not in KINDS:
            raise DesignError(f"{where}: 'kind' must be one of {', '.join(KINDS)} (got {o.get('kind')!r})")
        if o["name"] in placed:
            raise DesignError(f"{where}: the name {o['name']} is used twice")
        stages = _int(o, "stages", 1, where)
        per_stage, lanes = _columns(o, cta_group, where)
        alias = o.get("aliases")
        if alias is not None:
            if alias not in placed:
                raise DesignError(f"{where}: aliases {alias!r}, which is not an object declared before it")
            t = placed[alias]
            if per_stage > t["columns_per_stage"] or stages > t["stages"]:
                raise DesignError(f"{where}: {per_stage} columns x {stages} stages do not fit in {alias} "
                                  f"({t['columns_per_stage']} x {t['stages']})")
            starts = [t["starts"][s] for s in range(stages)]
        else:
            starts = [col + s * per_stage for s in range(stages)]
            col += stages * per_stage
        row = {"name": o["name"], "kind": o["kind"], "dtype": o.get("dtype"), "m": o.get("m", 128), "n": o.get("n"),
               "stages": stages, "columns_per_stage": per_stage, "lanes": [0, lanes], "starts": starts,
               "columns": [starts[0], starts[-1] + per_stage], "aliases": alias,
               "live": _live(o, where), "lifecycle": _lifecycle(o["kind"], alias, stages)}
        placed[o["name"]] = row
        out.append(row)
    raw = col
    alloc = 32
    while alloc < raw:
        alloc *= 2
    return {"design": top.get("name", "design"), "cta_group": cta_group, "ctas_per_sm": ctas, "objects": out,
            "budget": {"raw_columns": raw, "allocated_columns": alloc if raw <= 512 else None,
                       "waste_columns": alloc - raw if raw <= 512 else None, "fits_cta": raw <= 512,
                       "per_sm_columns": alloc * ctas, "fits": raw <= 512 and alloc * ctas <= 512},
            "peak_columns": _peak(out)}


def _live(o: dict, where: str) -> list[int] | None:
    """The declared lifetime ``live = [first, last]`` of an object: the phases (integers in the order the kernel
    goes through them, e.g. 0 = QK^T, 1 = softmax, 2 = PV) from its first write to its last read, both included;
    None (the default): live for the whole kernel.  Raises DesignError."""
    v = o.get("live")
    if v is None:
        return None
    if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
            and 0 <= v[0] <= v[1]):
        raise DesignError(f"{where}: 'live' must be [first, last] phases, 0 <= first <= last (got {v!r})")
    return [v[0], v[1]]


def _peak(objects: list[dict]) -> int:
    """Most columns live at once (PTX ISA §9.7.16.2.1 columns): at each phase where some object's lifetime
    starts, the union of the columns of every stage of the objects live then (an object without ``live`` always
    is; an alias shares its target's columns and is counted once).  Without declared lifetimes: every column."""
    points = sorted({o["live"][0] for o in objects if o["live"] is not None}) or [0]
    best = 0
    for p in points:
        cols: set[int] = set()
        for o in objects:
            lv = o["live"]
            if lv is None or lv[0] <= p <= lv[1]:
                for st in o["starts"]:
                    cols.update(range(st, st + o["columns_per_stage"]))
        best = max(best, len(cols))
    return best


def _lifecycle(kind: str, alias: str | None, stages: int) -> str:
    """The completion each reuse of an object must wait for (reference §3 canonical patterns)."""
    st = "of the same stage " if stages > 1 else ""
    if kind == "accumulator":
        return ("MMA writes; tcgen05.commit to full[stage] -> the readers wait on it, "
                "tcgen05.fence::after_thread_sync, tcgen05.ld, tcgen05.wait::ld, tcgen05.fence::before_thread_sync, "
                f"arrive on empty[stage] -> the MMA {st}waits on empty[stage] and tcgen05.fence::after_thread_sync "
                "before it writes again")
    if kind == "A" and alias:
        return (f"written with tcgen05.st over {alias} only after {alias}'s tcgen05.ld and tcgen05.wait::ld; "
                f"tcgen05.wait::st and a fenced hand-over before the MMA reads it; the next MMA into {alias} waits for "
                f"the commit of the MMA that read it")
    if kind in ("scale-A", "scale-B"):
        return (f"tcgen05.cp then the MMA in issue order (a pipelined pair); the next cp {st}only after the MMAs "
                f"that read these columns completed (tcgen05.commit, then an mbarrier wait): mma then cp is not a "
                f"pipelined pair")
    return ("tcgen05.st then tcgen05.wait::st before another thread or an MMA reads it; tcgen05.ld then "
            "tcgen05.wait::ld before the columns are written again or handed over")


def render_design(p: dict) -> str:
    """The design's plan as text."""
    out = [f"TMEM design {p['design']} (cta_group {p['cta_group']}, {p['ctas_per_sm']} CTA(s) per SM)", ""]
    for o in p["objects"]:
        st = f", {o['stages']} stages at {', '.join(map(str, o['starts']))}" if o["stages"] > 1 else ""
        al = f", over {o['aliases']}" if o["aliases"] else ""
        out.append(f"  {o['name']:<8} {o['kind']:<12} lanes [{o['lanes'][0]}, {o['lanes'][1]}) columns "
                   f"[{o['columns'][0]}, {o['columns'][1]}) ({o['columns_per_stage']} per stage{st}{al})")
    b = p["budget"]
    out.append("")
    if b["allocated_columns"] is None:
        out.append(f"  raw columns {b['raw_columns']}: over the 512 columns of TMEM")
    else:
        out.append(f"  raw columns {b['raw_columns']}, allocate {b['allocated_columns']} (power of two), waste "
                   f"{b['waste_columns']}; peak live {p['peak_columns']}; per SM {b['allocated_columns']} x "
                   f"{p['ctas_per_sm']} = {b['per_sm_columns']} of 512 ({'fits' if b['fits'] else 'OVER'})")
    out.append("")
    out.append("Lifecycle")
    for o in p["objects"]:
        out.append(f"  {o['name']}: {o['lifecycle']}")
    return "\n".join(out) + "\n"


def render_cuda(p: dict) -> str:
    """A header of ``constexpr`` column offsets and the allocation size a kernel can include."""
    guard = re.sub(r"\W", "_", f"TMEM_PLAN_{p['design']}".upper())
    out = [f"// TMEM layout of design {p['design']}, generated by tmemlint plan --design --format cuda.",
           "// Column offsets are relative to the address tcgen05.alloc returns (lane 0).",
           f"#ifndef {guard}", f"#define {guard}", "#include <cstdint>", ""]
    b = p["budget"]
    out.append(f"constexpr uint32_t kTmemAllocCols = {b['allocated_columns'] or 0};  // raw {b['raw_columns']}")
    for o in p["objects"]:
        n = o["name"]
        out.append(f"constexpr uint32_t kTmem{n}Col = {o['starts'][0]};")
        if o["stages"] > 1:
            out.append(f"constexpr uint32_t kTmem{n}Stages = {o['stages']};")
            out.append(f"constexpr uint32_t kTmem{n}StageStride = {o['columns_per_stage']};")
        out.append(f"constexpr uint32_t kTmem{n}Cols = {o['columns_per_stage']};")
    out.append("static_assert(kTmemAllocCols >= 32 && kTmemAllocCols <= 512, \"TMEM allocation\");")
    out += ["", f"#endif  // {guard}", ""]
    return "\n".join(out)


def compare(design: dict, plan: dict) -> list[str]:
    """Where each kernel of ``plan`` departs from ``design``: allocation size, and per design object stage the
    region of the same kind at the same columns (missing, moved or resized); regions the design does not have."""
    out = []
    for k in plan["kernels"]:
        name = k.get("demangled") or k["kernel"]
        alloc = k["budget"]["allocated_columns"]
        want = design["budget"]["allocated_columns"]
        if alloc != want:
            out.append(f"{name}: allocates {alloc} columns, the design {want}")
        regions = [r for r in k["regions"]]
        used = set()
        for o in design["objects"]:
            for s, start in enumerate(o["starts"]):
                lo, hi = start, start + o["columns_per_stage"]
                label = o["name"] + (f"[{s}]" if o["stages"] > 1 else "")
                same = [r for r in regions if r["kind"] == o["kind"] and r["columns"] == [lo, hi]]
                if same:
                    used.add(same[0]["name"])
                    continue
                near = [r for r in regions if r["kind"] == o["kind"] and r["columns"][0] < hi and lo < r["columns"][1]]
                if near:
                    used.update(r["name"] for r in near)
                    got = ", ".join(f"{r['name']} [{r['columns'][0]}, {r['columns'][1]})" for r in near)
                    out.append(f"{name}: {label} is [{lo}, {hi}) in the design, the kernel has {got}")
                else:
                    out.append(f"{name}: {label} ({o['kind']}, [{lo}, {hi})) is not in the kernel")
        for r in regions:
            if r["name"] not in used and r["kind"] != "data":
                out.append(f"{name}: {r['name']} ({r['kind']}, [{r['columns'][0]}, {r['columns'][1]})) is not in "
                           f"the design")
    if not out:
        out.append("the kernel matches the design: same allocation, every object at its columns")
    return out
