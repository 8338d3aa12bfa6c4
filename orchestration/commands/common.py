"""What every cluster command shares: which cluster (``--namespace``, ``--address``), connecting to
it (or saying on one line that there is none, and how to start one), and printing an answer as a
table for people or as JSON (``--json``) for scripts."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator

from actors.core.errors import ErrorCode
from orchestration.admin.detached import DEFAULT_NAMESPACE, join_with_rays_auth, remembered_cluster, use_auth_mode
# Each family of commands declares its options with it, from here.
from orchestration.commands.options import add_target_arguments  # noqa: F401
from orchestration.errors import KafkaError


class NoClusterError(Exception):
    """No raykafka cluster where the command looked: it says how to start one, on one line."""

    name = "NO_CLUSTER"

    def __init__(self, namespace: str, where: str = "") -> None:
        option = "" if namespace == DEFAULT_NAMESPACE else f" --namespace {namespace}"
        super().__init__(f"no raykafka cluster in namespace {namespace!r}{where}; start one with "
                         f"'raykafka cluster start --local{option}'")


def ray_address(args: argparse.Namespace, *, join_any: bool = False) -> str:
    """``--address``, else the address ``cluster start`` remembered for the namespace, else (only
    with ``join_any``, for ``cluster start`` itself, or when RAY_ADDRESS names one) Ray's auto; never
    whatever Ray happens to run on this machine for a command that needs a raykafka cluster (it raises
    ``NoClusterError``). A Ray head that ``cluster start --local`` started is joined with its
    authentication mode, and one that ``ray start`` started with the mode ``ray start`` chose
    (``join_with_rays_auth``)."""
    remembered = remembered_cluster(args.namespace) or {}
    address = args.address or remembered.get("address") or os.environ.get("RAY_ADDRESS")
    if not address and not join_any:
        raise NoClusterError(args.namespace)
    if not args.address or args.address == remembered.get("address"):
        use_auth_mode(remembered.get("auth_mode"))
    join_with_rays_auth()  # a head started by `ray start`: authenticate as it does
    return address or "auto"


@contextlib.contextmanager
def connected(args: argparse.Namespace) -> Iterator:
    """The cluster named by ``args``, disconnected (and left running) at the end; with
    ``--bootstrap-server``, any Kafka listener through confluent-kafka instead (``listener``)."""
    if getattr(args, "bootstrap_server", None):
        from orchestration.commands.listener import ListenerTarget
        target = ListenerTarget(args.bootstrap_server)
        try:
            yield target
        finally:
            target.close()
        return
    from orchestration.admin.cluster import Cluster
    address = ray_address(args)
    try:
        cluster = Cluster.connect(namespace=args.namespace, address=address)
    except ConnectionError as exc:  # the remembered Ray head is gone
        raise NoClusterError(args.namespace, f" (no Ray at {address}: {str(exc).splitlines()[0]})") from None
    except KafkaError as exc:  # a Ray, but no raykafka cluster in this namespace on it
        if exc.error_code != ErrorCode.BROKER_NOT_AVAILABLE:
            raise
        raise NoClusterError(args.namespace, f" on the Ray at {address}") from None
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


def refuse(args: argparse.Namespace, message: str) -> int:
    """A command line the command cannot act on, in the words of Kafka's tool: on stderr and,
    with --json, on stdout; exit status 1 as Kafka's tools."""
    if getattr(args, "json", False):
        print(json.dumps({"error": "INVALID_ARGUMENTS", "message": message}))
    print(f"error: {message}", file=sys.stderr)
    return 1


def add_bootstrap_server(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", default=None, metavar="HOST:PORT[,...]",
                        help="talk to this Kafka listener (raykafka's or any Kafka's) through a Kafka client "
                             "instead of to a raykafka cluster through Ray; --namespace and --address then go unused")
