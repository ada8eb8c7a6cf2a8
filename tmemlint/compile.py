"""Compile mode (``tmemlint --compile kernel.cu``): nvcc makes the PTX, tmemlint lints it, and every finding is
mapped back to the CUDA source through the PTX line info.

nvcc is found on ``PATH``, else as ``$CUDA_HOME/bin/nvcc`` (or ``$CUDA_PATH``).  It runs as an argument list
(never through a shell), from the source file's folder, with a time limit, as

    nvcc [--nvcc-arg ...] [-DNAME=VALUE ...] -arch=sm_100a -ptx -lineinfo -o TMP/out.ptx FILE

(``-arch`` is left out when the extra arguments choose the architecture).  Everything nvcc writes, its
temporaries included (``TMPDIR``), goes to one temporary folder that is removed afterwards.  A finding's PTX line
is mapped to the ``.loc`` of the instruction on that line: the ``.cu`` file, line and column; the call sites of
inlined functions (``inlined_at``) become related locations.

Paths are shown relative to the current folder (a file outside it keeps its absolute path; nvcc's temporary
copy of standard input is shown as the input's name).  A finding whose instruction comes from a library header
(the CUDA toolkit's, CuTe's, CUTLASS's: any file outside the current folder and the source's folder) is moved to
the nearest inlined call site in the user's files, with the header place as a related location.  The include
folders of the options (``-I``, ``include-dirs``, ``-p``) are passed to nvcc as absolute ``-I``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile

from tmemlint.findings import CheckError, Finding, Related
from tmemlint.ir import Instruction, Module, SourcePos
from tmemlint.lineinfo import inline_chain

#: Seconds nvcc may run for one file.
NVCC_TIMEOUT = 300
_ARCH_FLAGS = ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code")


class CompileError(CheckError):
    """nvcc could not be run or rejected the file; the message says why (nvcc's own message included)."""


def find_nvcc() -> str | None:
    """Path of nvcc: on PATH, else ``$CUDA_HOME/bin/nvcc`` or ``$CUDA_PATH/bin/nvcc``; None when there is none."""
    found = shutil.which("nvcc")
    if found:
        return found
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home:
            cand = os.path.join(home, "bin", "nvcc")
            if os.path.isfile(cand) and os.access(cand, os.X_OK):
                return cand
    return None


def nvcc_command(nvcc: str, source: str, out: str, nvcc_args=(), defines: dict[str, str] | None = None) -> list[str]:
    """The nvcc argument list for ``source`` (a file name relative to the working folder) → ``out``."""
    args = list(nvcc_args)
    cmd = [nvcc, *args]
    for name, value in (defines or {}).items():
        cmd.append(f"-D{name}={value}")
    if not any(a == f or a.startswith(f + "=") for a in args for f in _ARCH_FLAGS):
        cmd.append("-arch=sm_100a")
    cmd += ["-ptx", "-lineinfo", "-o", out]
    if not source.endswith(".cu"):
        cmd += ["-x", "cu"]
    cmd.append(source)
    return cmd


def compile_to_ptx(text: str, path: str, nvcc_args=(), defines: dict[str, str] | None = None,
                   timeout: float = NVCC_TIMEOUT) -> str:
    """The PTX nvcc makes from ``path`` (``text`` is compiled from a temporary copy when ``path`` is not a file).
    Raises CompileError."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise CompileError("--compile needs nvcc: it is not on PATH and CUDA_HOME/bin has none")
    with tempfile.TemporaryDirectory(prefix=_TMP_PREFIX) as tmp:
        if os.path.isfile(path):
            folder, name = os.path.split(os.path.abspath(path))
        else:
            folder, name = tmp, os.path.basename(path) or "input.cu"
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        out = os.path.join(tmp, "out.ptx")
        env = dict(os.environ, TMPDIR=tmp, TMP=tmp, TEMP=tmp)
        # "./name": a file called "-E.cu" must not be read as an option
        cmd = nvcc_command(nvcc, os.path.join(".", name), out, nvcc_args, defines)
        try:
            # own session: on a timeout the whole process group (nvcc and the tools it started) is killed
            popen = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, shell=False, start_new_session=True)
        except OSError as e:
            raise CompileError(f"nvcc could not be run: {e.strerror or e}") from None
        try:
            stdout, stderr = popen.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(popen.pid, signal.SIGKILL)
            except OSError:
                pass
            popen.communicate()
            raise CompileError(f"nvcc did not finish within {timeout:g} s") from None
        proc = subprocess.CompletedProcess(cmd, popen.returncode, stdout, stderr)
        if proc.returncode != 0:
            msg = (proc.stderr or proc.stdout or "").strip()
            raise CompileError(f"nvcc failed (exit {proc.returncode}):\n{msg}" if msg else
                               f"nvcc failed (exit {proc.returncode})")
        try:
            with open(out, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError as e:
            raise CompileError(f"nvcc wrote no PTX ({e.strerror or e})") from None


class _SourceMapper:
    """Maps PTX lines of a module to source positions (the ``.loc`` of the instruction on the line)."""

    def __init__(self, module: Module, path: str, ptx_text: str | None = None, library=None):
        self.path = path
        self.library = library
        self.chain = inline_chain(ptx_text) if ptx_text else {}
        self.real = os.path.realpath(path)
        self.folder = os.path.dirname(path)
        self.by_line: dict[int, Instruction] = {}
        self._lines: dict[str, list[str] | None] = {}
        self.first_of_fn: dict[str, Instruction] = {}
        for fn in module.functions:
            for inst in fn.instructions:
                if inst.src is None:
                    continue
                self.by_line.setdefault(inst.span.line, inst)
                self.first_of_fn.setdefault(fn.name, inst)

    def file(self, name: str) -> str:
        """A ``.file`` name as shown: the source's own path, else relative to the current folder when inside it."""
        if not os.path.isabs(name):
            cand = os.path.join(self.folder, name)
            return self.path if os.path.realpath(cand) == self.real else os.path.normpath(cand)
        if os.path.realpath(name) == self.real or (os.path.basename(os.path.dirname(name)).startswith(_TMP_PREFIX)
                                                   and os.path.basename(name) == os.path.basename(self.path)):
            return self.path
        return _relative(name)

    def lines(self, shown: str) -> list[str] | None:
        """The lines of a user's header (to place an asm instruction where its text starts), None if unreadable."""
        if shown not in self._lines:
            try:
                with open(shown, encoding="utf-8", errors="replace") as fh:
                    self._lines[shown] = fh.read().split("\n")
            except OSError:
                self._lines[shown] = None
        return self._lines[shown]

    def is_library(self, name: str) -> bool:
        """Whether ``.file`` ``name`` is a library header: outside the current folder and the source's folder,
        or a library by ``library`` (``tmemlint.libraries``: CUTLASS, CuTe, cccl, the toolkit, ``-isystem``,
        ``library-paths``); the checked file itself never is."""
        if self.file(name) == self.path:
            return False
        if self.library is not None and self.library(self.file(name)):
            return True
        if not os.path.isabs(name):
            return False
        real = os.path.realpath(name)
        here = (os.path.realpath(os.getcwd()), os.path.dirname(self.real))
        return not any(real == h or real.startswith(h.rstrip(os.sep) + os.sep) for h in here)

    def user_frame(self, src: SourcePos) -> tuple[SourcePos, SourcePos | None]:
        """``(the frame to report, the library place it stands for or None)``: the nearest inlined call site of
        ``src`` in the user's files when ``src`` is in a library header."""
        if not self.is_library(src.file):
            return src, None
        sites = list(src.inlined_at)
        while len(sites) < 64:  # nvcc writes one call site per .loc: the rest is on the .loc of that site
            nxt = self.chain.get((sites[-1].file, sites[-1].line, sites[-1].column)) if sites else None
            if nxt is None:
                break
            sites.append(SourcePos(*nxt))
        for k, site in enumerate(sites):
            if not self.is_library(site.file):
                return SourcePos(site.file, site.line, site.column, tuple(sites[k + 1:])), src
        return src, None

    def src(self, line: int, function: str | None) -> SourcePos | None:
        inst = self.by_line.get(line)
        if inst is None and function is not None:
            inst = self.first_of_fn.get(function)
        return inst.src if inst is not None else None


def map_findings(findings: list[Finding], module: Module, path: str, source_text: str | None = None,
                 ptx_text: str | None = None, library=None) -> list[Finding]:
    """PTX findings of ``module`` moved to the source positions of their instructions (``path`` is how the
    source file is shown; ``source_text`` its text, to put an inline-asm instruction where its text starts in
    the asm string, as source mode does: ``tmemlint.lineinfo.snap_to_asm``; ``ptx_text`` the PTX, whose ``.loc``
    lines chain the call sites of code inlined from library headers; ``library``: which files are library headers,
    ``tmemlint.libraries``); one finding per (file, line, column, code); the code-flow steps are mapped the same
    way."""
    from tmemlint.lineinfo import snap_to_asm

    source_lines = source_text.split("\n") if source_text is not None else None
    m = _SourceMapper(module, path, ptx_text, library)
    out = []
    seen = set()
    for f in findings:
        src = m.src(f.line, f.function)
        lib = None
        if src is not None:
            src, lib = m.user_frame(src)
        if src is None:
            where = (path, 1, 1)
        else:
            where = (m.file(src.file), src.line, max(src.column, 1))
        related = []
        if lib is not None:  # where the instruction's text starts in the header's asm string, as in PTX mode
            shown, inst = m.file(lib.file), m.by_line.get(f.line)
            at = snap_to_asm(m.lines(shown), lib.line, max(lib.column, 1), inst.opcode if inst else None)
            related.append(Related(shown, at[0], at[1], "in this library header"))
        for r in f.related:
            rs = m.src(r.line, None)
            if rs is not None:
                related.append(Related(m.file(rs.file), rs.line, max(rs.column, 1), r.message))
        if src is not None:
            for site in src.inlined_at:
                related.append(Related(m.file(site.file), site.line, max(site.column, 1),
                                       "called from here (inlined)"))
        if src is not None:
            inst = m.by_line.get(f.line)
            lines = source_lines if where[0] == path else m.lines(where[0])
            where = (where[0], *snap_to_asm(lines, where[1], where[2], inst.opcode if inst else None)[:2])
        key = (where, f.code)
        if key in seen:
            continue
        seen.add(key)
        message = _LINE_REF.sub(lambda mo, shown=where[0]: _source_line(mo, m, shown), f.message)
        flow = []
        for st in f.flow:
            ss = m.src(st.line, None)
            if ss is not None:
                flow.append(Related(m.file(ss.file), ss.line, max(ss.column, 1), st.message, st.thread))
        out.append(Finding(where[0], where[1], where[2], where[1], where[2] + 1, f.code, f.name, f.severity,
                           message, related, flow, f.function))
    return out


_LINE_REF = re.compile(r"\bline (\d+)\b")
_TMP_PREFIX = "tmemlint-nvcc-"


def _relative(path: str) -> str:
    """``path`` relative to the current folder when it is inside it, else as given."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _source_line(mo: re.Match, m: _SourceMapper, shown: str) -> str:
    """``line N`` of a PTX message rewritten to the source line of the instruction on PTX line N."""
    src = m.src(int(mo.group(1)), None)
    if src is None:
        return mo.group(0)
    f = m.file(src.file)
    return f"line {src.line}" if f == shown else f"{f}:{src.line}"
