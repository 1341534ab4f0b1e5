"""Growable NumPy columns and vector blocks for in-process snapshots.

Why not rebuild arrays per write: at 100k memories a 384-d matrix is 150 MB; copying it on
every ``remember`` would cost more than the search it serves. Columns grow by doubling and
rows are updated in place, so a write costs O(batch), not O(store).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pyarrow as pa


#: the NumPy scalar type of a column
S = TypeVar("S", bound=np.generic)


class GrowColumn(Generic[S]):
    """A 1-D NumPy array that grows by doubling; ``view()`` is the used prefix."""

    def __init__(self, dtype: type[S], capacity: int = 64) -> None:
        self.data: npt.NDArray[S] = np.zeros(max(capacity, 1), dtype=dtype)
        self.size = 0

    def append(self, value: bool | int | float) -> int:
        if self.size == len(self.data):
            grown = np.zeros(len(self.data) * 2, dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.data[self.size] = value
        self.size += 1
        return self.size - 1

    def view(self) -> npt.NDArray[S]:
        return self.data[: self.size]

    @classmethod
    def from_array(cls, values: npt.ArrayLike, dtype: type[S]) -> GrowColumn[S]:
        column = cls(dtype, capacity=max(64, np.size(values) * 5 // 4))
        array = np.asarray(values)
        column.data[: len(array)] = array
        column.size = len(array)
        return column


class VectorBlock:
    """Unit vectors of one dimension, for exact cosine search by one matrix product.

    ``rows[i]`` is the snapshot row whose vector sits at ``matrix[i]`` (``-1`` once the
    row was deleted or moved to another dimension).
    """

    def __init__(self, dim: int, capacity: int = 64) -> None:
        self.dim = dim
        self.matrix: npt.NDArray[np.float32] = np.zeros((max(capacity, 1), dim), np.float32)
        self.rows: npt.NDArray[np.int64] = np.full(max(capacity, 1), -1, np.int64)
        self.size = 0
        self.position: dict[int, int] = {}

    @classmethod
    def from_matrix(
        cls,
        dim: int,
        rows: npt.NDArray[np.int64],
        matrix: npt.NDArray[np.float32],
        *,
        normalised: bool = False,
    ) -> VectorBlock:
        """A block over ``matrix``; ``normalised=True`` trusts rows to be unit vectors."""
        block = cls(dim, capacity=max(64, len(rows) * 5 // 4))
        n = len(rows)
        block.matrix[:n] = matrix if normalised else normalise(matrix)
        block.rows[:n] = rows
        block.size = n
        block.position = {int(r): i for i, r in enumerate(rows.tolist())}
        return block

    def put(self, row: int, vector: npt.NDArray[np.float32]) -> None:
        pos = self.position.get(row)
        if pos is None:
            if self.size == len(self.rows):
                self._grow()
            pos = self.size
            self.size += 1
            self.position[row] = pos
            self.rows[pos] = row
        self.matrix[pos] = normalise(vector.reshape(1, -1))[0]

    def remove(self, row: int) -> None:
        pos = self.position.pop(row, None)
        if pos is not None:
            self.rows[pos] = -1
            self.matrix[pos] = 0.0

    def _grow(self) -> None:
        capacity = len(self.rows) * 2
        matrix = np.zeros((capacity, self.dim), np.float32)
        matrix[: self.size] = self.matrix[: self.size]
        rows = np.full(capacity, -1, np.int64)
        rows[: self.size] = self.rows[: self.size]
        self.matrix, self.rows = matrix, rows

    def allowed(self, row_mask: npt.NDArray[np.bool_] | None) -> npt.NDArray[np.bool_]:
        """Which block positions may be returned (live rows allowed by ``row_mask``)."""
        rows = self.rows[: self.size]
        allowed = rows >= 0
        if row_mask is not None:
            allowed &= row_mask[np.maximum(rows, 0)]
        return allowed

    def search(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        row_mask: npt.NDArray[np.bool_] | None = None,
        *,
        allowed: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` best (row, cosine) pairs among rows allowed by ``row_mask``.

        ``allowed`` (from :meth:`allowed`) may be passed instead, so callers can cache it
        between writes: on 100k rows the matrix product is the only O(n·dim) step.
        """
        if allowed is None:
            allowed = self.allowed(row_mask)
        return self.frozen().search(query, k, allowed)

    def frozen(self) -> FrozenBlock:
        """The block as it is now, to search without holding the snapshot's lock.

        The matrix is a view (a later write may touch one of its rows in place, never the
        shape); the row map is copied (a removal marks its row -1).
        """
        n = self.size
        return FrozenBlock(self.matrix[:n], self.rows[:n].copy())


class FrozenBlock:
    """A :class:`VectorBlock` captured for one search (see :meth:`VectorBlock.frozen`)."""

    def __init__(self, matrix: npt.NDArray[np.float32], rows: npt.NDArray[np.int64]) -> None:
        self.matrix = matrix
        self.rows = rows

    def search(
        self, query: npt.NDArray[np.float32], k: int, allowed: npt.NDArray[np.bool_]
    ) -> list[tuple[int, float]]:
        return self.search_each(query, k, [allowed])[0]

    def search_each(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        alloweds: Sequence[npt.NDArray[np.bool_]],
    ) -> list[list[tuple[int, float]]]:
        """The ``k`` best (row, cosine) pairs under each mask in ``alloweds``, one product.

        A dated query searches the whole store and its time window with the same vector:
        the window's cosines are read off the whole store's product (:func:`cosines` gives
        a row the same value either way) instead of gathering the window's rows into a
        fresh array (6 MB for a month at 100k, page faults included) and scoring them
        again. A lone mask, or masks that are all selective, keep their own products: a
        selective filter (at most a quarter of the rows) scores only its rows.
        """
        n = len(self.rows)
        if n == 0 or k <= 0:
            return [[] for _ in alloweds]
        live = self.rows >= 0
        masks = [allowed[:n] & live for allowed in alloweds]
        counts = [int(np.count_nonzero(mask)) for mask in masks]
        q = normalise(query.reshape(1, -1).astype(np.float32, copy=False))[0]
        shared = any(count * 4 > n for count in counts) and len(masks) > 1
        full = cosines(self.matrix, q) if shared else None
        out: list[list[tuple[int, float]]] = []
        for mask, count in zip(masks, counts, strict=True):
            if count == 0:
                out.append([])
                continue
            if count == n:
                positions = None
                scores = full if full is not None else cosines(self.matrix, q)
            else:
                positions = np.flatnonzero(mask)
                if full is not None:
                    scores = full[positions]
                elif count * 4 <= n:  # a selective filter scores only the allowed rows
                    scores = cosines(self.matrix[positions], q)
                else:
                    scores = cosines(self.matrix, q)[positions]
            out.append(self._top(scores, positions, k))
        return out

    def _top(
        self,
        scores: npt.NDArray[np.float32],
        positions: npt.NDArray[np.intp] | None,
        k: int,
    ) -> list[tuple[int, float]]:
        """The best ``k`` of ``scores`` (at block ``positions``, or all) as (row, cosine)."""
        m = len(scores)
        k = min(k, m)
        top = np.argpartition(scores, m - k)[m - k :] if k < m else np.arange(m)
        order = top[np.argsort(-scores[top], kind="stable")]
        at = order if positions is None else positions[order]
        return [(int(self.rows[p]), float(s)) for p, s in zip(at, scores[order], strict=True)]


def cosines(
    matrix: npt.NDArray[np.float32], query: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """``matrix @ query`` for unit rows and a unit query, on the calling thread.

    Not through BLAS: OpenBLAS splits the product over its worker threads, and those keep
    spinning after every call. The product is bound by memory bandwidth, so the second
    thread bought nothing (100k × 384 on this loaded 2-core machine: 7.3-7.7 ms on one
    thread, 8.5-9.5 ms on two), while the spinning took a core from the BM25 query
    (LanceDB's threads) and the query embedding (ONNX) that run beside it: at 100k
    memories 5-6 ms of CPU per search, ~10 ms per dated one (which waits longer, for its
    second BM25). NumPy's ``einsum`` loop reads each row once, with SIMD, on this thread,
    and sums a row the same way whichever rows are around it, so a row's cosine does not
    depend on the filter: a window's rows scored alone or within the whole store agree
    bit for bit (BLAS's do not). Against BLAS a cosine moves in its last bits (< 1e-7).
    """
    result: npt.NDArray[np.float32] = np.einsum("ij,j->i", matrix, query)
    return result


def normalise(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Rows scaled to unit length (zero rows stay zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: npt.NDArray[np.float32] = (matrix / norms).astype(np.float32, copy=False)
    return result


def vectors_from_binary(
    column: pa.Array | pa.ChunkedArray, dims: Sequence[int]
) -> dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
    """Group a binary column of float32 bytes by dimension: dim -> (rows, matrix).

    The common case (every vector of one dimension, stored in row order) is one
    zero-copy ``frombuffer`` over Arrow's data buffer; mixed tables fall back per row.
    """
    import pyarrow as pa

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(array)
    dims_arr = np.asarray(dims, dtype=np.int64)
    out: dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] = {}
    if n == 0:
        return out
    offset_type = np.int64 if pa.types.is_large_binary(array.type) else np.int32
    offsets = np.frombuffer(array.buffers()[1], dtype=offset_type)[
        array.offset : array.offset + n + 1
    ]
    data_buffer = array.buffers()[2]
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8)
        if data_buffer is not None
        else np.zeros(0, np.uint8)
    )
    lengths = np.diff(offsets)
    for dim in sorted({int(d) for d in dims_arr.tolist() if d > 0}):
        rows = np.flatnonzero((dims_arr == dim) & (lengths == dim * 4)).astype(np.int64)
        if len(rows) == 0:
            continue
        starts = offsets[rows].astype(np.int64)
        first = int(starts[0])
        if np.array_equal(starts, first + np.arange(len(rows), dtype=np.int64) * dim * 4):
            chunk = data[first : first + len(rows) * dim * 4]
            matrix = chunk.view(np.float32).reshape(len(rows), dim).copy()
        else:
            matrix = np.stack(
                [data[int(s) : int(s) + dim * 4].view(np.float32) for s in starts.tolist()]
            )
        out[dim] = (rows, matrix)
    return out


class RecordColumn:
    """The raw JSON records of a snapshot: the loaded Arrow column, plus rows written since.

    Why not a list of Python strings: at 10k memories the strings cost twice what the
    Arrow column they came from does (~22 MB against ~9 MB), and the language server keeps
    them for its whole life. A row is turned into a ``str`` only when it is decoded (once,
    the decoded memory is cached by the snapshot); writes of this process go to a small
    dict on top.
    """

    def __init__(self, base: pa.Array | pa.ChunkedArray | None = None) -> None:
        if base is not None and hasattr(base, "combine_chunks"):
            base = base.combine_chunks()  # one array: O(1) row access
        self._base = base
        self._size = 0 if base is None else len(base)
        self._over: dict[int, str | None] = {}

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, row: int) -> str | None:
        if row in self._over:
            return self._over[row]
        if not 0 <= row < self._size or self._base is None:
            raise IndexError(row)
        value = self._base[row].as_py()
        return value if isinstance(value, str) else None

    def __setitem__(self, row: int, value: str | None) -> None:
        if not 0 <= row < self._size:
            raise IndexError(row)
        self._over[row] = value

    def append(self, value: str | None) -> None:
        self._over[self._size] = value
        self._size += 1

    def __iter__(self) -> Iterator[str | None]:
        for row in range(self._size):
            yield self[row]

    def arrow(self) -> pa.Array:
        """Every row as one Arrow string array (null for a dropped row): the loaded column
        with the rows written since patched in by one ``take``, no ``str`` per loaded row."""
        import pyarrow as pa

        base = self._base if self._base is not None else pa.array([], pa.string())
        if not self._over:
            return base
        rows = sorted(self._over)
        extra = pa.array([self._over[r] for r in rows], pa.string()).cast(base.type)
        index = np.arange(self._size, dtype=np.int64)
        index[len(base) :] = -1  # every row past the loaded ones was written since
        index[rows] = len(base) + np.arange(len(rows), dtype=np.int64)
        return pa.concat_arrays([base, extra]).take(pa.array(index))

    def extract(self, pattern: str) -> list[str | None]:
        """The first group of ``pattern`` in every row (None where absent).

        The loaded rows are scanned by Arrow's compute kernel (no ``str`` per row), the
        rows written since by ``re``: building the ``valid_from`` column of 100k records
        this way takes a fraction of decoding them.
        """
        import re

        found: list[str | None] = [None] * self._size
        if self._base is not None and len(self._base):
            import pyarrow.compute as pc

            named = re.sub(r"^(.*?)\((?!\?)", r"\1(?P<value>", pattern, count=1)
            matched = pc.extract_regex(self._base, named)
            values = matched.field("value").to_pylist()
            valid = matched.is_valid().to_pylist()
            for row, (value, ok) in enumerate(zip(values, valid, strict=True)):
                if ok:
                    found[row] = value
        compiled = re.compile(pattern)
        for row, raw in self._over.items():
            hit = compiled.search(raw) if raw is not None else None
            found[row] = hit.group(1) if hit is not None else None
        return found
