"""User code that misbehaves while advisor profiles it: one line, exit 2, never a hang."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import advisor

# entrypoint module text, extra model.yaml lines, what the one line says
CASES = {
    # build() never returns: the profiling time limit ends it
    "hang": ("import time\ndef build():\n    while True:\n        time.sleep(0.05)\n",
             "profile: {timeout_s: 1}\n", "profiling the model took more than 1 s"),
    # tensors on a hard-coded "cuda" on a machine without it
    "cuda": ("import torch\ndef build():\n    model = torch.nn.Linear(8, 2)\n"
             "    def make_batch(n, device):\n"
             "        return torch.randn(n, 8, device='cuda'), torch.zeros(n, dtype=torch.long)\n"
             "    def loss_fn(m, b):\n        return torch.nn.functional.cross_entropy(m(b[0]), b[1])\n"
             "    return model, make_batch, loss_fn\n",
             "", "the model puts tensors on CUDA"),
    # the module calls sys.exit() when imported
    "exits": ("import sys\nsys.exit(7)\n", "", "called sys.exit(7)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_misbehaving_entrypoint_is_one_line(tmp_path: Path, case: str) -> None:
    code, extra, says = CASES[case]
    (tmp_path / f"user_{case}.py").write_text(code)
    path = tmp_path / "model.yaml"
    path.write_text(f'name: {case}\nmodel:\n  entrypoint: "user_{case}:build"\nbatch_size: 8\n'
                    f"data: {{samples: 1000}}\n{extra}")
    result = CliRunner().invoke(advisor, ["recommend", str(path)])
    assert result.exit_code == 2
    # one error line, after the line saying the model is being profiled (stderr is piped)
    progress, error = result.stderr.strip().splitlines()
    assert progress.startswith(f"profiling {case} with torch") and says in error, result.stderr


def test_the_time_limit_does_not_change_the_fingerprint(tmp_path: Path) -> None:
    from advisor.spec import load_workload_spec

    base = "name: m\nmodel: {builtin: mlp}\nbatch_size: 8\ndata: {samples: 1000}\n"
    (tmp_path / "a.yaml").write_text(base)
    (tmp_path / "b.yaml").write_text(base + "profile: {timeout_s: 30}\n")
    a, b = (load_workload_spec(tmp_path / n) for n in ("a.yaml", "b.yaml"))
    assert b.profile.timeout_s == 30 and a.fingerprint() == b.fingerprint()


def test_what_the_users_build_prints_goes_to_stderr_so_json_stays_json(tmp_path: Path) -> None:
    import json

    (tmp_path / "user_chatty.py").write_text(
        "import torch\nprint('building the model...')\ndef build():\n"
        "    print('hello from build')\n    return torch.nn.Linear(8, 2), "
        "lambda n, device: (torch.randn(n, 8, device=device), torch.zeros(n, dtype=torch.long)),"
        " lambda m, b: torch.nn.functional.cross_entropy(m(b[0]), b[1])\n")
    path = tmp_path / "model.yaml"
    path.write_text('name: chatty\nmodel:\n  entrypoint: "user_chatty:build"\nbatch_size: 8\n'
                    "data: {samples: 1000}\n")
    result = CliRunner().invoke(advisor, ["recommend", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["workload"] == "chatty"
    assert "hello from build" in result.stderr and "building the model" in result.stderr


def test_a_time_limit_that_ends_first_leaves_torch_whole(tmp_path: Path) -> None:
    """The limit covers the model's work, not torch's own import: a limit shorter than that
    import ran out inside it, left torch half-initialized, and the next model in the process
    failed to import it ('cannot initialize type ... already defined')."""
    import subprocess
    import sys

    (tmp_path / "user_slow.py").write_text("import time\ndef build():\n    time.sleep(60)\n")
    (tmp_path / "slow.yaml").write_text('name: slow\nmodel:\n  entrypoint: "user_slow:build"\n'
                                        "batch_size: 8\ndata: {samples: 1000}\n"
                                        "profile: {timeout_s: 0.01}\n")
    (tmp_path / "mlp.yaml").write_text("name: m\nmodel: {builtin: mlp, options: {hidden: 16}}\n"
                                       "batch_size: 8\ndata: {samples: 1000}\n")
    script = (  # a fresh process: torch not imported yet
        "import sys\nfrom advisor.errors import AdvisorError\n"
        "from advisor.ranking.service import recommend_for_file\n"
        "try:\n    recommend_for_file(sys.argv[1])\nexcept AdvisorError as exc:\n"
        "    print('first:', exc)\n"
        "print('second:', recommend_for_file(sys.argv[2]).workload)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "slow.yaml"),
                           str(tmp_path / "mlp.yaml")], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    first, second = done.stdout.strip().splitlines()[-2:]
    assert first.startswith("first: slow: profiling the model took more than 0.01 s")
    assert second == "second: m"
