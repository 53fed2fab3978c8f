"""``lunora rag sync``: index a folder for ``define_rag``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lunora_jobs.commands._common import DebugOption, guard

NAME = "rag"
group = typer.Typer(help="Retrieval (RAG) indexes.", no_args_is_help=True)



@group.command("sync")
def sync(
    directory: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="Folder to index.")],
    index: Annotated[str, typer.Option(help="Index to write: read it with define_rag(index=...).")] = "docs",
    namespace: Annotated[str | None, typer.Option(help="Namespace (tenant) to index into.")] = None,
    prune: Annotated[bool, typer.Option(help="Remove indexed files no longer in the folder.")] = True,
    debug: DebugOption = False,
) -> None:
    """Index every text file under DIRECTORY into INDEX (content-hash short-circuits unchanged files).

    Example: lunora rag sync ./docs --index docs
    """
    from rag.cli import sync_directory

    with guard(debug):
        sync_directory(directory, namespace=namespace, prune=prune, index=index)
