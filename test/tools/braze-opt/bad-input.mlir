// RUN: not braze-opt %s 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not braze-opt %s -p no-such-pass 2>&1 | FileCheck %s --check-prefix=PASS
// RUN: not braze-opt %s -p 'canonicalize{max-iterations=many}' 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not braze-opt %s.missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not braze-opt %s --pass-pipeline=cse 2>&1 | FileCheck %s --check-prefix=ANCHOR
// RUN: not braze-opt %s -p 'fusion-configure-kernels{target=sm_90 matmul-config=simt:64x32:16:4x4:16x16}' 2>&1 | FileCheck %s --check-prefix=TILES
// RUN: %PYTHON -c "import subprocess, sys; print('exit', subprocess.call([sys.executable, '-m', 'braze.tools.braze_opt', '--no-such-flag'], stderr=subprocess.DEVNULL))" | FileCheck %s --check-prefix=USAGE
// RUN: %PYTHON -c "import subprocess, sys; print('exit', subprocess.call([sys.executable, '-m', 'braze.tools.braze_opt', sys.argv[1]], stderr=subprocess.DEVNULL))" %s | FileCheck %s --check-prefix=EXIT1

// Malformed MLIR: the parser's diagnostic at file:line:col with the source line, no traceback.
// PARSE: bad-input.mlir:30:8: error: custom op 'nonsense' is unknown
// PARSE-NEXT: {{^}}  %0 = nonsense
// PARSE-NOT: Traceback
// An unknown pass, a bad option value and an unreadable file: one message, no traceback.
// PASS: braze-opt: error: unknown or malformed pass 'no-such-pass'
// PASS-NOT: Traceback
// OPTION: braze-opt: error: {{.*}}max-iterations=many
// OPTION-NOT: Traceback
// MISSING: braze-opt: error: cannot read input file '{{.*}}bad-input.mlir.missing': No such file or directory
// MISSING-NOT: Traceback
// --pass-pipeline must be anchored on builtin.module, as in mlir-opt.
// ANCHOR: braze-opt: error: --pass-pipeline 'cse' must be anchored on the module
// A matmul configuration whose threads do not cover its tile: what the option expects, no traceback.
// TILES: braze-opt: error: option 'matmul_config' of pass 'fusion-configure-kernels' expects simt:{{.*}}got 'simt:64x32:16:4x4:16x16'
// TILES-NOT: Traceback
// A usage error exits 2 (argparse); a bad input exits 1.
// USAGE: exit 2
// EXIT1: exit 1
func.func @f() {
  %0 = nonsense
}
