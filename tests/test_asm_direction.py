"""TM903 asm-operand-direction (source mode): an operand a tcgen05 instruction writes bound as an input, or one
it only reads bound as an output; exact code, line and column range on the fixtures and on small kernels."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from test_cuda_frontend import kernel
from tmemlint.engine import Options, lint_file, lint_source
from tmemlint.frontend.parser import parse_text


def tm903(src: str) -> list[tuple[int, int, int, int, str]]:
    """(line, column, end line, end column, message) of the TM903 findings of CUDA source ``src``."""
    return [(f.line, f.column, f.end_line, f.end_column, f.message)
            for f in lint_source(src, "k.cu", Options(codes={"TM903"}))]


@pytest.mark.parametrize("name, line, col, end_col, operand", [
    ("tm903_ld_destination_input_bad.cu", 27, 18, 25, '"r"(v1)'),
    ("tm903_ld_red_result_input_bad.cu", 28, 18, 25, '"f"(mx)'),
    ("tm903_taddr_output_bad.cu", 27, 18, 29, '"=r"(taddr)'),
])
def test_fixture_fault_at_its_operand(name, line, col, end_col, operand):
    path = FIXTURES / "nvcc" / name
    got = [f for f in lint_file(path).findings if f.code == "TM903"]
    assert [(f.line, f.column, f.end_line, f.end_column, f.severity.value, f.name) for f in got] == [
        (line, col, line, end_col, "error", "asm-operand-direction")]
    text = path.read_text().splitlines()[line - 1]
    assert text[col - 1:end_col - 1] == operand


def test_messages_name_the_operand_and_the_way_out():
    msgs = {p: [f.message for f in lint_file(FIXTURES / "nvcc" / p).findings] for p in (
        "tm903_ld_destination_input_bad.cu", "tm903_ld_red_result_input_bad.cu", "tm903_taddr_output_bad.cu")}
    assert msgs["tm903_ld_destination_input_bad.cu"] == [
        'tcgen05.ld writes the destination %1 (v1), but the operand is bound as an input "r"(v1): the compiler '
        'assumes the asm leaves v1 unchanged and keeps using its old value; bind it as an output ("=r")']
    assert msgs["tm903_ld_red_result_input_bad.cu"][0].startswith(
        'tcgen05.ld writes the reduction result redval %2 (mx), but the operand is bound as an input "f"(mx)')
    assert msgs["tm903_taddr_output_bad.cu"] == [
        'tcgen05.ld reads the TMEM address %2 (taddr), but the operand is bound as an output "=r"(taddr): the '
        "compiler passes an uninitialised register to the asm and drops taddr's value; bind it as an input (\"r\")"]


@pytest.mark.parametrize("name", ["tm903_ld_destination_input_good.cu", "tm903_ld_red_result_input_good.cu",
                                  "tm903_taddr_output_good.cu"])
def test_good_twins_are_clean(name):
    assert lint_file(FIXTURES / "nvcc" / name).findings == []


@pytest.mark.parametrize("name", ["tm903_ld_destination_input_bad", "tm903_ld_red_result_input_bad",
                                  "tm903_taddr_output_bad"])
def test_invisible_in_nvccs_ptx(name):
    """The PTX nvcc made from a bad kernel has no finding: the fault is in the constraint, not in the PTX."""
    ptx = FIXTURES / "nvcc" / f"{name}.ptx"
    assert lint_file(ptx).findings == []
    assert (".target sm_103a" in ptx.read_text()) == ("ld_red" in name)


LD = 'uint32_t v0 = 0, v1 = 0;\n  asm volatile("tcgen05.ld.sync.aligned.32x32b.x2.b32 {%0, %1}, [%2];" OPS);\n' \
     '  asm volatile("tcgen05.wait::ld.sync.aligned;");\n  out[threadIdx.x] = v0 + v1;'


def ld_kernel(ops: str) -> str:
    return kernel(body=LD.replace("OPS", ops))


# line 14 of kernel(): the asm of BODY; the operand columns are those of the text after the template
@pytest.mark.parametrize("ops, want", [
    (': "=r"(v0), "=r"(v1) : "r"(base)', []),
    (': "+r"(v0), "+r"(v1) : "r"(base)', []),  # read-write destinations: correct
    (': "=r"(v0), "=r"(v1), "+r"(base)', []),  # "+r" on the taddr it only reads: the value is passed in
    (': "=r"(v0) : "r"(v1), "r"(base)', [(15, 85, 92, '"r"(v1)')]),
    (': "=r"(v0), "=r"(v1), "=r"(base)', [(15, 94, 104, '"=r"(base)')]),
    (':: "r"(v0), "r"(v1), "r"(base)', [(15, 75, 82, '"r"(v0)'), (15, 84, 91, '"r"(v1)')]),
])
def test_operand_directions_on_tcgen05_ld(ops, want):
    src = ld_kernel(ops)
    got = tm903(src)
    lines = src.splitlines()
    assert [(line, c, ec, lines[line - 1][c - 1:ec - 1]) for line, c, _, ec, _ in got] == want


def test_st_sources_and_taddr_bound_as_outputs():
    body = ('uint32_t a = 1, b = 2, t = base;\n'
            '  asm volatile("tcgen05.st.sync.aligned.32x32b.x2.b32 [%0], {%1, %2};" : "=r"(a) : "r"(t), "r"(b));\n'
            '  asm volatile("tcgen05.wait::st.sync.aligned;");')
    got = tm903(kernel(body=body))
    assert [(line, c, ec, m.split(",")[0]) for line, c, _, ec, m in got] == [
        (15, 74, 81, "tcgen05.st reads the TMEM address %0 (a)")]


def test_scratch_output_written_before_the_tcgen05_instruction_is_not_reported():
    """An output the template itself computes (``mov``/``add`` into ``%0``) before a tcgen05 instruction reads it."""
    body = ('uint32_t t, v;\n'
            '  asm volatile("add.u32 %0, %2, 32;\\n\\ttcgen05.ld.sync.aligned.32x32b.x1.b32 {%1}, [%0];" '
            ': "=r"(t), "=r"(v) : "r"(base));\n'
            '  asm volatile("tcgen05.wait::ld.sync.aligned;");\n  out[threadIdx.x] = v;')
    assert tm903(kernel(body=body)) == []


def test_alloc_slot_address_bound_as_output():
    src = kernel().replace(':: "r"(smem_u32(&slot)), "n"(128));', ': "=r"(s) : "n"(128));').replace(
        "  __shared__ uint32_t slot;\n", "  __shared__ uint32_t slot;\n  uint32_t s = smem_u32(&slot);\n")
    got = tm903(src)
    assert [(line, c, ec, m.split(",")[0]) for line, c, _, ec, m in got] == [
        (8, 88, 95, "tcgen05.alloc reads the shared address of the slot %0 (s)")]


def test_ptx_mode_has_no_tm903():
    """The rule is source mode's: the PTX lint never reports it (the constraint is gone from nvcc's output)."""
    ptx = (FIXTURES / "nvcc" / "tm903_ld_destination_input_bad.ptx").read_text()
    from tmemlint.engine import lint_module

    assert [f for f in lint_module(parse_text(ptx, "k.ptx"), "k.ptx", Options(codes={"TM903"}))] == []
