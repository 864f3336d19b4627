"""A bfloat16 Linear + GELU: a bf16 contraction with a float32 accumulator, which IREE 3.13 cannot
compile for Vulkan unless braze widens its operands first."""

import torch


def make_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.GELU()).eval().to(torch.bfloat16)
    return model, (torch.randn(8, 64, dtype=torch.bfloat16),)
