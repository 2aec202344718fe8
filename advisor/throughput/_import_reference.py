"""Rebuild ``advisor/data/reference_throughput.csv`` from the Lambda table in ``shared/data``.

Run ``python -m advisor.throughput._import_reference ../shared/data``. Keeps every measured row with the
software generation, drops the implausible multi-GPU ncf rows (about 1e10 samples/s), and
renames precision ``fp16_amp`` to ``mixed`` except where the config ran another precision
(``RUN_FACTS``). A test checks the shipped file equals the output.

Lambda's ``batch_size_per_gpu`` is the per-GPU batch on one GPU but the GLOBAL batch on N
GPUs, whatever its name (and shared/data's README) says: of the 1,652 multi-GPU rows with a
one-GPU twin (same generation, model, precision, GPU), 1,566 hold exactly N times the twin's
batch (ResNet-50 lambda_v0 fp32 A100-80GB-SXM: 720, 1440, 2880, 5760 on 1, 2, 4, 8 GPUs), and
all but one of the rest are other multiples of N (SSD fp32 RTX-2080Ti: 112 on 4 GPUs, 28
each). So ``batch_size_per_accelerator`` is the column divided by ``num_accelerators``:

- where it divides, the quotient, even where that differs from the one-GPU batch (SSD above;
  BERT-large fp16 on RTX-2080Ti holds 4, 8, 16 on 2, 4, 8 GPUs, the one-GPU batch of 4 on
  two GPUs, so 2 per GPU, not 4: the three rows that equal their one-GPU batch are these);
- where it does not divide (one row: Transformer-XL large fp32 lambda_v0 on 8 A100-80GB-SXM,
  182, likely a typo for 192 = 8 x 24 as in lambda_v1) or is blank, 0: not known.

Lambda's table labels a cell by the column its config block fills (``..._FP16_PARAMS`` /
``..._AMP_PARAMS`` is ``fp16_amp``), not by what the command line passed. Where the two differ,
``RUN_FACTS`` says what ran, each with the config file that shows it (``lambdal/
deeplearning-benchmark``, ``pytorch/scripts/config_v*``; the run logs under ``pytorch/
results`` print the parsed flags and agree); every other block of those configs passes its
trainer's mixed-precision switch (``--amp``, ``--fp16``, ``--math fp16``, ``--amp-run``,
BERT's ``fp16`` argument), and every run log of an ``fp16_amp`` cell shows it on except these.
"""

from __future__ import annotations

import csv
import io
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["COLUMNS", "RUN_FACTS", "RunFact", "build_reference", "main"]

COLUMNS = [
    "generation", "model", "precision", "accelerator", "accelerator_count",
    "batch_size_per_accelerator", "samples_per_second", "sample_unit", "source", "captured_at",
]
# Lambda publishes no dates per row; the generation says the container era.
_CAPTURED = {"lambda_v0": "2022-12-31", "lambda_v1": "2024-12-31"}
_SOURCE = "Lambda deep-learning benchmark tables (public), hand-extracted"
_UNIT = {"gnmt": "token", "transformerxlbase": "token", "transformerxllarge": "token",
         "ncf": "user-item pair"}
_IMPLAUSIBLE_SAMPLES_PER_SECOND = 1e9


@dataclass(frozen=True)
class RunFact:
    """What Lambda's cells of ``generation``, ``model`` and ``labelled`` precision on
    ``accelerators`` (with more than ``min_count - 1`` GPUs) really ran, read from ``config``:
    ``ran`` is the precision (``fp32``), or None where the cell measured another setting than
    its row says (dropped)."""

    generation: str
    model: str
    labelled: str
    accelerators: frozenset[str]
    ran: str | None
    config: str
    min_count: int = 1

    def covers(self, raw: dict[str, str]) -> bool:
        """Whether ``raw`` (a row of Lambda's table) is one of these cells."""
        return (raw["source"], raw["model"], raw["precision"]) == (
            self.generation, self.model, self.labelled) and raw["accelerator"] in \
            self.accelerators and int(float(raw["num_accelerators"])) >= self.min_count


RUN_FACTS: tuple[RunFact, ...] = (
    # lambda_v1's 80 GB command lines (config_v1/config_pytorch_80GB.sh, sourced by the
    # A100 80GB and every H100 system's config and by 2x/4x/8x80GB.sh) give NCF's FP16 block
    # no --amp; the logs print "amp : False". They ran fp32 at a batch of 10 M (fp32: 8 M).
    RunFact("lambda_v1", "ncf", "fp16_amp",
            frozenset({"A100-80GB-PCIe", "A100-80GB-SXM", "H100-PCIe", "H100-SXM"}), "fp32",
            "pytorch/scripts/config_v1/config_pytorch_80GB.sh"),
    # lambda_v0's multi-GPU RTX 2080 Ti configs (config_v0/config_pytorch_{2,4,8}x2080Ti
    # {,NVlink}_trt{,2}.sh) leave the precision out of BERT-large's FP16 block, so run_squad
    # reads NUM_GPU as the precision and "1" as the GPU count: fp32 on one GPU at a batch of
    # 2 (logs: no --fp16, 6.1-6.4 sequences/s), not mixed on N GPUs.
    RunFact("lambda_v0", "bert_large_squad", "fp16_amp", frozenset({"RTX-2080Ti"}), None,
            "pytorch/scripts/config_v0/config_pytorch_2x2080Ti_trt.sh", min_count=2),
)


def _ran_precision(raw: dict[str, str]) -> str | None:
    """The precision a Lambda cell ran (``mixed`` or ``fp32``; see ``RUN_FACTS``), None where
    it measured another setting than its row says."""
    for fact in RUN_FACTS:
        if fact.covers(raw):
            return fact.ran
    return "mixed" if raw["precision"] == "fp16_amp" else raw["precision"]


def _per_accelerator_batch(raw: dict[str, str]) -> int:
    """The per-device batch of a Lambda row: its global batch over its GPU count; 0 (not
    known) where the batch is blank or does not divide evenly."""
    count = int(float(raw["num_accelerators"]))
    global_batch = int(float(raw["batch_size_per_gpu"] or 0))
    return global_batch // count if global_batch % count == 0 else 0


def build_reference(lambda_csv: str) -> list[dict[str, str]]:
    """Turn the Lambda table into the shipped reference rows."""
    rows = []
    for raw in csv.DictReader(io.StringIO(lambda_csv)):
        throughput = float(raw["throughput_samples_per_s"])
        precision = _ran_precision(raw)
        if throughput <= 0 or throughput > _IMPLAUSIBLE_SAMPLES_PER_SECOND or precision is None:
            continue
        rows.append({
            "generation": raw["source"],
            "model": raw["model"],
            "precision": precision,
            "accelerator": raw["accelerator"],
            "accelerator_count": str(int(float(raw["num_accelerators"]))),
            "batch_size_per_accelerator": str(_per_accelerator_batch(raw)),
            "samples_per_second": f"{throughput:g}",
            "sample_unit": _UNIT.get(raw["model"], "sample"),
            "source": _SOURCE,
            "captured_at": _CAPTURED[raw["source"]],
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    """Write ``advisor/data/reference_throughput.csv``."""
    shared = Path((argv or sys.argv[1:] or ["../shared/data"])[0])
    rows = build_reference((shared / "benchmarks/lambda_train_throughput.csv").read_text())
    out = Path(__file__).parent.parent / "data" / "reference_throughput.csv"
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} reference rows -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
