"""What a probe (or the profiler) trains: a plain recipe, and the torch objects built from it.

The recipe is plain data so it can travel to a remote instance as JSON. ``build_workload``
imports torch lazily.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pricing.records import Record
from probes.built import BuiltWorkload
from probes.errors import ProbeError
from probes.models import BUILTIN
from probes.vocabulary import Precision

__all__ = ["BuiltWorkload", "WorkloadRecipe", "build_workload", "first_line", "import_entrypoint"]


@dataclass(frozen=True)
class WorkloadRecipe(Record):
    """How to build the model and its batches.

    Exactly one of ``builtin`` (a name in ``probes.models``) and ``entrypoint``
    (``"package.module:function"``, importable from ``base_dir``) is set. ``batch_size`` is
    per device; ``precision`` is fp32, tf32, bf16 or fp16 (its text is read as the enum).
    It travels inside a ``ProbeRequest`` as JSON (``pricing.records.Record``).
    """

    _error = ProbeError
    _what = "recipe"

    builtin: str | None
    entrypoint: str | None
    options: Mapping[str, Any] = field(default_factory=dict)
    batch_size: int = 1
    precision: Precision = Precision.FP32
    base_dir: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.precision, Precision):
            object.__setattr__(self, "precision", _precision(self.precision))


def _precision(value: str) -> Precision:
    """``value`` (text from JSON) as a Precision; ProbeError naming the field otherwise."""
    try:
        return Precision(value)
    except ValueError:
        raise ProbeError(f"recipe: precision {value!r} is not one of "
                         f"{', '.join(Precision)}") from None


def build_workload(recipe: WorkloadRecipe) -> BuiltWorkload:
    """Build the torch objects of ``recipe`` on the current default device.

    Built-ins come from ``probes.models.BUILTIN`` (without a loader). An entrypoint
    ``"package.module:function"`` is imported with ``recipe.base_dir`` on ``sys.path`` and
    called with the options as keyword arguments; it returns ``(model, make_batch, loss_fn)``,
    ``(model, make_batch, loss_fn, make_loader)`` (``make_loader`` a callable or None) or a
    ``BuiltWorkload``. Any failure becomes a one-line ProbeError saying what to fix. Wrap the
    call in ``with torch.device("meta"):`` to build without allocating memory; an entrypoint
    should create its loader (and any files it reads) only when ``make_loader`` is called.
    """
    if (recipe.builtin is None) == (recipe.entrypoint is None):
        raise ProbeError("a workload recipe needs exactly one of builtin and entrypoint")
    if recipe.builtin is not None:
        builder = BUILTIN.get(recipe.builtin)
        if builder is None:
            raise ProbeError(f"unknown built-in model {recipe.builtin!r}; built-ins are "
                             f"{', '.join(sorted(BUILTIN))}")
        return builder(**dict(recipe.options))
    assert recipe.entrypoint is not None
    return _call_entrypoint(recipe.entrypoint, recipe.options, base_dir=recipe.base_dir)


@contextmanager
def _on_path(base_dir: str | None) -> Iterator[None]:
    if base_dir is None or base_dir in sys.path:
        yield
        return
    sys.path.insert(0, base_dir)
    try:
        yield
    finally:
        if base_dir in sys.path:
            sys.path.remove(base_dir)


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message``: how an error of user code is shown in one line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def import_entrypoint(entrypoint: str, *, where: str = "") -> Callable[..., Any]:
    """The function ``package.module:function`` names, imported from ``sys.path`` as it is;
    any failure (a syntax error in user code too) is one ProbeError line, ``where`` appended
    to an import failure to say where the module was looked for."""
    module_name, _, function_name = entrypoint.partition(":")
    if not module_name or not function_name:
        raise ProbeError(f"entrypoint must look like 'package.module:function', "
                         f"got {entrypoint!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProbeError(f"entrypoint {entrypoint!r}: cannot import {module_name!r}"
                         f"{where}: {first_line(exc)}") from exc
    except SystemExit as exc:  # sys.exit() at module level must not end advisor
        raise ProbeError(f"entrypoint {entrypoint!r}: importing {module_name!r} called "
                         f"sys.exit({exc.code!r}); guard script code with "
                         "if __name__ == '__main__':") from exc
    except Exception as exc:  # noqa: BLE001 - user code may raise anything on import
        raise ProbeError(f"entrypoint {entrypoint!r}: importing {module_name!r} failed: "
                         f"{first_line(exc)}") from exc
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ProbeError(f"entrypoint {entrypoint!r}: module {module_name!r} has no "
                         f"function {function_name!r}")
    return function  # type: ignore[no-any-return]


def _call_entrypoint(entrypoint: str, options: Mapping[str, Any], *,
                     base_dir: str | None) -> BuiltWorkload:
    where = f" (searched {base_dir} and sys.path)" if base_dir else ""
    with _on_path(base_dir):
        function = import_entrypoint(entrypoint, where=where)
        try:
            result = function(**dict(options))
        except SystemExit as exc:
            raise ProbeError(f"entrypoint {entrypoint!r} called sys.exit({exc.code!r}) when "
                             "called with its options; return the model instead") from exc
        except Exception as exc:  # noqa: BLE001 - user code may raise anything
            raise ProbeError(f"entrypoint {entrypoint!r} failed when called with options "
                             f"{dict(options)!r}: {first_line(exc)}") from exc
    return _as_built(entrypoint, result)


_SHAPES = ("(model, make_batch, loss_fn), (model, make_batch, loss_fn, make_loader) or a "
           "BuiltWorkload")
_PARTS = ("model", "make_batch", "loss_fn")


def _as_built(entrypoint: str, result: object) -> BuiltWorkload:
    if isinstance(result, BuiltWorkload):
        built = result
    elif isinstance(result, tuple) and len(result) in (3, 4):
        for name, part in zip(_PARTS, result, strict=False):
            if not callable(part):
                raise ProbeError(f"entrypoint {entrypoint!r} returned a {len(result)}-tuple "
                                 f"whose {name} is {type(part).__name__}, not callable; it must "
                                 f"return {_SHAPES}")
        built = BuiltWorkload(model=result[0], make_batch=result[1], loss_fn=result[2],
                              make_loader=result[3] if len(result) == 4 else None)
    else:
        shape = (f"a {len(result)}-tuple" if isinstance(result, tuple)
                 else type(result).__name__)
        raise ProbeError(f"entrypoint {entrypoint!r} must return {_SHAPES}, got {shape}")
    if built.make_loader is not None and not callable(built.make_loader):
        raise ProbeError(f"entrypoint {entrypoint!r} returned a make_loader that is a "
                         f"{type(built.make_loader).__name__}, not callable; return a function of "
                         "batch_size that returns an iterable of CPU batches, e.g. "
                         "lambda batch_size: DataLoader(dataset, batch_size=batch_size), or None")
    return built
