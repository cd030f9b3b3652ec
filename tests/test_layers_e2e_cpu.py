"""End to end on the CPU: transformers models with flashqla's GDN layers swapped in equal the originals.

Tiny random Qwen3.5 dense, Qwen3.5 MoE and Qwen3-Next models are built from configs (4 layers in
Qwen3.5's 3 linear : 1 full pattern, hidden 64, 2 key heads / 4 value heads of dim 32, so grouped value
attention with ratio 2 is exercised). The GDN decay parameters are re-drawn so the recurrent state
remembers tens to hundreds of tokens (the default init forgets almost everything after one token),
and prompts cross the 64-token chunk boundary, so the carried state matters.

"Swapped" = every GDN module runs flashqla's layer forward (bound onto the module, as kernels does;
one test goes through kernels.kernelize with a CPU-scoped mapping). On the CPU flashqla's op runs its
fp32 reference; "unswapped" runs transformers' own torch fallback. The two compute the same math in
fp32 with a different operation order, so:

- fp32: prefill logits agree to 1e-4 absolute (measured max ~2e-6 at logits of size ~2);
- bf16: the layer output is rounded to bf16 in both, so some elements differ by one bf16 ulp, and that
  propagates (through MoE routing too). Prefill logits (|logit| <= ~2) must agree to max 0.1 and mean
  5e-3 absolute (measured max 0.008-0.063 over 80-100 token prompts, mean 0.6e-3-1.2e-3; 60-70% of
  logits bit-equal), and the
  swapped bf16 model must be no further from the fp32 model than transformers' own bf16 model is
  (x1.1 + 1e-3; measured: equal or closer. transformers' bf16-vs-fp32 error is max 0.07-0.37, mean
  0.008-0.014, i.e. the swap's deviation is well inside bf16's own noise). The 32 greedy tokens are
  required to be identical.

On the H200 (2026-11-22; out-of-tree script, same tiny models with head dims 128, 200-token prompts),
flashqla's bf16 kernels against transformers + FLA's bf16 kernels differ more than the two fp32 paths
here, as two different bf16 kernels do: prefill max|dlogit| 0.11 (dense) to 1.2 (MoE / Next: routing
flips), mean 0.016-0.039 at |logit| <= ~4, and 3-6 of 64 teacher-forced greedy steps differ. Both are
equally far from the fp32 reference (flashqla vs fp32: max 0.17 / 2.06 / 1.70, mean 0.021 / 0.052 /
0.062; FLA vs fp32: max 0.17 / 2.12 / 1.76, mean 0.022 / 0.055 / 0.066 for dense / MoE / Next), so a
GPU version of these tests should compare each bf16 model's distance to the fp32 reference rather than
require equal tokens.
"""

from __future__ import annotations

import copy
import math
import sys
import types
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "torch-ext"))

transformers = pytest.importorskip("transformers")
kernels = pytest.importorskip("kernels")

import flashqla.layers as fl_layers  # noqa: E402
from flashqla.register import kernel_mapping, mark_transformers_classes  # noqa: E402

from transformers import (  # noqa: E402
    DynamicCache,
    LogitsProcessor,
    LogitsProcessorList,
    Qwen3_5ForCausalLM,
    Qwen3_5MoeForCausalLM,
    Qwen3_5MoeTextConfig,
    Qwen3_5TextConfig,
    Qwen3NextConfig,
    Qwen3NextForCausalLM,
)

FAMILIES = ("qwen3_5", "qwen3_5_moe", "qwen3_next")
VOCAB = 256
GEN_TOKENS = 32
TOL = {torch.float32: 1e-4, torch.bfloat16: 0.1}       # max |logit difference|
MEAN_TOL = {torch.float32: 1e-5, torch.bfloat16: 5e-3}  # mean |logit difference|


def _config(family: str):
    common = dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        linear_conv_kernel_dim=4, linear_key_head_dim=32, linear_value_head_dim=32,
        linear_num_key_heads=2, linear_num_value_heads=4,
        layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
        max_position_embeddings=512, initializer_range=0.05, pad_token_id=0,
    )
    moe = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
               shared_expert_intermediate_size=32)
    if family == "qwen3_5":
        return Qwen3_5TextConfig(**common), Qwen3_5ForCausalLM
    if family == "qwen3_5_moe":
        return Qwen3_5MoeTextConfig(**common, **moe), Qwen3_5MoeForCausalLM
    if family == "qwen3_next":
        return Qwen3NextConfig(**common, **moe, decoder_sparse_step=1), Qwen3NextForCausalLM
    raise ValueError(family)


def _is_gdn(module) -> bool:
    return type(module).__name__.endswith("GatedDeltaNet")


_BUILT: dict = {}


def init_gdn_decay(model):
    """Long-memory decay in every GDN layer: A in [0.1, 1], softplus(dt_bias) ~ 0.007 .. 0.13."""
    gen = torch.Generator().manual_seed(99)
    with torch.no_grad():
        for m in model.modules():
            if _is_gdn(m):
                hv = m.A_log.numel()
                m.A_log.copy_(torch.empty(hv).uniform_(0.1, 1.0, generator=gen).log())
                m.dt_bias.copy_(torch.empty(hv).uniform_(-5.0, -2.0, generator=gen))
    return model


def build(family: str, dtype: torch.dtype):
    """A tiny random model in eval mode (cached per family and dtype; tests deepcopy before swapping)."""
    key = (family, dtype)
    if key not in _BUILT:
        config, cls = _config(family)
        torch.manual_seed(1234)
        model = init_gdn_decay(cls(config))
        _BUILT[key] = model.to(dtype).eval()
    return _BUILT[key]


def swapped(model, expected_gdn: int = 3):
    """A copy of ``model`` whose GDN modules (``expected_gdn`` of them) run flashqla's layer forward."""
    new = copy.deepcopy(model)
    n = 0
    for m in new.modules():
        if _is_gdn(m):
            layer = fl_layers.Qwen3NextGatedDeltaNet if "Next" in type(m).__name__ else fl_layers.Qwen3_5GatedDeltaNet
            m.forward = types.MethodType(layer.forward, m)
            n += 1
    assert n == expected_gdn
    return new


def runs_flashqla(model) -> bool:
    fns = {fl_layers.Qwen3_5GatedDeltaNet.forward, fl_layers.Qwen3NextGatedDeltaNet.forward}
    gdn = [m for m in model.modules() if _is_gdn(m)]
    return bool(gdn) and all(getattr(m.forward, "__func__", None) in fns for m in gdn)


def prompts(batch: int = 2, length: int = 80, pad: int = 7, seed: int = 5):
    """Token ids [batch, length] and a mask with the last row left-padded by ``pad`` tokens."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (batch, length), generator=gen)
    mask = torch.ones(batch, length, dtype=torch.long)
    if pad:
        ids[-1, :pad] = 0
        mask[-1, :pad] = 0
    return ids, mask


def _diff(a, b, mask=None):
    d = (a.float() - b.float()).abs()
    return d[mask.bool()] if mask is not None else d


def max_err(a, b, mask=None):
    return _diff(a, b, mask).max().item()


def mean_err(a, b, mask=None):
    return _diff(a, b, mask).mean().item()


# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("family", FAMILIES)
def test_prefill_logits_match(family, dtype):
    base = build(family, dtype)
    fast = swapped(base)
    assert runs_flashqla(fast) and not runs_flashqla(base)
    ids, mask = prompts()
    with torch.no_grad():
        ref = base(ids, attention_mask=mask, use_cache=False).logits
        out = fast(ids, attention_mask=mask, use_cache=False).logits
        # prefill that fills a cache takes the other branch of the conv / state code
        ref_c = base(ids, attention_mask=mask, use_cache=True).logits
        out_c = fast(ids, attention_mask=mask, use_cache=True).logits
    assert torch.isfinite(out).all()
    err, err_c = max_err(out, ref, mask), max_err(out_c, ref_c, mask)
    print(f"{family} {dtype}: prefill max|dlogit| {err:.3g} (cache {err_c:.3g}), max|logit| "
          f"{ref.float().abs().max().item():.3g}")
    assert err <= TOL[dtype] and err_c <= TOL[dtype]
    assert mean_err(out, ref, mask) <= MEAN_TOL[dtype] and mean_err(out_c, ref_c, mask) <= MEAN_TOL[dtype]
    if dtype == torch.bfloat16:
        # the swap must not move the bf16 model away from the fp32 truth more than bf16 itself does
        with torch.no_grad():
            truth = build(family, torch.float32)(ids, attention_mask=mask, use_cache=False).logits
        for stat in (max_err, mean_err):
            assert stat(out, truth, mask) <= 1.1 * stat(ref, truth, mask) + 1e-3


class _ForceTokens(LogitsProcessor):
    """Records the raw next-token logits of each step, then forces the given token (teacher forcing)."""

    def __init__(self, tokens: torch.Tensor):
        self.tokens, self.step, self.logits = tokens, 0, []

    def __call__(self, input_ids, scores):
        self.logits.append(scores.detach().clone())
        forced = torch.full_like(scores, float("-inf"))
        forced.scatter_(1, self.tokens[:, self.step, None], 0.0)
        self.step += 1
        return forced


def _gen_kwargs(mask):
    return dict(attention_mask=mask, max_new_tokens=GEN_TOKENS, min_new_tokens=GEN_TOKENS,
                do_sample=False, pad_token_id=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_generation_matches_bf16(family):
    """Prefill (batch 2, one row left-padded) then 32 single-token decode steps on the cache, bf16.

    The unswapped model generates freely; the swapped one is fed the same tokens (teacher forcing,
    so one near-tie cannot derail the rest) and at each of the 32 steps its raw logits must be within
    the bf16 tolerance and pick the same greedy token, except where the unswapped model's own top-2
    gap is at most 2 bf16 ulps of its top logit: a tie at the resolution bf16 logits have, where the
    choice is decided by rounding (random tiny models have flat logits). Measured with these prompts:
    no such step, so the 32 greedy tokens of both rows are identical for all three families; with
    other prompts 1-ulp ties did occur and were the only differences.
    """
    base = build(family, torch.bfloat16)
    fast = swapped(base)
    ids, mask = prompts()
    with torch.no_grad():
        ref = base.generate(ids, **_gen_kwargs(mask), output_logits=True, return_dict_in_generate=True)
        tokens = ref.sequences[:, ids.shape[1]:]
        force = _ForceTokens(tokens)
        out = fast.generate(ids, **_gen_kwargs(mask), logits_processor=LogitsProcessorList([force]))
    assert torch.equal(out, ref.sequences) and len(force.logits) == GEN_TOKENS
    ties = 0
    for step, (l_ref, l_out) in enumerate(zip(ref.logits, force.logits)):
        l_ref, l_out = l_ref.float(), l_out.float()
        assert max_err(l_out, l_ref) <= TOL[torch.bfloat16], f"step {step}"
        for row in range(l_ref.shape[0]):
            if l_out[row].argmax() != tokens[row, step]:
                top2 = l_ref[row].topk(2).values
                ulp = 2.0 ** (math.floor(math.log2(top2[0].abs().item())) - 7)
                assert top2[0] - top2[1] <= 2 * ulp, f"step {step} row {row}: greedy token differs"
                ties += 1
    print(f"{family}: {ties} near-tie steps of {GEN_TOKENS * 2}")
    assert ties <= 4


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_generation_matches_fp32(family):
    """Free-running greedy generation (left-padded batch, 32 decode steps): identical tokens in fp32."""
    base = build(family, torch.float32)
    fast = swapped(base)
    ids, mask = prompts()
    with torch.no_grad():
        assert torch.equal(fast.generate(ids, **_gen_kwargs(mask)), base.generate(ids, **_gen_kwargs(mask)))


@pytest.mark.parametrize("family", FAMILIES)
def test_multi_token_continuation_on_cache_fp32(family):
    """Prefill 70 tokens into a cache, then feed 30 more in one forward (chunked op with the cached
    state as initial_state) and then 1 (decode); equal to the original and to a single prefill."""
    base = build(family, torch.float32)
    fast = swapped(base)
    ids, _ = prompts(pad=0, length=101)
    res = {}
    with torch.no_grad():
        for name, model in (("ref", base), ("fast", fast)):
            cache = DynamicCache(config=model.config)
            a = model(ids[:, :70], past_key_values=cache, use_cache=True).logits
            b = model(ids[:, 70:100], past_key_values=cache, use_cache=True).logits
            c = model(ids[:, 100:], past_key_values=cache, use_cache=True).logits
            res[name] = torch.cat([a, b, c], dim=1)
        full = fast(ids, use_cache=False).logits
    assert max_err(res["fast"], res["ref"]) <= TOL[torch.float32]
    assert max_err(res["fast"], full) <= TOL[torch.float32]


@pytest.mark.parametrize("family", ["qwen3_5", "qwen3_next"])
def test_packed_sequences_fp32(family):
    """cu_seq_lens_q (batch 1, no cache): each packed sequence equals that sequence run alone
    (transformers' torch path refuses packed sequences without FLA)."""
    base = build(family, torch.float32)
    fast = swapped(base)
    lens = [37, 80, 23]
    gen = torch.Generator().manual_seed(7)
    seqs = [torch.randint(1, VOCAB, (1, n), generator=gen) for n in lens]
    cu = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32)
    pos = torch.cat([torch.arange(n) for n in lens])[None]
    with torch.no_grad():
        ref = torch.cat([base(s, use_cache=False).logits for s in seqs], dim=1)
        out = fast(torch.cat(seqs, dim=1), position_ids=pos, cu_seq_lens_q=cu, cu_seq_lens_k=cu,
                   max_length_q=max(lens), max_length_k=max(lens), use_cache=False).logits
    assert max_err(out, ref) <= TOL[torch.float32]


def test_packed_with_cache_is_refused():
    fast = swapped(build("qwen3_5", torch.float32))
    cu = torch.tensor([0, 3, 8], dtype=torch.int32)
    with torch.no_grad(), pytest.raises(ValueError, match="cu_seq_lens_q"):
        fast(torch.randint(1, VOCAB, (1, 8)), cu_seq_lens_q=cu, cu_seq_lens_k=cu, max_length_q=5,
             max_length_k=5, position_ids=torch.tensor([[0, 1, 2, 0, 1, 2, 3, 4]]), use_cache=True)


def test_autograd_through_reference_fp32():
    """has_backward=False: with autograd recording the layer uses the differentiable reference, so
    gradients of the GDN weights equal those of transformers' forward."""
    base = copy.deepcopy(build("qwen3_5", torch.float32)).train()
    fast = swapped(base).train()
    ids, mask = prompts(length=72, pad=3)
    grads = []
    for model in (base, fast):
        model.zero_grad(set_to_none=True)
        out = model(ids, attention_mask=mask, labels=ids, use_cache=False)
        out.loss.backward()
        gdn = next(m for m in model.modules() if _is_gdn(m))
        grads.append([p.grad.clone() for p in (gdn.in_proj_qkv.weight, gdn.conv1d.weight, gdn.A_log,
                                                 gdn.dt_bias, gdn.in_proj_a.weight, gdn.in_proj_b.weight)])
    for g_ref, g_out in zip(*grads):
        scale = g_ref.abs().max().item()
        assert scale > 0
        assert (g_out - g_ref).abs().max().item() <= 1e-4 * max(scale, 1.0)


def test_kernelize_cpu_scoped_mapping_qwen3_next_bf16():
    """The route users take, with the mapping scoped to the CPU (test only): kernels.kernelize swaps
    Qwen3-Next's GDN modules (tagged by mark_transformers_classes) and the logits still match."""
    base = build("qwen3_next", torch.bfloat16)
    fast = copy.deepcopy(base)
    mark_transformers_classes()
    # functions=False: the function slots are module-level singletons shared by every model of the
    # family, kernelizing them would also change the unswapped models (see test_function_layers_fp32)
    with kernels.use_kernel_mapping(kernel_mapping(devices=["cpu"], functions=False), inherit_mapping=False):
        kernels.kernelize(fast, mode=kernels.Mode.INFERENCE, device="cpu")
    assert runs_flashqla(fast)
    ids, mask = prompts(pad=4)
    with torch.no_grad():
        ref = base(ids, attention_mask=mask, use_cache=False).logits
        out = fast(ids, attention_mask=mask, use_cache=False).logits
    assert max_err(out, ref, mask) <= TOL[torch.bfloat16]


def test_decay_is_long_memory():
    """Guard for the premise of these tests: the re-drawn decays keep the state for many tokens."""
    m = next(m for m in build("qwen3_5", torch.float32).modules() if _is_gdn(m))
    g_bias = -m.A_log.exp() * torch.nn.functional.softplus(m.dt_bias)
    assert (g_bias > -0.2).all() and math.isfinite(g_bias.sum().item())


def test_function_layers_fp32():
    """The function-slot route (transformers' forward, flashqla's ``chunk_gated_delta_rule`` /
    ``recurrent_gated_delta_rule`` layers in its ``chunk_gated_delta_rule`` /
    ``fused_recurrent_gated_delta_rule`` slots, q / k already repeated to HV heads by transformers
    <= 5.22): prefill logits and generation equal transformers' torch functions."""
    base = build("qwen3_5", torch.float32)
    ids, mask = prompts()
    with torch.no_grad():
        ref_logits = base(ids, attention_mask=mask, use_cache=False).logits
        ref_tokens = base.generate(ids, **_gen_kwargs(mask))
    gdn = next(m for m in base.modules() if _is_gdn(m))
    slots = gdn._kernel_funcs  # module-level singletons shared by every Qwen3.5 model: restore them
    try:
        # kernelize the slot modules themselves (a deepcopied model would hold copies of them, which
        # transformers' forward does not call: it calls the module-level singletons)
        with kernels.use_kernel_mapping(kernel_mapping(devices=["cpu"]), inherit_mapping=False):
            for fn in slots.values():
                kernels.kernelize(fn, mode=kernels.Mode.INFERENCE, device="cpu")
        assert slots["chunk_gated_delta_rule"].forward.__func__ is fl_layers.chunk_gated_delta_rule.forward
        assert (slots["fused_recurrent_gated_delta_rule"].forward.__func__
                is fl_layers.recurrent_gated_delta_rule.forward)
        with torch.no_grad():
            out_logits = base(ids, attention_mask=mask, use_cache=False).logits
            out_tokens = base.generate(ids, **_gen_kwargs(mask))
    finally:
        for fn in slots.values():
            fn.__dict__.pop("forward", None)
    assert "forward" not in slots["chunk_gated_delta_rule"].__dict__
    assert max_err(out_logits, ref_logits, mask) <= TOL[torch.float32]
    assert torch.equal(out_tokens, ref_tokens)
