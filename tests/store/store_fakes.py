"""A small deterministic embedder for store tests (the real model is not the point there)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


class FakeEmbedder:
    """Bag of hashed words -> unit vector; texts sharing words get a high cosine."""

    def __init__(self, dim: int = 32, model_id: str = "fake-32") -> None:
        self._dim = dim
        self._model_id = model_id
        self.calls: list[list[str]] = []

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self._dim), np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                bucket = int(hashlib.md5(word.encode()).hexdigest(), 16) % self._dim
                out[i, bucket] += 1.0
            norm = np.linalg.norm(out[i])
            out[i] = out[i] / norm if norm else out[i]
        return out
