"""What the command lines of ``python -m mqx`` share: a parser whose errors are one line, and
option types that refuse values the commands cannot use (a negative or infinite interval)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn

# Exit status of a bad command line, as argparse and mqx's C++ programs use.
USAGE_EXIT = 2

# The longest interval a command waits between samples: a day (curses takes milliseconds as a C
# int, and time.sleep refuses what does not fit a timespec).
LONGEST_INTERVAL_SECONDS = 86400.0


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line on stderr ("prog: what is wrong (try --help)")
    and exit status 2, not the usage followed by the error."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (try --help)", file=sys.stderr)
        sys.exit(USAGE_EXIT)


def seconds(text: str) -> float:
    """An interval in seconds: a finite number above 0 and at most a day."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got '{text}'") from None
    if not (math.isfinite(value) and 0 < value <= LONGEST_INTERVAL_SECONDS):
        raise argparse.ArgumentTypeError(
            f"expected seconds above 0 and at most {LONGEST_INTERVAL_SECONDS:g}, got '{text}'"
        )
    return value
