"""Settings of the wheelpin process, from the environment (`WHEELPIN_…`) and secret files.

These are the process's own knobs (where its cache lives, how it logs); what a
repository wants from wheelpin lives in that repository's config file instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_cache() -> Path:
    return Path.home() / ".cache" / "wheelpin"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WHEELPIN_", secrets_dir=None, extra="ignore")

    log_level: Literal["debug", "info", "warning", "error"] = "warning"
    log_format: Literal["auto", "json", "console"] = "auto"
    cache_dir: Path = Field(default_factory=_default_cache)


def load_settings() -> Settings:
    """The settings, or ConfigError naming each bad variable in one sentence."""
    from pydantic import ValidationError

    from ..core.errors import ConfigError

    try:
        return Settings()
    except ValidationError as exc:
        faults = "; ".join(
            f"WHEELPIN_{'_'.join(str(part) for part in error['loc']).upper()}: {error['msg']}"
            f" (got {error.get('input')!r})"
            for error in exc.errors()
        )
        raise ConfigError(f"bad setting in the environment: {faults}") from None
