"""Lowering of CUDA C++ functions to the PTX IR (``tmemlint.ir``): a synthetic ``Function`` per kernel.

The analyses and rules of tmemlint run on PTX.  Source mode gives them a PTX-shaped function built from the C++:

* **asm statements** are parsed by the PTX grammar (``cuda_asm``); ``%N`` become the registers of the operand
  expressions, ``"n"``/``"i"`` operands their literal value.
* **C++ values** become registers and instructions that the value analysis understands the way it understands
  nvcc's output: ``threadIdx.x`` is ``%tid.x``, ``x / 32`` on an unsigned value is ``shr``, ``__shfl_sync(m, x,
  0)`` is ``shfl.sync.idx``, ``elect.sync`` gives the elected-lane value, a load of a ``__shared__`` variable is
  ``ld.shared`` at its symbol (plus the field offset from the struct layout), kernel parameters are ``ld.param``.
  Integer constants are folded, including ``constexpr`` variables and functions (``cuda_types.ConstEval``).
  A variable that is never modified is bound to the value of its initializer (no register); one that is
  modified owns a register written by ``mov`` (reaching definitions then join its values as for nvcc's phis).
* **Control flow** becomes labels and guarded ``bra``: ``&&``/``||`` short-circuit, a condition that folds to a
  constant keeps only the live branch (as nvcc does), a condition that cannot be translated tests an opaque
  register named after its text (the same text gives the same register, so repeated tests correlate).
  ``return`` in a kernel is ``ret``.  Loops with a constant trip count are unrolled (up to 16 iterations, also
  under ``#pragma unroll 1``; up to 256 under ``#pragma unroll``), so that per-iteration values (an instruction
  descriptor built from the loop index, a load issued in all but the last iteration) are exact.
* **Calls** to functions defined in the file are inlined (depth ≤ 24, no recursion); ``constexpr`` functions
  with constant arguments are evaluated.  Calls to anything else return an opaque value.

Every instruction carries the span of the ``.cu`` text it comes from (the asm string for asm instructions, the
expression or statement otherwise) and a ``SourcePos`` whose ``inlined_at`` lists the call sites.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tmemlint.analysis.values import eval_tid
from tmemlint.frontend.cuda_asm import PLACEHOLDER, AsmTemplate, is_local_name, parse_template, prepare, read_asm
from tmemlint.frontend.cuda_program import FunctionDef, Program
from tmemlint.frontend.cuda_types import (
    BOOL,
    FLOAT,
    INT,
    U64,
    UINT,
    UNKNOWN,
    VOID,
    CType,
    NotConstant,
    StructInfo,
    common,
    convert,
    fold_binary,
    layout,
    parse_number,
    promote,
    ptr_to,
    size_of,
    wrap,
)
from tmemlint.ir import (
    Address,
    FloatImm,
    Function,
    Guard,
    Imm,
    Instruction,
    Label,
    NotReg,
    ParenList,
    Reg,
    RegPair,
    SourcePos,
    Span,
    Sym,
    Variable,
    Vec,
)

#: Call depth of inlining.
MAX_INLINE_DEPTH = 24
#: Instructions one lowered function may have.
MAX_INSTRUCTIONS = 60_000
#: Trip counts unrolled without a pragma (or under ``#pragma unroll 1``: unrolling only makes the analysis exact) /
#: under ``#pragma unroll``.
UNROLL_DEFAULT = 16
UNROLL_PRAGMA = 256

_DTORS = "\0dtors"  # scope key: objects whose destructor runs when the scope ends
_SPECIAL = {"threadIdx": "%tid", "blockIdx": "%ctaid", "blockDim": "%ntid", "gridDim": "%nctaid",
            "clusterIdx": "%cluster_ctaid", "clusterDim": "%cluster_nctaid"}
_ARITH_OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "rem", "&": "and", "|": "or", "^": "xor",
              "<<": "shl", ">>": "shr"}
_CMP_OPS = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


class Unsupported(Exception):
    """C++ the lowering cannot translate faithfully; the function is reported (TM901) and not analysed."""

    def __init__(self, node, what: str):
        super().__init__(what)
        self.node = node
        self.what = what


class BudgetExceeded(Exception):
    """The function grew past MAX_INSTRUCTIONS after inlining and unrolling."""


@dataclass(slots=True)
class Diagnostic:
    """A finding of the frontend itself: ``code`` (TM900 or TM901), where, and the message."""

    code: str
    span: Span
    message: str


# ------------------------------------------------------------------------------------------------ values


class V:
    """An rvalue: ``op`` is the operand holding it (Reg, Imm, Sym, FloatImm; None for an aggregate or unknown
    value), ``ty`` its C++ type, ``ref`` for a pointer to local storage: ``(lvalue, element index or None)``, and
    ``tx`` when the value is a function of ``threadIdx.x`` alone: a thread expression of
    ``tmemlint.analysis.values.eval_tid``, or ``("table", values)`` with its value for every thread."""

    __slots__ = ("op", "ty", "ref", "tx")

    def __init__(self, op, ty: CType, ref=None, tx=None):
        self.op = op
        self.ty = ty
        self.ref = ref
        self.tx = tx

    @property
    def const(self):
        return self.op.value if type(self.op) is Imm else None

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"V({self.op!r}: {self.ty!r})"


class RegLV:
    """A local scalar that owns a register (``key`` names it uniquely in the function)."""

    __slots__ = ("key", "ty")

    def __init__(self, key: str, ty: CType):
        self.key = key
        self.ty = ty


class AggLV:
    """A local array or struct: its elements are RegLV/AggLV under ``key[i]`` / ``key.field``."""

    __slots__ = ("key", "ty")

    def __init__(self, key: str, ty: CType):
        self.key = key
        self.ty = ty


class MemLV:
    """An object in memory at address ``addr`` (a V) in state space ``space`` (``shared``, ``global``, ``param``,
    ``const`` or ``""`` for generic)."""

    __slots__ = ("addr", "ty", "space")

    def __init__(self, addr: V, ty: CType, space: str):
        self.addr = addr
        self.ty = ty
        self.space = space


class AliasLV:
    """A name bound to a value (a variable that is never modified, a by-value parameter, a constant)."""

    __slots__ = ("v", "name", "scope")

    def __init__(self, v: V, name: str = "", scope: dict | None = None):
        self.v = v
        self.name = name
        self.scope = scope

    @property
    def ty(self) -> CType:
        return self.v.ty


class UnknownLV:
    """An object the lowering does not model: reads give an opaque value named by ``text``; writes are dropped."""

    __slots__ = ("text", "ty")

    def __init__(self, text: str, ty: CType = UNKNOWN):
        self.text = text
        self.ty = ty


@dataclass(slots=True)
class Frame:
    """One inlined function instance (or the lowered function itself)."""

    fdef: FunctionDef
    scopes: list[dict]
    this: object = None
    tenv: dict = field(default_factory=dict)
    ret_label: str | None = None
    ret_lv: object = None
    loops: list[tuple[str, str | None, int]] = field(default_factory=list)
    inlined_at: tuple[SourcePos, ...] = ()
    is_entry: bool = False
    uid: int = 0


# ------------------------------------------------------------------------------------------------ lowering


class Lowering:
    """Lowers one function definition (a kernel, or a device function analysed on its own) to an IR Function.

    ``run()`` returns the Function, or None when the function could not be lowered; ``diagnostics`` then (and for
    asm text that is not statically known or not PTX) holds TM900/TM901 entries."""

    def __init__(self, program: Program, fdef: FunctionDef, asm_cache: dict, targs=None, name: str | None = None):
        """``asm_cache`` is shared by the functions of one file (parsed asm templates, per-node facts); ``targs``
        the ``template_argument_list`` node of the instantiation lowered (a kernel template launched as
        ``k<128><<<…>>>``), ``name`` the function's name in the IR (default: the definition's)."""
        self.targs = targs
        self.ir_name = name
        self.P = program
        self.fdef = fdef
        self.path = program.path
        self.smap = program.pre.map
        self.asm_cache = asm_cache
        self.insts: list[Instruction] = []
        self.labels: dict[str, int] = {}
        self.label_spans: dict[str, Span] = {}
        self.variables: dict[str, Variable] = {}
        self.diagnostics: list[Diagnostic] = []
        self.frames: list[Frame] = []
        self.cells: dict[str, str] = {}
        self._cell_names: set[str] = set()
        self._aliases: dict[str, list[AliasLV]] = {}
        self.nreg = 0
        self.nlabel = 0
        self.nasm = 0
        self.nframe = 0
        self.nthreads = 1024  # threads per CTA in x: .maxntid from __launch_bounds__, else the maximum
        self.cur_span: Span = Span(1, 1, 1, 2)
        self._span_cache: dict[int, Span] = {}
        self._src_cache: dict = {}
        self.unknown_calls: dict[str, int] = {}
        #: functions called whose bodies are not in the translation unit and that could reach tcgen05: name →
        #: span of the first call (``parse_cuda`` reports them, TM901)
        self.unseen: dict[str, Span] = {}
        self.lambdas: dict[str, tuple[FunctionDef, Frame]] = {}  # lambda values: key → (definition, closure)

    # ---- positions ----------------------------------------------------------------------------------------------
    def span(self, node) -> Span:
        """The .cu span of a tree-sitter node."""
        s = self._span_cache.get(node.id)
        if s is None:
            l1, c1 = self.smap.line_col(node.start_byte)
            end = max(node.start_byte, node.end_byte - 1)
            l2, c2 = self.smap.line_col(end)
            if (l2, c2) < (l1, c1):
                l2, c2 = l1, c1
            s = Span(l1, c1, l2, c2 + 1)
            self._span_cache[node.id] = s
        return s

    def where(self, byte: int) -> tuple[int, int]:
        return self.smap.line_col(byte)

    def text(self, node) -> str:
        return self.P.text(node)

    # ---- emission -----------------------------------------------------------------------------------------------
    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def _src(self, span: Span) -> SourcePos:
        key = (span.line, span.column, self.frame.inlined_at)
        s = self._src_cache.get(key)
        if s is None:
            s = SourcePos(self.path, span.line, span.column, self.frame.inlined_at)
            self._src_cache[key] = s
        return s

    def emit(self, opcode: str, ops, guard: Guard | None = None, span: Span | None = None) -> Instruction:
        """Append an instruction (span: the current C++ construct unless given)."""
        sp = span or self.cur_span
        inst = Instruction(opcode, tuple(opcode.split(".")), guard, tuple(ops), sp, self._src(sp), len(self.insts))
        self.insts.append(inst)
        if len(self.insts) > MAX_INSTRUCTIONS:
            raise BudgetExceeded()
        return inst

    def reg(self, prefix: str = "t") -> Reg:
        self.nreg += 1
        return Reg(f"%{prefix}{self.nreg}")

    def new_label(self, hint: str = "L") -> str:
        self.nlabel += 1
        return f"$L_{hint}{self.nlabel}"

    def place(self, name: str) -> None:
        self.labels[name] = len(self.insts)
        self.label_spans[name] = self.cur_span

    def bra(self, target: str, pred: Reg | None = None, negated: bool = False) -> None:
        self.emit("bra", [Sym(target)], Guard(pred, negated) if pred is not None else None)

    def cell(self, lv: RegLV) -> Reg:
        r = self.cells.get(lv.key)
        if r is None:
            base = re.sub(r"[^A-Za-z0-9_]", "_", lv.key.split("#", 1)[0])[:24] or "v"
            self.nreg += 1
            r = f"%{base}_{self.nreg}"
            self.cells[lv.key] = r
            self._cell_names.add(r)
        return Reg(r)

    def opaque(self, text: str, ty: CType = UNKNOWN) -> V:
        """A value the lowering does not compute: a register named after ``text`` that is never defined (the value
        analysis gives it one opaque value, the same for the same text)."""
        key = re.sub(r"\s+", " ", text)[:200]
        n = self.unknown_calls.get(key)
        if n is None:
            n = len(self.unknown_calls)
            self.unknown_calls[key] = n
        return V(Reg(f"%opaque{n}"), ty)

    # ---- driver -------------------------------------------------------------------------------------------------
    def run(self) -> Function | None:
        f = self.fdef
        span = self.span(f.name_node) if f.name_node is not None else self.span(f.node)
        fn = Function(self.ir_name or (f.name if f.owner is None else f.qualname), f.is_kernel, span)
        frame = Frame(f, [{}], is_entry=True, uid=self._uid())
        self.frames.append(frame)
        if self.targs is not None:
            frame.tenv = self._template_env(f, self.targs)
        self.cur_span = span
        try:
            _check_parsed(f, self.P)
            self._directives(fn)
            self._params(fn, frame)
            body = f.body
            self._body(body)
            close = body.children[-1] if body.children else body
            self.cur_span = self.span(close)
            self.emit("ret", [])
        except Unsupported as e:
            sp = self.span(e.node) if e.node is not None else span
            self.diagnostics.append(Diagnostic("TM901", sp, f"function {f.name} is not analysed: {e.what}"))
            return None
        except BudgetExceeded:
            self.diagnostics.append(Diagnostic(
                "TM901", span, f"function {f.name} is not analysed: more than {MAX_INSTRUCTIONS} instructions after "
                               f"inlining and unrolling"))
            return None
        except RecursionError:
            self.diagnostics.append(Diagnostic("TM901", span, f"function {f.name} is not analysed: nested too "
                                                              f"deeply"))
            return None
        except Exception as e:  # noqa: BLE001 - a lowering bug must cost this function, not the run
            self.diagnostics.append(Diagnostic(
                "TM901", self.cur_span, f"function {f.name} is not analysed: internal error of source mode "
                                        f"({type(e).__name__}: {e})"))
            return None
        fn.instructions = self.insts
        # Only labels that a branch targets start a basic block (as in nvcc's PTX): the labels placed for C++
        # structure (ends of inlined calls, unrolled iterations) that nothing jumps to are dropped.
        used = {o.name for i in self.insts if i.op in ("bra", "brx") for o in i.operands if type(o) is Sym}
        fn.labels = {k: v for k, v in self.labels.items() if k in used}
        fn.label_spans = {k: v for k, v in self.label_spans.items() if k in used}
        fn.variables = self.variables
        return fn

    def _uid(self) -> int:
        self.nframe += 1
        return self.nframe

    def _directives(self, fn: Function) -> None:
        f = self.fdef
        if f.launch_bounds:
            vals = [self.P.const_int(a) for a in f.launch_bounds]
            if vals and vals[0]:
                fn.directives["maxntid"] = (vals[0],)
                self.nthreads = max(1, min(vals[0], 1024))
            if len(vals) > 1 and vals[1] is not None:
                fn.directives["minnctapersm"] = (vals[1],)
        if f.cluster_dims:
            vals = [self.P.const_int(a) for a in f.cluster_dims]
            if all(v is not None for v in vals):
                fn.directives["reqnctapercluster"] = tuple(vals)
                fn.directives["explicitcluster"] = ()

    def _params(self, fn: Function, frame: Frame) -> None:
        scope = frame.scopes[0]
        for i, p in enumerate(self.fdef.params):
            sym = f"{self.fdef.name}_param_{i}"
            size = size_of(p.type, self.P.structs) if not p.is_ref else 8
            fn.params.append(Variable(sym, "param", _ptx_type(p.type), size, None, False, fn.span))
            if p.is_ref or p.type.kind in ("ptr",) or p.type.kind in ("int", "bool", "float"):
                t = p.type if not p.is_ref else ptr_to(p.type)
                r = self.reg("p" if t.kind == "bool" else "r")
                self.emit(f"ld.param.{_suffix(t)}", [r, Address(Sym(sym))])
                v = V(r, t)
                if t.kind == "bool":
                    v = self.as_pred(V(r, INT))
                scope[p.name] = MemLV(v, p.type, "") if p.is_ref else AliasLV(v, p.name, scope)
            elif p.type.kind in ("struct", "array"):
                scope[p.name] = MemLV(V(Sym(sym), ptr_to(p.type)), p.type, "param")
            else:
                scope[p.name] = AliasLV(self.opaque(f"param {p.name}", p.type), p.name, scope)
        mutated = self.mutated(self.fdef)
        for name in list(scope):
            lv = scope[name]
            if isinstance(lv, AliasLV) and name in mutated:
                c = RegLV(f"{name}#{frame.uid}", lv.v.ty)
                self.write(c, lv.v)
                scope[name] = c

    # ---- scopes and names ---------------------------------------------------------------------------------------
    def bind(self, name: str, lv) -> None:
        self.frame.scopes[-1][name] = lv

    def push_scope(self, names: dict | None = None) -> None:
        self.frame.scopes.append(names if names is not None else {})

    def pop_scope(self) -> None:
        """Leave the innermost scope, running the destructors of its objects (unless the code here is dead)."""
        sc = self.frame.scopes[-1]
        if _DTORS in sc and not self._dead():
            self._destroy(sc)
        self.frame.scopes.pop()

    def _destroy(self, scope: dict) -> None:
        for obj, dtor in reversed(scope.get(_DTORS, ())):
            self.inline_call(dtor, [], obj, None, None)

    def _unwind(self, depth: int) -> None:
        """Run the destructors of the scopes above ``depth`` (a jump out of them: return, break, continue)."""
        for sc in reversed(self.frame.scopes[depth:]):
            if _DTORS in sc:
                self._destroy(sc)

    def _dead(self) -> bool:
        """Whether the next instruction would be unreachable (after an unconditional jump, with no label here)."""
        if not self.insts:
            return False
        last = self.insts[-1]
        if last.guard is not None or last.op not in ("bra", "ret", "exit", "trap"):
            return False
        return len(self.insts) not in self.labels.values()

    def struct_tenv(self, ty: CType) -> dict:
        """Template arguments of class template type ``ty`` bound to its parameters (for its methods)."""
        s = self._struct(ty)
        env: dict = {}
        if s is None or not s.template_params:
            return env
        for (pname, kind, _d), a in zip(s.template_params, ty.args):
            if a is None:
                continue
            env[pname] = a if kind == "type" else AliasLV(V(Imm(a), INT))
        return env

    def lookup(self, name: str):
        """The lvalue a name denotes in the current frame, or None."""
        fr = self.frame
        for sc in reversed(fr.scopes):
            lv = sc.get(name)
            if lv is not None:
                return lv
        if name in fr.tenv:
            t = fr.tenv[name]
            return t if not isinstance(t, CType) else None
        if fr.this is not None:
            lv = self.member(fr.this, name)
            if lv is not None:
                return lv
        owner = fr.fdef.owner
        if owner is not None and name in owner.statics:
            return self._static_member(owner, name)
        return self.global_lv(name)

    def _static_member(self, owner: StructInfo, name: str):
        """A static constexpr member of ``owner`` (evaluated with the frame's template arguments)."""
        node, ty = owner.statics[name]
        env = {k: v for k, v in self._tenv_types().items() if isinstance(v, tuple)}
        try:
            v, t = self.P.consteval.evaluate(node, env)
            v, t = convert(v, t, ty) if ty.kind in ("int", "bool", "float") else (v, t)
            return AliasLV(self.const_v(v, t))
        except NotConstant:
            return UnknownLV(name, ty)

    def global_lv(self, name: str):
        g = self.P.globals.get(name)
        if g is not None:
            if g.space == "value":
                try:
                    v, t = self.P.resolve_constant(name)
                    return AliasLV(self.const_v(v, t))
                except NotConstant:
                    return UnknownLV(name, g.type)
            sym = name.replace("::", "_")
            if sym not in self.variables:
                self.variables[sym] = Variable(sym, g.space, _ptx_type(g.type), size_of(g.type, self.P.structs),
                                               None, g.extern, self.span(g.node))
            return MemLV(V(Sym(sym), ptr_to(g.type)), g.type, g.space)
        try:
            v, t = self.P.resolve_constant(name)
            return AliasLV(self.const_v(v, t))
        except NotConstant:
            return None

    def const_v(self, v, t: CType) -> V:
        if isinstance(v, float):
            return V(FloatImm(repr(v)), t)
        return V(Imm(int(v)), t if t.kind != "unknown" else INT)

    def mutated(self, fdef: FunctionDef) -> set[str]:
        """Names that ``fdef``'s body may modify: assigned, incremented, address taken, asm outputs, or passed to a
        reference parameter of a function of the file, or the object of a method call."""
        if fdef._mutated is not None:
            return fdef._mutated
        out: set[str] = set()
        if fdef.body is not None:
            out = self._mutated_in(fdef.body)
        fdef._mutated = out
        return out

    def _mutated_in(self, root) -> set[str]:
        key = ("mutated", root.id)
        got = self.asm_cache.get(key)
        if got is None:
            got = self._scan_mutated(root)
            self.asm_cache[key] = got
        return got

    def _scan_mutated(self, root) -> set[str]:
        out: set[str] = set()
        stack = [root]
        while stack:
            n = stack.pop()
            t = n.type
            if t in ("assignment_expression", "update_expression"):
                target = n.child_by_field_name("left") or n.child_by_field_name("argument")
                r = self._root_name(target, through_pointers=False)
                if r:
                    out.add(r)
            elif t == "pointer_expression" and n.children and n.children[0].type == "&":
                r = self._root_name(n.child_by_field_name("argument"), through_pointers=True)
                if r:
                    out.add(r)
            elif t == "gnu_asm_output_operand":
                r = self._root_name(n.child_by_field_name("value"), through_pointers=False)
                if r:
                    out.add(r)
            elif t == "call_expression":
                fn = n.child_by_field_name("function")
                args = [a for a in n.child_by_field_name("arguments").named_children if a.type != "comment"]
                if fn is not None and fn.type == "field_expression":
                    r = self._root_name(fn.child_by_field_name("argument"), through_pointers=False)
                    if r:
                        out.add(r)
                name = self.text(fn.child_by_field_name("name") if fn is not None and fn.type == "template_function"
                                 else fn) if fn is not None else ""
                for f in self.P.lookup_functions(name.rsplit(".", 1)[-1].rsplit("->", 1)[-1], len(args)):
                    for a, p in zip(args, f.params):
                        if p.is_ref and not p.is_const:
                            r = self._root_name(a, through_pointers=False)
                            if r:
                                out.add(r)
            elif t == "lambda_expression":
                continue
            stack.extend(n.named_children)
        return out

    def _root_name(self, n, through_pointers: bool) -> str | None:
        while n is not None:
            t = n.type
            if t == "identifier":
                return self.text(n)
            if t == "parenthesized_expression":
                n = n.named_children[-1] if n.named_children else None
            elif t == "field_expression":
                op = n.child_by_field_name("operator")
                if op is not None and self.text(op) == "->" and not through_pointers:
                    return None
                n = n.child_by_field_name("argument")
            elif t == "subscript_expression" and through_pointers:
                n = n.child_by_field_name("argument")
            else:
                return None  # x[i] = …: the elements change, not the variable (local arrays own registers)
        return None

    # ---- statements -------------------------------------------------------------------------------------------
    def _body(self, body) -> None:
        self.stmt(body)

    def stmt(self, n) -> None:
        t = n.type
        if t != "compound_statement":
            self.cur_span = self.span(n)
        h = _STMT.get(t)
        if h is None:
            if t in ("comment", "empty_statement", "static_assert_declaration", "type_definition",
                     "alias_declaration", "using_declaration", "namespace_alias_definition", ";"):
                return
            if t in ("struct_specifier", "class_specifier", "enum_specifier"):
                return
            raise Unsupported(n, f"C++ statement '{t}' at this line is not supported")
        h(self, n)

    def _s_ERROR(self, n) -> None:
        raise Unsupported(n, "the C++ parser could not read the code at this line")

    def _s_compound_statement(self, n) -> None:
        self.push_scope({})
        self._stmts(n.named_children)
        self.pop_scope()

    _pragma = None

    def _stmts(self, children) -> None:
        """Lower a statement list; a ``#pragma unroll`` applies to the loop right after it."""
        pragma = None
        for c in children:
            if c.type == "preproc_call":
                d = c.child_by_field_name("directive")
                arg = c.child_by_field_name("argument")
                if d is not None and self.text(d).strip() == "#pragma" and arg is not None:
                    words = self.text(arg).split()
                    if words and words[0] == "unroll":
                        pragma = words
                continue
            if c.type == "comment":
                continue
            self._pragma = pragma if c.type in ("for_statement", "while_statement", "do_statement") else None
            pragma = None
            self.stmt(c)

    def _s_expression_statement(self, n) -> None:
        for c in n.named_children:
            if c.type != "comment":
                self.value(c, discard=True)

    def _s_attributed_statement(self, n) -> None:
        """A statement with attributes; ``[[tmemlint::unroll(N)]]`` is the preprocessor's ``#pragma unroll N``."""
        pragma = None
        for c in n.named_children:
            if c.type == "attribute_declaration":
                m = re.search(r"tmemlint::unroll(?:\s*\(([^)]*)\))?", self.text(c))
                if m:
                    pragma = ["unroll"] + ([m.group(1).strip()] if m.group(1) and m.group(1).strip() else [])
        for c in n.named_children:
            if c.type not in ("attribute_declaration", "comment"):
                self._pragma = pragma if c.type in ("for_statement", "while_statement", "do_statement") else None
                self.stmt(c)

    def _s_labeled_statement(self, n) -> None:
        lab = n.child_by_field_name("label")
        self.place(f"$C{self.frame.uid}_{self.text(lab)}")
        for c in n.named_children:
            if c.id != lab.id and c.type != "statement_identifier":
                self.stmt(c)

    def _s_goto_statement(self, n) -> None:
        lab = n.child_by_field_name("label")
        self.bra(f"$C{self.frame.uid}_{self.text(lab)}")

    def _s_declaration(self, n) -> None:
        tn = n.child_by_field_name("type")
        quals = {self.text(x) for x in n.children if x.type in ("storage_class_specifier", "type_qualifier")}
        base = self.type_of(tn)
        for d in n.children_by_field_name("declarator"):
            self.cur_span = self.span(d)
            init = None
            dd = d
            if d.type == "init_declarator":
                dd = d.child_by_field_name("declarator")
                init = d.child_by_field_name("value")
            name, ty, is_ref = self.P.apply_declarator(dd, base, self._tenv_types())
            if not name:
                continue
            self._declare(name, ty, is_ref, init, quals, d)

    def _tenv_types(self) -> dict:
        """Template parameters of the current frame for type resolution: types, and values as constants."""
        out = {}
        for k, v in self.frame.tenv.items():
            if isinstance(v, CType):
                out[k] = v
            elif isinstance(v, AliasLV) and v.v.const is not None:
                out[k] = (v.v.const, v.v.ty)
        return out

    def type_of(self, tn) -> CType:
        return self.P.type_of(tn, self._tenv_types()) if tn is not None else UNKNOWN

    def _declare(self, name: str, ty: CType, is_ref: bool, init, quals: set[str], node) -> None:
        fr = self.frame
        if "__shared__" in quals:
            sym = f"{fr.fdef.name}.{name}" if "extern" not in quals else name
            if sym not in self.variables:
                self.variables[sym] = Variable(sym, "shared", _ptx_type(ty), size_of(ty, self.P.structs), None,
                                               "extern" in quals, self.span(node))
            self.bind(name, MemLV(V(Sym(sym), ptr_to(ty)), ty, "shared"))
            return
        if is_ref:
            if init is None:
                self.bind(name, UnknownLV(name, ty))
                return
            lv = self.lvalue(init)
            self.bind(name, lv)
            return
        if ty.kind == "unknown" and init is not None and init.type not in ("initializer_list", "argument_list"):
            v = self.value(init)
            ty = v.ty
            self._bind_scalar(name, ty, v, node)
            return
        if ty.kind in ("array", "struct"):
            agg = AggLV(f"{name}#{fr.uid}.{node.id}", ty)
            self.bind(name, agg)
            s = self._struct(ty)
            ctors = [f for f in s.methods.get(s.name, []) if f.body is not None] if s is not None else []
            if ctors and (init is None or init.type in ("initializer_list", "argument_list")):
                kids = [c for c in init.named_children if c.type != "comment"] if init is not None else []
                ctor = next((f for f in ctors if f.required_args() <= len(kids) <= len(f.params)), None)
                if ctor is not None:
                    self.inline_call(ctor, kids, agg, node, None)
            elif init is not None:
                self._init_aggregate(agg, init)
            dtor = next((f for f in s.methods.get("~" + s.name, []) if f.body is not None), None) if s else None
            if dtor is not None:
                self.frame.scopes[-1].setdefault(_DTORS, []).append((agg, dtor))
            return
        if init is None:
            self.bind(name, RegLV(f"{name}#{fr.uid}.{node.id}", ty))
            return
        if init.type in ("initializer_list", "argument_list"):
            kids = [c for c in init.named_children if c.type != "comment"]
            v = self.value(kids[0]) if kids else V(Imm(0), ty)
        else:
            v = self.value(init)
        self._bind_scalar(name, ty, self.convert(v, ty), node)

    def _bind_scalar(self, name: str, ty: CType, v: V, node) -> None:
        fr = self.frame
        if name in self.mutated(fr.fdef):
            lv = RegLV(f"{name}#{fr.uid}.{node.id}", ty)
            self.bind(name, lv)
            self.write(lv, v)
        else:
            self.bind(name, self.alias(v, name, fr.scopes[-1]))

    def snapshot(self, v: V) -> V:
        """``v`` itself, or a copy when it lives in a variable's register (which a later write would change)."""
        if type(v.op) is Reg and v.op.name in self._cell_names:
            r = self.reg()
            self.emit(f"mov.{_suffix(v.ty)}", [r, v.op])
            return V(r, v.ty, v.ref, v.tx)
        return v

    def alias(self, v: V, name: str, scope: dict) -> AliasLV:
        """Bind ``name`` (in ``scope``) to value ``v`` without a copy.  When ``v`` lives in a variable's register,
        the binding is remembered: a later write to that register first copies the old value for it
        (``_detach``), so no instruction reads the register before the program does."""
        lv = AliasLV(v, name, scope)
        if type(v.op) is Reg and v.op.name in self._cell_names:
            self._aliases.setdefault(v.op.name, []).append(lv)
        return lv

    def _detach(self, reg: Reg) -> None:
        """Before ``reg`` (a variable's register) is overwritten: give the live names bound to its value a copy."""
        refs = self._aliases.pop(reg.name, None)
        if not refs:
            return
        live = [a for a in refs if a.scope is not None and a.scope.get(a.name) is a and any(
            a.scope is sc for fr in self.frames for sc in fr.scopes)]
        if not live:
            return
        r = self.reg()
        self.emit(f"mov.{_suffix(live[0].v.ty)}", [r, reg])
        for a in live:
            a.v = V(r, a.v.ty, a.v.ref, a.v.tx)

    def _init_aggregate(self, agg: AggLV, init) -> None:
        if init.type in ("initializer_list", "argument_list"):
            kids = [c for c in init.named_children if c.type != "comment"]
            s = self._struct(agg.ty)
            if s is not None:
                for (fname, _ft), k in zip(s.fields, kids):
                    if k.type == "initializer_list":
                        continue
                    lv = self.member(agg, fname)
                    if lv is not None:
                        self.write(lv, self.value(k))
                return
            if agg.ty.kind == "array":
                for i, k in enumerate(kids):
                    if k.type == "initializer_list":
                        continue
                    self.write(self.index_lv(agg, V(Imm(i), INT)), self.value(k))
            return
        v = self.value(init)
        if v.ref is not None and isinstance(v.ref[0], AggLV) and v.ref[1] is None:
            self._copy_agg(v.ref[0], agg)

    def _copy_agg(self, src: AggLV, dst: AggLV) -> None:
        prefix = src.key
        for key, reg in list(self.cells.items()):
            if key.startswith(prefix + ".") or key.startswith(prefix + "["):
                rest = key[len(prefix):]
                target = self.cell(RegLV(dst.key + rest, UINT))
                self._detach(target)
                self.emit("mov.b32", [target, Reg(reg)])

    def _s_if_statement(self, n) -> None:
        cond = n.child_by_field_name("condition")
        cexpr = self._cond_expr(cond)
        cons = n.child_by_field_name("consequence")
        alt = n.child_by_field_name("alternative")
        if alt is not None and alt.type == "else_clause":
            alt = alt.named_children[-1] if alt.named_children else None
        self.push_scope({})
        if cond is not None and cond.type == "condition_clause":
            init = cond.child_by_field_name("initializer")
            if init is not None:
                self.stmt(init)
            decl = next((c for c in cond.named_children if c.type == "declaration"), None)
            if decl is not None and cexpr is None:
                self._s_declaration(decl)
                dname = self.P.apply_declarator(decl.children_by_field_name("declarator")[0], UNKNOWN)[0]
                cexpr = None
                lv = self.lookup(dname)
                self._if_on_value(self.read(lv) if lv is not None else self.opaque(dname), cons, alt)
                self.pop_scope()
                return
        k = self.peek_const(cexpr)
        if k is not None:
            branch = cons if k else alt
            if branch is not None:
                self.stmt(branch)
            self.pop_scope()
            return
        l_else = self.new_label("else")
        self.cur_span = self.span(cexpr)
        self.cond_jump(cexpr, l_else, False)
        self.stmt(cons)
        if alt is not None:
            l_end = self.new_label("endif")
            self.bra(l_end)
            self.place(l_else)
            self.stmt(alt)
            self.place(l_end)
        else:
            self.place(l_else)
        self.pop_scope()

    def _if_on_value(self, v: V, cons, alt) -> None:
        p = self.as_pred(v)
        if p.const is not None:
            branch = cons if p.const else alt
            if branch is not None:
                self.stmt(branch)
            return
        l_else = self.new_label("else")
        self.bra(l_else, p.op, True)
        self.stmt(cons)
        l_end = self.new_label("endif")
        if alt is not None:
            self.bra(l_end)
        self.place(l_else)
        if alt is not None:
            self.stmt(alt)
            self.place(l_end)

    def _cond_expr(self, cond):
        if cond is None:
            return None
        if cond.type == "condition_clause":
            v = cond.child_by_field_name("value")
            if v is not None:
                return v
            kids = [c for c in cond.named_children if c.type not in ("comment", "declaration")]
            return kids[-1] if kids else None
        if cond.type == "parenthesized_expression":
            return cond
        return cond

    def _s_while_statement(self, n) -> None:
        cexpr = self._cond_expr(n.child_by_field_name("condition"))
        body = n.child_by_field_name("body")
        self._pragma = None
        k = self.peek_const(cexpr)
        if k is not None and not k:
            return
        head = self.new_label("while")
        end = self.new_label("wend")
        self.place(head)
        if k is None:
            self.cur_span = self.span(cexpr)
            self.cond_jump(cexpr, end, False)
        self.frame.loops.append((end, head, len(self.frame.scopes)))
        self.stmt(body)
        self.frame.loops.pop()
        self.bra(head)
        self.place(end)

    def _s_do_statement(self, n) -> None:
        body = n.child_by_field_name("body")
        cexpr = n.child_by_field_name("condition")
        self._pragma = None
        top = self.new_label("do")
        cont = self.new_label("dcont")
        end = self.new_label("dend")
        self.place(top)
        self.frame.loops.append((end, cont, len(self.frame.scopes)))
        self.stmt(body)
        self.frame.loops.pop()
        self.place(cont)
        k = self.peek_const(cexpr)
        if k is None:
            self.cur_span = self.span(cexpr)
            self.cond_jump(cexpr, top, True)
        elif k:
            self.bra(top)
        self.place(end)

    def _s_for_statement(self, n) -> None:
        pragma = self._pragma
        self._pragma = None
        self.push_scope({})
        init = n.child_by_field_name("initializer")
        cexpr = n.child_by_field_name("condition")
        upd = n.child_by_field_name("update")
        body = n.child_by_field_name("body")
        trips = self._unroll_plan(init, cexpr, upd, body, pragma)
        if trips is not None:
            name, ty, values = trips
            end = self.new_label("uend")
            for k in values:
                self.push_scope({name: AliasLV(V(Imm(k), ty), name)})
                nxt = self.new_label("unext")
                self.frame.loops.append((end, nxt, len(self.frame.scopes)))
                self.stmt(body)
                self.frame.loops.pop()
                self.place(nxt)
                self.pop_scope()
            self.place(end)
            self.pop_scope()
            return
        if init is not None:
            if init.type == "declaration":
                self._s_declaration(init)
            elif init.type != "comment":
                self.cur_span = self.span(init)
                self.value(init, discard=True)
        k = self.peek_const(cexpr) if cexpr is not None else 1
        if k is not None and not k:
            self.pop_scope()
            return
        head = self.new_label("for")
        cont = self.new_label("fcont")
        end = self.new_label("fend")
        self.place(head)
        if k is None:
            self.cur_span = self.span(cexpr)
            self.cond_jump(cexpr, end, False)
        self.frame.loops.append((end, cont, len(self.frame.scopes)))
        self.stmt(body)
        self.frame.loops.pop()
        self.place(cont)
        if upd is not None:
            self.cur_span = self.span(upd)
            self.value(upd, discard=True)
        self.bra(head)
        self.place(end)
        self.pop_scope()

    def _unroll_plan(self, init, cexpr, upd, body, pragma):
        """``(name, type, [values])`` when the loop has a constant trip count small enough to unroll."""
        no_unroll = bool(pragma) and len(pragma) > 1 and pragma[1] in ("1", "(1)")
        limit = UNROLL_DEFAULT if (no_unroll or not pragma) else UNROLL_PRAGMA
        if init is None or init.type != "declaration" or cexpr is None or upd is None:
            return None
        decls = init.children_by_field_name("declarator")
        if len(decls) != 1 or decls[0].type != "init_declarator":
            return None
        d = decls[0]
        nm = d.child_by_field_name("declarator")
        if nm is None or nm.type != "identifier":
            return None
        name = self.text(nm)
        ty = self.type_of(init.child_by_field_name("type"))
        if ty.kind not in ("int", "unknown"):
            return None
        start = self.peek_const(d.child_by_field_name("value"))
        if start is None:
            return None
        if ty.kind == "unknown":
            ty = INT
        if name in self._mutated_in(body):
            return None
        # condition: name OP bound (either side)
        if cexpr.type != "binary_expression":
            return None
        op = self.text(cexpr.child_by_field_name("operator"))
        left, right = cexpr.child_by_field_name("left"), cexpr.child_by_field_name("right")
        if left.type == "identifier" and self.text(left) == name:
            bound = self.peek_const(right)
            flip = False
        elif right.type == "identifier" and self.text(right) == name:
            bound = self.peek_const(left)
            flip = True
        else:
            return None
        if bound is None or op not in _CMP_OPS:
            return None
        step = self._step(upd, name)
        if step is None:
            return None
        values = []
        v = start
        bt = INT
        for _ in range(limit + 1):
            a, b = (bound, v) if flip else (v, bound)
            ok, _t = fold_binary(op, a, ty, b, bt)
            if not ok:
                return name, ty, values
            values.append(v)
            v = wrap(step(v), ty)
        return None

    def _step(self, upd, name: str):
        t = upd.type
        if t == "update_expression":
            arg = upd.child_by_field_name("argument")
            if arg.type != "identifier" or self.text(arg) != name:
                return None
            op = self.text(upd.child_by_field_name("operator"))
            return (lambda x: x + 1) if op == "++" else (lambda x: x - 1)
        if t == "assignment_expression":
            left = upd.child_by_field_name("left")
            if left.type != "identifier" or self.text(left) != name:
                return None
            op = self.text(upd.child_by_field_name("operator"))
            k = self.peek_const(upd.child_by_field_name("right"))
            if k is None:
                return None
            if op == "+=":
                return lambda x: x + k
            if op == "-=":
                return lambda x: x - k
            if op == "*=" and k > 1:
                return lambda x: x * k
            if op == "<<=" and k > 0:
                return lambda x: x << k
            if op == ">>=" and k > 0:
                return lambda x: x >> k
        return None

    def _s_for_range_loop(self, n) -> None:
        raise Unsupported(n, "range-based for loops are not supported")

    def _s_switch_statement(self, n) -> None:
        cexpr = self._cond_expr(n.child_by_field_name("condition"))
        body = n.child_by_field_name("body")
        cases = [c for c in body.named_children if c.type == "case_statement"]
        self.cur_span = self.span(cexpr)
        v = self.value(cexpr)
        end = self.new_label("swend")
        labels = [self.new_label("case") for _ in cases]
        values = []
        default = None
        for i, c in enumerate(cases):
            val = c.child_by_field_name("value")
            if val is None:
                default = i
                values.append(None)
            else:
                values.append(self.peek_const(val))
        self.frame.loops.append((end, None, len(self.frame.scopes)))
        if v.const is not None:
            start = next((i for i, k in enumerate(values) if k is not None and k == v.const), default)
            if start is not None:
                for i in range(start, len(cases)):
                    self._case_body(cases[i])
                    if _ends_with_jump(cases[i]):
                        break
            self.frame.loops.pop()
            self.place(end)
            return
        for i, k in enumerate(values):
            if i == default:
                continue
            if k is None:
                p = self.compare("==", v, self.value(cases[i].child_by_field_name("value")))
            else:
                p = self.compare("==", v, V(Imm(k), v.ty))
            if p.const is not None:
                if p.const:
                    self.bra(labels[i])
                continue
            self.bra(labels[i], p.op)
        self.bra(labels[default] if default is not None else end)
        for i, c in enumerate(cases):
            self.place(labels[i])
            self._case_body(c)
        self.frame.loops.pop()
        self.place(end)

    def _case_body(self, c) -> None:
        val = c.child_by_field_name("value")
        for s in c.named_children:
            if (val is not None and s.id == val.id) or s.type == "comment":
                continue
            self.stmt(s)

    def _s_break_statement(self, n) -> None:
        if not self.frame.loops:
            raise Unsupported(n, "'break' outside a loop")
        brk, _cont, depth = self.frame.loops[-1]
        self._unwind(depth)
        self.bra(brk)

    def _s_continue_statement(self, n) -> None:
        for _brk, cont, depth in reversed(self.frame.loops):
            if cont is not None:
                self._unwind(depth)
                self.bra(cont)
                return
        raise Unsupported(n, "'continue' outside a loop")

    def _s_return_statement(self, n) -> None:
        kids = [c for c in n.named_children if c.type != "comment"]
        fr = self.frame
        if fr.is_entry:
            if kids:
                self.value(kids[0], discard=True)
            self._unwind(0)
            self.emit("ret", [])
            return
        if kids:
            if fr.fdef.returns_ref:
                lv = self.lvalue(kids[0])
                if fr.ret_lv is None:
                    fr.ret_lv = ("lv", lv)
            else:
                v = self.value(kids[0])
                if fr.ret_lv is not None and not isinstance(fr.ret_lv, tuple):
                    self.write(fr.ret_lv, self.convert(v, fr.ret_lv.ty))
        self._unwind(0)
        self.bra(fr.ret_label)

    def _s_preproc_call(self, n) -> None:
        return

    def _s_gnu_asm_expression(self, n) -> None:
        self.asm(n)

    # ---- conditions ---------------------------------------------------------------------------------------------
    def peek_const(self, n) -> int | None:
        """The integer value of expression ``n`` if it is a compile-time constant here (locals bound to constants
        included), without emitting anything."""
        if n is None:
            return None
        env = {}
        try:
            return self._peek(n, env)
        except NotConstant:
            return None

    def _peek(self, n, env):
        names = set()
        stack = [n]
        while stack:
            x = stack.pop()
            t = x.type
            if t in ("identifier", "type_identifier"):
                names.add(self.text(x))
            elif t == "call_expression":
                fn = x.child_by_field_name("function")
                if fn is None or fn.type not in ("identifier", "qualified_identifier", "template_function",
                                                 "primitive_type", "sized_type_specifier", "type_identifier"):
                    raise NotConstant()
                stack.extend(x.child_by_field_name("arguments").named_children)
                if fn.type == "template_function":
                    stack.extend(fn.child_by_field_name("arguments").named_children)
            elif t in ("field_expression", "subscript_expression", "pointer_expression", "assignment_expression",
                       "update_expression", "this", "gnu_asm_expression", "lambda_expression"):
                raise NotConstant()
            else:
                stack.extend(x.named_children)
        for name in names:
            lv = self.lookup(name)
            if lv is None:
                continue  # a function, or a name the evaluator resolves (or rejects) itself
            if not isinstance(lv, AliasLV) or lv.v.const is None:
                raise NotConstant()  # a local that is not a constant (it shadows any global)
            env[name] = (lv.v.const, lv.v.ty if lv.v.ty.kind in ("int", "bool") else INT)
        env.update((k, t) for k, t in self.frame.tenv.items() if isinstance(t, CType))
        v, _t = self.P.consteval.evaluate(n, env)
        if not isinstance(v, (int, float)):
            raise NotConstant()
        return int(v)

    def cond_jump(self, n, target: str, jump_if: bool) -> None:
        """Branch to ``target`` when condition ``n`` is ``jump_if``; fall through otherwise (short-circuit)."""
        t = n.type
        if t in ("parenthesized_expression", "condition_clause"):
            kids = [c for c in n.named_children if c.type != "comment"]
            if len(kids) == 1:
                self.cond_jump(kids[0], target, jump_if)
                return
        if t == "unary_expression" and self.text(n.child_by_field_name("operator")) == "!":
            self.cond_jump(n.child_by_field_name("argument"), target, not jump_if)
            return
        if t == "binary_expression":
            op = self.text(n.child_by_field_name("operator"))
            if op in ("&&", "||"):
                left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
                kl = self.peek_const(left)
                if kl is not None:
                    if (op == "&&" and not kl) or (op == "||" and kl):
                        if bool(kl) == jump_if:
                            self.bra(target)
                        return
                    self.cond_jump(right, target, jump_if)
                    return
                if (op == "&&") != jump_if:  # && jumping on false, || jumping on true: either side decides
                    self.cond_jump(left, target, jump_if)
                    self.cond_jump(right, target, jump_if)
                else:
                    skip = self.new_label("sc")
                    self.cond_jump(left, skip, not jump_if)
                    self.cond_jump(right, target, jump_if)
                    self.place(skip)
                return
        v = self.as_pred(self.value(n))
        if v.const is not None:
            if bool(v.const) == jump_if:
                self.bra(target)
            return
        self.bra(target, v.op, not jump_if)

    # ---- lvalues ------------------------------------------------------------------------------------------------
    def lvalue(self, n):
        """The object expression ``n`` denotes."""
        t = n.type
        if t == "identifier":
            name = self.text(n)
            lv = self.lookup(name)
            return lv if lv is not None else UnknownLV(name)
        if t == "parenthesized_expression":
            kids = [c for c in n.named_children if c.type != "comment"]
            return self.lvalue(kids[-1])
        if t == "field_expression":
            return self._field_lv(n)
        if t == "subscript_expression":
            base = n.child_by_field_name("argument")
            idx_node = n.child_by_field_name("index")
            if idx_node is None:
                ind = n.child_by_field_name("indices")
                kids = [c for c in ind.named_children if c.type != "comment"] if ind is not None else []
                idx_node = kids[0] if kids else None
            blv = self.lvalue(base)
            idx = self.value(idx_node) if idx_node is not None else V(Imm(0), INT)
            if blv.ty.kind == "array":
                return self.index_lv(blv, idx)
            return self.deref(self.ptr_add(self.read(blv), idx))
        if t == "pointer_expression":
            op = n.children[0].type
            arg = n.child_by_field_name("argument")
            if op == "*":
                return self.deref(self.value(arg))
            return AliasLV(self.address(self.lvalue(arg)))
        if t == "qualified_identifier":
            name = self.text(n).replace(" ", "")
            lv = self.global_lv(name) or self.global_lv(name.rsplit("::", 1)[-1])
            return lv if lv is not None else UnknownLV(name)
        if t == "call_expression":
            r = self.call(n, want_lvalue=True)
            if isinstance(r, V):
                return AliasLV(r)
            return r
        if t == "this":
            fr = self.frame
            if fr.this is None:
                return UnknownLV("this")
            return AliasLV(V(None, ptr_to(fr.this.ty), (fr.this, None)))
        if t == "cast_expression" or t == "conditional_expression" or t == "assignment_expression":
            return AliasLV(self.value(n))
        return AliasLV(self.value(n))

    def _field_lv(self, n):
        arg = n.child_by_field_name("argument")
        fname = self.text(n.child_by_field_name("field"))
        op = self.text(n.child_by_field_name("operator"))
        if arg.type == "identifier" and op == ".":
            base = self.text(arg)
            if base in _SPECIAL and self.lookup(base) is None:
                return AliasLV(self._special(base, fname))
        if arg.type == "this":
            fr = self.frame
            if fr.this is None:
                return UnknownLV(self.text(n))
            lv = self.member(fr.this, fname)
            return lv if lv is not None else UnknownLV(self.text(n))
        if op == "->":
            obj = self.deref(self.value(arg))
        else:
            obj = self.lvalue(arg)
        lv = self.member(obj, fname)
        return lv if lv is not None else UnknownLV(self.text(n))

    def _special(self, base: str, field: str) -> V:
        prefix = _SPECIAL[base]
        if field in ("x", "y", "z"):
            return V(Reg(f"{prefix}.{field}"), UINT, tx=("x",) if prefix == "%tid" and field == "x" else None)
        return self.opaque(f"{base}.{field}", UINT)

    def _struct(self, ty: CType) -> StructInfo | None:
        if ty.kind != "struct":
            return None
        return self.P.structs.get(ty.name)

    def member(self, obj, fname: str):
        """Field ``fname`` of object ``obj`` (an lvalue), or None when ``obj`` has no such field."""
        s = self._struct(obj.ty)
        if s is None:
            if isinstance(obj, UnknownLV):
                return UnknownLV(f"{obj.text}.{fname}")
            return None
        ft = s.field_type(fname)
        if ft is None:
            return None
        if isinstance(obj, AggLV):
            key = f"{obj.key}.{fname}"
            return AggLV(key, ft) if ft.kind in ("array", "struct") else RegLV(key, ft)
        if isinstance(obj, MemLV):
            layout(s, self.P.structs)
            if s.offsets is not None:
                return MemLV(self.byte_add(obj.addr, s.offsets[fname], ptr_to(ft)), ft, obj.space)
            a = obj.addr
            if type(a.op) is Sym:
                return MemLV(V(Sym(f"{a.op.name}+{a.op.offset}.{fname}"), ptr_to(ft)), ft, obj.space)
            return UnknownLV(fname, ft)
        if isinstance(obj, AliasLV):
            return UnknownLV(fname, ft)
        return UnknownLV(fname, ft)

    def index_lv(self, lv, idx: V):
        """Element ``idx`` of array lvalue ``lv``."""
        elem = lv.ty.elem or UNKNOWN
        if isinstance(lv, AggLV):
            if idx.const is None:
                return UnknownLV(f"{lv.key}[?]", elem)
            key = f"{lv.key}[{idx.const}]"
            return AggLV(key, elem) if elem.kind in ("array", "struct") else RegLV(key, elem)
        if isinstance(lv, MemLV):
            return MemLV(self.ptr_add(V(lv.addr.op, ptr_to(elem), lv.addr.ref), idx), elem, lv.space)
        return UnknownLV("element", elem)

    def deref(self, p: V):
        """The object pointer value ``p`` points to."""
        elem = p.ty.elem if p.ty.kind in ("ptr", "array") and p.ty.elem is not None else UNKNOWN
        if p.ref is not None:
            base, i = p.ref
            if i is None or i == 0 and not isinstance(base, AggLV):
                return base
            if isinstance(base, AggLV) and base.ty.kind == "array":
                return self.index_lv(base, V(Imm(i), INT))
            if i == 0:
                return base
            return UnknownLV("pointee", elem)
        if p.op is None:
            return UnknownLV("pointee", elem)
        return MemLV(p, elem, self._space_of(p))

    def _space_of(self, p: V) -> str:
        if type(p.op) is Sym:
            name = p.op.name.split("+", 1)[0]
            var = self.variables.get(name)
            if var is not None:
                return var.space
        return ""

    def address(self, lv) -> V:
        """``&lv``."""
        if isinstance(lv, MemLV):
            return V(lv.addr.op, ptr_to(lv.ty), lv.addr.ref)
        if isinstance(lv, (RegLV, AggLV)):
            return V(None, ptr_to(lv.ty), (lv, None))
        if isinstance(lv, AliasLV) and lv.v.ty.kind != "unknown":
            return V(None, ptr_to(lv.ty), (lv, None))
        return self.opaque(f"&{getattr(lv, 'text', '?')}", ptr_to(lv.ty))

    def read(self, lv) -> V:
        """The value of lvalue ``lv`` (arrays decay to a pointer to their first element)."""
        if isinstance(lv, AliasLV):
            return lv.v
        if isinstance(lv, RegLV):
            return V(self.cell(lv), lv.ty)
        if isinstance(lv, AggLV):
            if lv.ty.kind == "array":
                return V(None, ptr_to(lv.ty.elem or UNKNOWN), (lv, 0))
            return V(None, lv.ty, (lv, None))
        if isinstance(lv, MemLV):
            if lv.ty.kind == "array":
                return V(lv.addr.op, ptr_to(lv.ty.elem or UNKNOWN), lv.addr.ref)
            if lv.ty.kind == "struct":
                return V(None, lv.ty, (lv, None))
            r = self.reg("p" if lv.ty.kind == "bool" else "r")
            sp = f".{lv.space}" if lv.space else ""
            self.emit(f"ld{sp}.{_suffix(lv.ty)}", [r, self._addr_operand(lv.addr)])
            return V(r, lv.ty)
        if isinstance(lv, UnknownLV):
            return self.opaque(lv.text, lv.ty)
        return self.opaque("?", UNKNOWN)

    def write(self, lv, v: V) -> None:
        """Store ``v`` into ``lv``."""
        if isinstance(lv, RegLV):
            v = self.convert(v, lv.ty)
            if v.op is None:
                v = self.opaque(f"value of {lv.key}", lv.ty)
            reg = self.cell(lv)
            self._detach(reg)
            self.emit(f"mov.{_suffix(lv.ty)}", [reg, v.op])
        elif isinstance(lv, MemLV):
            if lv.ty.kind in ("array", "struct"):
                return
            v = self.convert(v, lv.ty)
            src = v.op if v.op is not None else self.opaque("stored value", lv.ty).op
            sp = f".{lv.space}" if lv.space else ""
            self.emit(f"st{sp}.{_suffix(lv.ty)}", [self._addr_operand(lv.addr), src])
        elif isinstance(lv, AliasLV) and lv.scope is not None and lv.name:
            c = RegLV(f"{lv.name}#{self.frame.uid}.w{self.nreg}", lv.ty)
            lv.scope[lv.name] = c
            self.write(c, v)
        elif isinstance(lv, AggLV) and v.ref is not None and isinstance(v.ref[0], AggLV):
            self._copy_agg(v.ref[0], lv)

    def _addr_operand(self, a: V) -> Address:
        op = a.op
        if type(op) is Sym:
            return Address(Sym(op.name), op.offset)
        if type(op) is Reg:
            return Address(op)
        if type(op) is Imm:
            return Address(None, op.value)
        return Address(self.opaque("address").op)

    # ---- values -------------------------------------------------------------------------------------------------
    def value(self, n, discard: bool = False) -> V:
        """The value of expression ``n`` (instructions for its side effects and computation are emitted)."""
        t = n.type
        h = _EXPR.get(t)
        if h is None:
            if t in ("string_literal", "concatenated_string", "raw_string_literal"):
                return self.opaque(self.text(n)[:40], ptr_to(UNKNOWN))
            if t == "lambda_expression":
                return self._e_lambda(n)
            if t in ("initializer_list", "compound_literal_expression", "new_expression",
                     "delete_expression", "fold_expression", "user_defined_literal", "requires_expression",
                     "co_await_expression", "offsetof_expression", "generic_expression", "alignof_expression"):
                return self.opaque(self.text(n), UNKNOWN)
            if t == "ERROR":
                raise Unsupported(n, "the C++ parser could not read the code at this line")
            return self.opaque(self.text(n), UNKNOWN)
        if discard and t == "update_expression":
            return self._e_update_expression(n, discard=True)
        return h(self, n)

    def _e_number_literal(self, n) -> V:
        r = parse_number(self.text(n))
        if r is None:
            return self.opaque(self.text(n), INT)
        v, t = r
        return self.const_v(v, t)

    def _e_char_literal(self, n) -> V:
        body = self.text(n)
        try:
            inner = body[body.index("'") + 1:-1]
            return V(Imm(ord(inner.encode().decode("unicode_escape")[0])), INT)
        except (ValueError, IndexError, UnicodeDecodeError):
            return self.opaque(body, INT)

    def _e_true(self, n) -> V:
        return V(Imm(1), BOOL)

    def _e_false(self, n) -> V:
        return V(Imm(0), BOOL)

    def _e_nullptr(self, n) -> V:
        return V(Imm(0), ptr_to(UNKNOWN))

    def _e_lambda(self, n) -> V:
        """A lambda: a value that names it; calling it inlines its body with the names of the frame where it was
        written visible (captures by reference and by value read the same registers)."""
        key = f"lambda@{n.start_byte}#{self.frame.uid}"
        self.lambdas[key] = (self.P.lambda_def(n), self.frame)
        return V(None, CType("lambda", 0, False, key))

    def _e_identifier(self, n) -> V:
        name = self.text(n)
        if name == "warpSize":
            return V(Imm(32), INT)
        lv = self.lookup(name)
        if lv is None:
            return self.opaque(name, UNKNOWN)
        return self.read(lv)

    def _e_qualified_identifier(self, n) -> V:
        name = self.text(n).replace(" ", "")
        scope, _, member = name.rpartition("::")
        t = self.frame.tenv.get(scope)
        if isinstance(t, CType):
            try:
                v, vt = self.P.static_member(t, member)
                return self.const_v(v, vt)
            except NotConstant:
                return self.opaque(name, UNKNOWN)
        try:
            v, t = self.P.resolve_constant(name)
            return self.const_v(v, t)
        except NotConstant:
            pass
        return self.read(self.lvalue(n))

    def _e_this(self, n) -> V:
        return self.read(self.lvalue(n))

    def _e_parenthesized_expression(self, n) -> V:
        kids = [c for c in n.named_children if c.type != "comment"]
        if not kids:
            return self.opaque("()", UNKNOWN)
        if len(kids) > 1:
            for k in kids[:-1]:
                self.value(k, discard=True)
        return self.value(kids[-1])

    def _e_field_expression(self, n) -> V:
        return self.read(self._field_lv(n))

    def _e_subscript_expression(self, n) -> V:
        return self.read(self.lvalue(n))

    def _e_pointer_expression(self, n) -> V:
        op = n.children[0].type
        arg = n.child_by_field_name("argument")
        if op == "&":
            return self.address(self.lvalue(arg))
        return self.read(self.deref(self.value(arg)))

    def _e_comma_expression(self, n) -> V:
        self.value(n.child_by_field_name("left"), discard=True)
        return self.value(n.child_by_field_name("right"))

    def _e_sizeof_expression(self, n) -> V:
        tn = n.child_by_field_name("type")
        if tn is not None:
            sz = size_of(self.type_of(tn), self.P.structs)
        else:
            kids = [c for c in n.named_children if c.type != "comment"]
            sz = None
            if kids:
                lv = self.lvalue(kids[-1]) if kids[-1].type in ("identifier", "field_expression",
                                                               "subscript_expression") else None
                sz = size_of(lv.ty, self.P.structs) if lv is not None else None
        return V(Imm(sz), U64) if sz is not None else self.opaque(self.text(n), U64)

    def _e_cast_expression(self, n) -> V:
        t = self.type_of(n.child_by_field_name("type"))
        return self.convert(self.value(n.child_by_field_name("value")), t, explicit=True)

    def _e_conditional_expression(self, n) -> V:
        c = n.child_by_field_name("condition")
        a = n.child_by_field_name("consequence")
        b = n.child_by_field_name("alternative")
        k = self.peek_const(c)
        if k is not None:
            return self.value(a if k else b)
        if a is not None and b is not None and _pure(a, self.P.enum_types) and _pure(b, self.P.enum_types):
            p = self.as_pred(self.value(c))
            va, vb = self.value(a), self.value(b)
            if p.const is not None:
                return va if p.const else vb
            t = common(va.ty, vb.ty) if va.ty.kind in ("int", "bool", "float") and vb.ty.kind in (
                "int", "bool", "float") else (va.ty if va.ty.kind != "unknown" else vb.ty)
            va, vb = self.convert(va, t), self.convert(vb, t)
            if va.op is None or vb.op is None:
                return self.opaque(self.text(n), t)
            tx = self.tid_combine(lambda c, x, y: x if c else y, p, va, vb)
            if t.kind == "bool":
                va, vb = self.as_int(va), self.as_int(vb)
                r = self.reg()
                self.emit("selp.b32", [r, va.op, vb.op, p.op])
                return self.as_pred(V(r, INT, tx=tx))
            r = self.reg()
            self.emit(f"selp.{_bits(t)}", [r, va.op, vb.op, p.op])
            return V(r, t, tx=tx)
        # branches
        l_else, l_end = self.new_label("celse"), self.new_label("cend")
        self.cond_jump(c, l_else, False)
        va = self.value(a)
        t = va.ty if va.ty.kind != "unknown" else INT
        out = RegLV(f"?:#{self.nreg}", t)
        self.write(out, va)
        self.bra(l_end)
        self.place(l_else)
        self.write(out, self.value(b))
        self.place(l_end)
        return self.read(out)

    def _e_unary_expression(self, n) -> V:
        op = self.text(n.child_by_field_name("operator"))
        v = self.value(n.child_by_field_name("argument"))
        if op == "!":
            return self._not(self.as_pred(v))
        if v.const is not None:
            t = promote(v.ty)
            if op == "-":
                return V(Imm(wrap(-v.const, t)), t)
            if op == "~":
                return V(Imm(wrap(~v.const, t)), t)
            return V(Imm(v.const), t)
        if op == "+":
            return v
        if v.op is None:
            return self.opaque(self.text(n), v.ty)
        t = promote(v.ty) if v.ty.kind in ("int", "bool") else v.ty
        r = self.reg()
        if op == "-":
            self.emit(f"neg.{_suffix(t)}", [r, self.as_int(v).op])
        else:
            self.emit(f"not.{_bits(t)}", [r, self.as_int(v).op])
        return V(r, t)

    def _e_binary_expression(self, n) -> V:
        op = self.text(n.child_by_field_name("operator"))
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        if op in ("&&", "||"):
            kl = self.peek_const(left)
            if kl is not None:
                if (op == "&&" and not kl) or (op == "||" and kl):
                    return V(Imm(1 if kl else 0), BOOL)
                return self.as_pred(self.value(right))
            if _pure(right, self.P.enum_types):
                a = self.as_pred(self.value(left))
                b = self.as_pred(self.value(right))
                if a.const is not None:
                    return b if (a.const if op == "&&" else not a.const) else V(Imm(a.const), BOOL)
                if b.const is not None:
                    return a if (b.const if op == "&&" else not b.const) else V(Imm(b.const), BOOL)
                tx = self.tid_combine((lambda x, y: x and y) if op == "&&" else (lambda x, y: x or y), a, b)
                got = self.tid_predicate(tx)
                if got is not None:
                    return got
                r = self.reg("p")
                self.emit(f"{'and' if op == '&&' else 'or'}.pred", [r, a.op, b.op])
                return V(r, BOOL, tx=tx)
            out = RegLV(f"logic#{self.nreg}", BOOL)
            l_false, l_end = self.new_label("lf"), self.new_label("le")
            self.cond_jump(n, l_false, False)
            self.write(out, V(Imm(1), BOOL))
            self.bra(l_end)
            self.place(l_false)
            self.write(out, V(Imm(0), BOOL))
            self.place(l_end)
            return self.read(out)
        a = self.value(left)
        b = self.value(right)
        return self.binop(op, a, b)

    def _e_assignment_expression(self, n) -> V:
        op = self.text(n.child_by_field_name("operator"))
        lv = self.lvalue(n.child_by_field_name("left"))
        rv = self.value(n.child_by_field_name("right"))
        if op != "=":
            rv = self.binop(op[:-1], self.read(lv), rv)
        rv = self.convert(rv, lv.ty) if lv.ty.kind != "unknown" else rv
        self.write(lv, rv)
        return rv

    def _e_update_expression(self, n, discard: bool = False) -> V:
        arg = n.child_by_field_name("argument")
        op = self.text(n.child_by_field_name("operator"))
        lv = self.lvalue(arg)
        old = self.read(lv)
        prefix = n.children[0].type in ("++", "--")
        if not prefix and not discard:
            old = self.snapshot(old) if type(old.op) is Reg else old
        one = V(Imm(1), INT)
        new = self.binop("+" if op == "++" else "-", old, one)
        new = self.convert(new, lv.ty) if lv.ty.kind != "unknown" else new
        self.write(lv, new)
        return new if prefix or discard else old

    def _e_gnu_asm_expression(self, n) -> V:
        self.asm(n)
        return V(None, VOID)

    def _e_call_expression(self, n) -> V:
        r = self.call(n)
        return r if isinstance(r, V) else self.read(r)

    def _e_initializer_list(self, n) -> V:
        kids = [c for c in n.named_children if c.type != "comment"]
        if len(kids) == 1:
            return self.value(kids[0])
        return self.opaque(self.text(n), UNKNOWN)

    # ---- arithmetic ---------------------------------------------------------------------------------------------
    def convert(self, v: V, t: CType, explicit: bool = False) -> V:
        """``v`` converted to type ``t`` (constants folded; bool ↔ integer via setp/selp)."""
        if t.kind in ("unknown", "void") or v.ty is t:
            return v
        if t.kind == "bool":
            return self.as_pred(v)
        if v.ty.kind == "bool" and t.kind in ("int", "float"):
            v = self.as_int(v)
            return V(v.op, t) if v.const is None else V(Imm(v.const), t)
        if type(v.op) is Imm:
            if t.kind == "int":
                return V(Imm(wrap(v.op.value, t)), t)
            if t.kind == "ptr":
                return V(v.op, t)
            if t.kind == "float":
                return V(FloatImm(repr(float(v.op.value))), t)
        if t.kind == "ptr":
            if v.ref is not None:
                base, i = v.ref
                if (isinstance(base, AggLV) and t.elem is not None and base.ty.kind == "array"
                        and base.ty.elem == t.elem):
                    return V(None, t, v.ref)
                if isinstance(base, (RegLV, AliasLV)) and i is None and base.ty == t.elem:
                    return V(None, t, v.ref)
                return V(None, t, None) if v.op is None else V(v.op, t)
            return V(v.op, t)
        if t.kind == "int" and v.ty.kind == "int" and type(v.op) is Reg and t.bits < v.ty.bits:
            r = self.reg()
            self.emit(f"cvt.{_suffix(t)}.{_suffix(v.ty)}", [r, v.op])
            return V(r, t, tx=v.tx)
        if t.kind == "struct":
            return V(v.op, t, v.ref)
        return V(v.op, t, v.ref if t.kind == "ptr" else None, v.tx if t.kind == "int" else None)

    def as_pred(self, v: V) -> V:
        """``v != 0`` as a predicate (a bool V: a predicate register or a constant 0/1)."""
        if v.ty.kind == "bool":
            if v.const is not None:
                return V(Imm(1 if v.const else 0), BOOL)
            if type(v.op) is Reg:
                return v
        if v.const is not None:
            return V(Imm(1 if v.const else 0), BOOL)
        if v.ref is not None:
            return V(Imm(1), BOOL)
        if type(v.op) is Sym:
            return V(Imm(1), BOOL)
        if v.op is None or type(v.op) is FloatImm:
            return self.as_pred(self.opaque("pred", INT)) if v.op is None else V(Imm(1), BOOL)
        tx = self._tx_cmp("ne", v.tx, 0)
        got = self.tid_predicate(tx) if _is_table(tx) else None
        if got is not None:
            return got
        r = self.reg("p")
        t = v.ty if v.ty.kind in ("int", "ptr", "float") else INT
        self.emit(f"setp.ne.{_suffix(t)}", [r, v.op, Imm(0)])
        return V(r, BOOL, tx=tx)

    def as_int(self, v: V) -> V:
        """A bool ``v`` as an integer 0/1 (``selp``); other values unchanged."""
        if v.ty.kind != "bool":
            return v
        if v.const is not None:
            return V(Imm(v.const), INT)
        if type(v.op) is not Reg:
            return V(v.op, INT)
        r = self.reg()
        self.emit("selp.u32", [r, Imm(1), Imm(0), v.op])
        return V(r, INT, tx=v.tx)

    def materialize(self, v: V) -> V:
        """``v`` with a symbol operand moved into a register (a symbol address is not an arithmetic operand)."""
        if type(v.op) is Sym:
            r = self.reg("rd")
            self.emit("mov.u64", [r, v.op])
            return V(r, v.ty, v.ref)
        return v

    def byte_add(self, a: V, k: int, t: CType) -> V:
        """Address ``a`` plus ``k`` bytes, as type ``t``."""
        if k == 0:
            return V(a.op, t, a.ref)
        if type(a.op) is Sym:
            return V(Sym(a.op.name, a.op.offset + k), t)
        if type(a.op) is Imm:
            return V(Imm(a.op.value + k), t)
        if type(a.op) is Reg:
            r = self.reg("rd")
            self.emit("add.s64", [r, a.op, Imm(k)])
            return V(r, t)
        return V(None, t)

    def ptr_add(self, p: V, idx: V, negate: bool = False) -> V:
        """Pointer ``p`` plus ``idx`` elements."""
        elem = p.ty.elem if p.ty.kind in ("ptr", "array") and p.ty.elem is not None else UNKNOWN
        t = ptr_to(elem)
        if p.ref is not None:
            base, i = p.ref
            if idx.const is not None and i is not None:
                return V(None, t, (base, i + (-idx.const if negate else idx.const)))
            return V(None, t, None)
        size = size_of(elem, self.P.structs)
        if idx.const is not None:
            k = idx.const * (size if size is not None else 1)
            if size is None and type(p.op) is Sym:
                return V(Sym(f"{p.op.name}+{p.op.offset}[{idx.const}]"), t)
            return self.byte_add(V(p.op, t), -k if negate else k, t)
        if p.op is None or size is None:
            return V(None, t)
        base = self.materialize(p)
        i = self.as_int(idx)
        if i.op is None:
            return V(None, t)
        r = self.reg("rd")
        self.emit("mul.wide.u32" if (i.ty.kind == "int" and i.ty.bits <= 32) else "mul.lo.s64", [r, i.op, Imm(size)])
        out = self.reg("rd")
        self.emit("sub.s64" if negate else "add.s64", [out, base.op, r])
        return V(out, t)

    def compare(self, op: str, a: V, b: V) -> V:
        """``a op b`` as a predicate."""
        if a.const is not None and b.const is not None:
            try:
                v, _t = fold_binary(op, a.const, a.ty if a.ty.kind != "unknown" else INT, b.const,
                                    b.ty if b.ty.kind != "unknown" else INT)
                return V(Imm(v), BOOL)
            except (ValueError, ZeroDivisionError):
                pass
        if a.ty.kind == "bool" and b.ty.kind != "bool" and b.const is not None and op in ("==", "!="):
            p = a
            if (b.const == 0) == (op == "=="):
                return self._not(p)
            return p
        a, b = self.as_int(a), self.as_int(b)
        if a.op is None or b.op is None:
            return self.as_pred(self.opaque(f"cmp {op}", INT))
        if a.tx is not None and b.tx is not None:
            tx = self.tid_combine(lambda x, y: _PY_CMP[op](x, y), a, b)
        elif a.tx is not None and b.const is not None:
            tx = self._tx_cmp(_CMP_OPS[op], a.tx, b.const)
        elif b.tx is not None and a.const is not None:
            tx = self._tx_cmp(_SWAPPED[_CMP_OPS[op]], b.tx, a.const)
        else:
            tx = None
        if _is_table(tx):
            got = self.tid_predicate(tx)
            if got is not None:
                return got
        a, b = self.materialize(a), self.materialize(b)
        t = common(a.ty, b.ty) if a.ty.kind in ("int", "float") and b.ty.kind in ("int", "float") else (
            U64 if "ptr" in (a.ty.kind, b.ty.kind) else INT)
        r = self.reg("p")
        self.emit(f"setp.{_CMP_OPS[op]}.{_suffix(t)}", [r, a.op, b.op])
        return V(r, BOOL, tx=tx)

    def _not(self, p: V) -> V:
        if p.const is not None:
            return V(Imm(0 if p.const else 1), BOOL)
        tx = self.tid_combine(lambda x: 0 if x else 1, p) if p.tx is not None else None
        if tx is not None and not _is_table(p.tx) and p.tx[0] == "cmp":
            tx = ("cmp", _NEGATED[p.tx[1]], p.tx[2], p.tx[3])
        r = self.reg("p")
        self.emit("not.pred", [r, p.op])
        return V(r, BOOL, tx=tx)

    # ---- functions of the thread index ----------------------------------------------------------------------
    def _tx_cmp(self, cmp: str, tx, k: int):
        """The thread function ``tx cmp k``."""
        if tx is None:
            return None
        if _is_table(tx):
            f = _PY_CMP[_CMP_SYMBOL[cmp]]
            return ("table", tuple(1 if f(x, k) else 0 for x in tx[1]))
        return ("cmp", cmp, tx, k)

    def tid_table(self, v: V) -> tuple | None:
        """The value of ``v`` for every thread of the CTA (constants included), or None."""
        if v.const is not None:
            return (v.const,) * self.nthreads
        tx = v.tx
        if tx is None:
            return None
        if _is_table(tx):
            return tx[1]
        try:
            return tuple(eval_tid(tx, range(self.nthreads)))
        except (KeyError, TypeError, ValueError, ZeroDivisionError, RecursionError):
            return None

    def tid_combine(self, f, *vals: V):
        """``("table", …)`` of ``f`` applied thread by thread to ``vals`` (functions of the thread index or
        constants), or None when one of them is not such a function."""
        if all(v.tx is None for v in vals):
            return None
        tables = [self.tid_table(v) for v in vals]
        if any(t is None for t in tables):
            return None
        try:
            return ("table", tuple(int(f(*xs)) for xs in zip(*tables)))
        except (TypeError, ValueError, ZeroDivisionError):
            return None

    def tid_predicate(self, tx) -> V | None:
        """A predicate equal to thread table ``tx``, built as one comparison the value analysis reads as a thread
        predicate: on the thread index, its lane or its warp, over a (cyclic) run of values.  None when the
        table has no such form."""
        if tx is None:
            return None
        vals = tx[1] if _is_table(tx) else self.tid_table(V(None, BOOL, tx=tx))
        if vals is None:
            return None
        if all(vals):
            return V(Imm(1), BOOL)
        if not any(vals):
            return V(Imm(0), BOOL)
        n = len(vals)
        forms = []
        if n % 32 == 0 and all(vals[t] == vals[t - t % 32] for t in range(n)):
            forms.append((("shr", ("x",), 5), [vals[w * 32] for w in range(n // 32)]))
        if n >= 32 and all(vals[t] == vals[t % 32] for t in range(n)):
            forms.append((("and", ("x",), 31), list(vals[:32])))
        forms.append((("x",), list(vals)))
        for expr, dom in forms:
            run = _cyclic_run(dom)
            if run is None:
                continue
            lo, length = run
            m = len(dom)
            if lo == 0:
                cond = ("cmp", "le", expr, length - 1)
            elif lo + length == m:
                cond = ("cmp", "ge", expr, lo)
            else:
                cond = ("cmp", "le", ("rem", ("add", expr, m - lo), m), length - 1)
            return self._emit_tid_pred(cond)
        return None

    def _emit_tid_pred(self, cond) -> V:
        """Instructions computing thread predicate ``cond`` (``("cmp", c, e, k)``) from ``%tid.x``."""
        _tag, cmp, e, k = cond
        v = self._emit_tid_expr(e)
        r = self.reg("p")
        self.emit(f"setp.{cmp}.u32", [r, v.op, Imm(k)])
        return V(r, BOOL, tx=cond)

    def _emit_tid_expr(self, e) -> V:
        if e == ("x",):
            return V(Reg("%tid.x"), UINT, tx=e)
        name, inner, k = e
        a = self._emit_tid_expr(inner)
        r = self.reg()
        opcode = {"shr": "shr.u32", "and": "and.b32", "add": "add.u32", "rem": "rem.u32"}[name]
        self.emit(opcode, [r, a.op, Imm(k)])
        return V(r, UINT, tx=e)

    def binop(self, op: str, a: V, b: V) -> V:
        """``a op b`` for an arithmetic, bitwise, shift or comparison operator."""
        if op in _CMP_OPS:
            return self.compare(op, a, b)
        ka, kb = a.ty.kind, b.ty.kind
        if op in ("+", "-") and ka in ("ptr", "array") and kb in ("int", "bool", "unknown") and b.ty.kind != "ptr":
            return self.ptr_add(V(a.op, a.ty if ka == "ptr" else ptr_to(a.ty.elem or UNKNOWN), a.ref), b,
                                negate=op == "-")
        if op == "+" and kb in ("ptr", "array") and ka in ("int", "bool"):
            return self.ptr_add(b, a)
        a, b = self.as_int(a), self.as_int(b)
        ta = a.ty if a.ty.kind in ("int", "float") else (U64 if a.ty.kind == "ptr" else INT)
        tb = b.ty if b.ty.kind in ("int", "float") else (U64 if b.ty.kind == "ptr" else INT)
        if a.const is not None and b.const is not None:
            try:
                v, t = fold_binary(op, a.const, ta, b.const, tb)
                return self.const_v(v, t)
            except (ValueError, ZeroDivisionError):
                return self.opaque(f"{a.op} {op} {b.op}", ta)
        t = promote(ta) if op in ("<<", ">>") else common(ta, tb)
        if a.op is None or b.op is None:
            return self.opaque(f"({op})", t)
        # identities
        if b.const is not None:
            k = b.const
            if k == 0 and op in ("+", "-", "|", "^", "<<", ">>"):
                return V(a.op, t, a.ref, a.tx)
            if k == 1 and op in ("*", "/"):
                return V(a.op, t, a.ref, a.tx)
            if k == 0 and op in ("*", "&"):
                return V(Imm(0), t)
            if t.kind == "int" and not t.signed and k > 0 and k & (k - 1) == 0 and op in ("/", "%", "*"):
                sh = k.bit_length() - 1
                if op == "/":
                    op, b = ">>", V(Imm(sh), INT)
                elif op == "%":
                    op, b = "&", V(Imm(k - 1), t)
        if a.const is not None and op in ("+", "*", "&", "|", "^"):
            if a.const == 0 and op in ("+", "|", "^"):
                return V(b.op, t, b.ref, b.tx)
            if a.const == 1 and op == "*":
                return V(b.op, t, b.ref, b.tx)
            if a.const == 0 and op in ("*", "&"):
                return V(Imm(0), t)
        a, b = self.materialize(a), self.materialize(b)
        name = _ARITH_OPS[op]
        if t.kind == "float":
            suffix = _suffix(t)
        elif op in ("&", "|", "^"):
            suffix = _bits(t)
        elif op == "<<":
            suffix = _bits(t)
        elif op == ">>":
            suffix = _suffix(t)
        else:
            suffix = _suffix(t)
        if op == "*" and t.kind == "int":
            name = "mul.lo"
        tx = None
        if t.kind == "int" and (a.tx is not None or b.tx is not None):
            base = _ARITH_OPS[op]
            if b.const is not None and not _is_table(a.tx):
                tx = (base, a.tx, b.const)
            elif a.const is not None and not _is_table(b.tx) and op in ("+", "*", "&", "|", "^"):
                tx = (base, b.tx, a.const)
            else:
                tx = self.tid_combine(lambda x, y: _PY_BIN[base](x, y), a, b)
        r = self.reg()
        self.emit(f"{name}.{suffix}", [r, a.op, b.op])
        return V(r, t, tx=tx)

    # ---- calls --------------------------------------------------------------------------------------------------
    def call(self, n, want_lvalue: bool = False):
        """Lower a call: a cast, an intrinsic, a function of the file (inlined), or an opaque value."""
        fn = n.child_by_field_name("function")
        args_node = n.child_by_field_name("arguments")
        args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
        self.cur_span = self.span(n)
        ft = fn.type
        if ft in ("primitive_type", "sized_type_specifier"):
            t = self.type_of(fn)
            return self.convert(self.value(args[0]), t, explicit=True) if args else V(Imm(0), t)
        targs = None
        if ft == "template_function":
            name = self.text(fn.child_by_field_name("name")).replace(" ", "")
            targs = fn.child_by_field_name("arguments")
            short = name.rsplit("::", 1)[-1]
            if short in ("static_cast", "reinterpret_cast", "const_cast", "bit_cast") and len(args) == 1:
                tn = [x for x in targs.named_children if x.type != "comment"]
                t = self.type_of(tn[0]) if tn else UNKNOWN
                if short == "reinterpret_cast" and t.kind == "ptr":
                    v = self.value(args[0])
                    if v.ref is not None and (v.ty.elem is None or v.ty.elem != t.elem):
                        return V(None, t)
                    return V(v.op, t, v.ref)
                if t.kind == "ptr" or short != "bit_cast":
                    return self.convert(self.value(args[0]), t, explicit=True)
                return self.value(args[0])
        elif ft == "field_expression":
            return self._method_call(n, fn, args)
        elif ft == "qualified_identifier":
            name = self.text(fn).replace(" ", "")
            inner = fn.child_by_field_name("name")
            if inner is not None and inner.type == "template_function":
                targs = inner.child_by_field_name("arguments")
                name = name.split("<", 1)[0]
        elif ft == "type_identifier":
            t = self.type_of(fn)
            if t.kind in ("int", "bool", "float") and len(args) == 1:
                return self.convert(self.value(args[0]), t, explicit=True)
            name = self.text(fn)
            s = self.P.structs.get(name)
            if s is not None:
                return self.opaque(self.text(n), CType("struct", 0, False, s.name))
        elif ft in ("identifier",):
            name = self.text(fn)
            lv = self.lookup(name)
            lam = self.lambdas.get(lv.ty.name) if lv is not None and lv.ty.kind == "lambda" else None
            if lam is not None:
                return self.inline_call(lam[0], args, None, n, None, closure=lam[1])
        elif ft == "lambda_expression":
            f, closure = self.lambdas[self._e_lambda(fn).ty.name]
            return self.inline_call(f, args, None, n, None, closure=closure)
        else:
            for a in args:
                self.value(a, discard=True)
            return self.opaque(self.text(n), UNKNOWN)
        short = name.rsplit("::", 1)[-1]
        if (name in self.P.enum_types or short in self.P.enum_types) and len(args) == 1:
            return self.convert(self.value(args[0]), INT, explicit=True)  # an enum conversion Role(x)
        this = self.frame.this
        own = self._struct(this.ty) if this is not None and "::" not in name else None
        cands = self.P.lookup_functions(name, len(args), own,
                                        self._spec_key(targs) if targs is not None else None)
        if cands:
            # a method called by its bare name inside another method of the same struct acts on the same object
            same = own is not None and cands[0].owner is own
            return self.inline_call(cands[0], args, this if same else None, n, targs, want_lvalue=want_lvalue)
        h = _INTRINSICS.get(name) or _INTRINSICS.get(short)
        if h is not None:
            return h(self, args, n)
        known = self.P.functions.get(name.split("<", 1)[0]) or self.P.functions.get(short.split("<", 1)[0])
        if not any(f.body is not None for f in known or ()) and not _harmless(name):
            self.unseen.setdefault(name, self.span(n))
        return self.opaque_call(self.text(fn), [self.value(a) for a in args])

    def opaque_call(self, name: str, vals: list[V], ty: CType = UNKNOWN) -> V:
        """A call of a function whose body is not lowered (a math function, an unseen helper): its arguments are
        read where it is called, as nvcc's instruction computing it reads them (a ``prmt`` of every register the
        arguments hold, the elements of a local array passed by pointer included); the result is an opaque value,
        the same for the same name and arguments."""
        regs: list[Reg] = []
        for v in vals:
            if type(v.op) is Reg:
                regs.append(v.op)
            elif v.ref is not None and isinstance(v.ref[0], AggLV):
                k = v.ref[0].key
                regs.extend(Reg(r) for key, r in self.cells.items() if key.startswith((k + "[", k + ".")))
        if regs:
            self.emit("prmt.b32", [self.reg("arg"), *regs])
        key = name + "(" + ",".join(repr(v.op) if v.op is not None else "?" for v in vals) + ")"
        return self.opaque(key, ty)

    def _method_call(self, n, fn, args):
        obj_node = fn.child_by_field_name("argument")
        op = self.text(fn.child_by_field_name("operator"))
        mname = self.text(fn.child_by_field_name("field"))
        obj = self.deref(self.value(obj_node)) if op == "->" else self.lvalue(obj_node)
        if obj.ty.kind == "cg":
            got = self._cg_method(obj.ty.name, mname, args)
            if got is not None:
                return got
        s = self._struct(obj.ty)
        if s is not None:
            cands = [f for f in s.methods.get(mname, []) if f.body is not None and
                     f.required_args() <= len(args) <= len(f.params)]
            if cands:
                return self.inline_call(cands[0], args, obj, n, None)
        owner = obj.ty.name if obj.ty.kind == "struct" and obj.ty.name else ""
        if s is None and obj.ty.kind in ("struct", "unknown") and not _harmless(owner + "::" + mname):
            self.unseen.setdefault(f"{owner or self.text(obj_node)}::{mname}", self.span(n))
        return self.opaque_call(self.text(n), [self.value(a) for a in args])

    def _cg_method(self, group: str, mname: str, args) -> V | None:
        """A method of a cooperative_groups object (``cluster.sync()``, ``block.sync()``, ``block_rank()``)."""
        for a in args:
            self.value(a, discard=True)
        if mname in ("sync", "barrier_sync"):
            if group == "cluster":
                self.emit("barrier.cluster.arrive.aligned", [])
                self.emit("barrier.cluster.wait.aligned", [])
            elif group == "block":
                self.emit("bar.sync", [Imm(0)])
            elif group == "warp":
                self.emit("bar.warp.sync", [Imm(-1)])
            else:
                return None
            return V(None, VOID)
        if mname == "block_rank" and group == "cluster":
            return V(Reg("%cluster_ctarank"), UINT)
        if mname == "thread_rank" and group == "block":
            return V(Reg("%tid.x"), UINT)
        return None

    def inline_call(self, f: FunctionDef, arg_nodes: list, this, call_node, targs, want_lvalue: bool = False,
                    closure: Frame | None = None):
        """Inline a call of ``f`` (or evaluate it when it is constexpr and its arguments are constants); a lambda
        sees the names of its ``closure`` frame."""
        # arguments, in the caller
        bound = []
        for i, a in enumerate(arg_nodes):
            p = f.params[i] if i < len(f.params) else None
            if p is not None and p.is_ref:
                bound.append(self.lvalue(a))
            else:
                bound.append(self.value(a))
        tenv = self._template_env(f, targs)
        if f.is_constexpr and not f.returns_ref and all(isinstance(b, V) and b.const is not None for b in bound):
            try:
                env = {k: ((v.v.const, v.v.ty) if isinstance(v, AliasLV) else v) for k, v in tenv.items()
                       if isinstance(v, CType) or isinstance(v, AliasLV) and v.v.const is not None}
                v, t = self.P.consteval.call(f, [(b.const, b.ty) for b in bound], env)
                return self.const_v(v, t)
            except NotConstant:
                pass
        if f.body is None and not _harmless(f.qualname):
            self.unseen.setdefault(f.qualname, self.span(call_node) if call_node is not None else self.cur_span)
        if f.body is None or len(self.frames) > MAX_INLINE_DEPTH or any(fr.fdef is f for fr in self.frames):
            vals = [b if isinstance(b, V) else self.read(b) for b in bound]
            return self.opaque_call(f"{f.qualname}", vals, f.return_type)
        _check_parsed(f, self.P)
        if this is not None:
            tenv = {**self.struct_tenv(this.ty), **tenv}
        call_span = self.span(call_node) if call_node is not None else self.cur_span
        fr = Frame(f, [{}], this=this, tenv=tenv, uid=self._uid(),
                   inlined_at=(SourcePos(self.path, call_span.line, call_span.column),) + self.frame.inlined_at)
        if closure is not None:
            fr.scopes = list(closure.scopes) + [{}]
            fr.this, fr.tenv = closure.this, closure.tenv
        scope = fr.scopes[-1]
        mutated = self.mutated(f)
        for i, p in enumerate(f.params):
            if i < len(bound):
                b = bound[i]
            elif p.default is not None:
                self.frames.append(fr)
                try:
                    b = self.lvalue(p.default) if p.is_ref else self.value(p.default)
                finally:
                    self.frames.pop()
            else:
                b = self.opaque(f"missing argument {p.name}", p.type)
            if p.is_ref:
                scope[p.name] = b if not isinstance(b, V) else AliasLV(b)
                continue
            v = self.convert(b, p.type) if p.type.kind != "unknown" else b
            if p.type.kind in ("struct", "array") and v.ref is not None and v.op is None:
                scope[p.name] = v.ref[0]
                continue
            if p.name in mutated:
                c = RegLV(f"{p.name}#{fr.uid}", p.type if p.type.kind != "unknown" else v.ty)
                scope[p.name] = c
                self.write(c, v)
            else:
                scope[p.name] = self.alias(v, p.name, scope)
        rt = f.return_type
        direct = _single_tail_return(f.body)
        fr.ret_label = self.new_label("ret")
        if rt.kind not in ("void",) and not f.returns_ref and not direct:
            fr.ret_lv = RegLV(f"ret#{fr.uid}", rt if rt.kind != "unknown" else UINT)
        self.frames.append(fr)
        result = None
        saved_span = self.cur_span
        try:
            if this is not None:
                self._field_initializers(f, this)
            stmts = [c for c in f.body.named_children]
            if direct:
                last = [c for c in stmts if c.type != "comment"][-1]
                self.push_scope({})
                self._stmts([c for c in stmts if c.id != last.id])
                kids = [c for c in last.named_children if c.type != "comment"]
                self.cur_span = self.span(last)
                if kids:
                    result = self.lvalue(kids[0]) if f.returns_ref else self.value(kids[0])
                    if isinstance(result, V) and rt.kind != "unknown":
                        result = self.convert(result, rt)
                self.pop_scope()
            else:
                self.stmt(f.body)
                if f.returns_ref and isinstance(fr.ret_lv, tuple):
                    result = fr.ret_lv[1]
            self.place(fr.ret_label)
        finally:
            self.frames.pop()
            self.cur_span = saved_span
        if result is None:
            if isinstance(fr.ret_lv, RegLV):
                result = self.read(fr.ret_lv)
            else:
                result = V(None, VOID) if rt.kind == "void" else self.opaque(f"{f.qualname}()", rt)
        if want_lvalue or not isinstance(result, V):
            return result
        return result

    def _spec_key(self, targs) -> str:
        """The template arguments of a call as an explicit specialization spells them: constants folded
        (``f<kN / 2>`` finds ``template <> f<64>``), other arguments as written."""
        parts = []
        for x in targs.named_children:
            if x.type == "comment":
                continue
            k = self.peek_const(x) if x.type != "type_descriptor" else None
            parts.append(str(k) if k is not None else self.text(x).replace(" ", ""))
        return "<" + ",".join(parts) + ">"

    def _template_env(self, f: FunctionDef, targs) -> dict:
        env: dict = {}
        given = [x for x in targs.named_children if x.type != "comment"] if targs is not None else []
        for i, (pname, kind, default) in enumerate(f.template_params):
            node = given[i] if i < len(given) else default
            if node is None:
                continue
            if kind == "type":
                env[pname] = self.type_of(node)
            else:
                k = self.peek_const(node)
                if k is not None:
                    env[pname] = AliasLV(V(Imm(k), INT))
        return env

    def _field_initializers(self, f: FunctionDef, this) -> None:
        """A constructor's member initializer list (``: addr(0), n(cols)``)."""
        for c in f.node.named_children:
            if c.type != "field_initializer_list":
                continue
            for init in c.named_children:
                if init.type != "field_initializer":
                    continue
                fld = next((x for x in init.named_children if x.type == "field_identifier"), None)
                args = next((x for x in init.named_children if x.type in ("argument_list", "initializer_list")),
                            None)
                if fld is None or args is None:
                    continue
                lv = self.member(this, self.text(fld))
                kids = [x for x in args.named_children if x.type != "comment"]
                if lv is not None and len(kids) == 1:
                    self.cur_span = self.span(init)
                    self.write(lv, self.value(kids[0]))

    # ---- asm ----------------------------------------------------------------------------------------------------
    def asm(self, n) -> None:
        """Lower one asm statement: operands bound to registers, the template's instructions appended."""
        st = self.asm_cache.get(("stmt", n.id))
        if st is None:
            st = read_asm(n, self.P.src)
            self.asm_cache[("stmt", n.id)] = st
        self.cur_span = self.span(n)
        if st.unknown is not None:
            for op in st.outputs:
                lv = self.lvalue(op.expr)
                self.write(lv, self.opaque(f"asm output {self.text(op.expr)} at {self.cur_span.line}", lv.ty))
            self.diagnostics.append(Diagnostic(
                "TM901", self.span(n), f"asm statement not analysed: {st.unknown}; its instructions are skipped"))
            return
        bound: dict[int, object] = {}
        literals: dict[int, str] = {}
        post: list = []
        k = 0
        for op in st.outputs:
            lv = self.lvalue(op.expr)
            rw = "+" in op.modifier
            if isinstance(lv, AliasLV) and lv.scope is not None and lv.name:
                c = RegLV(f"{lv.name}#{self.frame.uid}.o{self.nreg}", lv.ty)
                if rw:
                    self.write(c, lv.v)
                lv.scope[lv.name] = c
                lv = c
            if isinstance(lv, RegLV):
                bound[k] = self.cell(lv)
                self._detach(bound[k])
            else:
                r = self.reg()
                if rw:
                    v = self.read(lv)
                    if v.op is not None:
                        self.emit(f"mov.{_constraint_type(op.constraint)}", [r, v.op])
                bound[k] = r
                post.append((lv, r))
            k += 1
        for op in st.inputs:
            self.cur_span = self.span(op.expr)
            v = self.value(op.expr)
            imm = any(c in op.constraint for c in "niI") and not any(c in op.constraint for c in "rlhfd")
            if imm and v.const is not None:
                literals[k] = str(v.const)
            elif v.ty.kind == "bool":
                bound[k] = self._to_reg(self.as_int(v), op.constraint)
            else:
                bound[k] = self._to_reg(v, op.constraint)
            k += 1
        self.cur_span = self.span(n)
        key = (n.id, tuple(sorted(literals.items())))
        tpl = self.asm_cache.get(key)
        if tpl is None:
            text, pos, _used = prepare(st, literals)
            tpl = parse_template(text, pos, self.where)
            self.asm_cache[key] = tpl
        if tpl.error is not None:
            msg, sp = tpl.error
            self.diagnostics.append(Diagnostic("TM900", sp, msg))
        else:
            self._instantiate(tpl, bound)
        for lv, r in post:
            self.write(lv, V(r, lv.ty))

    def _to_reg(self, v: V, constraint: str) -> Reg:
        if type(v.op) is Reg:
            return v.op
        r = self.reg()
        if v.op is None:
            return self.opaque(f"asm operand {self.cur_span.line}:{self.cur_span.column}", v.ty).op
        self.emit(f"mov.{_constraint_type(constraint)}", [r, v.op])
        return r

    def _instantiate(self, tpl: AsmTemplate, bound: dict) -> None:
        self.nasm += 1
        tag = f"@a{self.nasm}"
        labels = tpl.labels
        cache: dict = {}

        def sub(o):
            t = type(o)
            if t is Reg:
                name = o.name
                if name.startswith(PLACEHOLDER):
                    try:
                        r = bound.get(int(name[len(PLACEHOLDER):]))
                    except ValueError:
                        r = None
                    return r if r is not None else o
                if is_local_name(name):
                    r = cache.get(name)
                    if r is None:
                        r = Reg(name + tag)
                        cache[name] = r
                    return r
                return o
            if t is Sym:
                return Sym(o.name + tag, o.offset) if o.name in labels else o
            if t is Address:
                return Address(sub(o.base) if o.base is not None else None, o.offset,
                               sub(o.coords) if o.coords is not None else None)
            if t is Vec:
                return Vec(tuple(sub(x) for x in o.items))
            if t is ParenList:
                return ParenList(tuple(sub(x) for x in o.items))
            if t is NotReg:
                return NotReg(sub(o.reg))
            if t is RegPair:
                return RegPair(sub(o.first), sub(o.second))
            return o

        for item in tpl.items:
            if type(item) is Label:
                name = item.name + tag
                self.labels[name] = len(self.insts)
                self.label_spans[name] = item.span
                continue
            g = item.guard
            if g is not None:
                g = Guard(sub(g.reg), g.negated)
            inst = Instruction(item.opcode, item.parts, g, tuple(sub(o) for o in item.operands), item.span,
                               self._src(item.span), len(self.insts))
            self.insts.append(inst)
        if len(self.insts) > MAX_INSTRUCTIONS:
            raise BudgetExceeded()


#: Statement and expression handlers by tree-sitter node type (``Lowering._s_<type>``, ``Lowering._e_<type>``).
_STMT = {k[3:]: v for k, v in vars(Lowering).items() if k.startswith("_s_")}
_EXPR = {k[3:]: v for k, v in vars(Lowering).items() if k.startswith("_e_")}

# ------------------------------------------------------------------------------------------------ helpers


def _suffix(t: CType) -> str:
    if t.kind == "bool":
        return "pred"
    if t.kind == "float":
        return f"f{t.bits}"
    if t.kind == "ptr":
        return "u64"
    if t.kind == "int":
        return f"{'s' if t.signed else 'u'}{max(t.bits, 8)}"
    return "b32"


def _bits(t: CType) -> str:
    if t.kind == "bool":
        return "pred"
    if t.kind in ("int", "float"):
        return f"b{max(t.bits, 8)}"
    if t.kind == "ptr":
        return "b64"
    return "b32"


def _ptx_type(t: CType) -> str | None:
    if t.kind in ("int", "float", "ptr", "bool"):
        return _bits(t) if t.kind != "bool" else "pred"
    return "b8"


def _constraint_type(c: str) -> str:
    if "l" in c:
        return "b64"
    if "h" in c:
        return "b16"
    if "f" in c:
        return "f32"
    if "d" in c:
        return "f64"
    return "b32"


_PY_CMP = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
           "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
_CMP_SYMBOL = {v: k for k, v in _CMP_OPS.items()}
_SWAPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}
_NEGATED = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}
_PY_BIN = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "div": lambda a, b: int(a / b), "rem": lambda a, b: a - b * int(a / b), "and": lambda a, b: a & b,
           "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "shl": lambda a, b: a << b,
           "shr": lambda a, b: a >> b}


def _is_table(tx) -> bool:
    return tx is not None and tx[0] == "table"


def _cyclic_run(bits: list) -> tuple[int, int] | None:
    """``(start, length)`` when the true entries of ``bits`` form one run, possibly wrapping around the end."""
    n = len(bits)
    ones = sum(1 for b in bits if b)
    if ones == 0 or ones == n:
        return None
    starts = [i for i in range(n) if bits[i] and not bits[i - 1]]
    if len(starts) != 1:
        return None
    return starts[0], ones


_PURE_CALLS = {"static_cast", "reinterpret_cast", "const_cast", "bit_cast", "min", "max", "umin", "umax",
               "__uint_as_float", "__float_as_uint", "__int_as_float", "__float_as_int", "__cvta_generic_to_shared"}


def _pure(n, types=frozenset()) -> bool:
    """Whether expression ``n`` has no side effects (no assignments, increments, asm, or calls other than casts
    and arithmetic intrinsics); a call of one of ``types`` (``Role(x)``) is a cast."""
    stack = [n]
    while stack:
        x = stack.pop()
        t = x.type
        if t in ("assignment_expression", "update_expression", "gnu_asm_expression", "lambda_expression"):
            return False
        if t == "call_expression":
            fn = x.child_by_field_name("function")
            if fn is None:
                return False
            if fn.type == "template_function":
                fn = fn.child_by_field_name("name")
            if fn.type not in ("primitive_type", "sized_type_specifier") and (
                    fn.type not in ("identifier", "qualified_identifier")
                    or fn.text.decode("utf-8", "replace").rsplit("::", 1)[-1] not in _PURE_CALLS
                    and fn.text.decode("utf-8", "replace") not in types):
                return False
            stack.extend(x.child_by_field_name("arguments").named_children)
            continue
        stack.extend(x.named_children)
    return True


def _check_parsed(f: FunctionDef, prog: Program) -> None:
    """Raise Unsupported at the first place tree-sitter could not parse in ``f`` (an ERROR or a MISSING node):
    the structure around it is a guess, so the function is not analysed.  When a name written like a macro that
    the translation unit does not define is there, the message says so (it may come from a header not read)."""
    root = f.node
    if not root.has_error:
        return
    stack = [root]
    while stack:
        n = stack.pop()
        if n.is_error or n.is_missing:
            line_start = prog.src.rfind(b"\n", 0, n.start_byte) + 1
            line_end = prog.src.find(b"\n", n.end_byte)
            what = "the C++ parser could not read the code at this line"
            raise Unsupported(n, what + macro_hint(prog.src[line_start:line_end if line_end >= 0 else None]
                                                   .decode("utf-8", "replace"), prog.pre.macros, prog.pre.text))
        stack.extend(c for c in reversed(n.children) if c.has_error or c.is_missing)
    raise Unsupported(root, "the C++ parser could not read this function")


_MACRO_LIKE = re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]*|[A-Z]{3,}[A-Z0-9]*)\b")


def macro_hint(code: str, macros, unit_text: str = "") -> str:
    """``: NAME is probably a macro …`` for the first name in ``code`` written like a macro (upper case) that is
    not defined in the translation unit (neither as a macro nor declared in ``unit_text``: a template parameter,
    a variable, a type), else ``""``."""
    for m in _MACRO_LIKE.finditer(code):
        name = m.group(1)
        declared = re.search(r"\b(typename|class|struct|enum|using|int|unsigned|bool|auto|size_t|u?int\d+_t|char|"
                             r"long|float|double)\s+" + name + r"\b\s*[=;,)>\[{]", unit_text)
        if name not in macros and not code[m.end():m.end() + 1] == '"' and not declared:
            return (f": {name} is probably a macro of a header that was not read; pass -D {name}=… (its value as "
                    f"the build defines it) or -I DIR for the header")
    return ""


def _single_tail_return(body) -> bool:
    """Whether the function body's only ``return`` is its last statement (its value needs no register)."""
    kids = [c for c in body.named_children if c.type != "comment"]
    if not kids or kids[-1].type != "return_statement":
        return False
    stack = list(kids[:-1])
    while stack:
        x = stack.pop()
        if x.type == "return_statement":
            return False
        if x.type == "lambda_expression":
            continue
        stack.extend(x.named_children)
    return True


def _ends_with_jump(case) -> bool:
    kids = [c for c in case.named_children if c.type != "comment"]
    return bool(kids) and kids[-1].type in ("break_statement", "return_statement", "continue_statement",
                                            "goto_statement")


# ------------------------------------------------------------------------------------------------ intrinsics


def _i_syncthreads(lw: Lowering, args, n) -> V:
    for a in args:
        lw.value(a, discard=True)
    lw.emit("bar.sync", [Imm(0)])
    return V(None, VOID)


def _i_syncwarp(lw: Lowering, args, n) -> V:
    mask = lw.value(args[0]) if args else V(Imm(-1), UINT)
    lw.emit("bar.warp.sync", [mask.op if mask.op is not None else Imm(-1)])
    return V(None, VOID)


def _i_fence(kind: str):
    def h(lw: Lowering, args, n) -> V:
        lw.emit(f"membar.{kind}", [])
        return V(None, VOID)
    return h


def _i_shfl(mode: str):
    def h(lw: Lowering, args, n) -> V:
        vals = [lw.value(a) for a in args]
        if len(vals) < 3:
            return lw.opaque(lw.text(n), UINT)
        mask, src, lane = vals[0], vals[1], vals[2]
        t = src.ty if src.ty.kind in ("int", "float") else UINT
        srcv = lw.as_int(src)
        if srcv.op is None:
            srcv = lw.opaque(lw.text(args[1]), t)
        lanev = lane if lane.op is not None else lw.opaque("lane", INT)
        d = lw.reg()
        p = lw.reg("p")
        clamp = Imm(31) if mode != "up" else Imm(0)
        lw.emit(f"shfl.sync.{mode}.b32", [RegPair(d, p), lw.materialize(srcv).op, lanev.op, clamp,
                                           mask.op if mask.op is not None else Imm(-1)])
        tx = None
        if mode == "idx" and lane.const is not None and srcv.tx is not None:
            if _is_table(srcv.tx):
                tab = srcv.tx[1]
                tx = ("table", tuple(tab[min((i & ~31) + lane.const, len(tab) - 1)] for i in range(len(tab))))
            else:
                tx = ("shfl", srcv.tx, lane.const)
        return V(d, t, tx=tx)
    return h


def _i_cvta(lw: Lowering, args, n) -> V:
    v = lw.value(args[0]) if args else lw.opaque("cvta", U64)
    if v.op is None or type(v.op) in (Sym, Imm):
        return V(v.op, U64, v.ref)
    r = lw.reg("rd")
    lw.emit("cvta.to.shared.u64", [r, v.op])
    return V(r, U64)


def _i_cvta_generic(lw: Lowering, args, n) -> V:
    v = lw.value(args[0]) if args else lw.opaque("cvta", U64)
    if v.op is None or type(v.op) in (Sym, Imm):
        return V(v.op, ptr_to(UNKNOWN), v.ref)
    r = lw.reg("rd")
    lw.emit("cvta.shared.u64", [r, v.op])
    return V(r, ptr_to(UNKNOWN))


def _i_bitcast(t: CType):
    def h(lw: Lowering, args, n) -> V:
        v = lw.value(args[0]) if args else lw.opaque("bitcast", t)
        if v.op is None or type(v.op) is not Reg:
            return V(v.op, t) if v.op is not None else lw.opaque(lw.text(n), t)
        r = lw.reg()
        lw.emit(f"mov.b{t.bits}", [r, v.op])
        return V(r, t)
    return h


def _i_minmax(name: str):
    def h(lw: Lowering, args, n) -> V:
        vals = [lw.value(a) for a in args]
        if len(vals) != 2:
            return lw.opaque(lw.text(n), UNKNOWN)
        a, b = vals
        t = common(a.ty if a.ty.kind in ("int", "float") else INT, b.ty if b.ty.kind in ("int", "float") else INT)
        if a.const is not None and b.const is not None:
            x, y = wrap(a.const, t), wrap(b.const, t)
            return V(Imm(min(x, y) if name == "min" else max(x, y)), t)
        if a.op is None or b.op is None:
            return lw.opaque(lw.text(n), t)
        r = lw.reg()
        lw.emit(f"{name}.{_suffix(t)}", [r, lw.materialize(a).op, lw.materialize(b).op])
        return V(r, t)
    return h


def _i_elect(lw: Lowering, args, n) -> V:
    for a in args:
        lw.value(a, discard=True)
    r = lw.reg()
    p = lw.reg("p")
    lw.emit("elect.sync", [RegPair(r, p), Imm(-1)])
    return V(p, BOOL, tx=("elect",))


def _i_tid_expr(kind: str):
    def h(lw: Lowering, args, n) -> V:
        tid = V(Reg("%tid.x"), UINT, tx=("x",))
        if kind == "warp":
            return lw.binop("/", tid, V(Imm(32), UINT))
        if kind == "lane":
            return lw.binop("%", tid, V(Imm(32), UINT))
        if kind == "warpgroup":
            return lw.binop("/", tid, V(Imm(128), UINT))
        w = lw.binop("/", tid, V(Imm(32 if kind == "warp_sync" else 128), UINT))
        d = lw.reg()
        p = lw.reg("p")
        lw.emit("shfl.sync.idx.b32", [RegPair(d, p), w.op, Imm(0), Imm(31), Imm(-1)])
        return V(d, UINT, tx=("shfl", w.tx, 0) if w.tx is not None and not _is_table(w.tx) else None)
    return h


def _i_sreg(name: str):
    def h(lw: Lowering, args, n) -> V:
        return V(Reg(name), UINT)
    return h


def _i_cluster(opcodes: tuple[str, ...]):
    def h(lw: Lowering, args, n) -> V:
        for op in opcodes:
            lw.emit(op, [])
        return V(None, VOID)
    return h


def _i_trap(lw: Lowering, args, n) -> V:
    lw.emit("trap", [])
    return V(None, VOID)


def _i_nanosleep(lw: Lowering, args, n) -> V:
    v = lw.value(args[0]) if args else V(Imm(0), UINT)
    lw.emit("nanosleep.u32", [v.op if v.op is not None else Imm(0)])
    return V(None, VOID)


def _i_atomic(op: str):
    def h(lw: Lowering, args, n) -> V:
        vals = [lw.value(a) for a in args]
        if not vals or vals[0].op is None and vals[0].ref is None:
            return lw.opaque(lw.text(n), UINT)
        lv = lw.deref(vals[0])
        if not isinstance(lv, MemLV):
            return lw.opaque(lw.text(n), UINT)
        r = lw.reg()
        ops = [r, lw._addr_operand(lv.addr)] + [v.op if v.op is not None else Imm(0) for v in vals[1:]]
        sp = f".{lv.space}" if lv.space else ""
        lw.emit(f"atom{sp}.{op}.{_bits(lv.ty) if op in ('and', 'or', 'xor', 'exch', 'cas') else _suffix(lv.ty)}",
                ops)
        return V(r, lv.ty)
    return h


def _i_ldg(lw: Lowering, args, n) -> V:
    v = lw.value(args[0]) if args else lw.opaque("ldg", ptr_to(UINT))
    lv = lw.deref(v)
    if isinstance(lv, MemLV):
        r = lw.reg()
        lw.emit(f"ld.global.nc.{_suffix(lv.ty)}", [r, lw._addr_operand(lv.addr)])
        return V(r, lv.ty)
    return lw.read(lv)


def _i_group(group: str):
    def h(lw: Lowering, args, n) -> V:
        for a in args:
            lw.value(a, discard=True)
        return V(None, CType("cg", 0, False, group))
    return h


def _i_ignore(lw: Lowering, args, n) -> V:
    for a in args:
        lw.value(a, discard=True)
    return V(None, VOID)


#: Functions of the toolkit and the standard library that do not reach tcgen05 (math, conversions, vector
#: constructors); with the ``__`` intrinsics and the namespaces of ``_HARMLESS_NAMESPACES``.  A call of any other
#: function whose body is not in the translation unit is reported (TM901).
_MATH = frozenset(
    f"{b}{s}" for b in (
        "sqrt", "rsqrt", "cbrt", "rcbrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow",
        "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "atan2", "sincos", "fabs", "fmin",
        "fmax", "fma", "floor", "ceil", "round", "rint", "lrint", "llrint", "lround", "llround", "trunc",
        "nearbyint", "fmod", "remainder", "copysign", "erf", "erfc", "erfinv", "hypot", "ldexp", "frexp", "modf",
        "fdim", "nan", "norm3d", "rnorm", "normcdf", "isnan", "isinf", "isfinite", "signbit", "logb", "ilogb",
        "scalbn", "tgamma", "lgamma", "j0", "j1", "y0", "y1", "saturate", "fdivide", "exp2", "sinpi", "cospi")
    for s in ("", "f")) | {"abs", "labs", "llabs", "min", "max", "printf", "memcpy", "memset", "assert",
                            "static_assert", "sizeof", "alignof", "decltype", "dim3", "clock", "clock64"}
_HARMLESS_NAMESPACES = ("std::", "cuda::std::", "::std::", "cooperative_groups::", "cg::", "cub::", "thrust::",
                        "nvcuda::", "cuda::")
#: ... except libcu++'s PTX wrappers (``cuda::ptx::tcgen05_alloc``) and anything named after Tensor Memory.
_TMEM_NAMES = re.compile(r"^(::)?cuda::ptx::|tcgen05|tmem", re.I)
_VECTOR_MAKE = re.compile(r"make_(u?(char|short|int|long|longlong)|float|double|half|bfloat16|cudaExtent|"
                          r"cudaPitchedPtr|cudaPos)[1-4]?")


def _harmless(name: str) -> bool:
    """Whether a call of ``name`` (qualified as written; ``Type::method`` for methods) whose body source mode
    cannot see is known not to reach tcgen05: the toolkit's math and conversion functions and ``__`` intrinsics,
    vector constructors, and the standard library, cooperative groups, CUB and Thrust."""
    name = name.replace(" ", "")
    if _TMEM_NAMES.search(name):
        return False
    if name.startswith(_HARMLESS_NAMESPACES):
        return True
    short = name.rsplit("::", 1)[-1].split("<", 1)[0]
    if "::" in name and name.split("::", 1)[0] in ("float2", "float4", "int2", "int4", "uint2", "uint4", "dim3",
                                                   "__half", "__half2", "__nv_bfloat16", "__nv_bfloat162"):
        return True
    return short.startswith("__") or short in _MATH or bool(_VECTOR_MAKE.fullmatch(short))


_INTRINSICS = {
    "__syncthreads": _i_syncthreads,
    "__syncthreads_count": _i_syncthreads,
    "__syncthreads_and": _i_syncthreads,
    "__syncthreads_or": _i_syncthreads,
    "__syncwarp": _i_syncwarp,
    "__threadfence": _i_fence("gl"),
    "__threadfence_block": _i_fence("cta"),
    "__threadfence_system": _i_fence("sys"),
    "__shfl_sync": _i_shfl("idx"),
    "__shfl_xor_sync": _i_shfl("bfly"),
    "__shfl_down_sync": _i_shfl("down"),
    "__shfl_up_sync": _i_shfl("up"),
    "__cvta_generic_to_shared": _i_cvta,
    "cast_smem_ptr_to_uint": _i_cvta,
    "__cvta_shared_to_generic": _i_cvta_generic,
    "__uint_as_float": _i_bitcast(FLOAT),
    "__int_as_float": _i_bitcast(FLOAT),
    "__float_as_uint": _i_bitcast(UINT),
    "__float_as_int": _i_bitcast(INT),
    "min": _i_minmax("min"),
    "max": _i_minmax("max"),
    "umin": _i_minmax("min"),
    "umax": _i_minmax("max"),
    "elect_one_sync": _i_elect,
    "canonical_warp_idx_sync": _i_tid_expr("warp_sync"),
    "canonical_warp_idx": _i_tid_expr("warp"),
    "canonical_lane_idx": _i_tid_expr("lane"),
    "canonical_warp_group_idx": _i_tid_expr("warpgroup_sync"),
    "warpid": _i_tid_expr("warp"),
    "laneid": _i_tid_expr("lane"),
    "warpgroupid": _i_tid_expr("warpgroup"),
    "block_rank_in_cluster": _i_sreg("%cluster_ctarank"),
    "cluster_sync": _i_cluster(("barrier.cluster.arrive.aligned", "barrier.cluster.wait.aligned")),
    "cluster_arrive": _i_cluster(("barrier.cluster.arrive.aligned",)),
    "cluster_arrive_relaxed": _i_cluster(("barrier.cluster.arrive.relaxed.aligned",)),
    "cluster_wait": _i_cluster(("barrier.cluster.wait.aligned",)),
    "__trap": _i_trap,
    "__nanosleep": _i_nanosleep,
    "atomicAdd": _i_atomic("add"),
    "atomicSub": _i_atomic("add"),
    "atomicOr": _i_atomic("or"),
    "atomicAnd": _i_atomic("and"),
    "atomicXor": _i_atomic("xor"),
    "atomicExch": _i_atomic("exch"),
    "atomicCAS": _i_atomic("cas"),
    "atomicMax": _i_atomic("max"),
    "atomicMin": _i_atomic("min"),
    "__ldg": _i_ldg,
    "this_cluster": _i_group("cluster"),
    "this_thread_block": _i_group("block"),
    "this_grid": _i_group("grid"),
    "assert": _i_ignore,
    "printf": _i_ignore,
    "__builtin_assume": _i_ignore,
    "__assume": _i_ignore,
}
