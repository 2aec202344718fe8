"""The package layering of shared/DESIGN.md, checked on every import statement."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ALLOWED = {
    "pricing": set(),
    "probes": {"pricing"},
    "advisor": {"pricing", "probes"},
    "reports": {"advisor", "pricing", "probes"},
    "cli": {"advisor", "pricing", "probes", "reports"},
}


def _imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_lower_layers(package: str) -> None:
    ours = set(ALLOWED)
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in _imported_top_levels(path) & ours:
            if name != package and name not in ALLOWED[package]:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


def test_layering_check_catches_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from cli.main import main\n    return main\n")
    assert "cli" in _imported_top_levels(module)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path, known: set[str]) -> set[str]:
    """Our modules ``path`` imports (``from a.b import c`` counts ``a.b.c`` when it is a module,
    else ``a.b``), at any depth, type-checking imports included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in known else node.module)
    return found & known


def test_no_two_modules_import_each_other() -> None:
    paths = [p for package in ALLOWED for p in sorted((ROOT / package).rglob("*.py"))]
    known = {_module_name(p) for p in paths}
    imports = {_module_name(p): _imported_modules(p, known) for p in paths}
    pairs = sorted({tuple(sorted((a, b))) for a, targets in imports.items() for b in targets
                    if a != b and a in imports.get(b, set())})
    assert pairs == []


# Inside advisor: the shared base modules (advisor/*.py) under the sub-packages, each
# sub-package importing only those below it.
SUBPACKAGES = {
    "profiling": set(),
    "throughput": {"profiling"},
    "ranking": {"profiling", "throughput"},
    "sweep": {"profiling", "throughput", "ranking"},
}
FACED = ("profiling", "throughput", "ranking")


def _advisor_imports(path: Path) -> set[str]:
    """``advisor.<x>...`` modules that ``path`` imports, as dotted names."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("advisor."))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.startswith("advisor."):
            found.add(node.module)
    return found


def test_advisor_subpackages_import_only_lower_ones() -> None:
    bad = []
    for path in sorted((ROOT / "advisor").rglob("*.py")):
        parts = path.relative_to(ROOT / "advisor").parts
        if parts == ("__init__.py",):
            continue  # the package's lazy face names every sub-package
        own = parts[0] if len(parts) > 1 else None
        allowed = SUBPACKAGES[own] | {own} if own else set()
        for module in _advisor_imports(path):
            sub = module.split(".")[1]
            if sub in SUBPACKAGES and sub not in allowed:
                bad.append(f"{path.relative_to(ROOT)} imports {module}")
    assert bad == []


def test_other_packages_use_the_faces_of_advisor_subpackages() -> None:
    """cli, reports, probes, pricing, the sweep and the base modules import
    ``advisor.profiling``, ``advisor.throughput`` and ``advisor.ranking`` through their
    ``__init__`` (the public names), never a module inside."""
    bad = []
    for package in ALLOWED:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if rel.parts[0] == "advisor" and len(rel.parts) > 2 and rel.parts[1] in FACED:
                continue  # inside its own sub-package
            if rel == Path("advisor/__init__.py"):
                continue
            bad += [f"{rel} imports {m}" for m in _advisor_imports(path)
                    if m.split(".")[1] in FACED and m.count(".") > 1]
    assert bad == []


def test_each_face_exports_what_it_names() -> None:
    import importlib

    for sub in FACED:
        face = importlib.import_module(f"advisor.{sub}")
        missing = [name for name in face.__all__ if getattr(face, name, None) is None]
        assert missing == [], sub


_WRITER = re.compile(r"(write|record|fail|delete|clean|set|mark|charge|store|save|put|remove"
                     r"|update|insert)(_|$)")


def _imported_names(path: Path) -> set[str]:
    """Names ``path`` imports from the layers under reports (its own files write reports)."""
    return {alias.name for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
            and node.module.split(".")[0] in ALLOWED["reports"] for alias in node.names}


def test_reports_import_no_writer() -> None:
    """Reports read what the core stored; a name like ``write_stop`` or ``fail_stale_trials``
    imported into reports/ is a write from a report (the behaviour itself is tested on a
    database file in tests/advisor/sweep/test_sweep_report_readonly.py)."""
    bad = [f"{path.relative_to(ROOT)} imports {name}"
           for path in sorted((ROOT / "reports").rglob("*.py"))
           for name in _imported_names(path) if _WRITER.match(name)]
    assert bad == []


def test_writer_check_catches_a_writer(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from advisor.sweep.state import Market, read_settings, write_stop\n")
    assert {n for n in _imported_names(module) if _WRITER.match(n)} == {"write_stop"}


def test_cli_and_reports_import_the_sweep_face_only() -> None:
    """cli/ and reports/ import ``advisor.sweep`` (its ``__init__``), never a module inside."""
    bad = [f"{path.relative_to(ROOT)} imports {module}"
           for package in ("cli", "reports") for path in sorted((ROOT / package).rglob("*.py"))
           for module in _advisor_imports(path) if module.startswith("advisor.sweep.")]
    assert bad == []


def test_reports_and_cli_import_no_optuna() -> None:
    """Reports and commands render the sweep's read model (``advisor.sweep.SweepStatus``), not
    a study: Optuna objects stay inside ``advisor.sweep`` (shared/DESIGN.md)."""
    bad = [str(path.relative_to(ROOT)) for package in ("reports", "cli")
           for path in sorted((ROOT / package).rglob("*.py"))
           if "optuna" in _imported_top_levels(path)]
    assert bad == []


def test_the_sweep_face_exports_what_it_names() -> None:
    import importlib

    face = importlib.import_module("advisor.sweep")
    missing = [name for name in face.__all__ if getattr(face, name, None) is None]
    assert missing == []


def _probes_imports(path: Path) -> set[str]:
    """``probes`` and ``probes.<x>...`` modules that ``path`` imports, as dotted names, at any
    depth (type-checking imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names
                         if alias.name == "probes" or alias.name.startswith("probes."))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "probes":
            found.add(node.module)
    return found


def test_other_packages_use_the_face_of_probes() -> None:
    """advisor/, reports/, cli/ and pricing/ import ``probes`` (its ``__init__``, the public
    names), never a module inside it such as ``probes.types`` or ``probes.launchers.quote``."""
    bad = [f"{path.relative_to(ROOT)} imports {module}"
           for package in ("advisor", "reports", "cli", "pricing")
           for path in sorted((ROOT / package).rglob("*.py"))
           for module in _probes_imports(path) if module != "probes"]
    assert bad == []


def test_probes_face_check_catches_an_inside_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from probes import ProbeStore\n\ndef f():\n"
                      "    from probes.launchers.quote import quote_probe\n    import probes.urls\n")
    assert _probes_imports(module) == {"probes", "probes.launchers.quote", "probes.urls"}


@pytest.mark.parametrize("package", ["probes", "pricing"])
def test_a_lazy_face_exports_what_it_names(package: str) -> None:
    import importlib

    face = importlib.import_module(package)
    missing = [name for name in face.__all__ if getattr(face, name, None) is None]
    assert missing == []
    assert sorted(face.__all__) == sorted(set(face.__all__))


def test_importing_the_probes_face_loads_no_torch_or_cloud_sdk() -> None:
    import subprocess
    import sys

    code = ("import sys, probes\nheavy = [m for m in ('torch', 'boto3', 'botocore', "
            "'google.cloud') if m in sys.modules]\nprint(','.join(heavy))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip() == ""


def test_importing_the_pricing_face_loads_no_numpy_or_catalog_code() -> None:
    """Every command imports ``pricing`` (its errors are user errors); only a command that
    reads offers pays for numpy and the catalog code."""
    import subprocess
    import sys

    code = ("import sys, pricing\nheavy = [m for m in ('numpy', 'pricing.catalog', "
            "'pricing.offer_table', 'pricing.spot') if m in sys.modules]\nprint(','.join(heavy))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip() == ""
