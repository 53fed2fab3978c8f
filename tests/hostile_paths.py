"""The hostile paths every ``fs_tool`` store is tested with (``tests/unit/tools/test_fs_tool.py`` on the
local directory, ``tests/integration/tools/test_fs_s3_store.py`` on an S3 server).

``PATH_ATTACKS`` are refused by the confinement before any store is asked: ``..`` anywhere, absolute
and drive paths, backslashes, NUL and control characters, over-long names and paths.
``LINK_ATTACKS`` name symlinks the local test plants out of the root (a store with links must not
follow them; S3 has none, so there they are ordinary names).
"""

from __future__ import annotations

PATH_ATTACKS = [
    "..", "../x", "../../outside/secret.txt", "a/../../x", "a/b/../../../x", "./../x", "a/..",
    "/etc/passwd", "//etc/passwd", "/", "\\\\server\\share\\x", "C:\\Windows\\win.ini", "C:/x",
    "a\\..\\..\\x", "..\\secret", "a\x00b", "\x00", "x\n../y", "tab\there", "\x7f",
    "a" * 256, "a/" * 600,
]
LINK_ATTACKS = [
    "link_out/secret.txt", "link_out", "secret_link", "up/outside/secret.txt", "deep/link_out/secret.txt",
]
