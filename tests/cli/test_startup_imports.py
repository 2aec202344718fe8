"""What a command's ``--help`` imports: the command's options and text only, never the
catalog (numpy), the ranking, a YAML parser, a database or torch (issue 30: imports that the
answer does not need are not paid). Each call runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import command_paths

ROOT = Path(__file__).resolve().parents[2]
# modules no --help needs (a package counts with everything under it)
HEAVY = ("numpy", "yaml", "sqlalchemy", "optuna", "torch", "pandas", "boto3", "pricing.catalog",
         "advisor.ranking.offers", "advisor.profiling.profile", "advisor.throughput.estimate")


def _help_calls() -> list[list[str]]:
    return [[*path, "--help"] for path in command_paths()]


def _imported_heavy(args: list[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    code = ("import json, sys\nfrom cli.main import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\n"
            f"heavy = {heavy!r}\n"
            "print(json.dumps(sorted({h for h in heavy for m in sys.modules "
            "if m == h or m.startswith(h + '.')})))")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("args", _help_calls(), ids=" ".join)
def test_help_imports_nothing_heavy(args: list[str]) -> None:
    assert _imported_heavy(args) == []


def test_the_check_sees_a_heavy_import() -> None:
    """A command that ranks imports the catalog and numpy: the check above would see them."""
    found = _imported_heavy(["pricing", "list", "--accelerator", "H100-SXM", "--json"])
    assert {"numpy", "pricing.catalog"} <= set(found)


# what only stored probe results need: their types (with the tune's tables), their findings,
# and SQLAlchemy (the store's SQLite file is read with the standard library)
PROBE_RESULTS = ("probes.types", "probes.tune", "probes.findings", "sqlalchemy")


def test_a_ranking_with_no_probes_loads_no_probe_results() -> None:
    """A user who never probed this workload pays for none of what decodes stored probes."""
    assert _imported_heavy(["recommend", str(ROOT / "examples" / "mlp.yaml")],
                           PROBE_RESULTS) == []
