"""Source mode: CUDA C++ (``.cu``, ``.cuh``, headers) → the PTX IR, without a compiler.

``parse_cuda(text, path, defines)`` preprocesses the text (``preprocess``), parses it with tree-sitter-cuda, collects
the definitions (``program``) and lowers every kernel, with the device functions it calls inlined, to a
synthetic IR ``Function`` (``lower``).  The result is a ``Module`` that the analyses and rules of
``tmemlint.checks`` read exactly as they read nvcc's PTX, plus the frontend's own diagnostics (TM900: an asm text
that is not PTX; TM901: code that could not be analysed and why).

Which functions: every ``__global__`` kernel.  A file without kernels (a header) is the API of its device
functions: each non-template function holding inline asm is lowered on its own, and only the rules that do not
depend on the kernel around it are reported (not ``BLIND_CODES``: whether a helper's allocation is freed, or its
loads waited for, is up to its callers, which are checked through the kernels that include the header).  In a file with kernels, device
functions that no kernel calls are not analysed, as nvcc (whole-program mode) drops them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from tmemlint.frontend.cuda.common import Diagnostic, macro_hint
from tmemlint.frontend.cuda.lower import Lowering
from tmemlint.frontend.cuda.preprocess import MAX_UNIT_CHARS, preprocess
from tmemlint.frontend.cuda.recover import close_unfinished
from tmemlint.frontend.cuda.sourcemap import Preprocessed, Region
from tmemlint.frontend.cuda.program import FunctionDef, Program
from tmemlint.ir import Module, Span
from tmemlint.threadexpr import trunc_div, trunc_rem


@dataclass(slots=True)
class CudaUnit:
    """The lowered file: ``module`` (one Function per analysed kernel or helper), ``diagnostics`` of the
    frontend, and the number of input lines."""

    module: Module
    diagnostics: list[Diagnostic] = field(default_factory=list)
    lines: int = 0
    pre: Preprocessed | None = None
    #: kernel → the functions it calls whose bodies source mode cannot see (their findings are limited, see
    #: ``BLIND_CODES``)
    blind: dict[str, list[str]] = field(default_factory=dict)


def _calls(f: FunctionDef, prog: Program) -> set[str]:
    """Names that ``f`` calls (plain and last component), from its body."""
    out: set[str] = set()
    if f.body is None:
        return out
    stack = [f.body]
    while stack:
        n = stack.pop()
        if n.type == "call_expression":
            fn = n.child_by_field_name("function")
            if fn is not None:
                if fn.type == "field_expression":
                    name = prog.text(fn.child_by_field_name("field"))
                elif fn.type == "template_function":
                    name = prog.text(fn.child_by_field_name("name"))
                else:
                    name = prog.text(fn)
                name = name.replace(" ", "")
                out.add(name)
                out.add(name.rsplit("::", 1)[-1])
        elif n.type in ("declaration", "field_declaration", "parameter_declaration"):
            t = n.child_by_field_name("type")  # constructors and destructors run where an object is declared
            if t is not None:
                if t.type == "qualified_identifier" and t.child_by_field_name("name") is not None:
                    t = t.child_by_field_name("name")
                if t.type == "template_type":
                    t = t.child_by_field_name("name")
                name = prog.text(t).replace(" ", "").rsplit("::", 1)[-1]
                out.update((name, "~" + name))
        stack.extend(n.named_children)
    return out


class _LazyCalls(dict):
    """``function → names it calls``, computed on first use (only the undecidable-#if check and the reach of a
    kernel need it)."""

    def __init__(self, prog: Program):
        super().__init__()
        self.prog = prog

    def __missing__(self, f: FunctionDef) -> set[str]:
        got = _calls(f, self.prog)
        self[f] = got
        return got

    def get(self, f, default=None):  # noqa: D401 - dict API
        return self[f]


def _has_asm(f: FunctionDef) -> bool:
    if f._has_asm is None:
        found = False
        if f.body is not None:
            stack = [f.body]
            while stack and not found:
                n = stack.pop()
                if n.type == "gnu_asm_expression":
                    found = True
                stack.extend(n.named_children)
        f._has_asm = found
    return f._has_asm


def _region_of(f: FunctionDef, pre: Preprocessed) -> Region | None:
    """An undecidable #if region inside ``f``'s body, if any."""
    if not pre.regions or f.body is None:
        return None
    a = pre.map.input_offset(f.body.start_byte)
    b = pre.map.input_offset(max(f.body.start_byte, f.body.end_byte - 1))
    for r in pre.regions:
        if r.start < b and r.end > a:
            return r
    return None


#: Instantiations of one kernel template lowered (each is a kernel of its own in nvcc's PTX).
MAX_INSTANTIATIONS = 8
#: Angle-included libraries with tcgen05 code (CUTLASS/CuTe, ThunderKittens, DeepGEMM): a kernel built on them may
#: reach Tensor Memory through functions source mode does not read.
_TMEM_LIBRARIES = re.compile(r"^(cute|cutlass|kittens|deep_gemm|flashinfer|tk)\b|kittens\.cuh|tcgen05")


#: A device function declared without its body (defined in another file: -rdc, or a header's prototype).
_PROTOTYPE = re.compile(r"__device__[^;{}]*\)\s*;")


def _may_touch_tmem(pre: Preprocessed) -> bool:
    """Whether anything in the translation unit could reach tcgen05: its text (headers read included) names
    tcgen05, a quoted include was not found, an angle include is a library with tcgen05 code, or a device
    function is declared without its body.  A file for which this is false provably touches no TMEM and is not
    analysed further."""
    return ("tcgen05" in pre.text or bool(pre.missing) or any(_TMEM_LIBRARIES.search(a) for a in pre.angle)
            or _PROTOTYPE.search(pre.text) is not None)


def parse_cuda(text: str, path: str, defines: dict[str, str] | None = None,
               include_dirs: tuple[str, ...] = ()) -> CudaUnit:
    """Lower the CUDA source ``text`` (reported as ``path``) with ``-D`` ``defines``, reading its quoted includes
    next to ``path`` and in ``include_dirs``.  Never raises for bad input: what cannot be read becomes a
    TM900/TM901 diagnostic."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = close_unfinished(text)  # a function left open while typing does not swallow the ones after it
    unit = CudaUnit(Module(path, "9.0", ["sm_100a"], 64), [], text.count("\n") + (0 if text.endswith("\n") else 1))
    unit.module.line_count = unit.lines
    try:
        pre = preprocess(text, defines, path, tuple(include_dirs))
        unit.pre = pre
        if pre.too_large is not None:
            unit.diagnostics.append(_too_large(pre.too_large))
            return unit
        if not _may_touch_tmem(pre):
            return unit
        prog = Program(pre, path)
    except (RecursionError, ValueError, IndexError, KeyError) as e:  # never expected; never a traceback either
        unit.diagnostics.append(Diagnostic("TM901", Span(1, 1, 1, 2), f"the file is not analysed: internal error "
                                                                      f"of source mode ({type(e).__name__}: {e})"))
        return unit
    defined = {f.name for f in prog.all_functions if f.body is not None} | {
        f.qualname for f in prog.all_functions if f.body is not None}
    calls = _LazyCalls(prog)
    by_name: dict[str, list[FunctionDef]] = {}
    for f in prog.all_functions:
        for key in (f.name, f.qualname):
            by_name.setdefault(key, []).append(f)

    def reach(f: FunctionDef) -> list[FunctionDef]:
        seen = {f}
        order = [f]
        i = 0
        while i < len(order):
            for name in calls.get(order[i], ()):
                for g in by_name.get(name, ()):
                    if g not in seen:
                        seen.add(g)
                        order.append(g)
            i += 1
        return order

    kernels = [f for f in prog.all_functions if f.is_kernel and f.body is not None]
    # Without kernels (a header), the device functions that hold asm are the file's API: analyse each alone.
    # In a file with kernels nvcc drops uncalled device functions (whole-program mode), and so does source mode.
    main_end = len(text)
    helpers = [] if kernels else [f for f in prog.all_functions if f.body is not None and f.owner is None
                                  and _has_asm(f) and not f.template_params
                                  and pre.map.input_offset(f.node.start_byte) < main_end]
    # say which kernels (and, in a header, which asm) are under an #if that cannot be decided
    hidden = r"\b__global__\b" if kernels else r"\basm\b|\b__asm__\b|\b__global__\b"
    for r in pre.regions:
        if r.start < len(text) and re.search(hidden, text[r.start:r.end]):
            what = "kernels" if re.search(r"\b__global__\b", text[r.start:r.end]) else "asm statements"
            unit.diagnostics.append(Diagnostic(
                "TM901", Span(r.line, 1, r.line, 2),
                f"{what} under '{r.condition[:80]}' (lines {r.line}-{r.end_line}) are not analysed: the condition is "
                f"not decidable from this file and the -D options{_missing_note(pre)}; pass -DNAME[=VALUE] to choose "
                f"its branch"))
    asm_cache: dict = {}
    mentions = None
    for f in kernels + helpers:
        blocked = _blocking_region(f, reach(f), calls, defined, pre) if pre.regions else None
        if blocked is not None:
            region, why = blocked
            unit.diagnostics.append(Diagnostic(
                "TM901", Span(region.line, 1, region.line, 2),
                f"function {f.name} is not analysed: {why} ('{region.condition[:80]}', lines {region.line}-"
                f"{region.end_line}) is not decidable from this file and the -D options; pass -DNAME[=VALUE] to "
                f"choose its branch"))
            continue
        if f.template_params and mentions is None:
            mentions = _template_mentions(prog)
        insts = _instantiations(f, prog, mentions) if f.template_params else []
        for inst in insts or [None]:
            name = f"{f.name}{inst.label}" if len(insts) > 1 else None
            lw = (Lowering(prog, f, asm_cache, inst.targs, name, inst.outer, inst.deduced) if inst is not None
                  else Lowering(prog, f, asm_cache, None, name))
            fn = lw.run()
            unit.diagnostics.extend(lw.diagnostics)
            if fn is None:
                continue
            if not f.is_kernel:  # a header's helper, analysed without the kernel around it: see BLIND_CODES
                unit.blind[fn.name] = []
            elif lw.unseen:
                unit.blind[fn.name] = list(lw.unseen)
                for callee, sp in lw.unseen.items():
                    unit.diagnostics.append(Diagnostic("TM901", sp, _unseen_message(f.name, callee, pre)))
            unit.module.functions.append(fn)
            for vname, var in fn.variables.items():
                if vname not in unit.module.variables and "." not in vname:
                    unit.module.variables[vname] = var
    return unit


@dataclass(frozen=True, slots=True, eq=False)
class Instantiation:
    """One instantiation of a kernel template that nvcc compiles.  ``targs`` is the ``template_argument_list`` node
    that names it (``k<COLS, GROUP>``); ``outer`` the instantiations of the function templates around that node
    that bind the names in it, outermost first, as ``(FunctionDef, template_argument_list)`` pairs (``launch<256,
    2>`` for ``auto kernel = k<COLS, GROUP>`` inside ``template <int COLS, int GROUP> void launch(…)``);
    ``args`` the arguments' texts with those names replaced (``("256", "2")``)."""

    targs: object
    outer: tuple = ()
    args: tuple[str, ...] = ()
    #: ``(template parameter, type node)`` pairs deduced from a launch's arguments (``k<<<…>>>(Functor{…})``;
    #: ``targs`` is then None)
    deduced: tuple = ()

    @property
    def label(self) -> str:
        """``<256,2>``: the instantiation as a suffix of the kernel's name."""
        return "<" + ",".join(self.args) + ">"


#: How many function templates deep a kernel's template arguments are followed through host code (a launcher
#: called by a dispatcher called by ``main``).
MAX_LAUNCHER_DEPTH = 3


def _instantiations(f: FunctionDef, prog: Program, mentions: dict | None = None) -> list[Instantiation]:
    """The instantiations of kernel template ``f`` that nvcc compiles, one per distinct argument list: every
    mention with template arguments in host code (a launch ``f<128><<<grid, block>>>(…)``, an explicit
    instantiation ``template __global__ void f<128>(…);``, a kernel pointer ``auto kernel = f<128>;``,
    ``cudaLaunchKernelEx(&cfg, f<128>, …)``), and, where the arguments name template parameters of the function
    template around the mention (a templated launcher), each instantiation of that function with those parameters
    bound (``launch<256, 2>(…)``).  Empty when there are none (it is lowered once, with its default arguments).
    ``mentions`` is ``_template_mentions(prog)`` (computed when not given)."""
    if mentions is None:
        mentions = _template_mentions(prog)
    owners = {g.node.id: g for g in prog.all_functions if g.body is not None}
    out: dict[str, Instantiation] = {}
    for inst in _instances_of(f.name, f, prog, mentions, owners, MAX_LAUNCHER_DEPTH):
        out.setdefault(inst.label, inst)
    for inst in _deduced_launches(f, prog, mentions):
        out.setdefault(inst.label, inst)
    return list(out.values())[:MAX_INSTANTIATIONS]


def _deduced_launches(f: FunctionDef, prog: Program, mentions: dict) -> list[Instantiation]:
    """The instantiations of kernel template ``f`` launched without template arguments (``k<<<…>>>(op)``), every
    template parameter deduced from the launch's arguments (``_deduce``)."""
    order = [name for name, _k, _d in f.template_params]
    out = []
    for call in mentions.get(("<<<>>>", f.name), ()):
        deduced = _deduce(f, call, prog, set())
        if len(deduced) == len(order):
            out.append(Instantiation(None, (), tuple(prog.text(deduced[n]).replace(" ", "") for n in order),
                                     tuple((n, deduced[n]) for n in order)))
    return out


def _deduce(f: FunctionDef, call, prog: Program, given: set[str]) -> dict:
    """The template type parameters of ``f`` (other than ``given``) that launch ``call`` deduces, as C++ does for
    a parameter whose whole type is the template parameter (``template <class Op> __global__ void k(Op op)``),
    from the type of the argument where it is written in the code (``_type_of_argument``): name → type node."""
    kinds = {name: kind for name, kind, _d in f.template_params}
    args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
    out: dict = {}
    for i, q in enumerate(f.params):
        tn = q.node.child_by_field_name("type") if q.node is not None else None
        tname = prog.text(tn) if tn is not None else ""
        if kinds.get(tname) == "type" and tname not in given and i < len(args):
            t = _type_of_argument(args[i], prog)
            if t is not None:
                out.setdefault(tname, t)
    return out


def _type_of_argument(a, prog: Program):
    """The type node of launch argument ``a`` when it is written in the code: a temporary ``T{…}`` / ``T(…)`` of a
    struct ``T`` of the file, or a variable declared with it in the launching function; else None."""
    if a.type == "compound_literal_expression":
        return a.child_by_field_name("type")
    if a.type == "call_expression":
        fn = a.child_by_field_name("function")
        if fn is not None and fn.type in ("identifier", "type_identifier") and prog.text(fn) in prog.structs:
            return fn
        return None
    if a.type != "identifier":
        return None
    name = prog.text(a)
    p = a.parent
    while p is not None and p.type != "function_definition":
        p = p.parent
    if p is None:
        return None
    stack = [p.child_by_field_name("body")]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        if n.type == "declaration" and n.start_byte < a.start_byte:
            for d in n.named_children:
                if d.type == "init_declarator" and prog.text(d.child_by_field_name("declarator")) == name:
                    t = n.child_by_field_name("type")
                    if t is not None and t.type == "placeholder_type_specifier":  # auto x = T{…}
                        v = d.child_by_field_name("value")
                        return _type_of_argument(v, prog) if v is not None and v.type != "identifier" else None
                    if t is not None and prog.text(t) in prog.structs:
                        return t
        stack.extend(n.named_children)
    return None


def _template_mentions(prog: Program) -> dict[str, list]:
    """The ``template_function`` nodes of the file (``name<args>``) by the name's last component, and the launches
    without template arguments (``k<<<…>>>(…)``) by ``("<<<>>>", name)``."""
    out: dict[str, list] = {}
    stack = [prog.root]
    while stack:
        n = stack.pop()
        if n.type == "template_function":
            name = n.child_by_field_name("name")
            if name is not None and n.child_by_field_name("arguments") is not None:
                out.setdefault(prog.text(name).rsplit("::", 1)[-1], []).append(n)
        elif n.type == "call_expression" and any(c.type == "kernel_call_syntax" for c in n.children):
            fn = n.child_by_field_name("function")
            if fn is not None and fn.type in ("identifier", "qualified_identifier") and \
                    n.child_by_field_name("arguments") is not None:
                out.setdefault(("<<<>>>", prog.text(fn).rsplit("::", 1)[-1]), []).append(n)
        stack.extend(n.named_children)
    return out


def _enclosing(n, owners: dict):
    """The function definition (a FunctionDef of ``owners``) whose body holds node ``n``, or None."""
    p = n.parent
    while p is not None:
        if p.type == "function_definition" and p.id in owners:
            return owners[p.id]
        p = p.parent
    return None


_IDENT = re.compile(r"[A-Za-z_]\w*")
_INT_EXPR = re.compile(r"[0-9()+\-*/%<> ]+")


def _put(bound: dict[str, str], name: str) -> str:
    """``name`` replaced by its argument text in ``bound`` (parenthesized when it is an expression), or kept."""
    v = bound.get(name)
    if v is None:
        return name
    return v if re.fullmatch(r"[\w:]+", v) else f"({v})"


def _fold(text: str) -> str:
    """An argument text with the launcher's arguments put in (``(128)/2*2``), folded to its value where it is
    integer arithmetic (``128``: the name nvcc's instantiation has), else as it is."""
    if not _INT_EXPR.fullmatch(text):
        return text
    try:
        v = _c_int(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return text
    return str(v)


def _c_int(e: ast.AST) -> int:
    """The value of integer expression ``e`` as C computes it (``/`` and ``%`` truncate toward zero)."""
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        v = _c_int(e.operand)
        return -v if isinstance(e.op, ast.USub) else v
    if isinstance(e, ast.BinOp):
        a, b = _c_int(e.left), _c_int(e.right)
        op = type(e.op)
        if op in (ast.Div, ast.Mod):
            return trunc_div(a, b) if op is ast.Div else trunc_rem(a, b)
        f = {ast.Add: a.__add__, ast.Sub: a.__sub__, ast.Mult: a.__mul__, ast.LShift: a.__lshift__,
             ast.RShift: a.__rshift__}.get(op)
        if f is not None and not (op is ast.LShift and b > 64):
            return f(b)
    raise ValueError("not integer arithmetic")


def _instances_of(name: str, f: FunctionDef, prog: Program, mentions: dict, owners: dict,
                  depth: int) -> list[Instantiation]:
    """The instantiations of function template ``f`` (named ``name``) from its mentions, following templated
    callers ``depth`` levels up."""
    out: list[Instantiation] = []
    for n in mentions.get(name, ()):
        targs = n.child_by_field_name("arguments")
        g = _enclosing(n, owners)
        if g is f:
            continue  # a template naming itself (recursion) instantiates nothing new
        args = tuple(prog.text(x).replace(" ", "") for x in targs.named_children if x.type != "comment")
        params = {p[0] for p in g.template_params} if g is not None else set()
        if not params or not any(w in params for a in args for w in _IDENT.findall(a)):
            p = n.parent  # k<128><<<…>>>(op): the parameters after those given deduced from the arguments
            rest = {}
            if len(args) < len(f.template_params) and p is not None and p.type == "call_expression" and any(
                    c.type == "kernel_call_syntax" for c in p.children):
                rest = _deduce(f, p, prog, {name for name, _k, _d in f.template_params[:len(args)]})
            more = tuple(prog.text(rest[name]).replace(" ", "") for name, _k, _d in f.template_params if name in rest)
            out.append(Instantiation(targs, (), args + more, tuple(rest.items())))
            continue
        if depth <= 1:
            continue
        for gi in _instances_of(g.name, g, prog, mentions, owners, depth - 1):
            bound = dict(zip([p[0] for p in g.template_params], gi.args))
            sub = tuple(_fold(_IDENT.sub(lambda m: _put(bound, m.group(0)), a)) for a in args)
            out.append(Instantiation(targs, gi.outer + ((g, gi.targs),), sub))
    return out


def _too_large(e) -> Diagnostic:
    """TM901 for a translation unit past the budget of source mode (``preprocess.TooLarge``)."""
    if e.header:
        what = (f"with the {e.files} headers it reads it is more than {MAX_UNIT_CHARS:,} characters at \"{e.header}\""
                f"{' (included by ' + e.by + ')' if e.by else ''}")
    else:
        what = f"after macro expansion it is {e.chars:,} characters, more than {MAX_UNIT_CHARS:,}"
    return Diagnostic("TM901", Span(e.line, 1, e.line, 2),
                      f"the file is not analysed: {what}, more than source mode reads in the time of a pre-commit "
                      f"check; check it with --compile (nvcc; -p build/ takes the flags from compile_commands.json)")


def _missing_note(pre: Preprocessed) -> str:
    """``, and the header "x.cuh" it includes was not found (…)`` when a quoted include was not found."""
    if not pre.missing:
        return ""
    names = list(dict.fromkeys(m.name for m in pre.missing))
    more = f" (and {len(names) - 1} more)" if len(names) > 1 else ""
    return (f", and the header \"{names[0]}\"{more} it includes was not found (searched: "
            f"{', '.join(pre.missing[0].searched)}; pass -I DIR)")


def _unseen_message(kernel: str, name: str, pre: Preprocessed) -> str:
    """TM901 at a call of ``name``, whose body source mode cannot see, in ``kernel``: what is not checked and the
    ways out."""
    short = name.rsplit("::", 1)[-1]
    m = None
    if short.isidentifier():  # the line that names it before a '(' outside a statement: its unread definition
        m = re.search(r"^[^\n;{}]*\b" + re.escape(short) + r"\s*\([^\n]*$", pre.text, re.M)
    hint = macro_hint(m.group(0), pre.macros, pre.text) if m else ""
    if hint:
        line = pre.map.line_col(len(pre.text[:m.start()].encode("utf-8")))[0]
        return (f"{kernel} calls {name}, whose definition at line {line} source mode cannot read{hint}; the "
                f"allocation and ordering rules are not applied to {kernel} (or check with --compile)")
    return (f"{kernel} calls {name}, whose body source mode cannot see{_missing_note(pre)}: it may allocate, free, "
            f"wait for or access Tensor Memory, so the allocation and ordering rules are not applied to {kernel}; pass "
            f"-I DIR (or include-dirs) for the header that defines it, or check with --compile (-p build/ takes the "
            f"flags from compile_commands.json)")


#: Rules whose findings depend on what every called function does, or on the kernel around a function: not
#: reported for a kernel that calls a function whose body source mode cannot see (it gets TM901 at the call
#: instead), nor for a header's helper analysed on its own.
BLIND_CODES = frozenset({"TM101", "TM103", "TM104", "TM105", "TM106", "TM107", "TM108", "TM111", "TM203", "TM205",
                         "TM206", "TM301", "TM302", "TM303", "TM304", "TM305", "TM306"})


def _blocking_region(f: FunctionDef, reached: list[FunctionDef], calls, defined: set[str],
                     pre: Preprocessed) -> tuple[Region, str] | None:
    if not pre.regions:
        return None
    for g in reached:
        r = _region_of(g, pre)
        if r is not None:
            return r, ("the #if inside it" if g is f else f"the #if inside {g.name}, which it calls")
    for g in reached:
        for name in calls.get(g, ()):
            if name in defined:
                continue
            for r in pre.regions:
                if name in r.names:
                    return r, f"{name}, which it calls, is defined under an #if that"
    return None
