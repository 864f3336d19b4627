"""The back end's half: each outlined kernel function becomes one dispatch of a generated kernel.

In IREE's context (a module hook of braze.compiler.backend, before IREE compiles), every private function
carrying a `braze.kernel` spec gets the kernel built (braze.kernels.build) and embedded as an
external executable; the function's body, which computed the same thing in linalg, becomes

    hal.executable.source private @<name>_exe <{objects = #hal.executable.objects<{
        #hal.executable.target<"cuda", "cuda-nvptx-fb"> = [#hal.executable.object<{path = ...,
        data = dense<"0x<spec line, PTX>"> : vector<Nxi8>}>]}>}> {
      hal.executable.export public @<name> ordinal(0) layout(#hal.pipeline.layout<constants = 2,
          bindings = [A, B, inputs... (ReadOnly), C]>) count(%device: !hal.device) -> (index, index, index) {
        hal.return <grid> } <{workgroup_size = [32 * warps, 1, 1], workgroup_local_memory = <shared>}>
    }
    func.func private @<fn>(%a, %b, %e...) -> C {
      %r = flow.dispatch @<name>_exe::@<name>(%zero, %zero, %a, %b, %e...) : (...) -> C
    }

IREE inlines the function into main; the dispatch is one more executable in its program, so
iree.runtime and braze's launcher (which reads IREE's HAL program) run it with no other change.
The two zero constants feed the two scratch pointers Triton appends to a kernel's parameters
(bench/NOTES.md §18: the CUDA ABI is bindings, then each constant as its own parameter).

A GEMM whose K loop is split (braze.kernels.gemm) takes two more buffers: its tile counters,
zeroed by a fill and tied to a result (IREE binds a tied operand read-write, in operand order),
and its workspace, a result nobody reads (bindings: operands, then untied results, in order):

      %cnt = flow.tensor.splat %zero : tensor<Txi32>
      %r:3 = flow.dispatch @<name>_exe::@<name>(%zero, %zero, %a, %b, %e..., %cnt)
          : (...) -> (%cnt, C, tensor<Wxf32>)
"""

from __future__ import annotations

from braze.compiler._iree_compiler import iree_ir
from braze.errors import CompileError
from braze.irutil import all_ops

from braze.kernels import build as kbuild
from braze.kernels import gemm
from braze.kernels.precision import SPEC_LINE
from braze.kernels.spec import ATTR, AttentionSpec, GemmSpec, RowSpec, read_spec


def kernel_functions(module) -> list:
    return [f for f in all_ops(module.operation, "func.func") if ATTR in f.attributes]


def _executable_text(spec: kbuild.Spec, built: kbuild.Built, exe: str) -> str:
    # the spec on the PTX's first line, a comment: the artifact's kernels can be checked against
    # what they promise (braze.kernels.precision.artifact_kernels)
    data = (f"{SPEC_LINE}{spec.to_json()}\n{built.ptx}").encode() + b"\0"
    n_in = spec.operands()
    writes = (3 if _split_buffers(spec) else 1) + bool(built.scratch)  # (counters,) result (, workspace) (, scratch)
    bindings = ", ".join(["#hal.pipeline.binding<storage_buffer, ReadOnly>"] * n_in
                         + ["#hal.pipeline.binding<storage_buffer>"] * writes)
    constants = 1 if built.scratch else 2  # the scratch pointers Triton appends: one bound, or both fed zeros
    gx, gy, gz = built.grid
    workload, grid_x = "", f"%x = arith.constant {gx} : index"
    y_name = "%y"
    if isinstance(spec, AttentionSpec) and spec.dynamic_batch:  # the heads are the workload: the grid's y
        workload, y_name = ", %heads: index", "%heads"
    if isinstance(spec, GemmSpec) and spec.dynamic_m:  # M is the workload and the kernel's first constant
        constants += 1
        workload = ", %m: index"
        grid_x = (f"%bm = arith.constant {spec.tile[0]} : index\n    %tn = arith.constant {gemm.tiles_n(spec)} : index\n"
                  f"    %tm = arith.ceildivui %m, %bm : index\n    %x = arith.muli %tm, %tn : index")
    return f'''
hal.executable.source private @{exe} <{{objects = #hal.executable.objects<{{#hal.executable.target<"cuda", "cuda-nvptx-fb"> = [#hal.executable.object<{{path = "{built.name}.ptx", data = dense<"0x{data.hex().upper()}"> : vector<{len(data)}xi8>}}>]}}>}}> {{
  hal.executable.export public @{built.name} ordinal(0) layout(#hal.pipeline.layout<constants = {constants}, bindings = [{bindings}]>) count(%device: !hal.device{workload}) -> (index, index, index) {{
    {grid_x}
    %y = arith.constant {gy} : index
    %z = arith.constant {gz} : index
    hal.return %x, {y_name}, %z : index, index, index
  }} <{{workgroup_size = [{32 * built.warps} : index, 1 : index, 1 : index], workgroup_local_memory = {built.shared} : index}}>
}}'''


def _with_dims(lines: list, value: str, ty) -> str:
    """`ty` as a flow.dispatch operand or result spells it: '{%d...}' after a type with dynamic
    sizes, each read off `value` with tensor.dim (the ops appended to `lines`)."""
    shaped = iree_ir.ShapedType(ty)
    dims = []
    for axis in range(shaped.rank):
        if shaped.is_dynamic_dim(axis):
            name = f"{value.lstrip('%')}_d{axis}"
            lines.append(f"  %{name}_i = arith.constant {axis} : index")
            lines.append(f"  %{name} = tensor.dim {value}, %{name}_i : {ty}")
            dims.append(f"%{name}")
    return f"{ty}{{{', '.join(dims)}}}" if dims else str(ty)


def _fixed_elements(ty) -> int:
    """The product of a tensor type's sizes past its first (its dynamic one, in a kernel whose
    rows or heads are known per call)."""
    shaped = iree_ir.ShapedType(ty)
    if any(shaped.is_dynamic_dim(a) for a in range(1, shaped.rank)):
        raise CompileError(f"braze bug: a kernel tensor {ty} with a size per call past its first")
    n = 1
    for a in range(1, shaped.rank):
        n *= shaped.get_dim_size(a)
    return n


def _per_call_body(spec, built, exe: str, ftype) -> str:
    """The function body of a kernel whose rows (a GEMM's M) or heads (attention) are known per
    call: the count read off the first operand, IREE's workload and the grid's x or y (a GEMM
    also takes M as its first constant); the result's dynamic size from the count (the result
    holds count x N, or count x L x EV, elements however it is viewed). Size arguments after
    the tensors (the chain's own, for its linalg form) are not the kernel's."""
    tensors = [t for t in ftype.inputs if str(t) != "index"]
    lines = ["  %c0 = arith.constant 0 : index", f"  %d0 = tensor.dim %a0, %c0 : {tensors[0]}"]
    if isinstance(spec, AttentionSpec):  # heads: q's elements over L x E
        lines += [f"  %qf = arith.constant {_fixed_elements(tensors[0])} : index",
                  f"  %qle = arith.constant {spec.l * spec.e} : index",
                  "  %qn = arith.muli %d0, %qf : index", "  %count = arith.divui %qn, %qle : index"]
        count, per_count, constants = "%count", spec.l * spec.ev, ["%zero", "%zero"]
    else:  # M: A's rows
        lines.append("  %m32 = arith.index_cast %d0 : index to i32")
        count, per_count, constants = "%d0", spec.n, ["%m32", "%zero", "%zero"]
    operand_types = [_with_dims(lines, f"%a{i}", t) for i, t in enumerate(tensors)]
    result = ftype.results[0]
    result_text = str(result)
    if iree_ir.ShapedType(result).is_dynamic_dim(0):
        lines += [f"  %rper = arith.constant {per_count} : index",
                  f"  %rf = arith.constant {_fixed_elements(result)} : index",
                  f"  %rn = arith.muli {count}, %rper : index", "  %rd = arith.divui %rn, %rf : index"]
        result_text += "{%rd}"
    operands = ", ".join(constants + [f"%a{i}" for i in range(len(tensors))])
    types = ", ".join(["i32"] * len(constants) + operand_types)
    lines.append(f"  %r = flow.dispatch @{exe}::@{built.name}[{count}]({operands}) : ({types}) -> {result_text}")
    lines.append(f"  return %r : {result}")
    return "\n".join(lines)


def _per_call(spec) -> bool:
    """Whether the kernel's rows (GEMM) or heads (attention) are known per call only."""
    return spec.dynamic_batch if isinstance(spec, AttentionSpec) else spec.dynamic_m


def _split_buffers(spec) -> tuple[int, int] | None:
    return gemm.split_buffers(spec) if isinstance(spec, GemmSpec) else None


def embed_kernels(module, arch: str, float64: bool = True) -> list[dict]:
    """Replace each kernel function's body with a dispatch of its generated kernel; return what
    was embedded ({"function", "kernel", "spec", "cached"} per kernel) for the report.
    `float64`: whether IREE keeps the program's 64-bit floats; where it demotes them to 32 bits
    (its default, braze.compiler.frontend.keeps_float64), a row kernel's f64 ops and operands are
    f32 too, as IREE makes the function's linalg body and the dispatch's operand types."""
    done = []
    functions = kernel_functions(module)
    if not functions:
        return done
    with module.context, iree_ir.Location.unknown():
        specs = []
        for f in functions:
            sym = iree_ir.StringAttr(f.attributes["sym_name"]).value
            try:
                spec = read_spec(iree_ir.StringAttr(f.attributes[ATTR]).value)
                specs.append(spec if float64 or not isinstance(spec, RowSpec) else spec.demoted())
            except (ValueError, TypeError, KeyError) as e:
                raise CompileError(f"@{sym} carries a {ATTR} spec braze cannot read: {e}") from None
        for f, spec, built in zip(functions, specs, kbuild.build_all(specs, arch)):
            sym = iree_ir.StringAttr(f.attributes["sym_name"]).value
            exe = f"{sym}_exe"
            ftype = iree_ir.FunctionType(iree_ir.TypeAttr(f.attributes["function_type"]).value)
            args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(ftype.inputs))
            zeros = ["%zero"] * (1 if built.scratch else 2)
            operand_types = ", ".join(["i32"] * len(zeros) + [str(t) for t in ftype.inputs])
            result = str(ftype.results[0])
            operands = ", ".join(zeros + [f"%a{i}" for i in range(len(ftype.inputs))])
            split = _split_buffers(spec)
            if _per_call(spec) and (split or built.scratch):
                raise CompileError(f"braze bug: @{sym}'s kernel with M known per call has split K or TMA scratch")
            extra = []  # results after the kernel's own: the split-K workspace, the TMA descriptors' scratch
            if split:
                extra.append(f"tensor<{split[1]}xf32>")
            if built.scratch:
                programs = built.grid[0] * built.grid[1] * built.grid[2]
                extra.append(f"tensor<{programs * built.scratch}xi8>")
            if _per_call(spec):
                body = _per_call_body(spec, built, exe, ftype)
            elif split:
                counters = split[0]
                results = ", ".join(["%cnt", result] + extra)
                body = f'''  %cnt = flow.tensor.splat %zero : tensor<{counters}xi32>
  %r:{2 + len(extra)} = flow.dispatch @{exe}::@{built.name}({operands}, %cnt) : ({operand_types}, tensor<{counters}xi32>) -> ({results})
  return %r#1 : {result}'''
            elif extra:
                results = ", ".join([result] + extra)
                body = f'''  %r:{1 + len(extra)} = flow.dispatch @{exe}::@{built.name}({operands}) : ({operand_types}) -> ({results})
  return %r#0 : {result}'''
            else:
                body = f'''  %r = flow.dispatch @{exe}::@{built.name}({operands}) : ({operand_types}) -> {result}
  return %r : {result}'''
            text = _executable_text(spec, built, exe) + f'''
func.func private @{sym}({args}) -> {result} {{
  %zero = arith.constant 0 : i32
{body}
}}'''
            try:
                scratch = iree_ir.Module.parse(text)
            except iree_ir.MLIRError as e:
                raise CompileError(f"IREE rejected the dispatch braze wrote for @{sym} (a braze bug): {e}") from None
            for op in list(scratch.body.operations):
                op.operation.move_before(f)
            f.erase()
            done.append({"function": sym, "kernel": built.name, "spec": spec.describe(), "cached": built.cached})
    return done
