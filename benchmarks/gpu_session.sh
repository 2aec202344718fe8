#!/usr/bin/env bash
# The checks a session makes when it is lent a GPU (one H100 or H200, 15 minutes of device
# time, start-up included): everything in one device call, prepared here beforehand.
#
#   bash benchmarks/gpu_session.sh --fetch-wheels   # here, first: the project's pure-Python
#                                                    # needs the device image lacks, into .whl/
#   bash benchmarks/gpu_session.sh                  # there: one device run, carrying .whl
#   bash benchmarks/gpu_session.sh --dry-run        # here: the same runs at CPU size
#
# There, it installs the wheels into /tmp/site, then runs, most wanted first:
#   1. bench_gpu_targets.py --only T5,LSTM,GRU: issue 28's memory targets (the T5-small's
#      learned-bias attention and cuDNN's recurrent layers) and the attention kernels CUDA ran;
#   2. bench_gpu_targets.py on the built-ins (ResNet-50 with and without cuDNN autotuning and at
#      the reference's batch, BERT-base, GPT-2, the Hugging Face GPT-2): issue 14's targets and
#      why ResNet-50 bf16 misses.
# Each step's table lands in $OUT (the device tool brings it back) and in benchmarks/results;
# the rows also print as they finish, so a run cut short still shows what it measured.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == --fetch-wheels ]]; then
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
  # The device image (KINDS.md) has torch, numpy, pandas, scipy, scikit-learn, PyYAML, click,
  # rich, Jinja2 and transformers; these are what the project imports beyond them.
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl platformdirs SQLAlchemy greenlet optuna alembic \
    Mako colorlog cmaes tenacity orjson
  ls .whl
  exit 0
fi

scale=(); python=python3; out="${OUT:-benchmarks/results}"
if [[ "${1:-}" == --dry-run ]]; then
  scale=(--batch-scale 0.02 --time-box 5); python=python; out=/tmp/gpu-session-dry
else
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:$PWD"
  scale=(--time-box 15)
fi
export ADVISOR_HOME="${ADVISOR_HOME:-/tmp/advisor-gpu-session}" PYTHONUNBUFFERED=1
mkdir -p "$out"
(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true) \
  | tee "$out/gpu_session_device.txt"

step() {  # step NAME ARGS...: one benchmark run; its table goes to $out as NAME_<device>.md
  local name=$1 f base; shift
  echo "== $name: $*"
  rm -f "$out"/gpu_targets_*.md
  timeout 300 "$python" benchmarks/bench_gpu_targets.py --out-dir "$out" "$@" "${scale[@]}" \
    2>&1 | tee "$out/$name.log" || true
  for f in "$out"/gpu_targets_*.md; do
    [[ -e $f ]] || continue
    base=$(basename "$f" .md)
    mv "$f" "$out/${name}_${base#gpu_targets_}.md"
  done
}
step gpu_targets_rnn_t5 --only T5,LSTM,GRU
step gpu_targets_builtins --only ResNet-50,BERT,GPT-2
