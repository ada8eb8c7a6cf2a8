"""Input problems (family 9xx), reported by the driver rather than by a check over a function."""

from tmemlint.checks.registry import rule

rule("TM900", "syntax-error", "error",
     "the input is not valid PTX: file, line and column; the other files are still checked")(None)
rule("TM901", "not-analysable", "warning",
     "text that cannot be analysed statically; the message says what was skipped")(None)
rule("TM902", "unused-suppression", "warning",
     "a tmemlint suppression comment that suppressed nothing (or names an unknown rule)")(None)
rule("TM903", "asm-operand-direction", "error",
     "CUDA inline asm (source mode): an operand a tcgen05 instruction writes bound as an input, or one it only "
     "reads bound as an output")(None)
