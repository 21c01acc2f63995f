"""What the command lines of ``python -m mqx`` share: a parser whose errors are one line, and
option types that refuse values the commands cannot use (a negative or infinite interval)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn

# Exit status of a bad command line, as argparse and mqx's C++ programs use.
USAGE_EXIT = 2
# Exit status when stdout's reader went away: 128 + SIGPIPE, as a C program killed by it.
BROKEN_PIPE_EXIT = 141

# The longest interval a command waits between samples: a day (curses takes milliseconds as a C
# int, and time.sleep refuses what does not fit a timespec).
LONGEST_INTERVAL_SECONDS = 86400.0
# The shortest: each sample locks the node's segment and reads /proc for every client, and a
# terminal cannot show more than a few screens a second (--watch 0.000001 printed 112,590 lines
# in 3 s).
SHORTEST_INTERVAL_SECONDS = 0.1


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line on stderr ("prog: what is wrong (try --help)")
    and exit status 2, not the usage followed by the error."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (try --help)", file=sys.stderr)
        sys.exit(USAGE_EXIT)


def seconds(text: str) -> float:
    """An interval in seconds: a finite number from 0.1 to a day."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got '{text}'") from None
    if not (math.isfinite(value) and SHORTEST_INTERVAL_SECONDS <= value <= LONGEST_INTERVAL_SECONDS):
        raise argparse.ArgumentTypeError(
            f"expected seconds from {SHORTEST_INTERVAL_SECONDS:g} to {LONGEST_INTERVAL_SECONDS:g}, got '{text}'"
        )
    return value


def printable(text: str) -> str:
    """``text`` (a query's name, set by whoever started the query) with control characters and
    backslashes escaped, so that a name cannot forge lines or move the terminal's cursor."""
    out = []
    for character in text:
        if character == "\\":
            out.append("\\\\")
        elif character == "\n":
            out.append("\\n")
        elif character == "\t":
            out.append("\\t")
        elif ord(character) < 0x20 or 0x7F <= ord(character) < 0xA0:
            out.append(f"\\x{ord(character):02x}")
        else:
            out.append(character)
    return "".join(out)


def exit_quietly_on_broken_pipe() -> int:
    """What a command does when its reader went away (``status --watch 1 | head -1``): no
    traceback; stdout goes to /dev/null so that the interpreter's last flush cannot fail again;
    the status of a process ended by SIGPIPE."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return BROKEN_PIPE_EXIT
