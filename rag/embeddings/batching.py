"""Split texts into request-sized batches under an item cap and a token budget."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence


def plan_batches(
    texts: Sequence[str], measure: Callable[[str], int], max_items: int, max_tokens: int
) -> Iterator[list[str]]:
    """Consecutive batches of ``texts``, each with at most ``max_items`` texts and ``max_tokens`` tokens.

    Order is preserved, so concatenating the batches' results lines up with ``texts``. A single text
    over ``max_tokens`` goes alone in its batch: splitting it would change its embedding, and the
    provider's own per-input limit is the right place to refuse it.

    >>> list(plan_batches(["aa", "bb", "cc"], len, max_items=2, max_tokens=100))
    [['aa', 'bb'], ['cc']]
    >>> list(plan_batches(["aaaa", "bb", "cc"], len, max_items=10, max_tokens=4))
    [['aaaa'], ['bb', 'cc']]
    """
    batch: list[str] = []
    tokens = 0
    for text in texts:
        size = measure(text)
        if batch and (len(batch) >= max_items or tokens + size > max_tokens):
            yield batch
            batch, tokens = [], 0
        batch.append(text)
        tokens += size
    if batch:
        yield batch
