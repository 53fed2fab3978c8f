"""Chaos tests reuse the worker-fleet harness and test app of ``tests/integration/workers``."""

from __future__ import annotations

import sys
from pathlib import Path

_FLEET_DIR = str(Path(__file__).resolve().parents[1] / "integration" / "workers")
if _FLEET_DIR not in sys.path:
    sys.path.insert(0, _FLEET_DIR)
