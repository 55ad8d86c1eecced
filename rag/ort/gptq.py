"""GPTQ rounding of a weight matrix to int8 (Frantar et al. 2022, "GPTQ: Accurate Post-Training
Quantization for Generative Pre-trained Transformers", Algorithm 1).

Round-to-nearest puts each weight on the nearest point of its row's int8 grid; GPTQ instead rounds
the input columns one after another and moves the rounding error of column ``i`` onto the columns
not yet rounded, weighted by the inverse of ``H = Xᵀ X`` (``X``: the layer's inputs on calibration
texts), so that the *output* error ``‖X Wᵀ - X Qᵀ‖²`` is small rather than the weight error. The
grid is symmetric, one scale per output row: ``scale_r = max_i |W[r, i]| / 127``, codes in
``[-127, 127]`` (the scales are fixed before rounding, as in the paper's per-channel setting).

Conventions of the reference implementation (``IST-DASLab/gptq``, ``gptq.py``): dampening
``λ = percdamp · mean(diag H)`` added to the diagonal (``percdamp`` 0.01), input columns that never
fire (``H[i, i] = 0``) set to zero, the upper Cholesky factor of ``H⁻¹``, blocks of 128 columns with
the block's error pushed to the later columns at once (its ``act_order`` option, tried here, changed
nothing measurable). With ``H`` diagonal no error can be moved
(the off-diagonal entries of ``H⁻¹`` are 0), so GPTQ then equals round-to-nearest.
"""

from __future__ import annotations

import numpy as np

#: Symmetric int8 grid: codes in [-QMAX, QMAX].
QMAX = 127


def row_scales(weight: np.ndarray) -> np.ndarray:
    """One scale per output row: ``max |w| / 127`` (1 for an all-zero row)."""
    peak = np.abs(weight).max(axis=1)
    return np.where(peak > 0, peak / QMAX, 1.0)


def gptq(weight: np.ndarray, hessian: np.ndarray, percdamp: float = 0.01, block: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes [out, in] and scales [out] of ``weight`` [out, in] (``Linear``: y = x Wᵀ), rounded by
    GPTQ against ``hessian`` = Xᵀ X [in, in] of the layer's calibration inputs (module docstring)."""
    w = np.array(weight, dtype=np.float64)
    h = np.array(hessian, dtype=np.float64)
    scales = row_scales(w)
    dead = np.diag(h) == 0
    h[dead, dead] = 1.0
    w[:, dead] = 0.0
    h[np.diag_indices_from(h)] += percdamp * np.mean(np.diag(h))
    inverse = np.linalg.inv(h)
    upper = np.linalg.cholesky((inverse + inverse.T) / 2).T  # H⁻¹ = Uᵀ U, U upper triangular
    codes = np.empty(w.shape, dtype=np.int8)
    columns = w.shape[1]
    for start in range(0, columns, block):
        stop = min(start + block, columns)
        part, errors = w[:, start:stop].copy(), np.empty((w.shape[0], stop - start))
        for i in range(stop - start):
            column = part[:, i]
            code = np.clip(np.rint(column / scales), -QMAX, QMAX)
            codes[:, start + i] = code
            errors[:, i] = (column - code * scales) / upper[start + i, start + i]
            part[:, i:] -= np.outer(errors[:, i], upper[start + i, start + i : stop])
        w[:, stop:] -= errors @ upper[start:stop, stop:]
    return codes, scales
