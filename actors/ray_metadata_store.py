"""The controller's key-value store on the Ray cluster's own internal key-value store (GCS).

It lives as long as the Ray cluster does, so a controller that Ray restarts, or a new controller
actor, finds the state of the one before it (Ray Serve's controller checkpoints the same way).
Keys are scoped by the raykafka cluster's Ray namespace.
"""
from __future__ import annotations

import json

from ray.experimental import internal_kv

ACTIVE_CONTROLLER_KEY = "/controller"


def kv_namespace(ray_namespace: str) -> str:
    # Ray's key listing cuts returned keys at the first ':' of the namespace, so keep it colon-free.
    return "raykafka-" + ray_namespace.replace(":", "-")


class RayKeyValueStore:
    def __init__(self, ray_namespace: str) -> None:
        self.namespace = kv_namespace(ray_namespace)

    def get(self, key: str) -> bytes | None:
        return internal_kv._internal_kv_get(key, namespace=self.namespace)

    def put(self, key: str, value: bytes) -> None:
        internal_kv._internal_kv_put(key, value, overwrite=True, namespace=self.namespace)

    def put_if_absent(self, key: str, value: bytes) -> bool:
        # With overwrite=False Ray writes only a missing key, atomically in the GCS, and returns
        # whether the key already existed; so False here means this call created it.
        existed = internal_kv._internal_kv_put(key, value, overwrite=False, namespace=self.namespace)
        return not existed

    def delete(self, key: str) -> None:
        internal_kv._internal_kv_del(key, namespace=self.namespace)

    def keys(self, prefix: str) -> list[str]:
        found = internal_kv._internal_kv_list(prefix, namespace=self.namespace)
        keys = (k.decode() if isinstance(k, bytes) else k for k in found)
        # Some Ray versions return keys with part of the namespace in front: keep the key itself.
        return sorted(k[k.index(prefix):] if prefix and prefix in k else k for k in keys)

    def clear(self) -> None:
        internal_kv._internal_kv_del("/", del_by_prefix=True, namespace=self.namespace)


def active_controller(ray_namespace: str) -> dict | None:
    """The active controller's actor name and epoch (Kafka's /controller znode), if any."""
    raw = RayKeyValueStore(ray_namespace).get(ACTIVE_CONTROLLER_KEY)
    return None if raw is None else json.loads(raw)


def set_active_controller(ray_namespace: str, actor_name: str, controller_epoch: int) -> None:
    RayKeyValueStore(ray_namespace).put(ACTIVE_CONTROLLER_KEY, json.dumps(
        {"actor_name": actor_name, "controller_epoch": controller_epoch}).encode())
