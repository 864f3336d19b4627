// RUN: not braze-opt %s 2>&1 | %no-traceback | FileCheck %s --check-prefix=PARSE
// RUN: not braze-opt %s -p no-such-pass 2>&1 | %no-traceback | FileCheck %s --check-prefix=PASS
// RUN: not braze-opt %s -p 'canonicalize{max-iterations=many}' 2>&1 | %no-traceback | FileCheck %s --check-prefix=OPTION
// RUN: not braze-opt %s.missing 2>&1 | %no-traceback | FileCheck %s --check-prefix=MISSING
// RUN: not braze-opt %s --pass-pipeline=cse 2>&1 | %no-traceback | FileCheck %s --check-prefix=ANCHOR
// RUN: not braze-opt %s -p 'fusion-configure-kernels{target=sm_90 matmul-config=simt:64x32:16:4x4:16x16}' 2>&1 | %no-traceback | FileCheck %s --check-prefix=TILES
// RUN: not braze-opt %s -p 'fusion-form-groups{max-recompute-flops=-1}' 2>&1 | %no-traceback | FileCheck %s --check-prefix=NEGATIVE
// RUN: not braze-opt %s -p 'fusion-form-groups{flop-cost-bytes=nan}' 2>&1 | %no-traceback | FileCheck %s --check-prefix=NAN
// RUN: not braze-opt %s -p 'fusion-pad-matmuls{target=nosuch}' 2>&1 | %no-traceback | FileCheck %s --check-prefix=TARGET
// RUN: not braze-opt %s -p 'fusion-cuda-pipeline{target=sm_99}' 2>&1 | %no-traceback | FileCheck %s --check-prefix=PIPETARGET
// RUN: not braze-opt %s -p cse --mlir-print-ir-after=nosuchpass 2>&1 | %no-traceback | FileCheck %s --check-prefix=PRINTAFTER
// RUN: not braze-opt %s -p 'fusion-cuda-pipeline{nosuch=1}' 2>&1 | %no-traceback | FileCheck %s --check-prefix=PIPEOPTION
// RUN: not braze-opt %s -p 'fusion-cuda-pipeline{kernels=maybe}' 2>&1 | %no-traceback | FileCheck %s --check-prefix=PIPECHOICE
// RUN: not braze-opt %s -p 'fusion-cpu-pipeline{reassociate=always}' 2>&1 | %no-traceback | FileCheck %s --check-prefix=REASSOC
// RUN: not braze-opt %s -p 'fusion-cpu-pipeline{direct-pixels=-784}' 2>&1 | %no-traceback | FileCheck %s --check-prefix=PIXELS
// RUN: not braze-opt %s -p 'fusion-generate-kernels{target=sm_90 conv-fp32=fast}' 2>&1 | %no-traceback | FileCheck %s --check-prefix=CHOICE
// RUN: %PYTHON -c "import subprocess, sys; print('exit', subprocess.call([sys.executable, '-m', 'braze.tools.braze_opt', '--no-such-flag'], stderr=subprocess.DEVNULL))" | FileCheck %s --check-prefix=USAGE
// RUN: %PYTHON -c "import subprocess, sys; print('exit', subprocess.call([sys.executable, '-m', 'braze.tools.braze_opt', sys.argv[1]], stderr=subprocess.DEVNULL))" %s | FileCheck %s --check-prefix=EXIT1

// Malformed MLIR: the parser's diagnostic at file:line:col with the source line, no traceback.
// PARSE: bad-input.mlir:{{[0-9]+}}:8: error: custom op 'nonsense' is unknown
// PARSE-NEXT: {{^}}  %0 = nonsense
// An unknown pass, a bad option value and an unreadable file: one message, no traceback.
// PASS: braze-opt: error: unknown or malformed pass 'no-such-pass'
// OPTION: braze-opt: error: {{.*}}max-iterations=many
// MISSING: braze-opt: error: cannot read input file '{{.*}}bad-input.mlir.missing': No such file or directory
// --pass-pipeline must be anchored on builtin.module, as in mlir-opt.
// ANCHOR: braze-opt: error: --pass-pipeline 'cse' must be anchored on the module
// A matmul configuration whose threads do not cover its tile: what the option expects, no traceback.
// TILES: braze-opt: error: option 'matmul-config' of 'fusion-configure-kernels' expects simt:{{.*}}got 'simt:64x32:16:4x4:16x16'
// Option values out of range, not finite, or naming no known target: what the option takes.
// NEGATIVE: braze-opt: error: option 'max-recompute-flops' of 'fusion-form-groups' must be at least 0, got -1
// NAN: braze-opt: error: option 'flop-cost-bytes' of 'fusion-form-groups' expects a finite number, got nan
// TARGET: braze-opt: error: option 'target' of 'fusion-pad-matmuls' names no CUDA target braze compiles for: 'nosuch' (known: {{.*}}sm_90)
// A pipeline's options are checked like a pass's.
// PIPETARGET: braze-opt: error: option 'target' of 'fusion-cuda-pipeline' names no CUDA target braze compiles for: 'sm_99'
// PIPECHOICE: braze-opt: error: option 'kernels' of 'fusion-cuda-pipeline' is auto, on or off, got 'maybe'
// REASSOC: braze-opt: error: option 'reassociate' of 'fusion-cpu-pipeline' is auto, on or off, got 'always'
// PIXELS: braze-opt: error: option 'direct-pixels' of 'fusion-cpu-pipeline' must be at least 0, got -784
// CHOICE: braze-opt: error: option 'conv-fp32' of 'fusion-generate-kernels' is tf32, tf32x3, off or im2col, got 'fast'
// PIPEOPTION: braze-opt: error: 'fusion-cuda-pipeline' has no option 'nosuch' (its options: channels-last, conv-fp32, fp32, kernel-tiles, kernels, rows, target, tuning-cache)
// Printing after a pass that does not exist is an error, as in mlir-opt.
// PRINTAFTER: braze-opt: error: --mlir-print-ir-after=nosuchpass: no pass is called 'nosuchpass'
// A usage error exits 2 (argparse); a bad input exits 1.
// USAGE: exit 2
// EXIT1: exit 1
func.func @f() {
  %0 = nonsense
}
