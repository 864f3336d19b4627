"""GPU targets: cross-compiled artifacts here (CI has no GPU), numerics where a GPU exists.

CI cross-compiles every zoo model for cuda sm_90 and vulkan and checks each artifact's
metadata; the tests marked cuda/vulkan run on a GPU host and skip cleanly elsewhere.
"""

import json
import warnings
import zipfile

import pytest
import torch

import braze
from braze.accuracy import max_error
from braze.testing.zoo import CASES, fresh_like

GPU_TARGETS = [("cuda", "sm_90"), ("vulkan", "ampere")]


@pytest.mark.parametrize("device,target", GPU_TARGETS, ids=["cuda-sm_90", "vulkan-ampere"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_cross_compile_metadata(case, device, target, tmp_path):
    model, args, kwargs = case.build()
    stage, why = case.known.get(device, (None, None))
    if stage == "compile":  # IREE's own failure, reported as IREE's with the op's location
        with pytest.raises(braze.CompileError, match=f"IREE failed to compile {type(model).__name__} for {device}"):
            braze.compile(model, *args, example_kwargs=kwargs, device=device, target=target)
        return
    compiled = braze.compile(model, *args, example_kwargs=kwargs, device=device, target=target)
    path = compiled.save(tmp_path / f"{case.name}.braze")
    with zipfile.ZipFile(path) as z:
        meta = json.loads(z.read("braze.json"))
        vmfb = z.read("module.vmfb")
    assert meta["target"] == {"device": device, "arch": target, "driver": device}
    assert meta["versions"]["iree_compiler"].startswith("3.13")
    assert [s["shape"] for s in meta["signature"]["inputs"]] == [
        list(t.shape) for t in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)
    ]
    assert meta["report"]["dispatch_count"] >= 1
    if device == "cuda":
        assert b".target sm_90" in vmfb  # the explicit Hopper target, not sm_80 PTX
    else:
        assert b"SPIR" in vmfb or len(vmfb) > 0


def test_unknown_cuda_capability_falls_back_with_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = braze.compile(torch.nn.ReLU(), torch.randn(4), device="cuda", target="sm_120")
    assert compiled.target.arch == "sm_90"
    assert any("no CUDA target for sm_120; compiling for sm_90" in str(w.message) for w in caught)


def test_bad_cuda_target():
    with pytest.raises(braze.DeviceError, match="not a CUDA compute capability"):
        braze.compile(torch.nn.ReLU(), torch.randn(4), device="cuda", target="sm_xyz")


def test_bad_vulkan_target():
    with pytest.raises(braze.DeviceError, match="unknown vulkan target 'hopper'"):
        braze.compile(torch.nn.ReLU(), torch.randn(4), device="vulkan", target="hopper")


def test_cuda_artifact_refuses_to_run_without_gpu(tmp_path):
    if "cuda" in braze.available_devices():
        pytest.skip("a CUDA device is present")
    braze.compile(torch.nn.ReLU(), torch.randn(4), device="cuda", target="sm_90").save(tmp_path / "r.braze")
    with pytest.raises(braze.DeviceError, match="compiled for cuda \\(sm_90\\).*available devices: cpu"):
        braze.load(tmp_path / "r.braze")


@pytest.mark.cuda
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_zoo_on_cuda(case):
    model, args, kwargs = case.build()
    compiled = braze.compile(model, *args, example_kwargs=kwargs, device="cuda")
    args2, kwargs2 = fresh_like((args, kwargs))
    with torch.no_grad():
        expected = model(*args2, **kwargs2)
    to_cuda = lambda t: t.cuda() if isinstance(t, torch.Tensor) else t  # noqa: E731
    got = compiled(*torch.utils._pytree.tree_map(to_cuda, (args2,))[0], **torch.utils._pytree.tree_map(to_cuda, kwargs2))
    assert all(t.is_cuda for t in torch.utils._pytree.tree_leaves(got))
    assert max_error(got, expected, floor=0.0) <= case.rtol


@pytest.mark.cuda
def test_cpu_tensor_is_moved_to_cuda_module():
    compiled = braze.compile(torch.nn.ReLU(), torch.randn(4), device="cuda")
    x = torch.randn(4)
    out = compiled(x)
    assert out.is_cuda
    torch.testing.assert_close(out.cpu(), torch.relu(x))


@pytest.mark.vulkan
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_zoo_on_vulkan(case):
    """Every zoo model on the Vulkan device, compiled for the target braze picks for it (a
    failure of IREE's own for that target, marked in the zoo as vulkan/TARGET, is expected)."""
    model, args, kwargs = case.build()
    target = braze.targets.detect_vulkan_target()
    stage, why = case.known.get(f"vulkan/{target}", (None, None))
    if stage == "compile":
        with pytest.raises(braze.CompileError, match="IREE failed to compile"):
            braze.compile(model, *args, example_kwargs=kwargs, device="vulkan")
        return
    compiled = braze.compile(model, *args, example_kwargs=kwargs, device="vulkan")
    args2, kwargs2 = fresh_like((args, kwargs))
    with torch.no_grad():
        expected = model(*args2, **kwargs2)
    assert max_error(compiled(*args2, **kwargs2), expected, floor=0.0) <= case.rtol


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_dynamic_batch_on_the_launcher(dtype):
    """A dynamic build on CUDA runs on braze's launcher at every batch (its plan's sizes
    evaluated per shape, braze's generated GEMM and attention kernels with the batch per call),
    its results torch tensors on the GPU, matching float64 within eager's own error (x4)."""
    from braze.testing.zoo import BertLayer

    torch.manual_seed(0)
    model = BertLayer().eval().to(dtype)
    batch = torch.export.Dim("batch", min=1, max=16)
    module = braze.compile(model, torch.randn(4, 128, 768).to(dtype), device="cuda", cache=False,
                           dynamic_shapes=({0: batch},), specialize="none").dynamic
    assert module.plan is not None and module.plan.symbolic, module.report.launch_plan
    assert sum(k["generated"] for k in module.report.kernels) == 7, module.report.kernels
    ref = BertLayer().eval()
    ref.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    ref = ref.double().cuda()
    with torch.no_grad():
        for b in (1, 3, 16, 3):
            x = torch.randn(b, 128, 768, dtype=dtype, device="cuda")
            assert module.runtime_for(x) == "launch"
            got = module(x)
            assert got.is_cuda and got.shape == (b, 128, 768)
            want = ref(x.double())
            err = (got.double() - want).abs().max().item()
            own = (model.cuda()(x).double() - want).abs().max().item()
            assert err <= 4 * own + 1e-6, (b, err, own)
    assert sorted(s[0][0] for s in module.launcher.shapes) == [1, 3, 16]


class SumAndValues(torch.nn.Module):
    def forward(self, x):
        y = x * 2 + 1
        return y.sum(), y


class MeanAndStd(torch.nn.Module):
    def forward(self, x):
        y = x * 2 + 1
        return y.mean(), y.std()


@pytest.mark.cuda
@pytest.mark.parametrize("model", [SumAndValues(), MeanAndStd()], ids=["sum-and-values", "mean-and-std"])
def test_a_reduction_to_one_value_beside_its_shared_producer_runs_on_cuda(model):
    """The dispatches backend._split_full_reductions keeps apart (IREE's aggressive fusion crashed
    LLVM's NVPTX back end on them: test_dispatch_fusion.py), against float64 on random data. Here
    and not beside the compile tests: this file is collected on the GPU host, which has no compiler."""
    torch.manual_seed(0)
    x = torch.rand(256, 512)
    m = braze.compile(model, x, device="cuda", cache=False)
    got = m(x.cuda())
    want = model(x.double())
    for g, w in zip(got, want):
        assert torch.isfinite(g).all()
        torch.testing.assert_close(g.double().cpu(), w, rtol=1e-5, atol=1e-4)


class Bincount(torch.nn.Module):
    def forward(self, x):
        return torch.bincount(x)


def test_a_result_sized_by_values_compiles_for_cuda():
    """bincount's result has max(x) + 1 elements: no caller's buffer can be sized for it before the
    call, and IREE 3.13 failed to compile the aliasing ("'arith.addi' op using value defined
    outside the region"); braze leaves that result in IREE's buffers (no launch plan)."""
    x = torch.randint(0, 10, (1000,), generator=torch.Generator().manual_seed(0))
    m = braze.compile(Bincount(), x, device="cuda", target="sm_90", cache=False)
    assert m.report.launch_plan.startswith("none: a result's size is computed from values")


@pytest.mark.cuda
def test_a_result_sized_by_values_runs_on_cuda():
    x = torch.randint(0, 10, (1000,), generator=torch.Generator().manual_seed(0))
    m = braze.compile(Bincount(), x, device="cuda", cache=False)
    for high in (10, 25):  # a second call with another largest value: another result size
        y = torch.randint(0, high, (1000,), generator=torch.Generator().manual_seed(high))
        assert torch.equal(m(y.cuda()).cpu(), torch.bincount(y))
