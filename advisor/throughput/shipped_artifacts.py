"""Regenerate what the package ships so that a first ``advisor recommend`` of a built-in example
neither imports torch nor fits the throughput model:

    python -m advisor.throughput.shipped_artifacts

It writes the built-in examples' profiles (``advisor.profiling.shipped``) and the fitted
default throughput model under its cache key (``model_cache.write_shipped_model``), one line
per file. Run it after changing a built-in model, the tracer, the examples, the throughput
code (any ``advisor/throughput/*.py``, this file included) or its data, and commit what it
writes: ``tests/advisor/test_shipped_artifacts.py`` fails until then.
"""

from __future__ import annotations

from pathlib import Path

from advisor.profiling import builtin_example_specs, write_shipped_profiles
from advisor.throughput.model_cache import write_shipped_model
from pricing import load_accelerators

__all__ = ["main"]


def main() -> None:
    """Write the shipped profiles and the shipped model, printing each path written."""
    root = Path(__file__).resolve().parent.parent.parent
    for path in write_shipped_profiles(builtin_example_specs()):
        print(f"wrote {path.relative_to(root)}")
    print(f"wrote {write_shipped_model(load_accelerators()).relative_to(root)}")


if __name__ == "__main__":
    main()
