"""The rules a wheel must pass before it is published (docs/design.md §1.3): one module per
check, each a base.WheelCheck, listed by name in api.CHECKS; rules.WheelRules holds a rule
per check and `problems` applies them. Pure: the wheel's reading is core/wheel/report.py's.
"""

from .api import CHECKS, KINDS, LABELS
from .archs import missing_wanted, partial_archs
from .base import Finding, WheelCheck
from .commit import commits_in, tag_commit_problems
from .cuda import CUDA_LIBRARIES
from .rules import WheelRules, kinded_problems, problems
from .wheelset import python_tags_of

__all__ = [
    "CHECKS",
    "CUDA_LIBRARIES",
    "Finding",
    "KINDS",
    "LABELS",
    "WheelCheck",
    "WheelRules",
    "commits_in",
    "kinded_problems",
    "missing_wanted",
    "partial_archs",
    "problems",
    "python_tags_of",
    "tag_commit_problems",
]
