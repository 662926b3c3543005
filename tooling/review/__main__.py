"""`python -m tooling.review [--base REV] [--accept] ARGS` (make review, make accept)."""

import sys

from .cli import main

if __name__ == "__main__":
    # Usage and argument errors name the command as they did when the review was one file (tooling/review.py).
    sys.exit(main(prog="review.py"))
