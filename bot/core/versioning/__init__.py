"""Versionings: how the versions upstream release tags carry are told valid and put in
order, one module each behind `base.Versioning`, listed by name in `api.VERSIONINGS`
(`upstream.versioning` picks one)."""

from .api import VERSIONINGS, versioning_of
from .base import Examples, Versioning

__all__ = ["VERSIONINGS", "Examples", "Versioning", "versioning_of"]
