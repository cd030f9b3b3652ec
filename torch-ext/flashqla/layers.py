"""transformers layers served by flashqla (the hub kernel's ``layers`` module).

kernels swaps a layer by binding ``<ours>.forward`` onto the model's own module
(``module.forward = MethodType(ours.forward, module)``), so every ``self.<attr>`` below is the
original module's weight or attribute (``self.in_proj_qkv``, ``self.conv1d``, ``self.norm`` ...).
kernels checks the contract (``kernels.layer.layer._validate_layer``): an ``nn.Module`` subclass, no
``__init__``, no members besides ``forward`` and the class flags ``can_torch_compile`` /
``has_backward``, and a ``forward`` with the same parameter kinds as the one it replaces. All the
work therefore lives in private module-level functions.

Layers:

- :class:`Qwen3_5GatedDeltaNet`: ``Qwen3_5GatedDeltaNet`` and ``Qwen3_5MoeGatedDeltaNet`` (Qwen3.5 and
  Qwen3.6, dense and MoE; both carry ``@use_kernel_forward_from_hub("Qwen3_5GatedDeltaNet")``).
- :class:`Qwen3NextGatedDeltaNet`: ``Qwen3NextGatedDeltaNet`` (not decorated in transformers;
  :func:`flashqla.register` marks it with ``replace_kernel_forward_from_hub``).
- :class:`chunk_gated_delta_rule` / :class:`recurrent_gated_delta_rule`: function layers for the
  ``chunk_gated_delta_rule`` / ``fused_recurrent_gated_delta_rule`` slots that transformers attaches
  to its GDN modules (same names as kernels-community/fla uses for them).

What the two module layers handle, exactly as the transformers forward they replace does (same
projections, conv, gated RMSNorm and cache calls, so outputs match): prefill with and without a
cache, single-token decode on a cache (``fused_recurrent_gated_delta_rule``), multi-token
continuation on a cache (chunked op with the cached state as ``initial_state``), left padding through
the 2-D ``attention_mask`` (padded positions are zeroed before the projections, as transformers does:
with a zero state they leave it zero). Beyond the transformers torch path, packed sequences
(``kwargs["cu_seq_lens_q"]``, batch 1, no cache) are kept apart: the causal conv restarts at every
sequence start and the op gets ``cu_seqlens``. q and k are computed here from the module's own
projections and passed with their H key heads: the op serves HV = R * H value heads without
repeating q / k, whatever transformers' own forward does (<= 5.22 repeats, 5.23 does not).

On an H100/H200 the causal conv (with SiLU, written straight into contiguous q, k, v) and the gated
RMSNorm run as one kernel each (:mod:`flashqla.layer_kernels`), rounding where transformers' torch path
rounds; elsewhere, or for another conv width / activation, the torch code below runs.

Flags. ``has_backward = False``: there is no backward kernel yet, so kernels never picks these layers
for ``Mode.TRAINING`` (it keeps the transformers forward). If a layer runs anyway while autograd is
recording (e.g. an inference-kernelized model called outside ``torch.no_grad``), the op is served by
flashqla's differentiable fp32 reference (:mod:`flashqla.reference`), so gradients stay correct;
on CUDA this is slow and warned once. ``can_torch_compile = True``: the layers trace whole under
torch.compile, with no graph break. The kernels are ``torch.library`` custom ops with fake implementations,
so each launch is one node of the graph; the dispatch decisions that depend only on the machine (GPU,
dtype, binaries present, SM count) are compile constants (:func:`flashqla.dispatch.kernel_plan`), the size
tests are traced code (guards under dynamic shapes), the ``cu_seqlens`` bookkeeping is device ops. A model
with a cache and 9 GDN layers compiles into as many graphs as the stock transformers model (3), with no
recompile per layer (``tests/test_layers_compile_cpu.py``; on the kernels:
``tests/test_layers_compile_gpu.py``).
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch import nn

from . import layer_kernels
from .api import chunk_gated_delta_rule as _chunk_op
from .api import fused_recurrent_gated_delta_rule as _recurrent_op
from .reference import chunk_gated_delta_rule_ref as _chunk_ref
from .reference import recurrent_gated_delta_rule_ref as _recurrent_ref
from .warn import warn_once

__all__ = [
    "Qwen3_5GatedDeltaNet",
    "Qwen3NextGatedDeltaNet",
    "chunk_gated_delta_rule",
    "recurrent_gated_delta_rule",
]


# ----------------------------------------------------------------------------------------------
# The operator call
# ----------------------------------------------------------------------------------------------


def _needs_grad(*tensors) -> bool:
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _gdn(q, k, v, g, beta, *, initial_state, output_final_state, use_qk_l2norm, cu_seqlens,
         decode, scale=None):
    """Run the GDN op: token recurrence when ``decode`` else the chunked form.

    With autograd recording through any input the differentiable reference serves the call (the
    kernels have no backward yet); otherwise the public op, which takes the Hopper kernels when it
    can and the reference when it cannot.
    """
    if _needs_grad(q, k, v, g, beta, initial_state):
        if q.is_cuda:
            warn_once(
                "layers-autograd-reference",
                "flashqla: autograd is recording through a Gated DeltaNet layer and flashqla has no "
                "backward kernel yet, so the differentiable fp32 reference serves it (slow). For "
                "inference, run under torch.no_grad() / torch.inference_mode().",
            )
        fn = _recurrent_ref if decode else _chunk_ref
    else:
        fn = _recurrent_op if decode else _chunk_op
    return fn(q, k, v, g, beta, scale, initial_state, output_final_state, use_qk_l2norm, cu_seqlens)


# ----------------------------------------------------------------------------------------------
# Pieces of the module forward (mirroring transformers' torch path operation for operation)
# ----------------------------------------------------------------------------------------------


def _act(x: torch.Tensor, name: str | None) -> torch.Tensor:
    if name is None:
        return x
    if name in ("silu", "swish"):
        return F.silu(x)
    from transformers.activations import ACT2FN  # any other activation a config may name

    return ACT2FN[name](x)


def _mask_padding(hidden_states: torch.Tensor, attention_mask) -> torch.Tensor:
    """Zero padded positions (2-D mask [B, T], 1 = token), as transformers' apply_mask_to_padding_states."""
    if attention_mask is None or not isinstance(attention_mask, torch.Tensor) or attention_mask.dim() != 2:
        return hidden_states
    dtype = hidden_states.dtype
    return (hidden_states * attention_mask[:, :, None]).to(dtype)


@contextlib.contextmanager
def _conv_hooks(module: nn.Module):
    """Fire accelerate's hook of ``module.conv1d`` around the forward (its weight is used directly,
    not through conv1d's own forward), as transformers' @force_accelerate_hooks("conv1d") does."""
    conv = module.conv1d
    hook = getattr(conv, "_hf_hook", None)
    if hook is not None:
        hook.pre_forward(conv)
    yield
    if hook is not None:
        hook.post_forward(conv, ())


def _conv_full(x: torch.Tensor, weight: torch.Tensor, bias, activation) -> torch.Tensor:
    """Causal depthwise conv over the whole of x [B, C, L] (transformers' causal_conv1d_fn)."""
    L = x.shape[-1]
    out = F.conv1d(x.to(weight.dtype), weight.unsqueeze(1), bias, padding=weight.shape[-1] - 1,
                   groups=x.shape[1])[:, :, :L]
    return _act(out, activation).to(x.dtype)


def _conv_step(x: torch.Tensor, conv_state: torch.Tensor, weight: torch.Tensor, bias, activation):
    """Decode step: x [B, C, L] after conv_state [B, C, S], which is updated in place
    (transformers' causal_conv1d_update)."""
    L = x.shape[-1]
    S = conv_state.shape[-1]
    full = torch.cat([conv_state, x], dim=-1).to(weight.dtype)
    conv_state.copy_(full[:, :, -S:])
    out = F.conv1d(full, weight.unsqueeze(1), bias, padding=0, groups=x.shape[1])[:, :, -L:]
    return _act(out, activation).to(x.dtype)


def _conv_packed(x: torch.Tensor, weight: torch.Tensor, bias, activation, cu_seqlens) -> torch.Tensor:
    """Causal depthwise conv over packed sequences x [1, C, T]: no tap reaches across a sequence start."""
    T = x.shape[-1]
    W = weight.shape[-1]
    xw = x.to(weight.dtype)
    starts = cu_seqlens.to(device=x.device, dtype=torch.long)
    pos = torch.arange(T, device=x.device)
    # position of each token inside its own sequence
    seq_id = torch.searchsorted(starts[1:], pos, right=True)
    local = pos - starts[seq_id]
    xp = F.pad(xw, (W - 1, 0)).float()
    acc = torch.zeros(x.shape[0], x.shape[1], T, dtype=torch.float32, device=x.device)
    for j in range(W):  # tap j reads the token j steps back
        tap = xp[:, :, W - 1 - j: W - 1 - j + T] * weight[:, W - 1 - j, None].float()
        acc = acc + tap * (local >= j).to(acc.dtype)
    if bias is not None:
        acc = acc + bias.float()[:, None]
    return _act(acc.to(weight.dtype), activation).to(x.dtype)


def _recording_past(cache_params, layer_idx: int) -> bool:
    fn = getattr(cache_params, "is_recording_past", None)
    return bool(fn(layer_idx)) if fn is not None else False


def _mixer(self, hidden_states, cache_params, attention_mask, kwargs, project):
    """The GatedDeltaNet forward shared by Qwen3.5 and Qwen3-Next; ``project`` maps the (masked)
    hidden states to mixed_qkv [B, T, 2*key_dim + value_dim], z [B, T, HV, Vd], b and a [B, T, HV]."""
    hidden_states = _mask_padding(hidden_states, attention_mask)
    batch_size, seq_len, _ = hidden_states.shape
    cu_seqlens = kwargs.get("cu_seq_lens_q", None)
    if cu_seqlens is not None:
        if batch_size != 1:
            raise ValueError(
                f"flashqla {type(self).__name__}: packed sequences (cu_seq_lens_q) need batch size 1, "
                f"got hidden_states of shape {list(hidden_states.shape)}"
            )
        if cache_params is not None:
            raise ValueError(
                f"flashqla {type(self).__name__}: packed sequences (cu_seq_lens_q) together with a cache "
                "are not supported (the cache holds one state per batch row, packing puts many sequences "
                "in one row); pass use_cache=False"
            )

    if cache_params is not None:
        if not hasattr(cache_params, "get_conv_state"):
            raise TypeError(
                "flashqla layers need transformers' linear-attention cache API (get_conv_state / "
                "update_conv_state / get_recurrent_state / update_recurrent_state, transformers >= 5.21); "
                f"got {type(cache_params).__name__}"
            )
        conv_state = cache_params.get_conv_state(self.layer_idx, state_idx=0)
        recurrent_state = cache_params.get_recurrent_state(self.layer_idx, state_idx=0)
    else:
        conv_state, recurrent_state = None, None

    mixed_qkv, z, b, a = project(self, hidden_states)
    if cu_seqlens is not None:  # a no-op for a device tensor, so the op's per-tensor cache keeps hitting
        cu_seqlens = cu_seqlens.to(device=mixed_qkv.device)
        if cu_seqlens.dtype not in (torch.int32, torch.int64):
            cu_seqlens = cu_seqlens.to(torch.int32)
    decode_step = conv_state is not None and seq_len == 1
    recording = cache_params is not None and _recording_past(cache_params, self.layer_idx)
    fused = None
    if not decode_step and not recording:  # prefill / continuation: one kernel for conv, SiLU and split
        fused = layer_kernels.conv_qkv(self, mixed_qkv, cu_seqlens, cache_params)
    if fused is not None:
        query, key, value = fused
    else:
        mixed_qkv = mixed_qkv.transpose(1, 2)  # [B, C, T]
        weight = self.conv1d.weight.squeeze(1)
        bias = self.conv1d.bias
        if decode_step and not recording:
            mixed_qkv = _conv_step(mixed_qkv, conv_state, weight, bias, self.activation)
        elif cu_seqlens is not None:
            mixed_qkv = _conv_packed(mixed_qkv, weight, bias, self.activation, cu_seqlens)
        else:
            if cache_params is not None:
                mixed_qkv = cache_params.update_conv_state(mixed_qkv, self.layer_idx,
                                                           conv_kernel_size=self.conv_kernel_size)
            mixed_qkv = _conv_full(mixed_qkv, weight, bias, self.activation)
            if cache_params is not None:  # drop the cached left context
                mixed_qkv = mixed_qkv[:, :, -seq_len:]
        mixed_qkv = mixed_qkv.transpose(1, 2)
        query, key, value = torch.split(mixed_qkv, [self.key_dim, self.key_dim, self.value_dim], dim=-1)
    # H key heads for q and k (no repeat: the op maps value head j to key head j // (HV // H))
    query = query.reshape(batch_size, seq_len, self.num_k_heads, self.head_k_dim)
    key = key.reshape(batch_size, seq_len, self.num_k_heads, self.head_k_dim)
    value = value.reshape(batch_size, seq_len, self.num_v_heads, self.head_v_dim)

    beta = b.sigmoid()
    # fp32 so that an fp16 model cannot turn A into -inf
    g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)

    decode = recurrent_state is not None and seq_len == 1
    core_attn_out, last_state = _gdn(
        query, key, value, g, beta,
        initial_state=recurrent_state,
        output_final_state=cache_params is not None,
        use_qk_l2norm=True,
        cu_seqlens=cu_seqlens,
        decode=decode,
    )
    if cache_params is not None:
        cache_params.update_recurrent_state(last_state, self.layer_idx)

    core_attn_out = core_attn_out.reshape(-1, self.head_v_dim)
    z = z.reshape(-1, self.head_v_dim)
    normed = layer_kernels.gated_rmsnorm(self.norm, core_attn_out, z)
    core_attn_out = self.norm(core_attn_out, z) if normed is None else normed
    core_attn_out = core_attn_out.reshape(batch_size, seq_len, -1)
    return self.out_proj(core_attn_out)


def _project_qwen3_5(self, hidden_states):
    batch_size, seq_len, _ = hidden_states.shape
    mixed_qkv = self.in_proj_qkv(hidden_states)
    z = self.in_proj_z(hidden_states).reshape(batch_size, seq_len, -1, self.head_v_dim)
    b = self.in_proj_b(hidden_states)
    a = self.in_proj_a(hidden_states)
    return mixed_qkv, z, b, a


def _project_qwen3_next(self, hidden_states):
    """Qwen3-Next's fused projections, grouped per key head: [q | k | v (R heads) | z (R heads)] and
    [b (R) | a (R)] for each of the H key heads (R = HV / H)."""
    batch_size, seq_len, _ = hidden_states.shape
    H, R = self.num_k_heads, self.num_v_heads // self.num_k_heads
    Kd, Vd = self.head_k_dim, self.head_v_dim
    qkvz = self.in_proj_qkvz(hidden_states).view(batch_size, seq_len, H, 2 * Kd + 2 * R * Vd)
    ba = self.in_proj_ba(hidden_states).view(batch_size, seq_len, H, 2 * R)
    q, k, v, z = torch.split(qkvz, [Kd, Kd, R * Vd, R * Vd], dim=3)
    b, a = torch.split(ba, [R, R], dim=3)
    mixed_qkv = torch.cat(
        [x.reshape(batch_size, seq_len, -1) for x in (q, k, v)], dim=-1
    )
    z = z.reshape(batch_size, seq_len, -1, Vd)
    b = b.reshape(batch_size, seq_len, self.num_v_heads)
    a = a.reshape(batch_size, seq_len, self.num_v_heads)
    return mixed_qkv, z, b, a


# ----------------------------------------------------------------------------------------------
# The layers kernels maps (only forward + the two flags: kernels' layer contract)
# ----------------------------------------------------------------------------------------------


class Qwen3_5GatedDeltaNet(nn.Module):
    """Gated DeltaNet mixer of Qwen3.5 / Qwen3.6 (dense and MoE) on flashqla's op."""

    can_torch_compile = True
    has_backward = False

    def forward(self, hidden_states, cache_params=None, attention_mask=None, **kwargs):
        with _conv_hooks(self):
            return _mixer(self, hidden_states, cache_params, attention_mask, kwargs, _project_qwen3_5)


class Qwen3NextGatedDeltaNet(nn.Module):
    """Gated DeltaNet mixer of Qwen3-Next on flashqla's op."""

    can_torch_compile = True
    has_backward = False

    def forward(self, hidden_states, cache_params=None, attention_mask=None, **kwargs):
        with _conv_hooks(self):
            return _mixer(self, hidden_states, cache_params, attention_mask, kwargs, _project_qwen3_next)


class chunk_gated_delta_rule(nn.Module):  # noqa: N801  (named after the transformers slot it fills)
    """Function layer for transformers' ``chunk_gated_delta_rule`` slot (signature of its torch
    fallback). ``chunk_size`` is ignored (the kernels use 64); FLA's ``cu_seqlens`` and ``scale``
    are taken from kwargs. q / k may have H or HV heads."""

    can_torch_compile = True
    has_backward = False

    def forward(self, query, key, value, g, beta, chunk_size=64, initial_state=None,
                output_final_state=False, use_qk_l2norm_in_kernel=False, **kwargs):
        return _gdn(query, key, value, g, beta, initial_state=initial_state,
                    output_final_state=bool(output_final_state),
                    use_qk_l2norm=bool(use_qk_l2norm_in_kernel),
                    cu_seqlens=kwargs.get("cu_seqlens", None), decode=False,
                    scale=kwargs.get("scale", None))


class recurrent_gated_delta_rule(nn.Module):  # noqa: N801
    """Function layer for transformers' ``fused_recurrent_gated_delta_rule`` slot (decode)."""

    can_torch_compile = True
    has_backward = False

    def forward(self, query, key, value, g, beta, initial_state=None, output_final_state=False,
                use_qk_l2norm_in_kernel=False, **kwargs):
        return _gdn(query, key, value, g, beta, initial_state=initial_state,
                    output_final_state=bool(output_final_state),
                    use_qk_l2norm=bool(use_qk_l2norm_in_kernel),
                    cu_seqlens=kwargs.get("cu_seqlens", None), decode=True,
                    scale=kwargs.get("scale", None))
