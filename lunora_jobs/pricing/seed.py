"""The indicative prices a fresh pricing store starts from.

They are ``rag.cost.PRICES`` (one hand-kept table of public list prices, shared with retrieval's cost
spans so the two never disagree), dated ``effective_from=0``: "since always", so any price you set
with a real date takes over from it. Indicative, not authoritative: set what you are billed.
"""

from __future__ import annotations

from lunora_jobs.pricing.records import ModelPrice


def indicative_prices() -> list[ModelPrice]:
    """The seed rows."""
    # Imported here, not at module level: importing the ``rag`` package loads its whole retrieval
    # pipeline (~0.2 s), and only provisioning a store needs this table.
    from rag.cost import PRICES

    return [
        ModelPrice(
            model=name,
            input_per_mtok=price.input,
            output_per_mtok=price.output,
            cached_input_per_mtok=price.cache_read,
            effective_from=0,
        )
        for name, price in sorted(PRICES.items())
    ]
