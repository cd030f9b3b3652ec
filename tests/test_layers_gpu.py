"""GPU end-to-end check of the transformers layers on the sm_90 kernels (skips without an H100/H200).

Tiny random Qwen3.5 dense / MoE / Qwen3-Next models with head dim 128 (so the kernels, not the reference,
serve the GDN layers), bf16. bf16 logits of two implementations of the same model differ at the level of
bf16 noise, and on flat random models that flips near-tied greedy tokens, so the check is the one that
separates right from wrong: flashqla's bf16 model must be no further from the fp32 model than
transformers' own bf16 model is (mean |logit difference|, 25% margin). On an H200 the scratch version of
this check measured 0.021 / 0.052 / 0.062 (flashqla) against 0.022 / 0.055 / 0.066 (transformers + FLA).
"""

import contextlib
import copy
import importlib

import pytest
import torch

import flashqla
import flashqla.ops as fops
from test_layers_e2e_cpu import FAMILIES, init_gdn_decay, mean_err, runs_flashqla

pytestmark = pytest.mark.gpu


def _model(family, dense_mlp=False, layers=4):
    """A tiny random model with head dims 128 (the kernels' size); ``layers`` in the 3 linear : 1 full
    pattern."""
    import transformers

    common = dict(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=layers,
                  num_attention_heads=2, num_key_value_heads=1, head_dim=128, linear_conv_kernel_dim=4,
                  linear_key_head_dim=128, linear_value_head_dim=128, linear_num_key_heads=2,
                  linear_num_value_heads=4,
                  layer_types=(["linear_attention"] * 3 + ["full_attention"]) * (layers // 4),
                  max_position_embeddings=4096, initializer_range=0.05, pad_token_id=0)
    moe = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=128, shared_expert_intermediate_size=128)
    if family == "qwen3_5":
        cfg, cls = transformers.Qwen3_5TextConfig(**common), transformers.Qwen3_5ForCausalLM
    elif family == "qwen3_5_moe":
        cfg, cls = transformers.Qwen3_5MoeTextConfig(**common, **moe), transformers.Qwen3_5MoeForCausalLM
    else:
        extra = dict(mlp_only_layers=list(range(common["num_hidden_layers"]))) if dense_mlp else {}
        cfg, cls = (transformers.Qwen3NextConfig(**common, **moe, decoder_sparse_step=1, **extra),
                    transformers.Qwen3NextForCausalLM)
    torch.manual_seed(1234)
    return init_gdn_decay(cls(cfg)).eval()


_MODELING = {"qwen3_5": "qwen3_5", "qwen3_5_moe": "qwen3_5_moe", "qwen3_next": "qwen3_next"}


def _pure_torch(fn):
    """transformers' torch function behind its wrappers: kernels' Func module (the function sits in its
    forward's closure), then transformers' FLA fallback (functools.wraps keeps the torch one)."""
    if isinstance(fn, torch.nn.Module):
        cells = [c.cell_contents for c in (type(fn).forward.__closure__ or ())]
        fn = next(c for c in cells if callable(c))
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    assert fn.__module__.startswith("transformers.models."), fn
    return fn


@contextlib.contextmanager
def exact_gdn(family):
    """Run transformers' own pure-torch GDN functions (chunked prefill and the recurrence) instead of
    FLA's: the fp32 model is the yardstick, and FLA (or FlashQLA behind it) runs fp32 inputs through
    kernels whose matmuls are not exact fp32, with errors that correlate with its bf16 run."""
    mod = importlib.import_module(f"transformers.models.{_MODELING[family]}.modeling_{_MODELING[family]}")
    saved = {}
    for name in ("torch_chunk_gated_delta_rule", "torch_recurrent_gated_delta_rule"):
        saved[name] = getattr(mod, name)
        setattr(mod, name, _pure_torch(saved[name]))
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(mod, name, fn)


def swapped_trio(family, dense_mlp=False):
    """The fp32 model, its bf16 copy (transformers' forward) and a bf16 copy whose GDN layers run flashqla.
    dense_mlp: Qwen3-Next with dense MLPs in every layer (no expert routing to flip between bf16 runs)."""
    import kernels
    from kernels import Mode

    flashqla.register()
    fp32 = _model(family, dense_mlp).cuda()
    base = copy.deepcopy(fp32).to(torch.bfloat16)
    fast = copy.deepcopy(base)
    kernels.kernelize(fast, mode=Mode.INFERENCE, device="cuda")
    assert runs_flashqla(fast)
    return fp32, base, fast


@pytest.fixture(autouse=True)
def _needs_kernels(kernels_ready):
    pass


@pytest.mark.parametrize("family", FAMILIES)
def test_swapped_bf16_model_on_kernels(family, monkeypatch):
    calls = []
    orig = fops.ChunkForward.__call__  # every chunked forward on the kernels runs one (eager, fast path, custom op)
    monkeypatch.setattr(fops.ChunkForward, "__call__", lambda self, *a, **k: calls.append(1) or orig(self, *a, **k))
    fp32, base, fast = swapped_trio(family)
    gen = torch.Generator().manual_seed(5)
    ids = torch.randint(1, 512, (2, 200), generator=gen).cuda()
    mask = torch.ones_like(ids)
    mask[1, :9] = 0
    ids[1, :9] = 0
    with torch.no_grad():
        with exact_gdn(family):
            truth = fp32(ids, attention_mask=mask, use_cache=False).logits
        ref = base(ids, attention_mask=mask, use_cache=False).logits
        out = fast(ids, attention_mask=mask, use_cache=False).logits
    assert calls, "the swapped layers did not reach the GPU kernels"
    assert torch.isfinite(out).all()
    assert mean_err(out, truth, mask) <= 1.25 * mean_err(ref, truth, mask) + 1e-3
