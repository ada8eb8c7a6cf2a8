"""Kernel and function names as people read them: C++ names demangled (Itanium ABI, as ``c++filt`` prints them,
through the ``cxxfilt`` library), and the short name that identifies a kernel across the ways it is checked.

nvcc names a kernel ``_Z22mxfp8_gemm_bf16_kernel14CUtensorMap_stS_PKjS1_P13__nv_bfloat16jjjf``; people read
``mxfp8_gemm_bf16_kernel(CUtensorMap_st, CUtensorMap_st, unsigned int const*, ...)``.  Names that are not mangled
(Triton's, CuTe DSL's, ``extern "C"`` kernels) are returned as they are, and so is any name when the C++ runtime
the demangler calls cannot be loaded.
"""

from __future__ import annotations

import re
from functools import lru_cache

_MANGLED = re.compile(r"(?<![A-Za-z0-9_$])_Z[A-Za-z0-9_$]+")


@lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    """``name`` demangled (``_Z3fooPv`` → ``foo(void*)``); ``name`` itself when it is not an Itanium C++ name or
    cannot be demangled."""
    if not name.startswith("_Z"):
        return name
    try:
        import cxxfilt

        out = cxxfilt.demangle(name, external_only=False)
    except Exception:  # noqa: BLE001 - no C++ runtime to load, or a name it rejects: show it as it is
        return name
    return out or name


def demangle_message(text: str) -> str:
    """``text`` with every mangled C++ name in it demangled (a message that names a function)."""
    if "_Z" not in text:
        return text
    return _MANGLED.sub(lambda m: demangle(m.group(0)), text)


def _drop_brackets(text: str, open_: str, close: str) -> str:
    out, depth = [], 0
    for ch in text:
        if ch == open_:
            depth += 1
        elif ch == close and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


@lru_cache(maxsize=4096)
def base_name(name: str | None) -> str:
    """The unqualified name of a function without template arguments, parameters or return type:
    ``_ZN7cutlass4gemm11gemm_kernelINS0_...EEEv...`` → ``gemm_kernel``, ``void ns::k<64>(int)`` → ``k``,
    ``triton_kernel`` → ``triton_kernel``.  Source mode knows a kernel by this name and PTX by its mangled one;
    fingerprints use this so that both give the same."""
    if not name:
        return ""
    text = demangle(name)
    if text == name and "(" not in text and "<" not in text and "::" not in text:
        return name
    text = _drop_brackets(text, "<", ">")
    cut = len(text)
    for i, ch in enumerate(text):  # the parameter list: the first '(' outside brackets
        if ch == "(":
            cut = i
            break
    text = text[:cut].strip()
    text = text.split()[-1] if text.split() else text
    return text.rsplit("::", 1)[-1] or name
