"""The `world` fixture of the end-to-end reconcile tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.worlds import World, make_world


@pytest.fixture()
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)
