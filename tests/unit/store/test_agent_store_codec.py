"""Shared store helpers: identity limits, patch keys, the UTC day window, JSON columns."""

from __future__ import annotations

import pytest

from lunora_jobs.errors import IdentityTooLongError
from lunora_jobs.store._codec import RUN_ADD, RUN_SET, check_identity, dump, load, split_patch, utc_day


def test_identity_limit_is_255_characters() -> None:
    assert check_identity("owner", "é" * 255) == "é" * 255
    with pytest.raises(IdentityTooLongError, match="owner is 256 characters"):
        check_identity("owner", "a" * 256)
    with pytest.raises(ValueError):  # IdentityTooLongError is a ValueError
        check_identity("actor", "a" * 300)
    assert check_identity("owner", None) is None


def test_split_patch_separates_sets_and_increments() -> None:
    sets, adds = split_patch(
        {"status": "completed", "add_turns": 1, "add_input_tokens": 5}, RUN_SET, RUN_ADD, "run"
    )
    assert sets == {"status": "completed"}
    assert adds == {"turns": 1, "input_tokens": 5}
    with pytest.raises(ValueError, match="cannot patch run field 'turn'"):
        split_patch({"turn": 1}, RUN_SET, RUN_ADD, "run")


def test_utc_day_edges() -> None:
    midnight = 1_767_225_600_000
    assert utc_day(midnight) == (midnight, midnight + 86_400_000)
    assert utc_day(midnight - 1) == (midnight - 86_400_000, midnight)
    assert utc_day(midnight + 86_400_000 - 1) == (midnight, midnight + 86_400_000)


def test_json_columns_round_trip_and_keep_null() -> None:
    value = {"a": [1, 2.5, None, True], "é": "ü"}
    assert load(dump(value)) == value
    assert dump(None) is None and load(None) is None
