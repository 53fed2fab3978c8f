"""``lunora rag sync DIR``: index a folder into a rag namespace, with a progress bar.

The rag comes from the environment: the embedded default store (Qdrant server when
``LUNORA_QDRANT_URL`` is set), the offline MiniLM embedder if installed (else the hashing embedder,
which is not semantic), a Markdown-aware chunker, and the embedder's name folded into the namespace
so switching embedders never mixes vectors. Keys indexed from this folder are kept in a manifest under
``LUNORA_DATA_DIR/rag/`` so the next sync can prune files deleted since.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from lunora_jobs.config import Settings
from rag.chunkers import markdown_chunker
from rag.defaults import default_embedder, default_vector_store
from rag.define import Rag, define_rag
from rag.sources import DirectorySource, SyncReport, define_rag_source

CLI_INDEX = "lunora_rag"


def rag_from_env(settings: Settings | None = None) -> Rag:
    """The rag ``lunora rag sync`` writes to (see the module docstring)."""
    embedder = default_embedder()
    version = re.sub(r"[^A-Za-z0-9._-]", "-", embedder.model.rsplit("/", 1)[-1])[:40]
    return define_rag(
        embedding=embedder,
        store=default_vector_store(CLI_INDEX),
        index=CLI_INDEX,
        chunk=markdown_chunker(size=1000, overlap=200),
        embedding_model_version=version,
    )


def manifest_path(settings: Settings, directory: Path, namespace: str | None) -> Path:
    """Where the keys synced from ``directory`` into ``namespace`` are remembered."""
    tag = hashlib.sha1(f"{directory.resolve()}|{namespace or ''}".encode()).hexdigest()[:16]
    return settings.data_dir / "rag" / f"manifest-{tag}.json"


def sync_directory(
    directory: str | Path,
    namespace: str | None = None,
    prune: bool = True,
    *,
    settings: Settings | None = None,
    rag: Rag | None = None,
    console: Console | None = None,
) -> SyncReport:
    """Index every file under ``directory``; prune files removed since the last sync when ``prune``."""
    settings = settings or Settings()
    directory = Path(directory)
    rag = rag or rag_from_env(settings)
    console = console or Console(stderr=True)
    manifest = manifest_path(settings, directory, namespace)
    known = json.loads(manifest.read_text())["keys"] if prune and manifest.exists() else None
    source = DirectorySource(directory)
    total = sum(1 for _ in source.list())
    with Progress(
        TextColumn("[bold]rag sync"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task("", total=total)

        def advance(key: str, outcome: str) -> None:
            if outcome != "pruned":
                progress.update(task, advance=1, description=f"{outcome}: {key}")

        report = define_rag_source(rag, namespace=namespace).sync(
            source, known_keys=known, on_progress=advance
        )
    manifest.parent.mkdir(parents=True, exist_ok=True)
    tmp = manifest.with_suffix(".tmp")
    tmp.write_text(
        json.dumps(
            {"directory": str(directory.resolve()), "namespace": namespace, "keys": sorted(report.seen)}
        )
    )
    tmp.replace(manifest)  # atomic: a crash never leaves a truncated manifest
    console.print(
        f"indexed {len(report.indexed)}, unchanged {len(report.unchanged)}, "
        f"skipped {len(report.skipped)}, pruned {len(report.pruned)}"
    )
    return report
