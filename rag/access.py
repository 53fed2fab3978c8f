"""Row-level security of a rag: who may read, and which rows a bound identity may write.

``define_rag(rls_filter=...)`` maps a verified identity (``docs.bind(auth=...)``) to a metadata
filter. Everything here fails closed:

- reads of an index with ``rls_filter`` need a bound, non-empty identity (``IdentityRequiredError``);
  the unbound declaration is the application acting as the system, which may write but not read;
- ``rls_filter(auth)`` returning ``None``, ``{}``, a non-mapping or a scope with an empty value
  (``{"org": None}``) admits nothing (``EmptyRlsScopeError``), and a filter that raises is a refusal;
- a bound identity may only create, replace or delete rows its scope admits: new metadata must match
  the scope and every row already stored under the ids it would touch must too (``ForeignRowError``).
  A refusal is never a silent overwrite or a silent skip.

Example::

    policy = AccessPolicy(rls_filter=lambda auth: {"org": auth["org"]}, auth={"org": "a"}, bound=True)
    policy.read_scope()                       # {"org": "a"}
    policy.check_new_metadata({"org": "b"})   # ForeignRowError
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rag.errors import EmptyRlsScopeError, ForeignRowError, IdentityRequiredError, RagConfigurationError
from rag.filters import matches_metadata_filter
from rag.stores.base import VectorHit

RlsFilter = Callable[[Any], "Mapping[str, Any] | None"]


def _empty_identity(auth: Any) -> bool:
    if auth is None:
        return True
    if isinstance(auth, Mapping | str | bytes | list | tuple | set):
        return len(auth) == 0
    return False


def _empty_value(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | tuple | dict) and len(value) == 0)


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """One bound (or unbound) rag's view of ``rls_filter``."""

    rls_filter: RlsFilter | None
    auth: Any = None
    bound: bool = False

    def _scope(self) -> dict[str, Any]:
        assert self.rls_filter is not None
        if not self.bound or _empty_identity(self.auth):
            raise IdentityRequiredError(
                "this index has an rls_filter: read and write per request through "
                "docs.bind(auth=<the caller's verified identity>); a missing or empty identity is refused"
            )
        try:
            scope = self.rls_filter(self.auth)
        except Exception as exc:
            raise EmptyRlsScopeError(
                f"rls_filter raised {type(exc).__name__} for this identity, so it admits no rows; "
                "make rls_filter return a filter such as {'org': auth['org']} for every verified identity"
            ) from exc
        if scope is not None and not isinstance(scope, Mapping):
            raise RagConfigurationError(
                f"rls_filter must return a mapping such as {{'org': 'acme'}}, got {type(scope).__name__}"
            )
        if not scope or any(_empty_value(v) for v in scope.values()):
            raise EmptyRlsScopeError(
                "rls_filter returned an empty scope (None, {} or an empty value) for this identity: "
                "it admits no rows. Return a non-empty filter such as {'org': auth['org']}"
            )
        return dict(scope)

    def read_scope(self) -> dict[str, Any] | None:
        """The filter every read is confined to; ``None`` when the index has no ``rls_filter``."""
        return None if self.rls_filter is None else self._scope()

    def write_scope(self) -> dict[str, Any] | None:
        """The scope writes are confined to; ``None`` (unconfined) without ``rls_filter`` or unbound.

        A bound rag with an empty identity is refused rather than treated as the system.
        """
        if self.rls_filter is None or not self.bound:
            return None
        return self._scope()

    def check_new_metadata(self, metadata: Mapping[str, Any] | None, scope: Mapping[str, Any] | None) -> None:
        """Refuse metadata the scope would not admit (the row would leave the caller's sight)."""
        if scope is not None and not matches_metadata_filter(metadata or {}, scope):
            keys = ", ".join(sorted(scope))
            raise ForeignRowError(
                f"the metadata of this document is outside your rls_filter scope (keys: {keys}); "
                "pass metadata carrying your own scope values"
            )

    def check_existing(self, rows: Iterable[VectorHit], scope: Mapping[str, Any] | None, action: str) -> None:
        """Refuse to touch rows another identity owns."""
        if scope is None:
            return
        for row in rows:
            if not matches_metadata_filter(row.metadata, scope):
                raise ForeignRowError(
                    f"cannot {action} {row.id.rsplit('#', 1)[0]!r}: it belongs to rows your rls_filter "
                    "does not admit. Use another id (ids are shared within a namespace) or a namespace "
                    "per tenant"
                )
