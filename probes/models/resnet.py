"""ResNet v1.5 (He et al. 2015, stride on the 3x3 convolution) in plain torch.

Options: ``depth`` (18, 34, 50, 101, 152; default 50), ``width`` (channels of the first
stage, default 64), ``image_size`` (default 224), ``num_classes`` (default 1000). At the
defaults it has the 25,557,032 parameters of torchvision's ``resnet50``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from probes.built import BuiltWorkload
from probes.models import check_builtin_options

__all__ = ["BasicBlock", "Bottleneck", "ResNet", "build"]

_STAGES = {18: (False, (2, 2, 2, 2)), 34: (False, (3, 4, 6, 3)), 50: (True, (3, 4, 6, 3)),
           101: (True, (3, 4, 23, 3)), 152: (True, (3, 8, 36, 3))}


def _shortcut(in_ch: int, out_ch: int, stride: int) -> nn.Module:
    if stride == 1 and in_ch == out_ch:
        return nn.Identity()
    return nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False),
                         nn.BatchNorm2d(out_ch))


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a residual connection (ResNet-18/34)."""

    expansion = 1

    def __init__(self, in_ch: int, width: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, width, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.shortcut = _shortcut(in_ch, width, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (carrying the stride, v1.5), 1x1 expand by 4, residual (ResNet-50+)."""

    expansion = 4

    def __init__(self, in_ch: int, width: int, stride: int) -> None:
        super().__init__()
        out_ch = width * self.expansion
        self.conv1 = nn.Conv2d(in_ch, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_ch, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_ch)
        self.shortcut = _shortcut(in_ch, out_ch, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """Stem (7x7/2 conv, 3x3/2 max-pool), four stages, global average pool, linear head."""

    def __init__(self, *, depth: int, width: int, num_classes: int) -> None:
        super().__init__()
        bottleneck, counts = _STAGES[depth]
        block: type[BasicBlock] | type[Bottleneck] = Bottleneck if bottleneck else BasicBlock
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(width), nn.ReLU(inplace=True), nn.MaxPool2d(3, stride=2, padding=1))
        stages: list[nn.Module] = []
        in_ch = width
        for index, count in enumerate(counts):
            stage_width = width * 2**index
            blocks: list[nn.Module] = []
            for i in range(count):
                stride = 2 if (i == 0 and index > 0) else 1
                blocks.append(block(in_ch, stage_width, stride))
                in_ch = stage_width * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(in_ch, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(x))
        logits: torch.Tensor = self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
        return logits


def build(**options: Any) -> BuiltWorkload:
    """A ResNet classifier with synthetic ImageNet-like batches and a cross-entropy loss."""
    opts = check_builtin_options("resnet50", options)  # depth in _STAGES, image_size >= 32
    size, classes = int(opts["image_size"]), int(opts["num_classes"])
    model = ResNet(depth=opts["depth"], width=opts["width"], num_classes=classes)

    def make_batch(batch_size: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.randn(batch_size, 3, size, size, device=device)
        return images, torch.randint(0, classes, (batch_size,), device=device)

    def loss_fn(net: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        images, labels = batch
        return F.cross_entropy(net(images), labels)

    return BuiltWorkload(model=model, make_batch=make_batch, loss_fn=loss_fn)

