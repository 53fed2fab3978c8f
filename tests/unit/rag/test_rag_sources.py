"""define_rag_source: report, extractors, pruning, one body at a time; the folder sync command."""

from __future__ import annotations

from pathlib import Path

import pytest
from rag_helpers import RecordingEmbedder, RecordingStore
from rich.console import Console

from rag import DirectorySource, SourceObject, define_rag, define_rag_source
from rag.cli import sync_directory
from rag.settings import RagSettings as Settings


class Bucket:
    """An S3-like source: records the order of list / get / index events."""

    def __init__(self, objects: dict[str, tuple[str | None, bytes]], events: list[str]) -> None:
        self.objects = objects
        self.events = events

    def list(self):
        for key, (content_type, _) in self.objects.items():
            self.events.append(f"list:{key}")
            yield {"key": key, "content_type": content_type, "metadata": {"url": f"s3://b/{key}"}}

    def get(self, obj: SourceObject):
        self.events.append(f"get:{obj.key}")
        entry = self.objects.get(obj.key)
        return None if entry is None else entry[1]


def make_rag(events: list[str]):
    rag = define_rag(embedding=RecordingEmbedder(), store=RecordingStore())
    original = rag.index

    def index(id, text, **kw):
        events.append(f"index:{id}")
        return original(id, text, **kw)

    rag.index = index  # type: ignore[method-assign]
    return rag


def test_sync_report_extractors_and_skips() -> None:
    events: list[str] = []
    rag = make_rag(events)
    bucket = Bucket(
        {
            "a.txt": ("text/plain", b"plain text body"),
            "b.md": ("text/markdown; charset=utf-8", b"# Title\n\nmarkdown body"),
            "c.pdf": ("application/pdf", b"%PDF-1.7 binary"),
            "d.bin": ("application/octet-stream", b"\x00\x01"),
            "e.json": ("application/json", b'{"k": "json body"}'),
        },
        events,
    )
    source = define_rag_source(
        rag, namespace="t1", extractors={"application/pdf": lambda body, obj: "pdf words"}
    )
    report = source.sync(bucket)
    assert report.indexed == ["a.txt", "b.md", "c.pdf", "e.json"]
    assert report.skipped == ["d.bin"] and report.pruned == [] and report.unchanged == []
    assert "get:d.bin" not in events  # skipped types are never even fetched
    hit = rag.retrieve("pdf words", namespace="t1", top_k=1).chunks[0]
    assert (hit.source_id, hit.metadata["url"]) == ("c.pdf", "s3://b/c.pdf")
    # the "*" fallback extractor takes every non-plain type without a specific one
    fallback = define_rag_source(rag, namespace="t1", extractors={"*": lambda body, obj: "fallback text"})
    again = fallback.sync(bucket)
    assert again.indexed == ["c.pdf", "d.bin"] and again.unchanged == ["a.txt", "b.md", "e.json"]


def test_resync_is_unchanged_and_prunes_only_known_keys_missing_from_this_pass() -> None:
    events: list[str] = []
    rag = make_rag(events)
    objects = {
        "a.txt": ("text/plain", b"alpha"),
        "b.txt": ("text/plain", b"beta"),
        "c.txt": ("text/plain", b"c"),
    }
    source = define_rag_source(rag, namespace="t1")
    first = source.sync(Bucket(objects, events))
    assert first.indexed == ["a.txt", "b.txt", "c.txt"]
    del objects["b.txt"]
    objects["a.txt"] = ("text/plain", b"alpha changed")
    second = source.sync(Bucket(objects, events), known_keys=["a.txt", "b.txt", "c.txt", "zombie.txt"])
    assert second.indexed == ["a.txt"] and second.unchanged == ["c.txt"]
    assert second.pruned == ["b.txt", "zombie.txt"]
    assert "b.txt" not in {c.source_id for c in rag.retrieve("beta", namespace="t1", top_k=10).chunks}
    # without known_keys nothing is pruned
    del objects["c.txt"]
    assert source.sync(Bucket(objects, events)).pruned == []


def test_one_body_at_a_time_and_lazy_listing() -> None:
    events: list[str] = []
    rag = make_rag(events)
    objects = {f"k{i}.txt": ("text/plain", f"body {i}".encode()) for i in range(3)}
    define_rag_source(rag).sync(Bucket(objects, events))
    assert events == [e for i in range(3) for e in (f"list:k{i}.txt", f"get:k{i}.txt", f"index:k{i}.txt")]


def test_a_vanished_object_is_skipped() -> None:
    class Vanishing(Bucket):
        def get(self, obj):
            return None

    rag = make_rag([])
    report = define_rag_source(rag).sync(Vanishing({"a.txt": ("text/plain", b"x")}, []))
    assert report.skipped == ["a.txt"]


def test_directory_source_and_sync_directory_with_manifest(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "guide.md").write_text("# Guide\n\nRotate keys monthly.")
    (docs / "sub" / "notes.txt").write_text("Passwords need twelve characters.")
    (docs / "image.png").write_bytes(b"\x89PNG")
    (docs / ".hidden.txt").write_text("secret")
    listed = [(o.key, o.content_type) for o in DirectorySource(docs).list()]
    assert listed == [
        ("guide.md", "text/markdown"),
        ("image.png", "image/png"),
        ("sub/notes.txt", "text/plain"),
    ]

    settings = Settings(data_dir=tmp_path / "data")
    rag = define_rag(embedding=RecordingEmbedder(), store=RecordingStore())
    with open(tmp_path / "out.txt", "w") as out:
        quiet = Console(file=out)
        first = sync_directory(docs, namespace="n1", settings=settings, rag=rag, console=quiet)
        assert first.indexed == ["guide.md", "sub/notes.txt"] and first.skipped == ["image.png"]
        (docs / "sub" / "notes.txt").unlink()
        second = sync_directory(docs, namespace="n1", settings=settings, rag=rag, console=quiet)
        assert second.unchanged == ["guide.md"] and second.pruned == ["sub/notes.txt"]
    assert [c.source_id for c in rag.retrieve("twelve characters", namespace="n1").chunks] == ["guide.md"]
    assert "pruned 1" in (tmp_path / "out.txt").read_text()


def test_a_listing_that_fails_midway_prunes_nothing() -> None:
    class Broken(Bucket):
        def list(self):
            yield {"key": "a.txt", "content_type": "text/plain"}
            raise ConnectionError("bucket listing timed out")

    rag = make_rag([])
    source = define_rag_source(rag)
    source.sync(Bucket({"b.txt": ("text/plain", b"keep me")}, []))
    with pytest.raises(ConnectionError):
        source.sync(Broken({"a.txt": ("text/plain", b"a")}, []), known_keys=["b.txt"])
    assert rag.store.ids() == ["a.txt#0", "b.txt#0"]  # a partial pass never prunes
