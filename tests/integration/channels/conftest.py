"""Channel integration tests share the signing and mail helpers of ``tests/unit/channels``."""

from __future__ import annotations

import sys
from pathlib import Path

_HELPERS = str(Path(__file__).resolve().parents[2] / "unit" / "channels")
if _HELPERS not in sys.path:
    sys.path.insert(0, _HELPERS)
