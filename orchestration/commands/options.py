"""How every ``raykafka`` command reads its options: help that shows each option's default, and the
options every command shares (``--log-level``, and for the commands that steer a running cluster
``--namespace``, ``--address`` and ``--json``), accepted before the subcommand as well as after it.

argparse lets a subcommand's parser overwrite what the main parser read before it (a subcommand's
default replaces a value given earlier), so each shared option is declared on the main parser and on
every subcommand with its default suppressed, and ``finish`` fills in the default of the command
that runs once both have read the command line. An option given before a command that does not take
it (``raykafka --namespace x demo``) is refused, never silently ignored.
"""
from __future__ import annotations

import argparse
from importlib import metadata

from orchestration.admin.detached import DEFAULT_NAMESPACE

LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR", "CRITICAL")
DEFAULT_LOG_LEVEL = "WARNING"
# The options shared between the main parser and its commands, with the value each gets when a
# command that takes it is not given it.
SHARED_DEFAULTS = {"log_level": DEFAULT_LOG_LEVEL, "namespace": DEFAULT_NAMESPACE, "address": None, "json": False}


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Kafka's tools print each option's default: so does ``--help``, unless the help already says
    it, or there is none to say (no default, or a flag that is off unless given). Descriptions keep
    their own lines."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or action.default in (None, False, [], argparse.SUPPRESS) or not action.option_strings:
            return text
        return text + " (default: %(default)s)"


def version() -> str:
    try:
        return metadata.version("raykafka")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def add_log_level(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS, default=argparse.SUPPRESS, metavar="LEVEL",
                        help=f"{', '.join(LOG_LEVELS)}: level of raykafka's own log lines on stderr; Ray's own "
                             f"messages show only at DEBUG (default: {DEFAULT_LOG_LEVEL})")


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    """Which cluster a command steers, and how it answers."""
    parser.add_argument("--namespace", default=argparse.SUPPRESS,
                        help=f"the cluster's Ray namespace, as 'cluster start' was given it (default: "
                             f"{DEFAULT_NAMESPACE})")
    parser.add_argument("--address", default=argparse.SUPPRESS,
                        help="the Ray cluster's address (default: the one 'cluster start' used for the namespace)")
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print the answer as JSON (default: text, as Kafka's tools print it)")


def _commands(parser: argparse.ArgumentParser, prefix: str = ""):
    """Every (name, parser) below ``parser``, the commands that run (leaves) and the groups."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:  # an alias names the same parser again
                    continue
                seen.add(id(sub))
                yield f"{prefix} {name}".strip(), sub
                yield from _commands(sub, f"{prefix} {name}")


def is_leaf(parser: argparse.ArgumentParser) -> bool:
    return not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def every_parser(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    return [parser] + [sub for _, sub in _commands(parser)]


def prepare(parser: argparse.ArgumentParser) -> None:
    """Once every command is declared: help with defaults everywhere, ``--log-level`` on every
    command, and each shared option's default kept aside so that ``finish`` can fill it in."""
    parser.add_argument("--version", action="version", version=f"raykafka {version()}",
                        help="print raykafka's version and exit")
    add_log_level(parser)
    add_target_arguments(parser)
    for sub in every_parser(parser):
        sub.formatter_class = HelpFormatter
        if sub is parser or not is_leaf(sub):
            continue
        if not any("--log-level" in a.option_strings for a in sub._actions):
            add_log_level(sub)
        defaults = {}
        for action in sub._actions:
            if action.dest in SHARED_DEFAULTS:
                if action.default is not argparse.SUPPRESS:
                    defaults[action.dest] = action.default
                    if action.help and "default" not in action.help and action.default not in (None, False):
                        action.help += f" (default: {action.default})"
                    action.default = argparse.SUPPRESS
                else:
                    defaults[action.dest] = SHARED_DEFAULTS[action.dest]
        sub.set_defaults(shared_defaults=defaults)


def finish(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    """Fill in the shared options the command line left out; refuse one the command does not take."""
    taken = args.shared_defaults
    for dest in SHARED_DEFAULTS:
        if dest not in taken and dest in vars(args) and dest != "log_level":
            parser.error(f"'{args.command}' does not take --{dest.replace('_', '-')}")
        if dest not in vars(args):
            setattr(args, dest, taken.get(dest, SHARED_DEFAULTS[dest]))
    return args
