"""Namespace names: what a caller may pass, and the key a store files the default namespace under.

A caller's namespace is a tenant's partition. Names that could alias another partition are refused
with ``ReservedNamespaceError``: the empty string, anything starting with ``__`` (``__default__`` is
where the stores keep the namespace-less data), and anything containing ``@`` (``define_rag``
folds ``embedding_model_version`` in as ``<namespace>@<version>``, so ``"t1@v2"`` would reach
another model's partition).

Example::

    caller_namespace("acme")          # "acme"
    caller_namespace("__default__")   # ReservedNamespaceError
    store_key(None)                   # "__default__"
"""

from __future__ import annotations

from rag.errors import RagInputError, ReservedNamespaceError

DEFAULT_NAMESPACE = "__default__"
MAX_NAMESPACE_CHARS = 150  # SQL stores key namespaces in a 191-character column; the version needs room


def caller_namespace(namespace: object) -> str | None:
    """``namespace`` checked as a caller-chosen partition name (``None``: the default partition)."""
    if namespace is None:
        return None
    if not isinstance(namespace, str):
        raise RagInputError(
            f"namespace must be a str (or None for the default), got {type(namespace).__name__}"
        )
    if not namespace or namespace.startswith("__") or "@" in namespace or "\x00" in namespace:
        raise ReservedNamespaceError(
            f"namespace {namespace!r} is reserved: names must be non-empty, must not start with '__' "
            "(the default namespace is namespace=None) and must not contain '@' or NUL"
        )
    if len(namespace) > MAX_NAMESPACE_CHARS or not namespace.isprintable():
        raise RagInputError(
            f"namespace must be at most {MAX_NAMESPACE_CHARS} printable characters, got {namespace[:40]!r}..."
        )
    return namespace


def store_key(namespace: str | None) -> str:
    """The key a store files ``namespace`` under; ``None`` is the default namespace.

    The literal default key is refused, so no caller of a store can alias the default namespace.
    """
    if namespace is None:
        return DEFAULT_NAMESPACE
    if not isinstance(namespace, str):
        raise RagInputError(f"namespace must be a str or None, got {type(namespace).__name__}")
    if namespace == DEFAULT_NAMESPACE or not namespace:
        raise ReservedNamespaceError(
            f"namespace {namespace!r} is reserved for the default namespace: pass namespace=None"
        )
    return namespace
