"""A catalog's offers held as columns: what ranking 100,000 offers reads without building them.

``OfferTable`` is a ``Sequence[InstanceOffer]``: indexing or iterating it builds the offers
(the same frozen records as ever), so code that walks a catalog is unchanged. The ranking reads
the columns instead: numbers as numpy arrays, text as ``Labels`` (each distinct value once,
and an integer code per row), so filtering, grouping and ordering are array operations and
only the offers a user sees are ever built. A refreshed snapshot keeps this form on disk
(``pricing.catalog.read_snapshot_offers``), so a warm start reads codes, not rows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, TypeVar, overload

import numpy as np

from pricing.types import Cloud, InstanceOffer, Market

__all__ = ["Labels", "LazyRows", "OfferTable", "day", "object_array"]

T = TypeVar("T")

_CLOUDS = {c.value: c for c in Cloud}
_MARKETS = {m.value: m for m in Market}


@functools.lru_cache(maxsize=1024)
def day(text: str) -> date:
    """A date from ISO text, remembered: a catalog repeats a few capture dates on many rows."""
    return date.fromisoformat(text)


@dataclass(frozen=True, eq=False)
class Labels:
    """A text column: ``values`` (each distinct text once) and ``codes`` (one per row, an index
    into ``values``)."""

    values: tuple[str, ...]
    codes: np.ndarray

    @classmethod
    def of(cls, texts: Iterable[str]) -> Labels:
        """The column holding ``texts`` in order."""
        seen: dict[str, int] = {}
        codes = [seen.setdefault(t, len(seen)) for t in texts]
        return cls(tuple(seen), np.asarray(codes, dtype=np.int32))

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, row: int) -> str:
        text: str = self.values[self.codes[row]]
        return text

    def present(self) -> list[str]:
        """The texts some row holds, in the order of ``values`` (counted with ``bincount``, not
        ``np.unique``, whose plain form imports ``numpy.ma`` at run time)."""
        held = np.flatnonzero(np.bincount(self.codes, minlength=len(self.values)))
        return [self.values[c] for c in held.tolist()]

    def take(self, rows: np.ndarray) -> Labels:
        """The rows ``rows`` (indices or a boolean mask), the same values."""
        return Labels(self.values, self.codes[rows])

    def isin(self, wanted: Iterable[str]) -> np.ndarray:
        """Per row: whether its text is one of ``wanted``."""
        wanted = set(wanted)
        per_value = np.fromiter((v in wanted for v in self.values), dtype=bool,
                                count=len(self.values))
        rows: np.ndarray = per_value[self.codes]
        return rows

    def equals(self, text: str) -> np.ndarray:
        """Per row: whether its text is ``text``."""
        return self.isin((text,))

    def order(self) -> np.ndarray:
        """Per row: the rank of its text among the column's distinct texts (sorting rows by it
        sorts them by text)."""
        ranks = np.empty(len(self.values), dtype=np.int32)
        ranks[sorted(range(len(self.values)), key=self.values.__getitem__)] = np.arange(
            len(self.values), dtype=np.int32)
        per_row: np.ndarray = ranks[self.codes]
        return per_row

    def to_list(self) -> list[str]:
        """Every row's text, in order."""
        values = self.values
        return [values[c] for c in self.codes.tolist()]

    @staticmethod
    def concat(columns: Sequence[Labels]) -> Labels:
        """The rows of ``columns`` one after another."""
        seen: dict[str, int] = {}
        parts = []
        for col in columns:
            remap = np.asarray([seen.setdefault(v, len(seen)) for v in col.values],
                               dtype=np.int32)
            parts.append(remap[col.codes] if len(col.values) else col.codes)
        return Labels(tuple(seen), np.concatenate(parts) if parts else
                      np.zeros(0, dtype=np.int32))


def object_array(values: Sequence[Any]) -> np.ndarray:
    """``values`` as a one-dimensional array of objects (records, enums: never unpacked)."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


class LazyRows(Sequence[T]):
    """``n`` rows, row ``i`` made by ``make(i)`` when read (slices are tuples). A row read by
    index is kept, so reading it again gives the same record; iterating keeps none (a writer
    streams 100,000 rows through without holding them), and uses ``iterate`` where given (the
    same rows, made faster in one pass)."""

    __slots__ = ("_iterate", "_kept", "_make", "_n")

    def __init__(self, n: int, make: Callable[[int], T],
                 iterate: Callable[[], Iterator[T]] | None = None) -> None:
        self._n = n
        self._make = make
        self._iterate = iterate
        self._kept: dict[int, T] = {}

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._n)))
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError("row index out of range")
        row = self._kept.get(index)
        if row is None:
            row = self._kept[index] = self._make(index)
        return row

    def __iter__(self) -> Iterator[T]:
        if self._iterate is not None:
            return self._iterate()
        kept = self._kept
        return (kept[i] if i in kept else self._make(i) for i in range(self._n))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._n:,} rows)"


_TEXT = ("cloud", "region", "zone", "instance_type", "accelerator", "market", "source",
         "observed_at", "flagged")
_NUMBERS = ("accelerator_count", "vcpus", "memory_gib", "accelerator_memory_gib",
            "price_usd_per_hour")


_FIELDS = ("cloud", "region", "zone", "instance_type", "accelerator", "accelerator_count", "vcpus",
           "memory_gib", "accelerator_memory_gib", "market", "price_usd_per_hour", "source",
           "observed_at", "flagged")  # InstanceOffer's fields, in its order


def _offer(cloud: str, region: str, zone: str, instance_type: str, accelerator: str,
           count: Any, vcpus: Any, memory: Any, accelerator_memory: Any, market: str,
           price: Any, source: str, observed_at: str, flagged: str) -> InstanceOffer:
    """The offer of one row's cells, as the columns hold them."""
    return InstanceOffer(
        cloud=_CLOUDS[cloud], region=region, zone=zone or None, instance_type=instance_type,
        accelerator=accelerator, accelerator_count=int(count),
        vcpus=None if vcpus != vcpus else int(vcpus),  # NaN: unknown
        memory_gib=None if memory != memory else float(memory),
        accelerator_memory_gib=float(accelerator_memory), market=_MARKETS[market],
        price_usd_per_hour=float(price), source=source, observed_at=day(observed_at),
        flagged=flagged)


class OfferTable(LazyRows[InstanceOffer]):
    """Offers as columns (see the module text); ``table[i]`` is an ``InstanceOffer``.

    Text columns are ``Labels`` (``zone`` is ``''`` where the offer has none, ``observed_at``
    ISO dates); ``accelerator_count`` is integer, the rest float, ``vcpus`` and ``memory_gib``
    NaN where unknown.
    """

    __slots__ = (*_TEXT, *_NUMBERS)

    cloud: Labels
    region: Labels
    zone: Labels
    instance_type: Labels
    accelerator: Labels
    market: Labels
    source: Labels
    observed_at: Labels
    flagged: Labels
    accelerator_count: np.ndarray
    vcpus: np.ndarray
    memory_gib: np.ndarray
    accelerator_memory_gib: np.ndarray
    price_usd_per_hour: np.ndarray

    def __init__(self, columns: dict[str, Any]) -> None:
        for name in (*_TEXT, *_NUMBERS):
            setattr(self, name, columns[name])
        super().__init__(len(self.price_usd_per_hour), self._offer_at, self._offers)

    @classmethod
    def of(cls, offers: Iterable[InstanceOffer]) -> OfferTable:
        """The table of ``offers``, in order (an ``OfferTable`` is returned as it is)."""
        if isinstance(offers, OfferTable):
            return offers
        offers = list(offers)
        nan = float("nan")
        return cls({
            "cloud": Labels.of(o.cloud.value for o in offers),
            "region": Labels.of(o.region for o in offers),
            "zone": Labels.of(o.zone or "" for o in offers),
            "instance_type": Labels.of(o.instance_type for o in offers),
            "accelerator": Labels.of(o.accelerator for o in offers),
            "market": Labels.of(o.market.value for o in offers),
            "source": Labels.of(o.source for o in offers),
            "observed_at": Labels.of(o.observed_at.isoformat() for o in offers),
            "flagged": Labels.of(o.flagged for o in offers),
            "accelerator_count": np.asarray([o.accelerator_count for o in offers],
                                            dtype=np.int64),
            "vcpus": np.asarray([nan if o.vcpus is None else o.vcpus for o in offers],
                                dtype=np.float64),
            "memory_gib": np.asarray([nan if o.memory_gib is None else o.memory_gib
                                      for o in offers], dtype=np.float64),
            "accelerator_memory_gib": np.asarray([o.accelerator_memory_gib for o in offers],
                                                 dtype=np.float64),
            "price_usd_per_hour": np.asarray([o.price_usd_per_hour for o in offers],
                                             dtype=np.float64),
        })

    @staticmethod
    def concat(tables: Sequence[OfferTable]) -> OfferTable:
        """The offers of ``tables`` one after another."""
        return OfferTable({
            **{name: Labels.concat([getattr(t, name) for t in tables]) for name in _TEXT},
            **{name: np.concatenate([getattr(t, name) for t in tables]) for name in _NUMBERS},
        })

    def take(self, rows: np.ndarray) -> OfferTable:
        """The offers at ``rows`` (indices or a boolean mask), in that order."""
        return OfferTable({
            **{name: getattr(self, name).take(rows) for name in _TEXT},
            **{name: getattr(self, name)[rows] for name in _NUMBERS},
        })

    def to_columns(self) -> dict[str, Any]:
        """Plain values (``marshal`` stores them): per text column its values and codes as
        bytes, per number column its bytes and dtype."""
        return {
            **{name: (getattr(self, name).values, getattr(self, name).codes.tobytes())
               for name in _TEXT},
            **{name: (getattr(self, name).tobytes(), getattr(self, name).dtype.str)
               for name in _NUMBERS},
        }

    @classmethod
    def from_columns(cls, data: dict[str, Any]) -> OfferTable:
        """The table ``to_columns`` described."""
        columns: dict[str, Any] = {}
        for name in _TEXT:
            values, codes = data[name]
            columns[name] = Labels(tuple(values), np.frombuffer(codes, dtype=np.int32))
        for name in _NUMBERS:
            raw, dtype = data[name]
            columns[name] = np.frombuffer(raw, dtype=np.dtype(dtype))
        if len({len(columns[name]) for name in columns}) > 1:
            raise ValueError("columns of different lengths")
        return cls(columns)

    def keys(self, rows: np.ndarray | None = None) -> list[str]:
        """``InstanceOffer.key`` of each row (of ``rows`` only, given)."""
        picked = self if rows is None else self.take(rows)
        return [f"{c}:{t}:{r}:{m}" for c, t, r, m in zip(
            picked.cloud.to_list(), picked.instance_type.to_list(), picked.region.to_list(),
            picked.market.to_list(), strict=True)]

    def order(self) -> np.ndarray:
        """Per row: its place when offers are sorted by ``InstanceOffer.sort_key`` (cloud,
        instance type, region, market)."""
        by = np.lexsort((self.market.order(), self.region.order(),
                         self.instance_type.order(), self.cloud.order()))
        places = np.empty(len(by), dtype=np.int64)
        places[by] = np.arange(len(by))
        return places

    def _offer_at(self, index: int) -> InstanceOffer:
        return _offer(*(getattr(self, name)[index] for name in _FIELDS))

    def _offers(self) -> Iterator[InstanceOffer]:
        """The offers in order, each column read once as a list (fast for the whole table)."""
        columns = [getattr(self, name) for name in _FIELDS]
        lists = [c.to_list() if isinstance(c, Labels) else c.tolist() for c in columns]
        return (_offer(*cells) for cells in zip(*lists, strict=True))

    def __repr__(self) -> str:
        return f"OfferTable({len(self):,} offers)"
