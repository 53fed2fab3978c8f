"""``lunora rag sync DIR --index NAME``: index a folder into a rag index, with a progress bar.

The rag is exactly ``define_rag(index=NAME)`` with its defaults -- the embedded default store (a
Qdrant server when ``LUNORA_QDRANT_URL`` is set), the offline MiniLM embedder if installed, the
default chunker -- so ``define_rag(index=NAME).retrieve(...)`` in Python reads what the command wrote.
Nothing is folded into the namespace. Keys indexed from the folder are kept in a manifest under
``LUNORA_DATA_DIR/rag/`` so the next sync can prune files deleted since.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from rag.define import Rag, define_rag
from rag.settings import RagSettings
from rag.sources import DirectorySource, SyncReport, define_rag_source

DEFAULT_INDEX = "docs"


def rag_from_env(index: str = DEFAULT_INDEX) -> Rag:
    """The rag ``lunora rag sync`` writes to: ``define_rag(index=index)`` (see the module docstring)."""
    return define_rag(index=index, allow_shared_namespace=True)


def manifest_path(settings: RagSettings, directory: Path, namespace: str | None, index: str) -> Path:
    """Where the keys synced from ``directory`` into ``index`` / ``namespace`` are remembered."""
    tag = hashlib.sha1(f"{directory.resolve()}|{index}|{namespace or ''}".encode()).hexdigest()[:16]
    return settings.data_dir / "rag" / f"manifest-{tag}.json"


def sync_directory(
    directory: str | Path,
    namespace: str | None = None,
    prune: bool = True,
    *,
    index: str = DEFAULT_INDEX,
    settings: RagSettings | None = None,
    rag: Rag | None = None,
    console: Console | None = None,
) -> SyncReport:
    """Index every file under ``directory`` into ``index``; prune files removed since the last sync."""
    settings = settings or RagSettings()
    directory = Path(directory)
    rag = rag or rag_from_env(index)
    console = console or Console(stderr=True)
    manifest = manifest_path(settings, directory, namespace, rag.config.index)
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
            {
                "directory": str(directory.resolve()),
                "index": rag.config.index,
                "namespace": namespace,
                "keys": sorted(report.seen),
            }
        )
    )
    tmp.replace(manifest)  # atomic: a crash never leaves a truncated manifest
    console.print(
        f"indexed {len(report.indexed)}, unchanged {len(report.unchanged)}, "
        f"skipped {len(report.skipped)}, pruned {len(report.pruned)}"
    )
    return report
