"""Tiny models for `braze import` lit tests."""

import torch


class AddRelu(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x + 1.0)


def make_model():
    return AddRelu()


def make_model_with_inputs():
    return AddRelu(), (torch.randn(2, 4),)


def make_broken():
    raise RuntimeError("weights not found")


NOT_A_FACTORY = 3


class Raises(torch.nn.Module):
    def forward(self, x):
        raise ValueError("forward broke")


def make_forward_raises():
    return Raises(), (torch.randn(2, 4),)
