# RUN: not braze bench --workloads nosuch 2>&1 | %no-traceback | FileCheck %s --check-prefix=WORKLOAD
# RUN: not braze bench --reps 0 2>&1 | %no-traceback | FileCheck %s --check-prefix=REPS
# RUN: not braze bench --threads -3 2>&1 | %no-traceback | FileCheck %s --check-prefix=THREADS
# RUN: not braze bench table %t.missing.json 2>&1 | %no-traceback | FileCheck %s --check-prefix=MISSING
# RUN: echo '{"not": "results"}' > %t.other.json
# RUN: not braze bench chart %t.other.json -o %t.png 2>&1 | %no-traceback | FileCheck %s --check-prefix=NOTRESULTS
# RUN: echo 'garbage' > %t.garbage.json
# RUN: not braze bench merge %t.garbage.json -o %t.merged.json 2>&1 | %no-traceback | FileCheck %s --check-prefix=GARBAGE
# RUN: not braze tune import %t.garbage.json 2>&1 | %no-traceback | FileCheck %s --check-prefix=TUNE
# RUN: not braze import %inputs/tiny_model.py:make_model --shape 2,x 2>&1 | %no-traceback | FileCheck %s --check-prefix=SHAPE
# RUN: not braze import %inputs/tiny_model.py:make_model --shape 100000000,100000000 2>&1 | %no-traceback | FileCheck %s --check-prefix=HUGE
# RUN: not braze compile %inputs/tiny_model.py:make_model_with_inputs 2>&1 | %no-traceback | FileCheck %s --check-prefix=NOOUT
# RUN: rm -f %t.braze
# RUN: braze compile %inputs/tiny_model.py:make_model_with_inputs -o %t.braze 2>&1 | FileCheck %s --check-prefix=WROTE
# RUN: not braze compile %inputs/tiny_model.py:make_model_with_inputs -o %t.braze 2>&1 | %no-traceback | FileCheck %s --check-prefix=EXISTS

# Every bad flag or file of the `braze` subcommands: one line naming the problem, no traceback.
# WORKLOAD: braze bench: error: unknown workload(s) nosuch; known: elementwise_chain,
# REPS: error: argument --reps: expects a whole number of at least 1, got '0'
# THREADS: error: argument --threads: expects a whole number of at least 1, got '-3'
# MISSING: braze bench: error: cannot read results file '{{.*}}missing.json': No such file or directory
# NOTRESULTS: braze bench: error: '{{.*}}other.json' is not a braze bench results file
# GARBAGE: braze bench: error: '{{.*}}garbage.json' is not JSON
# TUNE: braze tune: error: '{{.*}}garbage.json' is not a winners file written by `braze tune run`
# --shape takes whole numbers only, and no example so large it would exhaust memory.
# SHAPE: braze import: error: --shape '2,x' is not a shape
# HUGE: braze import: error: --shape 100000000,100000000 asks for a {{[0-9]+}} GiB example input of float32
# An artifact needs a path, and an existing one is never replaced without --overwrite.
# NOOUT: braze compile: error: an artifact needs -o FILE
# WROTE: wrote {{.*}}.braze: <braze.CompiledModule AddRelu(float32[2, 4]) on cpu (host)>
# EXISTS: braze compile: error: {{.*}}.braze already exists; braze will not overwrite it
