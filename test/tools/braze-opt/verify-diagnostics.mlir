// RUN: braze-opt %s --split-input-file --verify-diagnostics -p cse,one-shot-bufferize

// expected-error @+N on the line N below: a parser error.
// expected-error @+2 {{custom op 'foo' is unknown}}
func.func @plus() {
  %0 = foo
}

// -----

// expected-error with no @ names its own line.
func.func @same_line() {
  %0 = foo // expected-error {{custom op 'foo' is unknown}}
}

// -----

// @above and @below name the neighbouring line.
func.func @above() {
  %0 = foo
  // expected-error @above {{unknown}}
}

// -----

// A pass failure is checked too: expected-error-re matches its {{regex}} parts, and
// expected-note @-N its note.
func.func @pass_failure(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error-re @below {{op was not {{[a-z]+}}ized}}
  %0 = arith.addf %a, %a : tensor<4xf32>
  // expected-note @-1 {{see current operation}}
  return %0 : tensor<4xf32>
}
