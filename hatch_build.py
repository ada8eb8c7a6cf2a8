"""Wheel build hook: compiles the analysis core with mypyc where a C compiler is found (issue 29).

``pip install .`` stays one step.  The hook is off by default for now (``enable-by-default = false`` in
``pyproject.toml``: the whole test suite has not yet run compiled); ``HATCH_BUILD_HOOK_ENABLE_CUSTOM=true pip install .``
turns it on.  For a wheel (not an editable install) it

* builds a pure wheel, saying why, when ``TMEMLINT_PURE=1`` is set, when no C compiler (``$CC``, else the one Python
  was built with) compiles a probe that includes ``Python.h``, or when mypyc or the compiler fails;
* otherwise copies ``tmemlint/`` to a temporary folder, compiles the modules listed under ``mypyc-modules`` in
  ``pyproject.toml`` there (``mypyc.build.mypycify`` + setuptools' ``build_ext``, in a subprocess) and adds the
  extension modules to the wheel beside their ``.py`` files, which stay in it: ``TMEMLINT_PURE=1`` at run time makes
  ``tmemlint/__init__.py`` load those instead (docs/performance.md).

mypyc type-checks the listed modules as ``mypy --strict --follow-imports=silent`` does (tests/test_types.py): only
their own errors count.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

_PROBE = "#include <Python.h>\nint tmemlint_probe(void) { return 0; }\n"

_SETUP = """\
import sys
from setuptools import setup
from mypyc.build import mypycify

modules = sys.argv[sys.argv.index("--modules") + 1].split(",")
del sys.argv[sys.argv.index("--modules"):]
setup(name="tmemlint-mypyc", ext_modules=mypycify(
    ["--follow-imports=silent", "--ignore-missing-imports", "--cache-dir", "mypy-cache", *modules],
    opt_level="3", target_dir="c", group_name="tmemlint"))
"""


def compiler_problem() -> str | None:
    """Why no C extension can be built here (None: a compiler built a probe against this Python's headers)."""
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    include = sysconfig.get_paths()["include"]
    if not cc:
        return "no C compiler is configured"
    if not Path(include, "Python.h").is_file():
        return f"Python.h is not in {include} (the Python development headers are not installed)"
    with tempfile.TemporaryDirectory() as tmp:
        source, obj = Path(tmp, "probe.c"), Path(tmp, "probe.o")
        source.write_text(_PROBE)
        try:
            run = subprocess.run([*cc, "-I", include, "-c", str(source), "-o", str(obj)],
                                 capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as e:
            return f"the C compiler {cc[0]!r} could not be run ({e})"
        if run.returncode != 0 or not obj.is_file():
            said = run.stderr.strip()[:300]
            return f"the C compiler {cc[0]!r} failed on a probe (exit {run.returncode}){': ' + said if said else ''}"
    return None


class MypycHook(BuildHookInterface):  # type: ignore[misc]  # hatchling ships no type information
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        self._tmp: str | None = None
        if self.target_name != "wheel" or version == "editable":
            return
        if os.environ.get("TMEMLINT_PURE", "") not in ("", "0"):
            self.app.display_info("tmemlint: TMEMLINT_PURE is set: building a pure-Python wheel")
            return
        problem = compiler_problem()
        if problem:
            self.app.display_warning(f"tmemlint: {problem}: building a pure-Python wheel (slower analyses)")
            return
        modules = [str(m) for m in self.config.get("mypyc-modules", [])]
        self._tmp = tempfile.mkdtemp(prefix="tmemlint-mypyc-")
        work = Path(self._tmp)
        shutil.copytree(Path(self.root, "tmemlint"), work / "tmemlint",
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
        (work / "setup_mypyc.py").write_text(_SETUP)
        self.app.display_info(f"tmemlint: compiling {len(modules)} modules with mypyc")
        run = subprocess.run([sys.executable, "setup_mypyc.py", "build_ext", "--build-lib", "lib", "--build-temp",
                              "obj", "--modules", ",".join(modules)],
                             cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        built = sorted(p for p in (work / "lib").rglob("*") if p.suffix in (".so", ".pyd"))
        if run.returncode != 0 or len(built) != len(modules) + 1:  # one per module, and the shared library
            self.app.display_warning("tmemlint: mypyc failed: building a pure-Python wheel (slower analyses)\n"
                                     + run.stdout[-4000:])
            return
        for path in built:
            build_data["force_include"][str(path)] = path.relative_to(work / "lib").as_posix()
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if getattr(self, "_tmp", None):
            shutil.rmtree(str(self._tmp), ignore_errors=True)
