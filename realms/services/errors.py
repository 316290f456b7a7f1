"""The error a refused launch raises, apart from launch itself: choosing the provider
(``providers``) refuses a launch too, and launch calls it.
"""

from __future__ import annotations

from typing import Any


class LaunchError(Exception):
    """A launch was refused; ``problems`` lists every reason, one line each."""

    def __init__(self, problems: list[str], *, missing: list[dict[str, Any]] | None = None):
        self.problems = problems
        self.missing = missing or []
        super().__init__("; ".join(problems))
