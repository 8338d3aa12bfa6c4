"""What every cluster command shares: which cluster (``--namespace``, ``--address``), connecting to
it, and printing an answer as a table for people or as JSON (``--json``) for scripts."""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator

from orchestration.admin.detached import DEFAULT_NAMESPACE, join_with_rays_auth, remembered_cluster, use_auth_mode


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE,
                        help=f"the cluster's Ray namespace (default: {DEFAULT_NAMESPACE})")
    parser.add_argument("--address", default=None,
                        help="the Ray cluster's address (default: the one 'cluster start' used, else auto)")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")


def ray_address(args: argparse.Namespace) -> str:
    """``--address``, else the address ``cluster start`` remembered for the namespace, else auto;
    a Ray head that ``cluster start --local`` started is joined with its authentication mode, and
    one that ``ray start`` started with the mode ``ray start`` chose (``join_with_rays_auth``)."""
    remembered = remembered_cluster(args.namespace) or {}
    if not args.address or args.address == remembered.get("address"):
        use_auth_mode(remembered.get("auth_mode"))
    join_with_rays_auth()  # a head started by `ray start`: authenticate as it does
    return args.address or remembered.get("address") or "auto"


@contextlib.contextmanager
def connected(args: argparse.Namespace) -> Iterator:
    """The cluster named by ``args``, disconnected (and left running) at the end."""
    from orchestration.admin.cluster import Cluster
    cluster = Cluster.connect(namespace=args.namespace, address=ray_address(args))
    try:
        yield cluster
    finally:
        cluster.close()


def emit(args: argparse.Namespace, answer, text: Callable[[object], str]) -> None:
    """Print ``answer`` as JSON with ``--json``, else as ``text(answer)``."""
    if args.json:
        print(json.dumps(answer, indent=None, sort_keys=True, default=str))
    else:
        out = text(answer)
        if out:
            print(out)
    sys.stdout.flush()


def table(headers: list[str], rows: list[list]) -> str:
    """Left-aligned columns, as Kafka's tools print them."""
    cells = [headers] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells)


def fail(args: argparse.Namespace, error: Exception) -> int:
    """Report a refused command: a Kafka error by its name, on stderr and, with --json, on stdout."""
    name = getattr(error, "name", type(error).__name__)
    if getattr(args, "json", False):
        print(json.dumps({"error": name, "message": str(error)}))
    print(f"error: {name}: {error}", file=sys.stderr)
    return 1
