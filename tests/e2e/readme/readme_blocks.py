"""README.md's fenced code blocks, with the ``readme-test`` directive written right before each.

A directive is an HTML comment alone on the line before the opening fence (invisible when the README
is rendered)::

    <!-- readme-test: fixture openai -->        a setup the test provides (see test_readme_blocks.py)
    <!-- readme-test: skip: why it is not run --> an explicit exception, with its reason

Example::

    for block in readme_blocks(Path("README.md")):
        print(block.id, block.lang, block.fixture, block.skip)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^```(\S*)\s*$")
DIRECTIVE = re.compile(r"^<!-- readme-test: (fixture|skip):? (.+?) -->$")
HEADING = re.compile(r"^#{1,6} (.+)$")


class ReadmeDirectiveError(ValueError):
    """A ``readme-test`` comment that is not ``fixture NAME`` or ``skip: WHY``, or a fence left open."""


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language and code, and how the test must treat it."""

    id: str
    """``<section slug>-<n>``: the n-th block under the nearest heading, stable across unrelated edits."""
    line: int
    lang: str
    code: str
    fixture: str | None = None
    skip: str | None = None


def _slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")


def readme_blocks(path: Path) -> list[Block]:
    """Every fenced block of the Markdown file ``path``, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    section, counts = "top", {"top": 0}
    i = 0
    while i < len(lines):
        heading = HEADING.match(lines[i])
        if heading:
            section = _slug(heading.group(1))
            counts.setdefault(section, 0)
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start = i
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        if i == len(lines):
            raise ReadmeDirectiveError(f"{path}:{start + 1}: code block never closed")
        fixture = skip = None
        previous = lines[start - 1].strip() if start else ""
        if "readme-test" in previous:
            directive = DIRECTIVE.match(previous)
            if directive is None:
                raise ReadmeDirectiveError(
                    f"{path}:{start}: expected '<!-- readme-test: fixture NAME -->' or "
                    f"'<!-- readme-test: skip: WHY -->', got {previous!r}"
                )
            kind, value = directive.groups()
            fixture, skip = (value, None) if kind == "fixture" else (None, value)
        counts[section] += 1
        blocks.append(Block(
            id=f"{section}-{counts[section]}", line=start + 1, lang=fence.group(1),
            code="\n".join(lines[start + 1 : i]) + "\n", fixture=fixture, skip=skip,
        ))
        i += 1
    return blocks
