"""The definitions of one CUDA file, read from its tree-sitter tree: functions (kernels, device helpers, struct
methods, templates), structs and their layouts, global variables and compile-time constants.

Names are recorded both plainly (``f``) and with their namespace or struct (``ns::f``, ``S::f``); a call is
resolved by its written name, then by its last component, then by the number of arguments.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import tree_sitter
import tree_sitter_cuda

from tmemlint.frontend.cuda.cxx_types import (
    BUILTIN_STRUCTS,
    UNKNOWN,
    CType,
    ConstEval,
    NotConstant,
    StructInfo,
    array_of,
    convert,
    int_t,
    primitive,
    ptr_to,
    size_of,
)
from tmemlint.frontend.cuda.sourcemap import Preprocessed

Node = tree_sitter.Node


@functools.lru_cache(maxsize=1)
def cuda_parser() -> tree_sitter.Parser:
    """The tree-sitter parser for CUDA C++ (``tree-sitter-cuda``)."""
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


@dataclass(slots=True)
class Param:
    """A function parameter: ``type`` (for ``T&`` the referenced type, ``is_ref`` set; as written, without
    template arguments), ``default`` node."""

    name: str
    type: CType
    is_ref: bool
    is_const: bool
    default: Node | None = None
    #: the ``parameter_declaration`` node (its type depends on the template arguments of an instantiation)
    node: Node | None = None


@dataclass(slots=True, eq=False)
class FunctionDef:
    """A function with a body.  ``template_params`` are ``(name, "value"|"type", default node)``;
    ``owner`` is the struct of a method; ``launch_bounds`` and ``cluster_dims`` hold the argument nodes."""

    name: str
    qualname: str
    node: Node
    body: Node | None
    params: list[Param]
    return_type: CType
    returns_ref: bool
    is_kernel: bool
    is_constexpr: bool
    owner: StructInfo | None = None
    template_params: list[tuple[str, str, Node | None]] = field(default_factory=list)
    launch_bounds: list[Node] = field(default_factory=list)
    cluster_dims: list[Node] = field(default_factory=list)
    name_node: Node | None = None
    _mutated: set[str] | None = None
    _has_asm: bool | None = None
    #: the template arguments of an explicit specialization (``template <> void f<4>(…)``), spaces removed
    spec_args: str | None = None

    def required_args(self) -> int:
        """How many arguments a call must pass (parameters without a default)."""
        return sum(1 for p in self.params if p.default is None)


@dataclass(slots=True)
class GlobalVar:
    """A namespace-scope variable: ``space`` is ``shared``, ``global`` (``__device__``), ``const``
    (``__constant__``) or ``value`` (a constant: ``constexpr``/``const`` with an initializer)."""

    name: str
    type: CType
    space: str
    init: Node | None
    node: Node
    extern: bool = False


class Program:
    """All definitions of one preprocessed CUDA file.  ``text(node)`` is a node's source text."""

    def __init__(self, pre: Preprocessed, path: str):
        self.pre = pre
        self.path = path
        self.src: bytes = pre.map.data
        self._texts: dict[tuple[int, int], str] = {}
        self.tree = cuda_parser().parse(self.src)
        self.root = self.tree.root_node
        self.functions: dict[str, list[FunctionDef]] = {}
        self.all_functions: list[FunctionDef] = []
        self.structs: dict[str, StructInfo] = dict(BUILTIN_STRUCTS)
        self.aliases: dict[str, Node | CType] = {}
        self.globals: dict[str, GlobalVar] = {}
        self.enums: dict[str, tuple[Node | None, int]] = {}
        self.enum_types: set[str] = set()  # names of the enum types (``WarpRole(x)`` is a conversion)
        self._const_cache: dict[str, tuple | None] = {}
        self._const_busy: set[str] = set()
        self._lambdas: dict[int, FunctionDef] = {}
        self.consteval = ConstEval(self.text, self.resolve_constant, self._functions_for_call, self.type_of,
                                   lambda t: size_of(t, self.structs), lambda t, n: self.static_member(t, n))
        self._collect(self.root, "")
        if self._unqualify_template_declarations():
            self.tree = cuda_parser().parse(self.src)
            self.root = self.tree.root_node
            self.functions, self.all_functions, self.structs = {}, [], dict(BUILTIN_STRUCTS)
            self.aliases, self.globals, self.enums, self._texts, self.enum_types = {}, {}, {}, {}, set()
            self._collect(self.root, "")

    def _unqualify_template_declarations(self) -> bool:
        """Blank the namespace qualifier of ``ns::Tmpl<args> var(args);`` where ``Tmpl`` is a class template of
        the translation unit: without knowing that ``Tmpl`` is a template, tree-sitter reads the statement as
        ``(ns::Tmpl < args) > var(args)``, as C++ would without the declaration.  The qualifier becomes spaces
        (same length: every byte offset, and so the source map, stays valid); the type is then found by its
        own name.  Returns whether anything was changed (the caller parses again)."""
        edits = []
        stack = [self.root]
        while stack:
            n = stack.pop()
            if n.type == "binary_expression":
                left = n.child_by_field_name("left")
                op = n.child_by_field_name("operator")
                if (left is not None and left.type == "binary_expression" and op is not None
                        and self.text(op) == ">" and self.text(left.child_by_field_name("operator")) == "<"):
                    q = left.child_by_field_name("left")
                    name = q.child_by_field_name("name") if q is not None and q.type == "qualified_identifier" else None
                    s = self.structs.get(self.text(name)) if name is not None else None
                    if s is not None and s.template_params:
                        edits.append((q.start_byte, name.start_byte))
            stack.extend(n.named_children)
        if not edits:
            return False
        buf = bytearray(self.src)
        for a, b in edits:
            buf[a:b] = b" " * (b - a)
        self.src = bytes(buf)
        return True

    # ---- text and positions -------------------------------------------------------------------------------
    def text(self, node: Node) -> str:
        """Source text of ``node`` (preprocessed)."""
        key = (node.start_byte, node.end_byte)
        t = self._texts.get(key)
        if t is None:
            t = self.src[key[0]:key[1]].decode("utf-8", "replace")
            self._texts[key] = t
        return t

    # ---- collection -------------------------------------------------------------------------------------------
    def _collect(self, node: Node, prefix: str, template: Node | None = None) -> None:
        for c in node.named_children:
            t = c.type
            if t == "function_definition":
                self._add_function(c, prefix, None, template)
            elif t == "template_declaration":
                inner = [x for x in c.named_children if x.type != "template_parameter_list"]
                for x in inner:
                    self._collect_one(x, prefix, c)
            elif t == "namespace_definition":
                nm = c.child_by_field_name("name")
                body = c.child_by_field_name("body")
                if body is not None:
                    self._collect(body, prefix + (self.text(nm) + "::" if nm is not None else ""))
            elif t == "linkage_specification":
                body = c.child_by_field_name("body")
                if body is not None:
                    if body.type == "declaration_list":
                        self._collect(body, prefix)
                    else:
                        self._collect_one(body, prefix, None)
            else:
                self._collect_one(c, prefix, template)

    def _collect_one(self, c: Node, prefix: str, template: Node | None) -> None:
        t = c.type
        if t == "function_definition":
            self._add_function(c, prefix, None, template)
        elif t in ("struct_specifier", "class_specifier", "union_specifier"):
            self._add_struct(c, prefix, template)
        elif t == "enum_specifier":
            self._add_enum(c, prefix)
        elif t == "declaration":
            tn = c.child_by_field_name("type")
            if tn is not None and tn.type in ("struct_specifier", "class_specifier", "union_specifier"):
                self._add_struct(tn, prefix, template)
            elif tn is not None and tn.type == "enum_specifier":
                self._add_enum(tn, prefix)
            if template is None:
                self._add_global(c, prefix)
        elif t == "type_definition":
            tn = c.child_by_field_name("type")
            if tn is not None and tn.type in ("struct_specifier", "class_specifier"):
                self._add_struct(tn, prefix, template)
            for d in c.children_by_field_name("declarator"):
                name, ty, _ref = self.apply_declarator(d, self.type_of(tn) if tn is not None else UNKNOWN)
                if name:
                    self.aliases[name] = ty
                    if tn is not None and tn.type in ("struct_specifier", "class_specifier"):
                        sname = tn.child_by_field_name("name")
                        if sname is None:
                            self.structs[name] = self.structs.get(f"<anon {tn.start_byte}>", StructInfo(name))
        elif t == "alias_declaration":
            nm = c.child_by_field_name("name")
            tn = c.child_by_field_name("type")
            if nm is not None and tn is not None:
                self.aliases[prefix + self.text(nm)] = tn
                self.aliases[self.text(nm)] = tn
        elif t == "template_declaration":
            for x in c.named_children:
                if x.type != "template_parameter_list":
                    self._collect_one(x, prefix, c)
        elif t == "namespace_definition":
            self._collect(c, prefix)

    def _template_params(self, template: Node | None) -> list[tuple[str, str, Node | None]]:
        out: list[tuple[str, str, Node | None]] = []
        if template is None:
            return out
        plist = template.child_by_field_name("parameters")
        if plist is None:
            return out
        for p in plist.named_children:
            if p.type in ("parameter_declaration", "optional_parameter_declaration"):
                d = p.child_by_field_name("declarator")
                if d is not None:
                    out.append((self.text(d), "value", p.child_by_field_name("default_value")))
            elif p.type in ("type_parameter_declaration", "optional_type_parameter_declaration",
                            "variadic_type_parameter_declaration"):
                nm = p.child_by_field_name("name") or next((x for x in p.named_children
                                                            if x.type == "type_identifier"), None)
                if nm is not None:
                    out.append((self.text(nm), "type", p.child_by_field_name("default_type")))
        return out

    def _add_function(self, c: Node, prefix: str, owner: StructInfo | None, template: Node | None) -> None:
        decl = c.child_by_field_name("declarator")
        if decl is None:
            return
        specs = {self.text(x) for x in c.children if not x.is_named or x.type in (
            "storage_class_specifier", "type_qualifier", "virtual")}
        for x in c.children:
            if x.type in ("storage_class_specifier", "type_qualifier"):
                specs.add(self.text(x))
        tnode = c.child_by_field_name("type")
        base = self.type_of(tnode) if tnode is not None else UNKNOWN
        fdecl, ret_t, ret_ref = self._function_declarator(decl, base)
        if fdecl is None:
            return
        name_node = fdecl.child_by_field_name("declarator")
        spec = None
        if name_node is not None and name_node.type == "template_function":  # an explicit specialization
            spec = self.text(name_node.child_by_field_name("arguments")).replace(" ", "")
            name_node = name_node.child_by_field_name("name")
        qual = self.text(name_node).replace(" ", "") if name_node is not None else "?"
        params = self._params(fdecl.child_by_field_name("parameters"))
        lb = []
        cd = []
        for x in c.children:
            if x.type == "launch_bounds":
                lb = [a for a in x.named_children if a.type != "comment"]
            elif x.type == "attribute_specifier":
                for call in x.named_children:
                    for cc in call.named_children:
                        if cc.type == "call_expression" and self.text(cc.child_by_field_name("function")) in (
                                "cluster_dims", "__cluster_dims__"):
                            cd = list(cc.child_by_field_name("arguments").named_children)
        short = qual.rsplit("::", 1)[-1]
        if owner is not None:
            full = f"{owner.name}::{short}"
        elif "::" in qual:
            full = prefix + qual
        else:
            full = prefix + short
        f = FunctionDef(short, full, c, c.child_by_field_name("body"), params, ret_t, ret_ref,
                        "__global__" in specs, "constexpr" in specs or "consteval" in specs, owner,
                        self._template_params(template), lb, cd, name_node)
        f.spec_args = spec
        if owner is None and "::" in qual:  # out-of-class method definition S::f
            sname = qual.rsplit("::", 1)[0].rsplit("::", 1)[-1]
            s = self.structs.get(sname)
            if s is not None:
                f.owner = s
                s.methods.setdefault(short, []).append(f)
        self.all_functions.append(f)
        for key in {short, full, qual}:
            self.functions.setdefault(key, []).append(f)
        if owner is not None:
            owner.methods.setdefault(short, []).append(f)

    def _params(self, plist: Node | None) -> list[Param]:
        """The parameters of a ``parameter_list`` node."""
        params: list[Param] = []
        if plist is None:
            return params
        for p in plist.named_children:
            if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
                continue
            pd = p.child_by_field_name("declarator")
            is_const = any(self.text(x) == "const" for x in p.children if x.type == "type_qualifier")
            pname, pty, pref = self.param_type(p)
            if pd is None:
                if pty.kind == "void":
                    continue
                params.append(Param(f"__unnamed{len(params)}", pty, False, is_const, None, p))
                continue
            params.append(Param(pname or f"__unnamed{len(params)}", pty, pref, is_const,
                                p.child_by_field_name("default_value"), p))
        return params

    def param_type(self, p: Node, tenv: dict | None = None) -> tuple[str, CType, bool]:
        """``(name, type, is_ref)`` of a ``parameter_declaration`` node, template parameters bound by ``tenv``
        (a kernel template's ``Op op`` once its instantiation is known)."""
        ptn = p.child_by_field_name("type")
        pbase = self.type_of(ptn, tenv) if ptn is not None else UNKNOWN
        pd = p.child_by_field_name("declarator")
        if pd is None:
            return "", pbase, False
        return self.apply_declarator(pd, pbase, tenv)

    def lambda_def(self, node: Node) -> FunctionDef:
        """A lambda expression as a function: its parameters and body (its captures are the names of the
        enclosing function, which the lowering keeps visible); one FunctionDef per lambda node."""
        f = self._lambdas.get(node.id)
        if f is None:
            decl = node.child_by_field_name("declarator")
            plist = decl.child_by_field_name("parameters") if decl is not None else None
            f = FunctionDef("lambda", f"lambda@{node.start_byte}", node, node.child_by_field_name("body"),
                            self._params(plist), UNKNOWN, False, False, False)
            self._lambdas[node.id] = f
        return f

    def _function_declarator(self, d: Node, base: CType):
        """``(function_declarator, return type, returns reference)`` under declarator ``d``."""
        ref = False
        t = base
        while d is not None and d.type != "function_declarator":
            if d.type == "pointer_declarator":
                t = ptr_to(t)
            elif d.type == "reference_declarator":
                ref = True
            elif d.type not in ("parenthesized_declarator", "attributed_declarator"):
                return None, t, ref
            d = d.child_by_field_name("declarator") or (d.named_children[-1] if d.named_children else None)
        return d, t, ref

    def _add_struct(self, c: Node, prefix: str, template: Node | None) -> StructInfo | None:
        nm = c.child_by_field_name("name")
        body = c.child_by_field_name("body")
        name = self.text(nm) if nm is not None else f"<anon {c.start_byte}>"
        if body is None:
            return self.structs.get(name)
        s = StructInfo(name)
        s.template_params = self._template_params(template)
        s.is_union = c.type == "union_specifier"
        for x in c.children:
            if x.type == "alignas_qualifier":
                s.align_request = self._const_int(x.named_children[-1]) if x.named_children else None
            elif x.type == "attribute_specifier":
                s.align_request = self._aligned_attr(x) or s.align_request
        self.structs[name] = s
        if prefix:
            self.structs[prefix + name] = s
        for f in body.named_children:
            ft = f.type
            if ft == "field_declaration":
                tn = f.child_by_field_name("type")
                if tn is not None and tn.type in ("struct_specifier", "class_specifier", "union_specifier"):
                    self._add_struct(tn, prefix, None)
                base = self.type_of(tn) if tn is not None else UNKNOWN
                specs = {self.text(x) for x in f.children if x.type in ("storage_class_specifier", "type_qualifier")}
                for d in f.children_by_field_name("declarator"):
                    fname, fty, _ref = self.apply_declarator(d, base)
                    if not fname:
                        continue
                    if "static" in specs:
                        dv = f.child_by_field_name("default_value")
                        if dv is not None:
                            s.statics[fname] = (dv, fty)
                        continue
                    s.fields.append((fname, fty))
            elif ft == "function_definition":
                self._add_function(f, prefix, s, None)
            elif ft == "template_declaration":
                for x in f.named_children:
                    if x.type == "function_definition":
                        self._add_function(x, prefix, s, f)
            elif ft == "declaration":  # constructors declared, static members in some grammars
                continue
        return s

    def _aligned_attr(self, attr: Node) -> int | None:
        for call in attr.named_children:
            for cc in call.named_children:
                if cc.type == "call_expression" and self.text(cc.child_by_field_name("function")) in (
                        "aligned", "__aligned__"):
                    args = cc.child_by_field_name("arguments").named_children
                    if args:
                        return self._const_int(args[0])
        return None

    def _add_enum(self, c: Node, prefix: str) -> None:
        nm = c.child_by_field_name("name")
        body = c.child_by_field_name("body")
        if body is None:
            return
        ename = self.text(nm) if nm is not None else ""
        if ename:
            self.enum_types.update((ename, prefix + ename))
        nxt = 0
        for e in body.named_children:
            if e.type != "enumerator":
                continue
            en = self.text(e.child_by_field_name("name"))
            v = e.child_by_field_name("value")
            if v is not None:
                got = self._const_int(v)
                nxt = got if got is not None else nxt
            for key in (en, f"{ename}::{en}" if ename else en, prefix + en):
                self.enums[key] = (v, nxt)
            nxt += 1

    def _add_global(self, c: Node, prefix: str) -> None:
        tn = c.child_by_field_name("type")
        if tn is None:
            return
        quals = {self.text(x) for x in c.children if x.type in ("storage_class_specifier", "type_qualifier")}
        base = self.type_of(tn)
        for d in c.children_by_field_name("declarator"):
            init = None
            dd = d
            if d.type == "init_declarator":
                dd = d.child_by_field_name("declarator")
                init = d.child_by_field_name("value")
            if dd is None or dd.type == "function_declarator":
                continue
            name, ty, _ref = self.apply_declarator(dd, base)
            if not name:
                continue
            if "__shared__" in quals:
                space = "shared"
            elif "__constant__" in quals:
                space = "const"
            elif "__device__" in quals or "__managed__" in quals:
                space = "global"
            elif init is not None and ("constexpr" in quals or "const" in quals or ty.kind in ("int", "bool")):
                space = "value"
            else:
                space = "global"
            g = GlobalVar(name, ty, space, init, c, "extern" in quals)
            self.globals[name] = g
            if prefix:
                self.globals[prefix + name] = g

    # ---- types ------------------------------------------------------------------------------------------------
    def type_of(self, n: Node | None, tenv: dict | None = None, _depth: int = 0) -> CType:
        """The type a type node denotes (UNKNOWN when not known); ``tenv`` binds template type parameters."""
        if n is None or _depth > 16:
            return UNKNOWN
        k = n.type
        if k in ("primitive_type", "sized_type_specifier"):
            p = primitive(self.text(n))
            if p is not None:
                return p
            words = self.text(n).split()
            if "unsigned" in words or "signed" in words or "long" in words or "short" in words:
                return primitive(" ".join(words)) or UNKNOWN
            return UNKNOWN
        if k == "qualified_identifier":
            inner = n.child_by_field_name("name")
            if inner is not None and inner.type == "template_type":
                return self.type_of(inner, tenv, _depth + 1)
        if k in ("type_identifier", "qualified_identifier", "namespace_identifier"):
            name = self.text(n).replace(" ", "")
            if tenv and name in tenv and isinstance(tenv[name], CType):
                return tenv[name]
            p = primitive(name)
            if p is not None:
                return p
            short = name.rsplit("::", 1)[-1]
            for key in (name, short):
                if key in self.structs:
                    return CType("struct", 0, False, self.structs[key].name)
                a = self.aliases.get(key)
                if a is not None:
                    return a if isinstance(a, CType) else self.type_of(a, tenv, _depth + 1)
            return primitive(short) or UNKNOWN
        if k in ("struct_specifier", "class_specifier", "union_specifier"):
            nm = n.child_by_field_name("name")
            name = self.text(nm) if nm is not None else f"<anon {n.start_byte}>"
            s = self.structs.get(name) or self.structs.get(name.rsplit("::", 1)[-1])
            return CType("struct", 0, False, s.name) if s is not None else UNKNOWN
        if k == "enum_specifier":
            return int_t(32, True, "enum")
        if k == "type_descriptor":
            base = self.type_of(n.child_by_field_name("type"), tenv, _depth + 1)
            d = n.child_by_field_name("declarator")
            if d is None:
                return base
            _name, t, _ref = self.apply_declarator(d, base, tenv)
            return t
        if k == "template_type":
            name = self.text(n.child_by_field_name("name")).replace(" ", "")
            s = self.structs.get(name) or self.structs.get(name.rsplit("::", 1)[-1])
            if s is None:
                return primitive(name) or UNKNOWN
            args = []
            targs = n.child_by_field_name("arguments")
            given = [x for x in targs.named_children if x.type != "comment"] if targs is not None else []
            env = {k: v for k, v in (tenv or {}).items() if isinstance(v, tuple)}
            for (_pname, kind, _default), a in zip(s.template_params, given):
                args.append(self.type_of(a, tenv, _depth + 1) if kind == "type" else self._const_int(a, env))
            return CType("struct", 0, False, s.name, args=tuple(args))
        if k == "decltype":
            return UNKNOWN
        return UNKNOWN

    def apply_declarator(self, d: Node | None, base: CType, tenv: dict | None = None) -> tuple[str, CType, bool]:
        """``(name, type, is_reference)`` of declarator ``d`` applied to ``base`` (pointer, reference, array,
        abstract declarators).  A function declarator gives an unknown type."""
        is_ref = False
        t = base
        name = ""
        while d is not None:
            k = d.type
            if k in ("identifier", "field_identifier", "type_identifier"):
                name = self.text(d)
                break
            if k in ("qualified_identifier", "operator_name", "destructor_name"):
                name = self.text(d)
                break
            if k in ("pointer_declarator", "abstract_pointer_declarator"):
                t = ptr_to(t)
            elif k in ("reference_declarator", "abstract_reference_declarator"):
                is_ref = True
            elif k in ("array_declarator", "abstract_array_declarator"):
                sz = d.child_by_field_name("size")
                t = array_of(t, self._const_int(sz, tenv) if sz is not None else None)
            elif k == "init_declarator":
                pass
            elif k in ("function_declarator", "abstract_function_declarator"):
                t = UNKNOWN
            elif k not in ("parenthesized_declarator", "abstract_parenthesized_declarator", "attributed_declarator"):
                break
            nxt = d.child_by_field_name("declarator")
            if nxt is None:
                kids = [x for x in d.named_children if x.type not in (
                    "type_qualifier", "ms_pointer_modifier", "attribute_declaration", "number_literal")]
                nxt = kids[0] if kids and k in ("parenthesized_declarator", "abstract_parenthesized_declarator",
                                                "reference_declarator", "abstract_reference_declarator") else None
            d = nxt
        return name, t, is_ref

    # ---- constants --------------------------------------------------------------------------------------------
    def _const_int(self, n: Node | None, tenv: dict | None = None) -> int | None:
        if n is None:
            return None
        try:
            v, _t = self.consteval.evaluate(n, tenv)
        except NotConstant:
            return None
        return int(v) if isinstance(v, (int, float)) else None

    def const_int(self, n: Node | None, env: dict | None = None) -> int | None:
        """The integer value of expression ``n`` when it is a compile-time constant, else None."""
        return self._const_int(n, env)

    def resolve_constant(self, name: str) -> tuple:
        """``(value, type)`` of a global constant, enumerator or static constexpr member.  Raises NotConstant."""
        if name in self._const_cache:
            r = self._const_cache[name]
            if r is None:
                raise NotConstant()
            return r
        if name in self._const_busy:
            raise NotConstant()
        self._const_busy.add(name)
        try:
            r = self._resolve(name)
        except NotConstant:
            r = None
        finally:
            self._const_busy.discard(name)
        self._const_cache[name] = r
        if r is None:
            raise NotConstant()
        return r

    def _resolve(self, name: str) -> tuple:
        short = name.rsplit("::", 1)[-1]
        g = self.globals.get(name) or self.globals.get(short)
        if g is not None and g.space == "value" and g.init is not None:
            init = g.init
            if init.type in ("initializer_list", "argument_list") and len(init.named_children) == 1:
                init = init.named_children[0]
            v, vt = self.consteval.evaluate(init)
            return convert(v, vt, g.type) if g.type.kind in ("int", "bool", "float") else (v, vt)
        e = self.enums.get(name) or self.enums.get(short)
        if e is not None:
            return e[1], int_t(32, True, "enum")
        if "::" in name:
            scope = name.rsplit("::", 1)[0]
            t = None
            for key in (scope, scope.rsplit("::", 1)[-1]):
                a = self.aliases.get(key)
                if a is not None:
                    t = a if isinstance(a, CType) else self.type_of(a)
                    break
                if key in self.structs:
                    t = CType("struct", 0, False, self.structs[key].name)
                    break
            if t is not None and t.kind == "struct":
                return self.static_member(t, short)
        raise NotConstant()

    def static_member(self, t: CType, name: str) -> tuple:
        """``(value, type)`` of static constexpr member ``name`` of struct type ``t`` (a class template's
        parameters bound to ``t.args``).  Raises NotConstant."""
        s = self.structs.get(t.name)
        if s is None or name not in s.statics:
            raise NotConstant()
        node, ty = s.statics[name]
        env: dict = {}
        for (pname, kind, _d), a in zip(s.template_params, t.args):
            if a is not None:
                env[pname] = a if kind == "type" else (a, int_t(32, True, "int"))
        v, vt = self.consteval.evaluate(node, env)
        return convert(v, vt, ty) if ty.kind in ("int", "bool", "float") else (v, vt)

    def _functions_for_call(self, call: Node, name: str) -> list[FunctionDef]:
        n = len([a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"])
        return self.lookup_functions(name, n)

    def _in_scope(self, cands: list[FunctionDef], scope: str) -> list[FunctionDef]:
        """The ``cands`` a call qualified by ``scope`` (``ns::f``, ``S::f``, ``warp::f`` with ``using warp =
        group<1>``) can name: those whose namespace or struct ends with it (an alias is replaced by its struct);
        all of them when none does and the scope names no alias nor struct of the file (a namespace alias, an
        inline namespace: the short name decides as before), none when it names another struct."""
        names = {scope, scope.rsplit("::", 1)[-1]}
        alias = self.aliases.get(scope) or self.aliases.get(scope.rsplit("::", 1)[-1])
        target = alias.name if isinstance(alias, CType) else self.text(alias) if alias is not None else ""
        if target:
            names.add(target.split("<", 1)[0].replace(" ", "").rsplit("::", 1)[-1])

        def within(f: FunctionDef) -> bool:
            home = f.qualname.rsplit("::", 1)[0] if "::" in f.qualname else ""
            return any(home == n or home.endswith("::" + n) for n in names) or \
                (f.owner is not None and f.owner.name.split("<", 1)[0] in names)

        scoped = [f for f in cands if within(f)]
        if scoped or not (alias is not None or any(n in self.structs for n in names)):
            return scoped or cands
        return []

    def lookup_functions(self, name: str, nargs: int, owner: StructInfo | None = None,
                         targs: str | None = None) -> list[FunctionDef]:
        """Function definitions a call ``name(nargs arguments)`` (with template arguments ``targs``, spaces
        removed) may refer to, best first: the explicit specialization for ``targs`` first, other explicit
        specializations last."""
        name = name.replace(" ", "")
        if "<" in name:
            name = name.split("<", 1)[0]
        cands = self.functions.get(name)
        if not cands:
            cands = self.functions.get(name.rsplit("::", 1)[-1], [])
            if "::" in name:
                cands = self._in_scope(cands, name.rsplit("::", 1)[0])
        if owner is not None:
            cands = [f for f in cands if f.owner is owner] or cands
        ok = [f for f in cands if f.body is not None and f.required_args() <= nargs <= len(f.params)]
        ok = [f for f in ok if f.spec_args is None or f.spec_args == targs]
        ok.sort(key=lambda f: (f.spec_args is None, len(f.params) != nargs, f.owner is not None))
        return ok
