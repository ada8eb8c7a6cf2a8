"""Lowering of CUDA C++ functions to the PTX IR (``tmemlint.ir``): a synthetic ``Function`` per kernel.

The analyses and rules of tmemlint run on PTX.  Source mode gives them a PTX-shaped function built from the C++:

* **asm statements** are parsed by the PTX grammar (``asm``, ``asm_lower``); ``%N`` become the registers of the operand
  expressions, ``"n"``/``"i"`` operands their literal value.
* **C++ values** become registers and instructions that the value analysis understands the way it understands
  nvcc's output: ``threadIdx.x`` is ``%tid.x``, ``x / 32`` on an unsigned value is ``shr``, ``__shfl_sync(m, x,
  0)`` is ``shfl.sync.idx``, ``elect.sync`` gives the elected-lane value, a load of a ``__shared__`` variable is
  ``ld.shared`` at its symbol (plus the field offset from the struct layout), kernel parameters are ``ld.param``.
  Integer constants are folded, including ``constexpr`` variables and functions (``cxx_types.ConstEval``).
  A variable that is never modified is bound to the value of its initializer (no register); one that is
  modified owns a register written by ``mov`` (reaching definitions then join its values as for nvcc's phis).
* **Control flow** becomes labels and guarded ``bra``: ``&&``/``||`` short-circuit, a condition that folds to a
  constant keeps only the live branch (as nvcc does), a condition that cannot be translated tests an opaque
  register named after its text (the same text gives the same register, so repeated tests correlate).
  ``return`` in a kernel is ``ret``.  Loops with a constant trip count are unrolled (up to 64 iterations, also
  under ``#pragma unroll 1``; up to 256 under ``#pragma unroll``), so that per-iteration values (an instruction
  descriptor built from the loop index, a load issued in all but the last iteration) are exact.
* **Calls** to functions of the translation unit are inlined (depth ≤ 24, no recursion); ``constexpr`` functions
  with constant arguments are evaluated.  A call of anything else reads its arguments and returns an opaque value;
  one that could reach tcgen05 is recorded in ``unseen`` (TM901).

``Lowering`` holds the state (instructions, labels, frames, registers) and the driver (``run``); the lowering of
statements, expressions, operators, lvalues, calls and asm statements are its mixins, one module each
(``statements``, ``expressions``, ``arithmetic``, ``lvalues``, ``calls``, ``asm_lower``); ``common`` holds what
they share.

Every instruction carries the span of the ``.cu`` text it comes from (the asm string for asm instructions, the
expression or statement otherwise) and a ``SourcePos`` whose ``inlined_at`` lists the call sites.
"""

from __future__ import annotations

import re

from tmemlint.frontend.cuda.arithmetic import ArithmeticMixin
from tmemlint.frontend.cuda.asm_lower import AsmMixin
from tmemlint.frontend.cuda.calls import CallsMixin
from tmemlint.frontend.cuda.cleanup import drop_dead_definitions, sink_loop_constants
from tmemlint.frontend.cuda.common import (
    DTORS,
    MAX_INSTRUCTIONS,
    AliasLV,
    BudgetExceeded,
    Diagnostic,
    Frame,
    MemLV,
    RegLV,
    UnknownLV,
    Unsupported,
    V,
    check_parsed,
    ptx_type,
    type_suffix,
)
from tmemlint.frontend.cuda.cxx_types import INT, UNKNOWN, CType, NotConstant, StructInfo, convert, ptr_to, size_of
from tmemlint.frontend.cuda.expressions import ExpressionsMixin
from tmemlint.frontend.cuda.lvalues import LvaluesMixin
from tmemlint.frontend.cuda.program import FunctionDef, Param, Program
from tmemlint.frontend.cuda.statements import StatementsMixin
from tmemlint.ir import Address, FloatImm, Function, Guard, Imm, Instruction, Reg, SourcePos, Span, Sym, Variable


# ------------------------------------------------------------------------------------------------ lowering


class Lowering(StatementsMixin, ExpressionsMixin, ArithmeticMixin, LvaluesMixin, CallsMixin,
               AsmMixin):
    """Lowers one function definition (a kernel, or a device function analysed on its own) to an IR Function.

    ``run()`` returns the Function, or None when the function could not be lowered; ``diagnostics`` then (and for
    asm text that is not statically known or not PTX) holds TM900/TM901 entries."""

    def __init__(self, program: Program, fdef: FunctionDef, asm_cache: dict, targs=None, name: str | None = None,
                 outer: tuple = (), deduced: tuple = ()):
        """``asm_cache`` is shared by the functions of one file (parsed asm templates, per-node facts); ``targs``
        the ``template_argument_list`` node of the instantiation lowered (a kernel template launched as
        ``k<128><<<…>>>``), ``outer`` the ``(FunctionDef, template_argument_list)`` instantiations of the host
        function templates that bind the names in ``targs``, outermost first (a templated launcher: see
        ``unit.Instantiation``), ``deduced`` the ``(template parameter, type node)`` pairs deduced from a launch's
        arguments (``k<<<…>>>(Functor{…})``), ``name`` the function's name in the IR (default: the definition's)."""
        self.targs = targs
        self.outer = outer
        self.deduced = deduced
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
        #: indices of the instructions that come from asm statements (never cleaned up: ``cleanup``)
        self.asm_indices: set[int] = set()
        #: ``(zero-trip test, preheader, exit label, top label)`` of each rotated loop (``statements._rotated_loop``)
        self.rotated_loops: list[tuple[int, int, str, str]] = []
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
        fr = self.frame
        key = (span.line, span.column, fr.uid)  # a frame's call sites never change (hashing them is not cheap)
        s = self._src_cache.get(key)
        if s is None:
            s = SourcePos(self.path, span.line, span.column, fr.inlined_at)
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
            for g, gargs in self.outer:  # each evaluated with the arguments of the one around it bound
                frame.tenv = self._template_env(g, gargs)
            frame.tenv = self._template_env(f, self.targs)
        if self.deduced:  # template type parameters deduced from a launch's arguments
            frame.tenv = {**frame.tenv, **{p: self.P.type_of(t) for p, t in self.deduced}}
        self.cur_span = span
        try:
            check_parsed(f, self.P)
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
        # nvcc's clean-ups the analyses can see: loop counters initialised in the loop's preheader, dead
        # definitions removed (frontend.cuda.cleanup)
        asm = {id(self.insts[i]) for i in self.asm_indices}
        self.insts, self.labels = sink_loop_constants(self.insts, self.labels, self.rotated_loops, self._cell_names,
                                                      asm)
        self.insts, self.labels = drop_dead_definitions(self.insts, self.labels, self._cell_names, asm)
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
        tenv = self._tenv_types() if frame.tenv else None
        for i, p in enumerate(self.fdef.params):
            sym = f"{self.fdef.name}_param_{i}"
            if tenv and p.type.kind == "unknown" and p.node is not None:  # ``Op op`` of the instantiation lowered
                _n, ty, ref = self.P.param_type(p.node, tenv)
                p = Param(p.name, ty, ref, p.is_const, p.default, p.node)
            size = size_of(p.type, self.P.structs) if not p.is_ref else 8
            fn.params.append(Variable(sym, "param", ptx_type(p.type), size, None, False, fn.span))
            if p.is_ref or p.type.kind in ("ptr",) or p.type.kind in ("int", "bool", "float"):
                t = p.type if not p.is_ref else ptr_to(p.type)
                r = self.reg("p" if t.kind == "bool" else "r")
                self.emit(f"ld.param.{type_suffix(t)}", [r, Address(Sym(sym))])
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
        if DTORS in sc and not self._dead():
            self._destroy(sc)
        self.frame.scopes.pop()

    def _destroy(self, scope: dict) -> None:
        for obj, dtor in reversed(scope.get(DTORS, ())):
            self.inline_call(dtor, [], obj, None, None)

    def _unwind(self, depth: int) -> None:
        """Run the destructors of the scopes above ``depth`` (a jump out of them: return, break, continue)."""
        for sc in reversed(self.frame.scopes[depth:]):
            if DTORS in sc:
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
                self.variables[sym] = Variable(sym, g.space, ptx_type(g.type), size_of(g.type, self.P.structs),
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


# statement and expression handlers by tree-sitter node type, over the mixins
Lowering._STMT = {k[3:]: getattr(Lowering, k) for k in dir(Lowering) if k.startswith("_s_")}
Lowering._EXPR = {k[3:]: getattr(Lowering, k) for k in dir(Lowering) if k.startswith("_e_")}
