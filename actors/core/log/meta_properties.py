"""A log directory's identity: Kafka's ``meta.properties`` with a directory id (KIP-858).

Theory of operation. The first time a broker opens a log directory that has no
``meta.properties`` (a new broker, or one whose disk was lost and replaced) it writes one holding
its broker id and a new directory id; every later start reads the same id back. The broker
registers the id with the controller, which can then tell a broker that restarted with its data
from one that restarted empty: the directory id changed. The new id is the broker process's
incarnation id, which is already unique per process start, so the core needs no randomness.

A ``meta.properties`` naming another broker id is a directory that belongs to someone else
(Kafka's ``InconsistentBrokerIdException``): the broker refuses to start on it.
"""
from __future__ import annotations

from actors.core.log.storage import Storage

META_PROPERTIES = "meta.properties"
META_PROPERTIES_VERSION = "1"


class InconsistentBrokerIdError(RuntimeError):
    """The log directory's meta.properties names another broker."""


def _parse(text: str) -> dict[str, str]:
    properties = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            properties[key.strip()] = value.strip()
    return properties


def load_or_create_directory_id(storage: Storage, broker_id: int, new_directory_id: str) -> str:
    """The directory id in ``meta.properties``, writing one with ``new_directory_id`` if there is none
    (or if the file is unreadable: a directory whose identity is unknown is a new directory)."""
    if storage.exists(META_PROPERTIES):
        properties = _parse(storage.read_file(META_PROPERTIES).decode("utf-8", errors="replace"))
        if properties.get("broker.id") not in (None, str(broker_id)):
            raise InconsistentBrokerIdError(
                f"{META_PROPERTIES} names broker {properties['broker.id']}, not {broker_id}: this log "
                f"directory belongs to another broker")
        if properties.get("directory.id"):
            return properties["directory.id"]
    text = (f"version={META_PROPERTIES_VERSION}\nbroker.id={broker_id}\n"
            f"directory.id={new_directory_id}\n")
    storage.write_file_atomically(META_PROPERTIES, text.encode())
    return new_directory_id
