"""A small network that every stage of the CUDA pipeline changes: a padded 3x3 convolution
(im2col + matmul), BatchNorm and ReLU, a Linear no tile divides (padded), an elementwise chain."""

import torch
import torch.nn.functional as F


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 16, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        return torch.sigmoid(self.fc(torch.flatten(y, 1))) * 2.0 - 1.0


def make_model():
    torch.manual_seed(0)
    return ConvNet().eval(), (torch.randn(2, 4, 8, 8),)
