"""SSD300 with a ResNet-50 backbone (NVIDIA DeepLearningExamples, PyTorch/Detection/SSD,
v1.1) in plain torch.

A reference model, built through the entrypoint ``probes.models.ssd:build``: the shipped
operator mix of Lambda's ``ssd`` rows is traced from it. The backbone is ResNet-50 v1.5 up to
its third stage (``probes.models.resnet``), that stage's first block at stride 1, so the
first feature map is 38 x 38 of 1024 channels; five extra blocks (1x1 then 3x3 convolutions
with batch norm, to 19, 10, 5, 3 and 1 pixels); per feature map a 3x3 localization and a 3x3
confidence head (4, 6, 6, 6, 4, 4 default boxes; 81 COCO classes: 8,732 boxes); the loss is
smooth L1 on the positive boxes plus cross-entropy with hard negative mining (three
negatives per positive, chosen by two sorts). Options: ``image_size`` 300, ``num_classes``
81, ``positives`` 0.02 (share of the default boxes matched to an object in the synthetic
targets).
"""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from probes.built import BuiltWorkload
from probes.models import check_options
from probes.models.resnet import Bottleneck, ResNet

__all__ = ["DEFAULTS", "Ssd300", "build", "default_boxes"]

DEFAULTS: dict[str, Any] = {"image_size": 300, "num_classes": 81, "positives": 0.02}
_FEATURES = (1024, 512, 512, 256, 256, 256)
_MIDDLE = (256, 256, 128, 128, 128)
_BOXES = (4, 6, 6, 6, 4, 4)


def _extra_block(in_ch: int, mid: int, out_ch: int, *, stride: int, padding: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(in_ch, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(inplace=True),
        nn.Conv2d(mid, out_ch, 3, stride=stride, padding=padding, bias=False),
        nn.BatchNorm2d(out_ch), nn.ReLU(inplace=True))


class Ssd300(nn.Module):
    """Backbone, extra feature blocks and per-map box heads; ``forward`` returns box offsets
    ``(batch, 4, boxes)`` and class logits ``(batch, classes, boxes)``."""

    def __init__(self, *, num_classes: int) -> None:
        super().__init__()
        resnet = ResNet(depth=50, width=64, num_classes=1)
        stages = resnet.stages
        first = cast("Bottleneck", cast("nn.Sequential", stages[2])[0])
        first.conv2.stride = (1, 1)
        cast("nn.Conv2d", cast("nn.Sequential", first.shortcut)[0]).stride = (1, 1)
        self.backbone = nn.Sequential(resnet.stem, *list(stages)[:3])
        self.extra = nn.ModuleList(
            _extra_block(a, m, b, stride=2 if i < 3 else 1, padding=1 if i < 3 else 0)
            for i, (a, m, b) in enumerate(zip(_FEATURES[:-1], _MIDDLE, _FEATURES[1:],
                                              strict=True)))
        self.num_classes = num_classes
        self.loc = nn.ModuleList(nn.Conv2d(c, n * 4, 3, padding=1)
                                 for c, n in zip(_FEATURES, _BOXES, strict=True))
        self.conf = nn.ModuleList(nn.Conv2d(c, n * num_classes, 3, padding=1)
                                  for c, n in zip(_FEATURES, _BOXES, strict=True))

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.backbone(images)
        maps = [x]
        for block in self.extra:
            x = block(x)
            maps.append(x)
        batch = images.shape[0]
        locs = torch.cat([head(m).reshape(batch, 4, -1) for head, m in zip(self.loc, maps,
                                                                          strict=True)], 2)
        confs = torch.cat([head(m).reshape(batch, self.num_classes, -1)
                           for head, m in zip(self.conf, maps, strict=True)], 2)
        return locs, confs


def default_boxes(image_size: int) -> int:
    """Default boxes of all feature maps for square images of ``image_size`` pixels (8,732
    at 300)."""
    def out(side: int, kernel: int, stride: int, padding: int) -> int:
        return (side + 2 * padding - kernel) // stride + 1

    side = out(out(out(image_size, 7, 2, 3), 3, 2, 1), 3, 2, 1)  # stem, pool, stage 2
    total = side * side * _BOXES[0]
    for i, count in enumerate(_BOXES[1:]):
        side = out(side, 3, 2, 1) if i < 3 else out(side, 3, 1, 0)
        total += side * side * count
    return total


def _loss(locs: torch.Tensor, confs: torch.Tensor, boxes: torch.Tensor,
          labels: torch.Tensor) -> torch.Tensor:
    """Smooth L1 over the positive boxes plus cross-entropy over the positives and the
    three-times-as-many hardest negatives, per image over its positives, batch mean."""
    positive = labels > 0
    count = positive.sum(dim=1)
    located = (F.smooth_l1_loss(locs.float(), boxes, reduction="none").sum(dim=1)
               * positive).sum(dim=1)
    confidence = F.cross_entropy(confs.float(), labels, reduction="none")
    _, order = confidence.masked_fill(positive, 0).sort(dim=1, descending=True)
    _, rank = order.sort(dim=1)
    hard = rank < torch.clamp(3 * count, max=labels.shape[1]).unsqueeze(-1)
    classified = (confidence * (positive | hard)).sum(dim=1)
    return ((located + classified) / count.clamp(min=1)).mean()


def build(**options: Any) -> BuiltWorkload:
    """SSD300 with synthetic COCO-like images and matched box targets, and its loss;
    ModelOptionError names a bad option."""
    opts = check_options("ssd", options, DEFAULTS, maximum={"num_classes": 100_000},
                         minimum={"image_size": 300})
    classes, size, share = opts["num_classes"], opts["image_size"], opts["positives"]
    model = Ssd300(num_classes=classes)
    boxes = default_boxes(size)

    def make_batch(batch_size: int, device: Any) -> tuple[torch.Tensor, ...]:
        matched = torch.rand(batch_size, boxes, device=device) < share
        labels = torch.randint(1, classes, (batch_size, boxes), device=device) * matched
        return (torch.randn(batch_size, 3, size, size, device=device),
                torch.randn(batch_size, 4, boxes, device=device), labels)

    def loss_fn(net: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        images, targets, labels = batch
        locs, confs = net(images)
        return _loss(locs, confs, targets, labels)

    return BuiltWorkload(model=model, make_batch=make_batch, loss_fn=loss_fn)
