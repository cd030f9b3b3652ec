"""Argument checks for the Gated DeltaNet entry points.

:func:`validate_inputs` checks ranks, shapes, dtypes and devices of every argument and returns a
:class:`Problem` describing the call. Errors are :class:`ValueError` (wrong shape or value) or
:class:`TypeError` (wrong type or dtype); each message names the argument, what was expected and what came.

Checks on the *values* of ``cu_seqlens`` need them on the host. For a CPU tensor that is free; for a CUDA
tensor it is a device-to-host sync, done only when ``check_values=True``. :func:`cu_seqlens_host` reads
the values and caches them per tensor, so repeated calls with the same tensor (every layer of a model
forward) sync at most once.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import torch

__all__ = ["Problem", "validate_inputs", "cu_seqlens_host"]


@dataclass(frozen=True)
class Problem:
    """Sizes of one Gated DeltaNet call.

    B: batch size (1 when varlen); T: tokens per batch row (all packed tokens when varlen);
    H: query/key heads; HV: value heads (a multiple of H); K: key head dim; V: value head dim;
    N: number of sequences (B, or len(cu_seqlens) - 1 when varlen); is_varlen: cu_seqlens was given.
    """

    B: int
    T: int
    H: int
    HV: int
    K: int
    V: int
    N: int
    is_varlen: bool


_CACHE_SIZE = 64
_cache: OrderedDict[tuple, tuple[weakref.ref, list[int]]] = OrderedDict()
_cache_lock = threading.Lock()


def tensor_version(t: torch.Tensor) -> int | None:
    """t's version counter, or None for an inference tensor (made under torch.inference_mode): it has none,
    in-place writes to it are not tracked, so nothing may be cached on it."""
    return None if t.is_inference() else t._version


def cu_seqlens_host(cu_seqlens: torch.Tensor) -> list[int]:
    """Return the values of ``cu_seqlens`` as a Python list, caching them per tensor.

    The cache key is (device, data_ptr, version counter, numel); a hit also requires the cached entry
    to refer to this very tensor object (held weakly), so a new tensor that the allocator places at a
    freed tensor's address is never served stale values. In-place writes bump ``_version`` and miss.
    A CUDA tensor costs one device-to-host sync on a miss and none on a hit. An inference tensor has no
    version counter and is read every call.
    """
    version = tensor_version(cu_seqlens)
    if version is None:
        return [int(x) for x in cu_seqlens.tolist()]
    key = (str(cu_seqlens.device), cu_seqlens.data_ptr(), version, cu_seqlens.numel())
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0]() is cu_seqlens:
            _cache.move_to_end(key)
            return hit[1]
    values = [int(x) for x in cu_seqlens.tolist()]
    with _cache_lock:
        _cache[key] = (weakref.ref(cu_seqlens), values)
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return values


def _shape(t: torch.Tensor) -> list[int]:
    return list(t.shape)


def _require_tensor(name: str, x: object) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    return x


def _require_shape(name: str, t: torch.Tensor, expected: list[int], layout: str, why: str) -> None:
    if _shape(t) != expected:
        raise ValueError(f"{name}: expected shape {layout} = {expected} {why}, got {_shape(t)}")


def _require_floating(name: str, t: torch.Tensor) -> None:
    if not t.is_floating_point():
        raise TypeError(f"{name}: expected a floating-point dtype, got {t.dtype}")


def validate_inputs(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor | None,
    output_final_state: bool,
    check_values: bool = False,
) -> Problem:
    """Check the arguments of a Gated DeltaNet call and return its :class:`Problem`.

    Expected (DESIGN.md section 1): q, k [B, T, H, K]; v [B, T, HV, V] with HV % H == 0, same dtype as q
    and k; g [B, T, HV] and beta [B, T, HV], floating point; scale None or a finite number;
    initial_state None or [N, HV, K, V] floating point; cu_seqlens None or a 1-D integer tensor
    [N + 1] with B == 1, starting at 0, non-decreasing, ending at T; every tensor on q's device.

    The values of ``cu_seqlens`` are checked when it is on the CPU, or on another device when
    ``check_values`` is True (one device-to-host sync per distinct tensor, see :func:`cu_seqlens_host`).

    Raises:
        TypeError: an argument of the wrong Python type or dtype, or q/k/v dtypes that differ.
        ValueError: a wrong rank or shape, HV % H != 0, bad cu_seqlens, or tensors on different devices.
    """
    for name, x in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta)):
        _require_tensor(name, x)
    if q.dim() != 4:
        raise ValueError(f"q: expected a 4-D tensor [B, T, H, K], got {q.dim()}-D shape {_shape(q)}")
    B, T, H, K = q.shape
    _require_shape("k", k, [B, T, H, K], "[B, T, H, K]", "matching q")
    if v.dim() != 4:
        raise ValueError(f"v: expected a 4-D tensor [B, T, HV, V], got {v.dim()}-D shape {_shape(v)}")
    if list(v.shape[:2]) != [B, T]:
        raise ValueError(
            f"v: expected shape [B, T, HV, V] with [B, T] = {[B, T]} matching q, got {_shape(v)}"
        )
    HV, V = v.shape[2], v.shape[3]
    if H == 0 or HV % H != 0:
        raise ValueError(
            f"v: expected the number of value heads HV to be a positive multiple of the key heads "
            f"H = {H} (q's dim 2), got HV = {HV}"
        )
    _require_shape("g", g, [B, T, HV], "[B, T, HV]", "matching q and v")
    _require_shape("beta", beta, [B, T, HV], "[B, T, HV]", "matching q and v")

    device = q.device
    for name, t in (("k", k), ("v", v), ("g", g), ("beta", beta)):
        if t.device != device:
            raise ValueError(f"{name}: expected a tensor on q's device {device}, got one on {t.device}")

    _require_floating("q", q)
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise TypeError(f"{name}: expected dtype {q.dtype} matching q, got {t.dtype}")
    _require_floating("g", g)
    _require_floating("beta", beta)

    if scale is not None:
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            raise TypeError(f"scale: expected None or a real number, got {type(scale).__name__}")
        if not math.isfinite(scale):
            raise ValueError(f"scale: expected a finite number, got {scale}")
    if not isinstance(output_final_state, bool):
        raise TypeError(
            f"output_final_state: expected a bool, got {type(output_final_state).__name__}"
        )

    is_varlen = cu_seqlens is not None
    N = B
    if is_varlen:
        _require_tensor("cu_seqlens", cu_seqlens)
        if cu_seqlens.device != device:
            raise ValueError(
                f"cu_seqlens: expected a tensor on q's device {device}, got one on {cu_seqlens.device}"
            )
        if cu_seqlens.dim() != 1:
            raise ValueError(
                f"cu_seqlens: expected a 1-D tensor [N + 1], got {cu_seqlens.dim()}-D shape "
                f"{_shape(cu_seqlens)}"
            )
        if cu_seqlens.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"cu_seqlens: expected dtype torch.int32 or torch.int64, got {cu_seqlens.dtype}")
        if cu_seqlens.numel() < 2:
            raise ValueError(
                f"cu_seqlens: expected at least 2 entries [0, ..., T] (one sequence or more), "
                f"got {cu_seqlens.numel()}"
            )
        if B != 1:
            raise ValueError(f"q: expected batch size B = 1 when cu_seqlens is given (packed varlen), got B = {B}")
        N = cu_seqlens.numel() - 1
        if cu_seqlens.device.type == "cpu" or check_values:
            _check_cu_seqlens_values(cu_seqlens_host(cu_seqlens), T)

    if initial_state is not None:
        _require_tensor("initial_state", initial_state)
        _require_shape(
            "initial_state", initial_state, [N, HV, K, V], "[N, HV, K, V]",
            "(N sequences, HV value heads, K, V)",
        )
        if initial_state.device != device:
            raise ValueError(
                f"initial_state: expected a tensor on q's device {device}, got one on {initial_state.device}"
            )
        _require_floating("initial_state", initial_state)

    return Problem(B=B, T=T, H=H, HV=HV, K=K, V=V, N=N, is_varlen=is_varlen)


def _check_cu_seqlens_values(values: list[int], T: int) -> None:
    if values[0] != 0:
        raise ValueError(f"cu_seqlens: expected cu_seqlens[0] = 0, got {values[0]}")
    for i in range(1, len(values)):
        if values[i] < values[i - 1]:
            raise ValueError(
                f"cu_seqlens: expected non-decreasing offsets, got cu_seqlens[{i - 1}] = {values[i - 1]} "
                f"> cu_seqlens[{i}] = {values[i]}"
            )
    if values[-1] != T:
        raise ValueError(
            f"cu_seqlens: expected cu_seqlens[-1] = T = {T} (q's dim 1), got {values[-1]}"
        )
