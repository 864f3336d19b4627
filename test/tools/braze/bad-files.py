# RUN: not braze bench --reps -1 2>&1 | %no-traceback | FileCheck %s --check-prefix=REPS
# RUN: echo '{"schema": "braze-bench/1", "workloads": [1]}' > %t.partial.json
# RUN: not braze bench table %t.partial.json 2>&1 | %no-traceback | FileCheck %s --check-prefix=PARTIAL
# RUN: not braze bench chart %t.partial.json -o %t.png 2>&1 | %no-traceback | FileCheck %s --check-prefix=PARTIAL
# RUN: not braze bench chart %t.missing.json -o %t.png 2>&1 | %no-traceback | FileCheck %s --check-prefix=MISSING
# RUN: rm -rf %t.dir && mkdir -p %t.dir
# RUN: not braze bench table %t.dir 2>&1 | %no-traceback | FileCheck %s --check-prefix=DIR
# RUN: echo 'the user file' > %t.out.json
# RUN: echo 'the user file' > %t.out.keep
# RUN: not braze bench merge %t.partial.json -o %t.out.json 2>&1 | %no-traceback | FileCheck %s --check-prefix=PARTIAL
# RUN: not braze bench merge %t.missing.json -o %t.out.json 2>&1 | %no-traceback | FileCheck %s --check-prefix=MISSING
# RUN: diff %t.out.keep %t.out.json
# RUN: not braze check badspec 2>&1 | %no-traceback | FileCheck %s --check-prefix=SPEC
# RUN: not braze check %t.nosuch.py:make_model 2>&1 | %no-traceback | FileCheck %s --check-prefix=NOFILE
# RUN: not braze check %inputs/tiny_model.py:make_broken 2>&1 | %no-traceback | FileCheck %s --check-prefix=FACTORY
# RUN: not braze check %inputs/tiny_model.py:make_forward_raises 2>&1 | %no-traceback | FileCheck %s --check-prefix=FORWARD
# RUN: not braze check --run %t.dir 2>&1 | %no-traceback | FileCheck %s --check-prefix=NOBUILD
# RUN: not braze cache 2>&1 | %no-traceback | FileCheck %s --check-prefix=CACHE
# RUN: not braze cache info extra 2>&1 | %no-traceback | FileCheck %s --check-prefix=CACHEEXTRA
# RUN: not braze tune run %t.dir 2>&1 | %no-traceback | FileCheck %s --check-prefix=TUNEDIR
# RUN: not braze tune run %t.dir --reps -1 2>&1 | %no-traceback | FileCheck %s --check-prefix=REPS
# RUN: not braze tune kernels %t.dir %t.missing.csv 2>&1 | %no-traceback | FileCheck %s --check-prefix=TUNECSV
# RUN: not braze tune build %t.dir --workloads nosuch 2>&1 | %no-traceback | FileCheck %s --check-prefix=TUNEWORKLOAD
# RUN: echo 'the user file' > %t.existing.braze
# RUN: echo 'the user file' > %t.existing.keep
# RUN: not braze compile %inputs/tiny_model.py:make_model_with_inputs -o %t.existing.braze 2>&1 | %no-traceback | FileCheck %s --check-prefix=EXISTS
# RUN: diff %t.existing.keep %t.existing.braze

# Bad numbers, missing, partial and unreadable files of `braze bench`, `check`, `cache` and
# `tune`: one line naming the problem, a non-zero exit, no traceback, and no user file changed.
# REPS: error: argument --reps: expects a whole number of at least 1, got '-1'
# PARTIAL: braze bench: error: '{{.*}}partial.json' is not a whole braze bench results file (KeyError: 'device')
# MISSING: braze bench: error: cannot read results file '{{.*}}missing.json': No such file or directory
# DIR: braze bench: error: cannot read results file '{{.*}}.dir': Is a directory
# SPEC: braze check: error: MODEL 'badspec' must be FILE.py:FACTORY or package.module:FACTORY
# NOFILE: braze check: error: model file '{{.*}}nosuch.py' (from MODEL '{{.*}}nosuch.py:make_model') does not exist
# FACTORY: braze check: error: the factory in '{{.*}}tiny_model.py:make_broken' raised RuntimeError: weights not found
# FORWARD: braze check: error: Raises raised ValueError in eager on the example inputs: forward broke; braze check compares braze with eager
# NOBUILD: braze check: error: {{.*}}.dir is not a build of `braze check --build DIR`: cannot read {{.*}}bisection.json (No such file or directory)
# CACHE: braze cache: error: the following arguments are required: action
# CACHEEXTRA: braze: error: unrecognized arguments: extra
# TUNEDIR: braze tune: error: cannot read '{{.*}}.dir/manifest.json': No such file or directory; make DIR with `braze tune build DIR`
# TUNECSV: braze tune: error: cannot read '{{.*}}missing.csv': No such file or directory; give ncu's --csv output
# TUNEWORKLOAD: braze tune: error: unknown workload(s) nosuch; known: elementwise_chain,
# An existing file is never replaced by a compile without --overwrite.
# EXISTS: braze compile: error: {{.*}}existing.braze already exists; braze will not overwrite it
