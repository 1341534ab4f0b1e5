"""Embeddings: the ``Embedder`` protocol, the offline default model, contextual text, cache.

Importing this package is cheap; fastembed/onnxruntime load inside :func:`load_embedder`.
"""

from engram.embed.cache import EmbeddingCache, cache_key
from engram.embed.default_model import DEFAULT_DIM, DEFAULT_MODEL_ID, ModelFilesError
from engram.embed.embedders import CachedEmbedder, Embedder, FastEmbedEmbedder, l2_normalise
from engram.embed.loader import EmbedderStatus, load_embedder
from engram.embed.text import memory_embedding_text

__all__ = [
    "DEFAULT_DIM",
    "DEFAULT_MODEL_ID",
    "CachedEmbedder",
    "Embedder",
    "EmbedderStatus",
    "EmbeddingCache",
    "FastEmbedEmbedder",
    "ModelFilesError",
    "cache_key",
    "l2_normalise",
    "load_embedder",
    "memory_embedding_text",
]
