"""pricing.billing: each cloud's billing rule, and the one home of seconds x price -> dollars."""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from pricing import (
    BILLING_RULES,
    Cloud,
    PricingError,
    billed_usd,
    billing_rule,
    samples_per_usd,
    seconds_for_usd,
    usd,
)

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGES = ("pricing", "probes", "advisor", "reports", "cli")
MONEY_HOME = Path("pricing/billing.py")


@pytest.mark.parametrize(("cloud", "run_s", "billed_s"), [
    (Cloud.AWS, 0.0, 60.0),      # a launched instance: the 60 s minimum
    (Cloud.AWS, 59.9, 60.0),     # under the minimum
    (Cloud.AWS, 61.2, 62.0),     # per second above it, rounded up
    (Cloud.AWS, 3600.0, 3600.0),  # a whole hour is an hour
    (Cloud.GCP, 10.0, 60.0),     # one-minute minimum
    (Cloud.GCP, 90.5, 91.0),     # per second above it
    (Cloud.AZURE, 60.0, 300.0),  # 300 s minimum per start
    (Cloud.AZURE, 301.5, 302.0),  # per second above it
])
def test_each_cloud_bills_its_minimum_then_per_second(cloud: Cloud, run_s: float,
                                                      billed_s: float) -> None:
    assert billing_rule(cloud).billed_s(run_s) == billed_s


def test_every_cloud_has_a_rule_with_its_source() -> None:
    assert set(BILLING_RULES) == set(Cloud)
    assert all(len(rule.source) > 40 for rule in BILLING_RULES.values())
    assert billing_rule("aws").text() == "per second, 60 s minimum"
    assert billing_rule(Cloud.AZURE).text() == "per second, 300 s minimum"


def test_an_unknown_cloud_has_no_rule() -> None:
    with pytest.raises(PricingError, match=r"no billing rule for cloud 'oci' \(known: aws, gcp, azure\)"):
        billing_rule("oci")


def test_billed_usd_applies_the_rule_and_usd_does_not() -> None:
    assert billed_usd(Cloud.AWS, 30.0, 3.6) == pytest.approx(0.06)    # 60 s billed
    assert billed_usd("azure", 30.0, 3.6) == pytest.approx(0.30)      # 300 s billed
    assert billed_usd(Cloud.GCP, 120.0, 3.6) == pytest.approx(0.12)   # above the minimum
    assert usd(30.0, 3.6) == pytest.approx(0.03)                      # pro-rata


def test_usd_splits_an_instance_among_its_users() -> None:
    assert usd(1800.0, 2.0) == 1.0
    assert usd(1800.0, 2.0, share=4) == 0.25
    assert usd(0.0, 2.0) == 0.0


@pytest.mark.parametrize(("seconds", "price", "share"), [
    (-1.0, 1.0, 1),  # a negative duration
    (1.0, -0.5, 1),  # a negative price
    (1.0, 1.0, 0),   # nobody to share the instance
])
def test_usd_refuses_bad_inputs(seconds: float, price: float, share: int) -> None:
    with pytest.raises(ValueError, match="bad cost inputs"):
        usd(seconds, price, share)


def test_samples_per_usd_and_seconds_for_usd() -> None:
    assert samples_per_usd(100.0, 3.6) == pytest.approx(100_000.0)
    assert samples_per_usd(100.0, 0.0) == math.inf  # free: a local accelerator
    assert seconds_for_usd(1.0, 3.6) == pytest.approx(1000.0)
    assert seconds_for_usd(1.0, 0.0) == math.inf
    assert usd(seconds_for_usd(2.5, 1.7), 1.7) == pytest.approx(2.5)


# --- the one home of money -------------------------------------------------------------

_SECONDS_PER = {3600, 60}
_DURATION_WORDS = ("hour", "second", "minute")
_DURATION_SUFFIXES = ("_h", "_s")


def _name(node: ast.AST) -> str:
    """What an operand is called: a name, an attribute, what a call or subscript reads
    (``quote(price_usd_per_hour=0).billed_s`` is ``billed_s``, not a price)."""
    if isinstance(node, ast.Name):
        return node.id.lower()
    if isinstance(node, ast.Attribute):
        return node.attr.lower()
    if isinstance(node, ast.Call):
        return _name(node.func)
    if isinstance(node, ast.Subscript):
        key = node.slice
        return key.value.lower() if isinstance(key, ast.Constant) and isinstance(key.value, str) \
            else _name(node.value)
    return ""


def _is_price(node: ast.AST) -> bool:
    return "price" in _name(node)


def _is_duration(node: ast.AST) -> bool:
    name = _name(node)
    return "price" not in name and (any(word in name for word in _DURATION_WORDS)
                                    or name.endswith(_DURATION_SUFFIXES))


def _leaves(node: ast.AST) -> Iterator[ast.AST]:
    """The operands of an arithmetic expression: whatever is not itself arithmetic."""
    if isinstance(node, ast.BinOp):
        yield from _leaves(node.left)
        yield from _leaves(node.right)
    elif isinstance(node, ast.UnaryOp):
        yield from _leaves(node.operand)
    else:
        yield node


def _constant(node: ast.AST, values: set[int]) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, int | float)
            and not isinstance(node.value, bool) and node.value in values)


def _price_formula(root: ast.BinOp) -> bool:
    """An arithmetic expression that turns a duration and an hourly price into dollars (or
    throughput into samples per dollar): a price with ``* 3600``, ``/ 3600`` or ``/ 60`` in
    it, or a price times a duration."""
    leaves = list(_leaves(root))
    if not any(_is_price(leaf) for leaf in leaves):
        return False
    for node in ast.walk(root):
        if not isinstance(node, ast.BinOp):
            continue
        if isinstance(node.op, ast.Mult | ast.Div) and (
                _constant(node.right, {3600}) or _constant(node.left, {3600})):
            return True
        if isinstance(node.op, ast.Div) and _constant(node.right, {60}):
            return True
        if isinstance(node.op, ast.Mult) and (
                (_is_price(node.left) and _is_duration(node.right))
                or (_is_duration(node.left) and _is_price(node.right))):
            return True
    return False


def price_formulas(path: Path) -> Iterator[int]:
    """Lines of ``path`` that compute money from a price outside pricing.billing: a price
    formula, or a price keyword given 3600 (a price of one dollar per second)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    inner = {id(child) for node in ast.walk(tree) if isinstance(node, ast.BinOp | ast.UnaryOp)
             for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        formula = isinstance(node, ast.BinOp) and id(node) not in inner and _price_formula(node)
        per_second = (isinstance(node, ast.keyword) and "price" in (node.arg or "")
                      and _constant(node.value, _SECONDS_PER))
        if formula or per_second:
            yield getattr(node, "lineno", 0)


def _product_files() -> Iterator[Path]:
    for package in PRODUCT_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.relative_to(ROOT) != MONEY_HOME:
                yield path


def test_the_finder_sees_every_shape_of_price_formula(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("\n".join([
        "a = seconds / 3600 * price_usd_per_hour",            # 1: seconds x price
        "b = sps * 3600.0 / offer.price_usd_per_hour",         # 2: samples per dollar
        "c = price * minutes / 60",                            # 3: minutes x price
        "d = run_hours * price",                               # 4: hours x price
        "e = usd(hours * 3600, price)",                        # 5: time conversion, billing's call
        "f = cost_of(t, price_usd_per_hour=3600.0)",           # 6: a price of $1/s = seconds
        "g = spec.hours * 3600",                               # 7: no price: time
        "h = price_usd_per_hour / accelerator_count",          # 8: a price per device, no duration
        "i = quote(k, price_usd_per_hour=0.0).billed_s / 60",  # 9: a quote's minutes: time
        "j = row['price_usd_per_hour'] * row['run_hours']",    # 10: hours x price, from a row
        "k = hours_at(sps, 0.1) * price",                      # 11: a duration's function x price
        "m = offer.price_usd_per_hour * offer.accelerator_count",  # 12: not a duration
    ]))
    assert sorted(price_formulas(module)) == [1, 2, 3, 4, 6, 10, 11]


def test_money_is_computed_only_in_pricing_billing() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: "
             f"{path.read_text(encoding='utf-8').splitlines()[line - 1].strip()}"
             for path in _product_files() for line in sorted(set(price_formulas(path)))]
    assert not found, ("price formulas outside pricing/billing.py; use pricing.billing "
                       "(usd, billed_usd, samples_per_usd, seconds_for_usd):\n" + "\n".join(found))
