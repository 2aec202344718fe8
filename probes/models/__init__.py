"""Built-in reference models in plain torch: ``resnet50``, ``bert``, ``gpt2`` and ``mlp``.

``BUILTIN`` maps a model name to a builder that takes the model's options as keyword
arguments and returns a ``BuiltWorkload`` (model, batch maker, loss). Built-ins have no input
pipeline (``make_loader`` is None): a probe of one times the step only and makes no claim
about loading data. Builders import torch only when called, so importing this package stays
cheap. Unknown or bad options
raise ``ProbeError`` naming the option and the allowed ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from probes.errors import ProbeError

if TYPE_CHECKING:
    from probes.workload import BuiltWorkload

__all__ = ["BUILTIN", "check_options"]

Builder = Callable[..., "BuiltWorkload"]


def check_options(
    model: str,
    options: Mapping[str, Any],
    defaults: Mapping[str, Any],
    *,
    choices: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[str, Any]:
    """Merge ``options`` over ``defaults``, rejecting unknown names and badly typed values.

    An option whose default is an int must be a positive whole number, a float a number in
    [0, 1), a str one of ``choices[name]``. Raises ProbeError naming the option.
    """
    allowed = ", ".join(sorted(defaults))
    merged = dict(defaults)
    for name, value in options.items():
        if name not in defaults:
            raise ProbeError(f"model option {name!r} is not known for {model}; "
                             f"allowed options: {allowed}")
        default = defaults[name]
        if isinstance(default, bool):
            ok = isinstance(value, bool)
            want = "true or false"
        elif isinstance(default, int):
            ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
            want = "a whole number greater than 0"
        elif isinstance(default, float):
            ok = (isinstance(value, int | float) and not isinstance(value, bool)
                  and 0 <= value < 1)
            want = "a number in [0, 1)"
        else:
            allowed_values = (choices or {}).get(name, ())
            ok = isinstance(value, str) and value in allowed_values
            want = "one of " + ", ".join(allowed_values)
        if not ok:
            raise ProbeError(f"model option {name!r} of {model} must be {want}, got {value!r}")
        merged[name] = value
    return merged


def _lazy(module: str, summary: str) -> Builder:
    def build(**options: Any) -> BuiltWorkload:
        built: BuiltWorkload = importlib.import_module(f"probes.models.{module}").build(**options)
        return built

    build.__doc__ = summary
    build.__name__ = f"build_{module}"
    return build


BUILTIN: dict[str, Builder] = {
    "bert": _lazy("bert", "BERT-base-like encoder (masked-LM or classification head)."),
    "gpt2": _lazy("gpt2", "GPT-2-small-like causal decoder with tied embeddings."),
    "mlp": _lazy("mlp", "Multi-layer perceptron classifier on flat inputs."),
    "resnet50": _lazy("resnet", "ResNet v1.5 image classifier (depth 18/34/50/101/152)."),
}
