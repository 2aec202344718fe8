"""Fake Google clients (Compute instances, TPU nodes, GCS) that keep state in dicts.

They accept the same keyword calls the launchers make and raise google.api_core exceptions,
so the launchers' error translation runs for real. ``no_capacity`` zones refuse inserts with
a stockout error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from google.api_core.exceptions import NotFound, ServiceUnavailable
from google.cloud import tpu_v2


class _Done:
    def result(self, timeout: float | None = None) -> None:
        del timeout


@dataclass
class _Scoped:
    instances: list[Any] = field(default_factory=list)


class FakeInstances:
    """compute_v1.InstancesClient stand-in: insert/get/delete/aggregated_list."""

    def __init__(self, no_capacity: set[str] | None = None) -> None:
        self.instances: dict[tuple[str, str], Any] = {}
        self.no_capacity = no_capacity or set()
        self.inserted: list[tuple[str, Any]] = []

    def insert(self, *, project: str, zone: str, instance_resource: Any) -> _Done:
        del project
        self.inserted.append((zone, instance_resource))
        if zone in self.no_capacity:
            raise ServiceUnavailable(f"ZONE_RESOURCE_POOL_EXHAUSTED in {zone}")
        instance_resource.status = "RUNNING"
        self.instances[(zone, instance_resource.name)] = instance_resource
        return _Done()

    def get(self, *, project: str, zone: str, instance: str) -> Any:
        del project
        if (zone, instance) not in self.instances:
            raise NotFound(f"instance {instance}")
        return self.instances[(zone, instance)]

    def delete(self, *, project: str, zone: str, instance: str) -> _Done:
        del project
        if self.instances.pop((zone, instance), None) is None:
            raise NotFound(f"instance {instance}")
        return _Done()

    def aggregated_list(self, *, project: str, filter: str) -> Iterator[tuple[str, _Scoped]]:  # noqa: A002
        del project
        key, _, value = filter.removeprefix("labels.").partition("=")
        zones: dict[str, _Scoped] = {}
        for (zone, _), inst in self.instances.items():
            if dict(inst.labels).get(key) == value:
                zones.setdefault(f"zones/{zone}", _Scoped()).instances.append(inst)
        return iter(zones.items())

    def stop(self, zone: str, name: str) -> None:
        """What the instance's own shutdown does: it is no longer running."""
        self.instances[(zone, name)].status = "TERMINATED"


class FakeTpu:
    """tpu_v2.TpuClient stand-in: create_node/get_node/delete_node/list_nodes."""

    def __init__(self, no_capacity: set[str] | None = None) -> None:
        self.nodes: dict[str, Any] = {}
        self.no_capacity = no_capacity or set()

    def create_node(self, *, parent: str, node_id: str, node: Any) -> _Done:
        zone = parent.rsplit("/", 1)[-1]
        if zone in self.no_capacity:
            raise ServiceUnavailable(f"STOCKOUT: no v5 capacity in {zone}")
        stored = tpu_v2.Node(node)
        stored.name = f"{parent}/nodes/{node_id}"
        stored.state = tpu_v2.Node.State.READY
        self.nodes[stored.name] = stored
        return _Done()

    def get_node(self, *, name: str) -> Any:
        if name not in self.nodes:
            raise NotFound(name)
        return self.nodes[name]

    def delete_node(self, *, name: str) -> _Done:
        if self.nodes.pop(name, None) is None:
            raise NotFound(name)
        return _Done()

    def list_nodes(self, *, parent: str) -> list[Any]:
        del parent
        return list(self.nodes.values())


class _Blob:
    def __init__(self, store: dict[str, bytes], name: str) -> None:
        self._store, self.name = store, name

    def upload_from_string(self, data: str | bytes) -> None:
        self._store[self.name] = data.encode() if isinstance(data, str) else data

    def download_as_bytes(self) -> bytes:
        if self.name not in self._store:
            raise NotFound(self.name)
        return self._store[self.name]

    def delete(self) -> None:
        self._store.pop(self.name, None)


class _Bucket:
    def __init__(self, store: dict[str, bytes]) -> None:
        self._store = store

    def blob(self, name: str) -> _Blob:
        return _Blob(self._store, name)

    def list_blobs(self, *, prefix: str) -> list[_Blob]:
        return [_Blob(self._store, n) for n in list(self._store) if n.startswith(prefix)]


class FakeStorage:
    """google.cloud.storage.Client stand-in holding one dict of objects per bucket."""

    def __init__(self) -> None:
        self.buckets: dict[str, dict[str, bytes]] = {}

    def bucket(self, name: str) -> _Bucket:
        return _Bucket(self.buckets.setdefault(name, {}))
