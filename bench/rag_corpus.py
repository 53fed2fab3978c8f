"""Build a retrieval corpus of real documents nobody on this project wrote: Python docstrings.

Documents are the module, class and function docstrings of the standard library and of a fixed list
of installed third-party packages, read with ``ast`` (nothing is imported, so no module's import-time
side effects run). Each query is derived mechanically, never by reading rankings: it is the
docstring's summary (its first line), and the document is the docstring *without* that line, titled
with the object's dotted name. One relevant document per query (known-item search).

Mechanical filters, fixed before any ranking was looked at: public names only (no component starting
with ``_`` except dunder methods, no ``test``/``tests``/``idlelib``/``lib2to3``/``turtledemo``
packages); a summary of 4-30 words that is unique in the corpus; a body of 250-8000 characters that
is unique too. Then a deterministic sample by SHA-1 of the id, up to ``--docs``.

Run::

    python bench/rag_corpus.py --docs 2500 --out /work/cache/rag/corpus.json
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.metadata
import json
import sys
import sysconfig
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

# Installed with the project's dev extras; a missing one is skipped and the output says which were used.
PACKAGES = ["sqlalchemy", "pydantic", "celery", "kombu", "click", "rich", "jsonschema", "alembic", "numpy"]
SKIP_PARTS = {"test", "tests", "idlelib", "lib2to3", "turtledemo", "site-packages", "_vendor", "vendored"}
MIN_SUMMARY_WORDS, MAX_SUMMARY_WORDS = 4, 30
MIN_BODY, MAX_BODY = 250, 8000


def _public(name: str) -> bool:
    return all(
        not part.startswith("_") or (part.startswith("__") and part.endswith("__"))
        for part in name.split(".")
    )


def _docstrings(path: Path, module: str) -> Iterator[tuple[str, str]]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return
    doc = ast.get_docstring(tree)
    if doc:
        yield module, doc

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}.{child.name}"
                text = ast.get_docstring(child)
                if text:
                    yield name, text
                if isinstance(child, ast.ClassDef):
                    yield from walk(child, name)

    yield from walk(tree, module)


def _modules(root: Path, package: str | None) -> Iterator[tuple[Path, str]]:
    base = root / package if package else root
    for path in sorted(base.rglob("*.py")):
        rel = path.relative_to(root)
        if SKIP_PARTS & set(rel.parts[:-1]) or rel.name.startswith("test"):
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            yield path, ".".join(parts)


def split(doc: str) -> tuple[str, str]:
    """``(summary line, body without it)``."""
    lines = doc.strip().splitlines() or [""]
    return lines[0].strip(), "\n".join(lines[1:]).strip()


def build(max_docs: int) -> dict[str, object]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    purelib = Path(sysconfig.get_paths()["purelib"])
    sources: list[tuple[Path, str | None]] = [(stdlib, None)]
    used = {"python": sys.version.split()[0]}
    for package in PACKAGES:
        if (purelib / package).is_dir():
            sources.append((purelib, package))
            used[package] = importlib.metadata.version(package)
    candidates: dict[str, tuple[str, str]] = {}
    for root, package in sources:
        for path, module in _modules(root, package):
            for name, doc in _docstrings(path, module):
                summary, body = split(doc)
                if not _public(name) or name in candidates:
                    continue
                words = len(summary.split())
                if MIN_SUMMARY_WORDS <= words <= MAX_SUMMARY_WORDS and MIN_BODY <= len(body) <= MAX_BODY:
                    candidates[name] = (summary, body)
    summaries = Counter(s.casefold() for s, _ in candidates.values())
    bodies = Counter(b for _, b in candidates.values())
    unique = {
        name: pair
        for name, pair in candidates.items()
        if summaries[pair[0].casefold()] == 1 and bodies[pair[1]] == 1
    }
    chosen = sorted(unique, key=lambda n: hashlib.sha1(n.encode()).hexdigest())[:max_docs]
    docs = [{"id": name, "title": name, "text": unique[name][1]} for name in sorted(chosen)]
    queries = [{"id": f"q:{name}", "query": unique[name][0], "relevant": name} for name in sorted(chosen)]
    return {
        "sources": used,
        "filters": {"candidates": len(candidates), "unique": len(unique)},
        "docs": docs,
        "queries": queries,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=2500)
    parser.add_argument("--out", type=Path, default=Path("/work/cache/rag/corpus.json"))
    args = parser.parse_args()
    corpus = build(args.docs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(corpus, ensure_ascii=False))
    docs = corpus["docs"]
    assert isinstance(docs, list)
    chars = sum(len(d["text"]) for d in docs)
    print(f"{len(docs)} documents ({chars / len(docs):.0f} chars mean), {corpus['filters']} -> {args.out}")
    print("sources:", corpus["sources"])


if __name__ == "__main__":
    main()
