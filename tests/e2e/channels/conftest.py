"""The channel end-to-end tests share the signing, mail and stand-in helpers of the channel suites."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[2]
for _helpers in (_TESTS / "unit" / "channels", _TESTS / "integration" / "channels", Path(__file__).parent):
    if str(_helpers) not in sys.path:
        sys.path.insert(0, str(_helpers))
