"""What ``raykafka cluster stop --delete-data`` removes: the directories its ``cluster start`` made.

``cluster start`` remembers (``remember_cluster``) the cluster's log directory, whether it created
that directory, each broker's log directory as the broker resolved it on its node, and for
``--local`` the Ray head's temporary directory. ``delete_cluster_data`` removes from this machine:
- a broker's log directory only when it is one that broker made: a real directory (not a symlink)
  named ``broker-<id>``, directly inside the cluster's log directory (when that names no
  ``{node_id}``-style placeholder), holding a ``meta.properties`` that names broker ``<id>``;
- the cluster's log directory only when ``cluster start`` created it and nothing else is left in
  it (a directory the user named that existed before stays, with whatever else it holds);
- the ``--local`` head's temporary directory (Ray's logs and sockets) only when it is one
  ``start_local_head`` made: ``rk-ray-*`` directly inside ``/tmp``.
Anything else is refused with the reason and left in place; a directory that is not on this
machine (a broker on another host) is reported as missing, for its own host to clean.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

META_PROPERTIES = "meta.properties"  # as actors/core/log/meta_properties.py writes it
LOCAL_HEAD_TEMP_PREFIX = "rk-ray-"   # as detached.start_local_head names the head's --temp-dir,
LOCAL_HEAD_TEMP_PARENT = "/tmp"      # and where it puts it


def _broker_id_in(meta_properties: Path) -> str | None:
    for line in meta_properties.read_text(errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "broker.id":
            return value.strip()
    return None


def _why_not_broker_dir(path: Path, broker_id: int, log_dir: Path) -> str | None:
    """None when ``path`` is the log directory broker ``broker_id`` made, else why it is not."""
    if path.is_symlink():
        return "a symbolic link, not a directory a broker made"
    if path.name != f"broker-{broker_id}":
        return f"not named broker-{broker_id}, as cluster start names broker {broker_id}'s directory"
    if "{" not in str(log_dir) and path.parent != log_dir:
        return f"not inside the cluster's log directory {log_dir}"
    meta = path / META_PROPERTIES
    if not meta.is_file():
        return f"holds no {META_PROPERTIES}, so no broker made it"
    named = _broker_id_in(meta)
    if named != str(broker_id):
        return f"its {META_PROPERTIES} names broker {named}, not {broker_id}"
    return None


def _remove(path: Path, deleted: list[str], refused: list[dict]) -> None:
    try:
        shutil.rmtree(path)
        deleted.append(str(path))
    except OSError as exc:
        refused.append({"path": str(path), "reason": f"could not be removed: {exc}"})


def delete_cluster_data(*, log_dir: str, broker_log_dirs: dict, log_dir_created: bool = False,
                        ray_temp_dir: str | None = None) -> dict:
    """Remove what ``cluster start`` made (see the module's docstring); returns
    ``{"deleted": [path], "refused": [{"path", "reason"}], "missing": [path], "kept": [path]}``."""
    deleted: list[str] = []
    refused: list[dict] = []
    missing: list[str] = []
    kept: list[str] = []
    root = Path(os.path.abspath(log_dir))
    for broker_id, directory in sorted((int(b), d) for b, d in broker_log_dirs.items()):
        path = Path(os.path.abspath(directory))
        if not path.exists() and not path.is_symlink():
            missing.append(str(path))
            continue
        reason = _why_not_broker_dir(path, broker_id, root)
        if reason:
            refused.append({"path": str(path), "reason": reason})
        else:
            _remove(path, deleted, refused)
    if "{" not in str(root) and root.is_dir() and not root.is_symlink():
        if not log_dir_created:
            kept.append(str(root))  # the user's own directory: only the brokers' directories go
        elif any(root.iterdir()):
            refused.append({"path": str(root), "reason": "holds files no broker of this cluster made: "
                            + ", ".join(sorted(p.name for p in root.iterdir())[:5])})
        else:
            root.rmdir()
            deleted.append(str(root))
    if ray_temp_dir:
        path = Path(os.path.abspath(ray_temp_dir))
        if not path.exists():
            missing.append(str(path))
        elif (path.is_symlink() or not path.name.startswith(LOCAL_HEAD_TEMP_PREFIX)
              or path.parent.resolve() != Path(LOCAL_HEAD_TEMP_PARENT).resolve()):
            refused.append({"path": str(path), "reason": "not a Ray temporary directory cluster start --local made"})
        else:
            _remove(path, deleted, refused)
    return {"deleted": deleted, "refused": refused, "missing": missing, "kept": kept}
