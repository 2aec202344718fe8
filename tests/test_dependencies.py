"""pyproject's dependencies tell the truth: what the five packages import at run time is a
runtime dependency, what only a feature needs is an extra imported lazily (inside a function,
or in an adapter module nothing imports at import time), nothing is declared that nothing
imports, and the tests import only what the dev extra and the runtime install."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("advisor", "pricing", "probes", "reports", "cli")

# Import name (a module, or a module's prefix) -> the distribution that installs it, where
# the two differ. Longest prefix wins; any other name is its own distribution.
DISTRIBUTION = {
    "yaml": "pyyaml",
    "sqlalchemy": "sqlalchemy",
    "jinja2": "jinja2",
    "sklearn": "scikit-learn",
    "pynvml": "nvidia-ml-py",
    "psycopg2": "psycopg2-binary",
    "google.api_core": "google-api-core",
    "google.auth": "google-auth",
    "google.type": "googleapis-common-protos",
    "google.cloud.billing_v1": "google-cloud-billing",
    "google.cloud.compute_v1": "google-cloud-compute",
    "google.cloud.storage": "google-cloud-storage",
    "google.cloud.tpu_v2": "google-cloud-tpu",
}

# Runtimes that come with an accelerator host's image (TPU, Trainium, Gaudi), never installed
# by pip from our extras; imported only after the harness has seen the device.
HOST_RUNTIMES = {
    "torch_xla": "the TPU host's PyTorch/XLA",
    "torch_neuronx": "the Neuron SDK of a Trainium host",
    "habana_frameworks": "the Gaudi host's SynapseAI PyTorch bridge",
}

# Declared, and needed, though no line of ours imports them.
NOT_IMPORTED = {
    "cmaes": "optuna's CmaEsSampler imports it (advisor/sweep/sampling.py); optuna does not "
             "depend on it",
    "psycopg": "SQLAlchemy's driver for postgresql:// (probes/urls.py picks it by find_spec)",
    "psycopg2-binary": "SQLAlchemy's driver for postgresql:// (probes/urls.py prefers it)",
}

# Dev tools that are not imported by name: runners, checkers and stubs.
DEV_TOOLS = {"pytest", "pytest-xdist", "ruff", "mypy", "pandas-stubs", "types-pyyaml"}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    assert match, requirement
    return _normalize(match.group(0))


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {_requirement_name(r) for r in project["dependencies"]}
    extras = {name: {_requirement_name(r) for r in reqs}
              for name, reqs in project["optional-dependencies"].items()}
    return runtime, extras


def distribution(module: str) -> str | None:
    """The distribution that installs ``module`` (None: the standard library or ours)."""
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top in PACKAGES or top == "__future__":
        return None
    for prefix in sorted(DISTRIBUTION, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return DISTRIBUTION[prefix]
    return _normalize(top)


@dataclass(frozen=True)
class Import:
    """One import in ``path``: ``lazy`` when it runs only once a function is called (or only
    for the type checker)."""

    path: Path
    line: int
    module: str
    lazy: bool


_DYNAMIC = {"import_module", "find_spec", "_has_module"}


class _Imports(ast.NodeVisitor):
    def __init__(self, path: Path) -> None:
        self.path = path
        self.found: list[Import] = []
        self._lazy = 0

    def _add(self, node: ast.AST, module: str) -> None:
        self.found.append(Import(self.path, getattr(node, "lineno", 0), module, self._lazy > 0))

    def _deferred(self, node: ast.AST) -> None:
        self._lazy += 1
        self.generic_visit(node)
        self._lazy -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _deferred

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            self._deferred(node)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:  # relative: resolve against the module's package
            package = _module_name(self.path).split(".")
            package = package[:len(package) - node.level + (self.path.name == "__init__.py")]
            base = ".".join([*package, base] if base else package)
        for alias in node.names:
            self._add(node, f"{base}.{alias.name}" if alias.name != "*" else base)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in _DYNAMIC and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            self._add(node, node.args[0].value)
        self.generic_visit(node)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[Import]:
    """Every import of ``path``, static or ``importlib.import_module("literal")``."""
    visitor = _Imports(path)
    visitor.visit(ast.parse(path.read_text(), filename=str(path)))
    return visitor.found


def _product_files() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


@functools.cache
def _graph() -> dict[str, list[Import]]:
    return {_module_name(p): imports(p) for p in _product_files()}


def _eager_modules(graph: dict[str, list[Import]]) -> dict[str, str]:
    """Our modules imported as soon as any package (or the CLI's entry point) is: module ->
    the module that imports it (the root itself for the roots)."""
    known = set(graph)

    def ours(module: str) -> list[str]:
        # `from a.b import c` imports a, a.b and, when it is a module, a.b.c
        parts = module.split(".")
        return [m for m in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if m in known]

    roots = [m for m in known if (ROOT / m.replace(".", "/") / "__init__.py").exists()]
    reached = {m: m for m in [*roots, "cli.main"]}
    todo = list(reached)
    while todo:
        current = todo.pop()
        for imp in graph[current]:
            for target in ours(imp.module) if not imp.lazy else []:
                if target not in reached:
                    reached[target] = current
                    todo.append(target)
    return reached


def _problems(added: dict[str, Import] | None = None) -> list[str]:
    """What is wrong with the imports of the five packages (``added``: one more import per
    module, for the checker's own tests)."""
    runtime, extras = _declared()
    optional = {d: name for name, dists in extras.items() if name != "dev" for d in dists}
    graph = dict(_graph())
    for module, imp in (added or {}).items():
        graph[module] = [*graph[module], imp]
    eager = _eager_modules(graph)
    problems: dict[tuple[Path, int, str | None], str] = {}  # one line per statement and distribution
    for module, found in sorted(graph.items()):
        for imp in found:
            dist = distribution(imp.module)
            where = f"{imp.path.relative_to(ROOT)}:{imp.line} imports {imp.module}"
            if dist is None or dist in runtime or (imp.path, imp.line, dist) in problems:
                continue
            key = (imp.path, imp.line, dist)
            top = imp.module.split(".")[0]
            if top in HOST_RUNTIMES:
                if not imp.lazy:
                    problems[key] = f"{where} at import time ({HOST_RUNTIMES[top]})"
            elif dist in optional:
                if not imp.lazy and module in eager:
                    problems[key] = (f"{where} ({dist}, extra '{optional[dist]}') at import "
                                     f"time, and {module} is imported at import time by "
                                     f"{eager[module]}")
            elif dist in extras.get("dev", set()):
                problems[key] = f"{where}: {dist} is declared only for development"
            else:
                problems[key] = f"{where}: {dist} is not declared"
    return list(problems.values())


def test_every_import_is_declared_where_it_runs() -> None:
    assert _problems() == []


def test_every_declared_distribution_is_imported() -> None:
    runtime, extras = _declared()
    used = {distribution(imp.module) for path in _product_files() for imp in imports(path)}
    features = runtime | {d for name, dists in extras.items() if name != "dev" for d in dists}
    unused = sorted(features - used - set(NOT_IMPORTED))
    assert unused == [], "declared but imported by nothing: " + ", ".join(unused)
    stale = sorted(d for d in NOT_IMPORTED if d in used or d not in features)
    assert stale == [], "NOT_IMPORTED names a distribution that is imported or not declared"


def test_tests_import_only_declared_distributions() -> None:
    runtime, extras = _declared()
    available = runtime | {d for dists in extras.values() for d in dists}
    local = {p.stem for p in (ROOT / "tests").rglob("*.py")} | {"tests"}
    found = sorted({f"{d} ({imp.path.relative_to(ROOT)})"
                    for path in sorted((ROOT / "tests").rglob("*.py")) for imp in imports(path)
                    if (d := distribution(imp.module)) is not None
                    and imp.module.split(".")[0] not in local and d not in available
                    and imp.module.split(".")[0] not in HOST_RUNTIMES})
    assert found == []
    dev_imported = {distribution(imp.module) for path in (ROOT / "tests").rglob("*.py")
                    for imp in imports(path)}
    assert sorted(extras["dev"] - dev_imported - runtime - DEV_TOOLS
                  - {d for name, dists in extras.items() if name != "dev" for d in dists}) == []


@pytest.mark.parametrize(("module", "expected"), [
    ("os.path", None),                                     # the standard library
    ("reports.render", None),                              # ours
    ("yaml", "pyyaml"),                                    # import name differs
    ("google.cloud.storage", "google-cloud-storage"),      # a namespace package's part
    ("google.api_core.exceptions", "google-api-core"),     # longest prefix wins
    ("numpy.linalg", "numpy"),                             # default: the top-level name
])
def test_distribution_of_an_import(module: str, expected: str | None) -> None:
    assert distribution(module) == expected


@pytest.mark.parametrize("module", sorted(DISTRIBUTION))
def test_distribution_map_matches_what_is_installed(module: str) -> None:
    try:
        files = importlib.metadata.distribution(DISTRIBUTION[module]).files or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{DISTRIBUTION[module]} is not installed here")
    folder = module.replace(".", "/")
    assert any(str(f).startswith((folder + "/", folder + ".")) for f in files)


def test_checker_catches_an_eager_extra_and_a_dev_only_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import boto3\nimport scipy.stats\n\ndef f():\n    import torch\n"
                      "    return importlib.import_module('pynvml')\n")
    visitor = _Imports(module)
    visitor.visit(ast.parse(module.read_text()))
    found = {(i.module, i.lazy) for i in visitor.found}
    assert found == {("boto3", False), ("scipy.stats", False), ("torch", True), ("pynvml", True)}


@pytest.mark.parametrize(("module", "imported", "lazy", "complaint"), [
    # an adapter that its package's __init__ imports at import time: its SDK must wait
    ("pricing.sources.aws", "boto3", False, "at import time, and pricing.sources.aws is "
                                            "imported at import time by pricing.sources"),
    ("pricing.sources.aws", "boto3", True, None),              # inside a function: fine
    ("probes.launchers.aws", "boto3", False, None),            # an adapter loaded lazily
    ("advisor.storage", "selenium", True, "declared only for development"),
    ("advisor.storage", "requests", True, "requests is not declared"),
    ("cli.main", "torch_xla", False, "at import time (the TPU host"),
    ("advisor.storage", "scipy.stats", False, None),           # a runtime dependency
])
def test_checker_catches(module: str, imported: str, lazy: bool, complaint: str | None) -> None:
    path = ROOT / (module.replace(".", "/") + ".py")
    found = _problems({module: Import(path, 9999, imported, lazy)})
    mine = [p for p in found if ":9999 " in p]
    assert (mine == []) if complaint is None else (len(mine) == 1 and complaint in mine[0]), mine
