"""The layering stays easy to see (issue 17): every import of a tmemlint module, at the top of a file, inside a
function or under TYPE_CHECKING, goes to a module of the same layer or a lower one, and no two modules import
each other (directly or through others).  Layers, lowest first:

    base        ir, findings and the helpers over them (names, pathnames, cachedir, fingerprint, lineinfo,
                threadexpr: thread expressions, built by the CUDA front end and the value analysis alike), profile
                (the per-phase CPU account of ``--profile``, whose boundaries sit in every layer above)
    front end   frontend/*, compile (nvcc → PTX)
    analyses    analysis/*
    checks      checks/* (the rules and their registry)
    driver      options, pipeline, engine, suppress, baseline, config, compdb, libraries, discover, docs
    reporters   report/*, plan/* (the plan model and its renderers), api
    interfaces  cli, server, entry, __main__, plan.command, integrations/*
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "tmemlint"

LAYERS = [
    ("base", ["tmemlint.version", "tmemlint.ruletable", "tmemlint.ir", "tmemlint.findings", "tmemlint.names", "tmemlint.pathnames",
              "tmemlint.cachedir", "tmemlint.fingerprint", "tmemlint.lineinfo", "tmemlint.threadexpr",
              "tmemlint.profile"]),
    ("front end", ["tmemlint.frontend", "tmemlint.compile"]),
    ("analyses", ["tmemlint.analysis"]),
    ("checks", ["tmemlint.checks"]),
    ("driver", ["tmemlint.options", "tmemlint.pipeline", "tmemlint.engine", "tmemlint.suppress", "tmemlint.baseline", "tmemlint.config",
                "tmemlint.compdb", "tmemlint.libraries", "tmemlint.discover", "tmemlint.docs"]),
    ("reporters", ["tmemlint.report", "tmemlint.plan", "tmemlint.api"]),
    # the package itself: its __init__ is the public API's facade (tmemlint.check, tmemlint.plan on first use)
    ("interfaces", ["tmemlint", "tmemlint.cli", "tmemlint.checkcmd", "tmemlint.server", "tmemlint.entry", "tmemlint.__main__",
                    "tmemlint.plan.command", "tmemlint.integrations"]),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> int:
    """The layer of ``module``: the longest matching prefix wins (``tmemlint.plan.command`` over
    ``tmemlint.plan``)."""
    best, level = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, level = len(p), i
    assert level is not None, f"{module}: in no layer; add it to LAYERS in {Path(__file__).name}"
    return level


def imports() -> nx.DiGraph:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    g = nx.DiGraph()
    g.add_nodes_from(modules)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t.startswith("tmemlint") and t != name:
                    # a module, a package without __init__.py (its own node), or a name defined in a module
                    package = (PACKAGE.parent / t.replace(".", "/")).is_dir()
                    g.add_edge(name, t if t in modules or package else t.rsplit(".", 1)[0])
    return g


#: Imports of tmemlint modules inside functions (lazy: they keep ``--version``, ``rules`` and a cached run from
#: importing the parser and the analyses, but they hide a module's dependencies); the number may only shrink.
MAX_FUNCTION_IMPORTS = 108


def function_imports() -> list[str]:
    """``module: imported`` for every import of a tmemlint module inside a function body (each import once)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        seen: set[int] = set()
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if id(node) in seen or not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                seen.add(id(node))
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                out.extend(f"{module_name(path)}: {n}" for n in names if n.startswith("tmemlint"))
    return out


def test_every_module_has_a_layer():
    for m in imports():
        layer(m)


def test_imports_only_go_down():
    up = [f"{a} ({LAYERS[layer(a)][0]}) imports {b} ({LAYERS[layer(b)][0]})"
          for a, b in imports().edges if layer(b) > layer(a)]
    assert up == []


def test_no_import_cycles():
    g = imports()
    # a package's __init__ may re-export its own submodules
    g.remove_edges_from([(a, b) for a, b in list(g.edges) if b.startswith(a + ".")])
    assert [sorted(c) for c in nx.simple_cycles(g)] == []


def test_function_level_imports_do_not_grow():
    """Every import goes down (``test_imports_only_go_down`` reads those inside functions too); their number
    inside functions may only shrink: lower ``MAX_FUNCTION_IMPORTS`` when it does."""
    assert len(function_imports()) <= MAX_FUNCTION_IMPORTS


def private_imports() -> list[str]:
    """``module: name`` for each private name (one leading underscore) that a module imports from another
    tmemlint module: a private name is its module's own business (the brief: no private names across modules)."""
    out = []
    for path in PACKAGE.rglob("*.py"):
        name = module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tmemlint") \
                    and node.module != name:
                out += [f"{name}: {node.module}.{a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    return sorted(out)


def test_no_private_names_across_modules():
    assert private_imports() == []


#: Packages whose modules read no other tmemlint module's private attributes (``test_no_private_attributes_across
#: _modules``); the CUDA front end's modules still share a few (``lvalues``, ``program``), not yet checked.
ATTRIBUTE_CHECKED = ("analysis", "checks", "plan")


def private_attribute_reads() -> list[str]:
    """``module:line: expression`` for each read of a private attribute (one leading underscore) through an object
    other than ``self``/``cls`` in a module of ``ATTRIBUTE_CHECKED``, where the attribute is one that a class of
    another tmemlint module defines (a method, or an attribute set on ``self``) and the reading module does not:
    ``self.va._defs_by_inst`` from ``threads`` is ``ValueAnalysis``'s own business."""
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in PACKAGE.rglob("*.py")}
    owners: dict[str, set[Path]] = {}
    for path, tree in trees.items():
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for n in ast.walk(cls):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = n.name
                elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) \
                        and isinstance(n.value, ast.Name) and n.value.id == "self":
                    name = n.attr
                elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                    name = n.target.id
                else:
                    continue
                if name.startswith("_") and not name.startswith("__"):
                    owners.setdefault(name, set()).add(path)
    out = []
    for path, tree in trees.items():
        if path.relative_to(PACKAGE).parts[0] not in ATTRIBUTE_CHECKED:
            continue
        for n in ast.walk(tree):
            if not isinstance(n, ast.Attribute) or not n.attr.startswith("_") or n.attr.startswith("__"):
                continue
            if isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
                continue
            where = owners.get(n.attr, set())
            if where and path not in where:
                out.append(f"{module_name(path)}:{n.lineno}: {ast.unparse(n)}")
    return sorted(out)


def test_no_private_attributes_across_modules():
    assert private_attribute_reads() == []
