"""Source mode: CUDA C++ (``.cu``, ``.cuh``, headers) → the PTX IR, without a compiler.

One concern per module, lowest first:

* ``preprocess`` — the preprocessor: ``#if``, macros, quoted includes, and the map back to each file's lines;
* ``cxx_types`` — C++ types, layouts and constant evaluation;
* ``program`` — the declarations of the translation unit (tree-sitter-cuda): functions, structs, constants;
* ``asm`` — asm templates: the PTX text of an ``asm`` statement parsed, its ``%N`` placeholders;
* ``common`` — what the lowering modules share: values, lvalues, frames, limits, errors;
* ``lvalues``, ``arithmetic``, ``expressions``, ``statements``, ``calls``, ``asm_lower`` — the lowering of
  lvalues, operators, expressions, statements and control flow, calls (helper inlining, intrinsics) and asm
  statements, as mixins of ``lower.Lowering``;
* ``lower`` — ``Lowering``: one function (a kernel and the helpers it calls) → an IR ``Function``;
* ``unit`` — ``parse_cuda``: a file → a ``Module`` of its kernels and the diagnostics (TM900/TM901); the findings
  are moved back to the files they are in by ``tmemlint.lineinfo.with_inline_context``.

The typed IR (``tmemlint.ir``) is the only output: the analyses and rules read it as they read nvcc's PTX.
"""

from tmemlint.frontend.cuda.unit import (
    BLIND_CODES,
    CudaUnit,
    parse_cuda,
)

__all__ = ["BLIND_CODES", "CudaUnit", "parse_cuda"]
