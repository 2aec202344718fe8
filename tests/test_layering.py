"""The package layering of shared/DESIGN.md, checked on every import statement."""

from __future__ import annotations

import ast
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
