"""Text normalisation applied before anything is tokenized, embedded or stored.

Text from files, webhooks and PDFs carries what tokenizers and databases refuse: a lone UTF-16
surrogate (``"\\ud800"``, which cannot be encoded as UTF-8) and NUL characters (PostgreSQL's TEXT
rejects them). They are replaced with U+FFFD, and the text is put in Unicode NFC so the same word
typed with a combining accent and with a precomposed one indexes the same way.

Example::

    normalize_text("caf\\u0065\\u0301 \\ud800")   # "café \\ufffd"
"""

from __future__ import annotations

import re
import unicodedata

_UNSAFE = re.compile("[\ud800-\udfff\x00]")


def normalize_text(text: str) -> str:
    """``text`` with lone surrogates and NUL replaced by U+FFFD, in Unicode NFC."""
    if _UNSAFE.search(text):
        text = _UNSAFE.sub("\ufffd", text)
    return text if text.isascii() else unicodedata.normalize("NFC", text)
