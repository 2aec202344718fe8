"""Built-in reference models in plain torch: ``resnet50``, ``bert``, ``gpt2`` and ``mlp``.

``BUILTIN`` maps a model name to a builder that takes the model's options as keyword
arguments and returns a ``BuiltWorkload`` (model, batch maker, loss). Built-ins have no input
pipeline (``make_loader`` is None): a probe of one times the step only and makes no claim
about loading data. Builders import torch only when called, so importing this package stays
cheap. Unknown or bad options (beyond the bounds in ``OPTIONS``)
raise ``ModelOptionError`` (a ``ProbeError``) naming the option and the allowed ones.
"""

from __future__ import annotations

import difflib
import importlib
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from probes.errors import ProbeError

if TYPE_CHECKING:
    from probes.built import BuiltWorkload

__all__ = ["BUILTIN", "BUILTIN_MODELS", "OPTIONS", "ModelOptionError", "ModelOptions",
           "check_builtin_options", "check_options"]

Builder = Callable[..., "BuiltWorkload"]

_shown = reprlib.Repr()
_shown.maxlevel, _shown.maxlist, _shown.maxdict, _shown.maxstring, _shown.maxlong = 2, 4, 4, 60, 40


class ModelOptionError(ProbeError, ValueError):
    """A built-in model's option is unknown or out of range; ``option`` names it ("" when
    unknown: ``problem`` then names it) and ``problem`` says what it must be."""

    def __init__(self, model: str, option: str, problem: str, *, message: str = "") -> None:
        self.model, self.option, self.problem = model, option, problem
        super().__init__(message or f"model option {option!r} of {model} {problem}")


@dataclass(frozen=True)
class ModelOptions:
    """The options of one built-in model: defaults, and the bounds hardware could ever mean.

    ``maximum`` bounds whole-number options (e.g. an image side of 4096 pixels; 100000 would
    need terabytes per sample), ``minimum`` raises the floor above 1, ``choices`` lists the
    allowed values of an option (strings, or whole numbers such as a ResNet depth).
    """

    defaults: Mapping[str, Any]
    maximum: Mapping[str, int] = field(default_factory=dict)
    minimum: Mapping[str, int] = field(default_factory=dict)
    choices: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)


_CLASSES = 1_000_000  # ImageNet-21k has 21,841; face-ID heads reach about a million
_VOCAB = 1_048_576  # the largest public tokenizers have about 256k entries
OPTIONS: dict[str, ModelOptions] = {
    "resnet50": ModelOptions(
        defaults={"depth": 50, "width": 64, "image_size": 224, "num_classes": 1000},
        maximum={"width": 1024, "image_size": 4096, "num_classes": _CLASSES},
        minimum={"image_size": 32},
        choices={"depth": (18, 34, 50, 101, 152)},
    ),
    "bert": ModelOptions(
        defaults={"hidden": 768, "layers": 12, "heads": 12, "ffn": 3072, "seq_len": 128,
                  "vocab": 30522, "dropout": 0.1, "attention_dropout": 0.0, "task": "mlm",
                  "num_labels": 2},
        maximum={"hidden": 131072, "layers": 512, "heads": 512, "ffn": 524288,
                 "seq_len": 131072, "vocab": _VOCAB, "num_labels": _CLASSES},
        choices={"task": ("mlm", "classification")},
    ),
    "gpt2": ModelOptions(
        defaults={"hidden": 768, "layers": 12, "heads": 12, "seq_len": 1024, "vocab": 50257,
                  "dropout": 0.1, "attention_dropout": 0.0},
        maximum={"hidden": 131072, "layers": 512, "heads": 512, "seq_len": 131072,
                 "vocab": _VOCAB},
    ),
    "mlp": ModelOptions(
        defaults={"input_dim": 784, "hidden": 1024, "layers": 3, "num_classes": 10},
        maximum={"input_dim": 16_777_216, "hidden": 1_048_576, "layers": 1024,
                 "num_classes": _CLASSES},
    ),
}


# The names a model.yaml's ``builtin`` may take, in the order messages list them.
BUILTIN_MODELS: tuple[str, ...] = tuple(OPTIONS)


def _problem(value: Any, default: Any, low: int, high: int | None,
             allowed: tuple[Any, ...]) -> str | None:
    """What is wrong with ``value`` for an option whose default is ``default`` (None: fine)."""
    if allowed:
        if value in allowed and type(value) is type(allowed[0]):
            return None
        return "must be one of " + ", ".join(map(str, allowed))
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            top = f" to {high:,}" if high is not None else ""
            return f"must be a whole number from {low:,}{top}"
        if value < low:
            return "must be a whole number greater than 0" if low == 1 else (
                f"must be at least {low:,}")
        return None if high is None or value <= high else f"must be at most {high:,}"
    if isinstance(default, float):
        ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1
        return None if ok else "must be a number in [0, 1)"
    return "must be one of " + ", ".join(allowed)


def check_options(
    model: str,
    options: Mapping[str, Any],
    defaults: Mapping[str, Any],
    *,
    choices: Mapping[str, tuple[Any, ...]] | None = None,
    maximum: Mapping[str, int] | None = None,
    minimum: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Merge ``options`` over ``defaults``, rejecting unknown names and bad values.

    An option whose default is an int must be a whole number from ``minimum[name]`` (default
    1) to ``maximum[name]`` (when given), a float a number in [0, 1), a str (or an option
    with ``choices``) one of ``choices[name]``. Raises ModelOptionError naming the option.
    """
    allowed = ", ".join(sorted(defaults))
    merged = dict(defaults)
    for name, value in options.items():
        if name not in defaults:
            shown = _shown.repr(name)
            close = (difflib.get_close_matches(name, list(defaults), n=1, cutoff=0.75)
                     if isinstance(name, str) else [])
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ModelOptionError(model, "", f"{shown} is not known for {model}; {hint}allowed "
                                   f"options: {allowed}", message=f"model option {shown} is "
                                   f"not known for {model}; {hint}allowed options: {allowed}")
        problem = _problem(value, defaults[name], (minimum or {}).get(name, 1),
                           (maximum or {}).get(name), (choices or {}).get(name, ()))
        if problem is not None:
            got = f"got {_shown.repr(value)}"
            raise ModelOptionError(model, name, f"{problem} for {model}, {got}",
                                   message=f"model option {name!r} of {model} {problem}, {got}")
        merged[name] = value
    return merged


def check_builtin_options(model: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``check_options`` with the table of built-in ``model`` (a key of ``OPTIONS``).

    Imports no torch, so a spec can be checked before anything is built.
    """
    table = OPTIONS[model]
    return check_options(model, options, table.defaults, choices=table.choices,
                         maximum=table.maximum, minimum=table.minimum)


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
