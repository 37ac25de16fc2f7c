"""argparse ``type`` functions shared by gangweb's commands: a bad number is an error, never a default.

Plain Python, so the webhook's, the dashboard's and the benchmarks' commands all check numbers alike (an
argparse ``type`` error is one usage line and exit 2).
"""

from __future__ import annotations

import argparse


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def at_least_one(text: str) -> int:
    """A whole number of at least 1 (sizes, counts, repeats)."""
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def port(text: str) -> int:
    """A TCP port to listen on or point at: 1 to 65535 (0 would be a random port, silently)."""
    value = _whole(text)
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"must be a port between 1 and 65535, got {value}")
    return value


OUTPUTS = ("table", "wide", "json", "yaml")


def add_output(parser: argparse.ArgumentParser, default: str = "table", json_alias: bool = True) -> None:
    """``-o/--output table|wide|json|yaml`` as kubectl spells it, into ``output``; ``--json`` kept as ``-o json``."""
    parser.add_argument(
        "-o", "--output", choices=OUTPUTS, default=default, help=f"{', '.join(OUTPUTS)} (default {default})"
    )
    if json_alias:
        parser.add_argument(
            "--json", dest="output", action="store_const", const="json", help="the same as -o json"
        )
