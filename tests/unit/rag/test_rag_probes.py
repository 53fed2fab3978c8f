"""Issue 9's probe table, on all four stores: every probe expects a named error or a safe result.

Stores: ``MemoryStore`` (+ its BM25 leg), ``EdgeStore`` (Qdrant's engine in process), ``QdrantStore``
over qdrant-client's local mode, ``SqlVectorStore`` on SQLite. Then a two-tenant write/read/delete
matrix in one shared namespace where no cell may cross tenants, and a check that the lexical leg
scores the same on every store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rag import define_rag, define_rag_source
from rag.define import Rag
from rag.embeddings.hashing import HashingEmbedder
from rag.errors import (
    DimensionMismatchError,
    EmptyRlsScopeError,
    ForeignRowError,
    HybridUnavailableError,
    IdentityRequiredError,
    RagError,
    RagInputError,
    ReservedNamespaceError,
    TopKTooLargeError,
)
from rag.sources import SourceObject
from rag.stores.base import VectorRecord, VectorStore
from rag.stores.memory import MemoryStore
from rag.stores.qdrant import QdrantStore
from rag.stores.qdrant_edge import EdgeStore
from rag.stores.sql import SqlVectorStore

DIM = 64
NS = "shared"
DOCS = {
    "a1": ("A", "Alpha team handbook: reset your password from the account page."),
    "a2": ("A", "Alpha invoices are emailed monthly to the billing contact."),
    "b1": ("B", "Beta secret roadmap: the password vault migrates in March."),
    "b2": ("B", "Beta incident INC-4471: the billing export timed out."),
    "b3": ("B", "Beta onboarding checklist for new engineers."),
}
STORES = ["memory", "edge", "qdrant-local", "sql"]


def org_scope(auth: Any) -> dict[str, Any]:
    return {"org": auth["org"]}


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    kind = request.param
    if kind == "memory":
        yield MemoryStore()
    elif kind == "edge":
        edge = EdgeStore(tmp_path / "edge", indexed_fields={"org": "keyword"})
        yield edge
        edge.close()
    elif kind == "qdrant-local":
        local = QdrantStore(path=":memory:", collection="probes")
        yield local
        local.close()
    else:
        yield SqlVectorStore(f"sqlite:///{tmp_path}/rag.db")


@pytest.fixture
def docs(store: VectorStore) -> Rag:
    rag = define_rag(
        embedding=HashingEmbedder(DIM), store=store, rls_filter=org_scope, allow_shared_namespace=True
    )
    for key, (org, text) in DOCS.items():
        rag.index(key, text, metadata={"org": org}, namespace=NS)  # the system identity writes
    return rag


def owners(rag: Rag, query: str = "password billing beta alpha handbook onboarding", **kw: Any) -> set[str]:
    result = rag.retrieve(query, top_k=10, namespace=NS, **kw)
    return {c.metadata["org"] for c in result.chunks}


def texts(store: VectorStore) -> dict[str, tuple[str, str]]:
    rows = store.get_by_ids([f"{k}#0" for k in [*DOCS, "new"]], namespace=NS)
    return {h.id: (h.metadata.get("org"), h.text) for h in rows}


# --- the probe table -----------------------------------------------------------------------------

Probe = Callable[[Rag, VectorStore], Any]
PROBES: list[tuple[str, Probe, type[BaseException]]] = [
    # RLS fails closed
    (
        "unbound read of an RLS index",
        lambda d, s: d.retrieve("password", namespace=NS),
        IdentityRequiredError,
    ),
    ("bound to None", lambda d, s: d.bind(auth=None).retrieve("x", namespace=NS), IdentityRequiredError),
    ("bound to {}", lambda d, s: d.bind(auth={}).retrieve("x", namespace=NS), IdentityRequiredError),
    ("bound to {} writes", lambda d, s: d.bind(auth={}).index("z", "x", namespace=NS), IdentityRequiredError),
    (
        "rls_filter returns None",
        lambda d, s: (
            define_rag(embedding=HashingEmbedder(DIM), store=s, rls_filter=lambda a: None)
            .bind(auth={"org": "A"})
            .retrieve("password", namespace=NS)
        ),
        EmptyRlsScopeError,
    ),
    (
        "rls_filter returns {}",
        lambda d, s: (
            define_rag(embedding=HashingEmbedder(DIM), store=s, rls_filter=lambda a: {})
            .bind(auth={"org": "A"})
            .retrieve("password", namespace=NS)
        ),
        EmptyRlsScopeError,
    ),
    (
        "rls_filter scope with an empty value",
        lambda d, s: d.bind(auth={"org": None}).retrieve("password", namespace=NS),
        EmptyRlsScopeError,
    ),
    (
        "rls_filter raises",
        lambda d, s: d.bind(auth={"user": 1}).retrieve("x", namespace=NS),
        EmptyRlsScopeError,
    ),
    # writes confined to the identity's rows
    ("A removes B's doc", lambda d, s: d.bind(auth={"org": "A"}).remove("b3", namespace=NS), ForeignRowError),
    (
        "A overwrites B's doc",
        lambda d, s: d.bind(auth={"org": "A"}).index("b2", "x", metadata={"org": "A"}, namespace=NS),
        ForeignRowError,
    ),
    (
        "A writes a row for B",
        lambda d, s: d.bind(auth={"org": "A"}).index("new", "x", metadata={"org": "B"}, namespace=NS),
        ForeignRowError,
    ),
    (
        "A writes a row without scope",
        lambda d, s: d.bind(auth={"org": "A"}).index("new", "x", namespace=NS),
        ForeignRowError,
    ),
    (
        "A's sync prunes B's doc",
        lambda d, s: define_rag_source(d.bind(auth={"org": "A"}), namespace=NS).sync(
            ListSource({"a1": DOCS["a1"][1]}, org="A"), known_keys=["a1", "b1"]
        ),
        ForeignRowError,
    ),
    # reserved namespaces
    ("__default__ namespace", lambda d, s: d.retrieve("x", namespace="__default__"), ReservedNamespaceError),
    ("__default__ write", lambda d, s: d.index("z", "x", namespace="__default__"), ReservedNamespaceError),
    ("__anything namespace", lambda d, s: d.index("z", "x", namespace="__v1"), ReservedNamespaceError),
    ("empty namespace", lambda d, s: d.index("z", "x", namespace=""), ReservedNamespaceError),
    ("@ in a namespace", lambda d, s: d.index("z", "x", namespace="t@v2"), ReservedNamespaceError),
    ("non-str namespace", lambda d, s: d.index("z", "x", namespace=42), RagInputError),  # type: ignore[arg-type]
    (
        "store-level __default__",
        lambda d, s: s.upsert([VectorRecord("z#0", [1.0] * DIM, "x")], namespace="__default__"),
        ReservedNamespaceError,
    ),
    # one dimension error on every store
    (
        "store upsert of another width",
        lambda d, s: s.upsert([VectorRecord("z#0", [1.0] * 256, "x", {"org": "A"})], namespace=NS),
        DimensionMismatchError,
    ),
    (
        "store query of another width",
        lambda d, s: s.query([1.0] * 256, top_k=3, namespace=NS),
        DimensionMismatchError,
    ),
    (
        "rag with another embedder width",
        lambda d, s: define_rag(embedding=HashingEmbedder(256), store=s, allow_shared_namespace=True).index(
            "z", "x", namespace=NS
        ),
        DimensionMismatchError,
    ),
    # bad input
    ("retrieve(None)", lambda d, s: d.bind(auth={"org": "A"}).retrieve(None, namespace=NS), RagInputError),  # type: ignore[arg-type]
    ("retrieve('')", lambda d, s: d.bind(auth={"org": "A"}).retrieve("  ", namespace=NS), RagInputError),
    ("retrieve(bytes)", lambda d, s: d.bind(auth={"org": "A"}).retrieve(b"x", namespace=NS), RagInputError),  # type: ignore[arg-type]
    ("index(id, None)", lambda d, s: d.index("z", None, namespace=NS), RagInputError),  # type: ignore[arg-type]
    ("index(id, bytes)", lambda d, s: d.index("z", b"body", namespace=NS), RagInputError),  # type: ignore[arg-type]
    ("index(None, text)", lambda d, s: d.index(None, "x", namespace=NS), RagInputError),  # type: ignore[arg-type]
    ("metadata='x'", lambda d, s: d.index("z", "x", metadata="x", namespace=NS), RagInputError),  # type: ignore[arg-type]
    (
        "filter='org'",
        lambda d, s: d.bind(auth={"org": "A"}).retrieve("x", filter="org", namespace=NS),  # type: ignore[arg-type]
        RagInputError,
    ),
    (
        "filter=42",
        lambda d, s: d.bind(auth={"org": "A"}).retrieve("x", filter=42, namespace=NS),  # type: ignore[arg-type]
        RagInputError,
    ),
    (
        "top_k=2**64",
        lambda d, s: d.bind(auth={"org": "A"}).retrieve("x", top_k=2**64, namespace=NS),
        TopKTooLargeError,
    ),
    ("store top_k=2**64", lambda d, s: s.query([1.0] * DIM, top_k=2**64, namespace=NS), TopKTooLargeError),
    (
        "top_k='5'",
        lambda d, s: d.bind(auth={"org": "A"}).retrieve("x", top_k="5", namespace=NS),
        RagInputError,
    ),  # type: ignore[arg-type]
    (
        "top_k=True",
        lambda d, s: d.bind(auth={"org": "A"}).retrieve("x", top_k=True, namespace=NS),
        RagInputError,
    ),
    (
        "mode='fuzzy'",
        lambda d, s: d.bind(auth={"org": "A"}).retrieve("x", mode="fuzzy", namespace=NS),
        RagInputError,
    ),  # type: ignore[arg-type]
    (
        "group_by='x'",
        lambda d, s: d.bind(auth={"org": "A"}).retrieve("x", group_by="x", namespace=NS),
        RagInputError,
    ),  # type: ignore[arg-type]
    ("embed_many([None])", lambda d, s: HashingEmbedder(DIM).embed_many([None]), RagInputError),  # type: ignore[list-item]
]


class ListSource:
    """An in-memory object source for ``sync``."""

    def __init__(self, bodies: dict[str, str], *, org: str) -> None:
        self.bodies, self.org = bodies, org

    def list(self) -> list[SourceObject]:
        return [SourceObject(k, "text/plain", {"org": self.org}) for k in self.bodies]

    def get(self, obj: SourceObject) -> str:
        return self.bodies[obj.key]


@pytest.mark.parametrize(("name", "probe", "error"), PROBES, ids=[p[0] for p in PROBES])
def test_probe_gets_the_named_error_and_changes_nothing(
    docs: Rag, store: VectorStore, name: str, probe: Probe, error: type[BaseException]
) -> None:
    before = texts(store)
    with pytest.raises(error) as caught:
        probe(docs, store)
    assert isinstance(caught.value, RagError), f"{name}: {type(caught.value).__name__} is not a rag error"
    assert texts(store) == before, f"{name} changed the index"


def test_safe_results(docs: Rag, store: VectorStore) -> None:
    a = docs.bind(auth={"org": "A"})
    # A caller filter can narrow RLS, never widen it.
    assert owners(a) == {"A"}
    assert owners(a, filter={"org": "B"}) <= {"A"}
    assert owners(a, filter={"org": {"$ne": "A"}}) <= {"A"}  # on a shared key the RLS condition wins
    # Lexical-only and dense-only go through the same RLS and namespace path.
    assert owners(a, mode="lexical") == {"A"} and owners(a, mode="dense") == {"A"}
    assert a.retrieve("password", namespace="elsewhere").chunks == []
    # A lone surrogate and NUL are replaced before tokenizing and storing, not a traceback.
    docs.index("odd", "surrogate \ud800 and nul \x00 password", metadata={"org": "A"}, namespace=NS)
    hit = a.retrieve("password \udfff", top_k=10, namespace=NS, mode="lexical").chunks
    assert any(c.source_id == "odd" and "\ufffd" in c.text for c in hit)
    # group_by="source": top documents, each once, with its best chunk.
    grouped = a.retrieve("alpha", top_k=5, namespace=NS, group_by="source")
    assert [g.id for g in grouped.groups] == [s.id for s in grouped.sources]
    assert len({g.id for g in grouped.groups}) == len(grouped.groups) >= 2


def test_hybrid_asked_without_a_lexical_leg_is_an_error(store: VectorStore) -> None:
    class DenseOnly:
        """The store with its lexical leg hidden."""

        capabilities = store.capabilities

        def __getattr__(self, name: str) -> Any:
            if name == "lexical_query":
                raise AttributeError(name)
            return getattr(store, name)

    dense_store: Any = DenseOnly()
    with pytest.raises(HybridUnavailableError):
        define_rag(embedding=HashingEmbedder(DIM), store=dense_store, hybrid=True)
    rag = define_rag(embedding=HashingEmbedder(DIM), store=dense_store, allow_shared_namespace=True)
    rag.index("d", "dense only text")
    with pytest.raises(HybridUnavailableError):
        rag.retrieve("dense", mode="hybrid")
    with pytest.raises(HybridUnavailableError):
        rag.retrieve("dense", mode="lexical")
    assert rag.retrieve("dense").chunks[0].source_id == "d"  # auto: dense, as declared


def test_two_tenant_matrix_never_crosses(docs: Rag, store: VectorStore) -> None:
    tenants = {"A": docs.bind(auth={"org": "A"}), "B": docs.bind(auth={"org": "B"})}
    other = {"A": "B", "B": "A"}
    own = {"A": "a1", "B": "b1"}
    for actor, rag in tenants.items():  # create: own rows only
        rag.index(f"{actor}-new", f"fresh {actor} page", metadata={"org": actor}, namespace=NS)
        with pytest.raises(ForeignRowError):
            rag.index(f"{actor}-x", "planted", metadata={"org": other[actor]}, namespace=NS)
    for actor, rag in tenants.items():
        theirs = other[actor]
        # read: only the actor's rows, whatever filter or mode is asked for
        for mode in ("auto", "dense", "lexical"):
            assert owners(rag, mode=mode) == {actor}
            assert owners(rag, mode=mode, filter={"org": theirs}) <= {actor}
        # replace: own rows only, both of the seeded ones and of the other's new ones
        rag.index(own[actor], f"updated by {actor}", metadata={"org": actor}, namespace=NS)
        for target in (own[theirs], f"{theirs}-new"):
            with pytest.raises(ForeignRowError):
                rag.index(target, f"hijacked by {actor}", metadata={"org": actor}, namespace=NS)
            # delete: own rows only
            with pytest.raises(ForeignRowError):
                rag.remove(target, namespace=NS)
    for actor, rag in tenants.items():
        assert rag.remove(f"{actor}-new", namespace=NS) == 1
        assert rag.remove(f"{actor}-x", namespace=NS) == 0  # never created
    rows = {r.id: r for r in store.get_by_ids([f"{k}#0" for k in DOCS], namespace=NS)}
    assert set(rows) == {f"{k}#0" for k in DOCS}
    for row_id, row in rows.items():
        assert row.metadata["org"] == DOCS[row_id[:-2]][0], f"{row_id} changed owner"
        assert "hijacked" not in row.text
    assert rows["a1#0"].text == "updated by A" and rows["b1#0"].text == "updated by B"


def test_lexical_leg_scores_the_same_on_every_store(tmp_path: Path) -> None:
    corpus = {f"d{i}": text for i, (_, text) in enumerate(DOCS.values())}
    corpus.update({"long": "password " * 3 + "billing export vault " * 20, "short": "billing"})
    queries = ["password", "billing export", "beta vault march", "onboarding engineers handbook"]
    rankings: dict[str, list[list[tuple[str, float]]]] = {}
    stores: dict[str, Any] = {
        "memory": MemoryStore(),
        "edge": EdgeStore(tmp_path / "edge"),
        "qdrant-local": QdrantStore(path=":memory:", collection="lex"),
        "sql": SqlVectorStore(f"sqlite:///{tmp_path}/lex.db"),
    }
    other_tenant = [VectorRecord("t#0", [1.0] * DIM, "password password password", {})]
    for name, s in stores.items():
        s.upsert(other_tenant, namespace="other")  # IDF is per namespace: must not move the ranking
        s.upsert([VectorRecord(k, [1.0] * DIM, t, {}) for k, t in corpus.items()], namespace="n")
        rankings[name] = [
            [(h.id, round(h.score, 4)) for h in s.lexical_query(q, top_k=10, namespace="n")] for q in queries
        ]
    for name in ("edge", "qdrant-local", "sql"):
        assert rankings[name] == rankings["memory"], f"{name} ranks the lexical leg differently"
    for s in stores.values():
        getattr(s, "close", lambda: None)()
