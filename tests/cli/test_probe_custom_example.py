"""``advisor probe`` on the custom example: its real loader gives a measured input ratio."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import advisor

CUSTOM = Path(__file__).resolve().parents[2] / "examples" / "custom"


@pytest.mark.slow
def test_probe_of_the_custom_example_measures_its_input_pipeline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The example's code with small options, so a CPU step is quick; its data goes to tmp_path.
    # One torch thread: on a busy shared CPU, threads waiting for each other make steps 100x
    # slower and can leave the input check no time.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    shutil.copy(CUSTOM / "my_model.py", tmp_path / "my_model.py")
    options = {"vocab": 500, "embed_dim": 16, "channels": 16, "seq_len": 24,
               "dataset_samples": 256, "loader_workers": 2, "data_dir": str(tmp_path / "data")}
    path = tmp_path / "model.yaml"
    path.write_text("name: custom-small\nmodel:\n  entrypoint: \"my_model:build\"\n"
                    f"  options: {json.dumps(options)}\nbatch_size: 8\ndata: {{samples: 1000}}\n")
    result = CliRunner().invoke(advisor, ["probe", str(path), "--on", "local", "--time-box", "5",
                                          "--json"])
    assert result.exit_code in (0, 3), result.output  # 3: ok, not settled in a short box
    (row,) = json.loads(result.stdout)["probes"]
    assert row["status"] == "ok"
    assert row["input_bound_ratio"] is not None
