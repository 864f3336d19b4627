# RUN: braze import %s:make_model --shape 2,4 | FileCheck %s
# RUN: braze import %s:make_model_with_inputs -o %t.mlir && FileCheck %s < %t.mlir
# RUN: braze import %s:make_model --shape 2,4 | braze-opt -p cse | FileCheck %s
# RUN: not braze import %inputs/tiny_model.py:make_broken --shape 2 2>&1 | %no-traceback | FileCheck %s --check-prefix=RAISES
# RUN: not braze import %inputs/tiny_model.py:no_such 2>&1 | %no-traceback | FileCheck %s --check-prefix=NOFACTORY
# RUN: not braze import %inputs/missing.py:make_model 2>&1 | %no-traceback | FileCheck %s --check-prefix=NOFILE
# RUN: not braze import %inputs/tiny_model.py 2>&1 | %no-traceback | FileCheck %s --check-prefix=SPEC
# RUN: not braze import %inputs/tiny_model.py:make_model 2>&1 | %no-traceback | FileCheck %s --check-prefix=NOSHAPE

# `braze import` prints the linalg-on-tensors IR braze.compile starts from, with --shape
# or with the example inputs the factory returns; braze-opt reads it.
# CHECK: func.func @main(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32>
# CHECK: linalg.generic
# CHECK: arith.addf
# Errors in the MODEL spec or the user's code: one braze message, no traceback.
# RAISES: braze import: error: the factory in '{{.*}}tiny_model.py:make_broken' raised RuntimeError: weights not found (at {{.*}}tiny_model.py:{{[0-9]+}})
# NOFACTORY: braze import: error: '{{.*}}tiny_model.py' has no 'no_such'
# NOFILE: braze import: error: model file '{{.*}}missing.py' {{.*}} does not exist
# SPEC: braze import: error: MODEL '{{.*}}tiny_model.py' must be FILE.py:FACTORY or package.module:FACTORY
# NOSHAPE: braze import: error: {{.*}} give one --shape per input

import torch


class AddOne(torch.nn.Module):
    def forward(self, x):
        return x + 1.0


def make_model():
    return AddOne()


def make_model_with_inputs():
    return AddOne(), (torch.randn(2, 4),)
