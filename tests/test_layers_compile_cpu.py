"""torch.compile around the swapped layers (CPU: the reference path).

- Compiled equals eager, bit for bit, without a cache and with one (prefill, then decode steps): aot_eager
  keeps the same kernels, so any difference would be a tracing error, not rounding.
- A model with 9 GDN layers (past Dynamo's recompile limit of 8) compiles into as many graphs as the stock
  transformers model, with no graph break. On the CPU this covers the layer code around the ops (the conv,
  norm and op helpers decline at their device test, which traces; before this session each of them was a
  graph break and this model compiled into 43 graphs); the kernel path itself (compile-constant plans,
  custom-op nodes) is covered by tests/test_layers_compile_gpu.py on an sm_90 GPU, and the plan's size tests
  under dynamic shapes by tests/test_ops_fake.py.
"""

import pytest
import torch

from test_layers_e2e_cpu import FAMILIES, _config, build, init_gdn_decay, swapped

DEEP_LAYERS = 12  # 9 GDN + 3 full attention layers


def deep_config(config, layers: int = DEEP_LAYERS):
    """``config`` with ``layers`` layers in Qwen3.5's 3 linear : 1 full pattern."""
    config.num_hidden_layers = layers
    config.layer_types = (["linear_attention"] * 3 + ["full_attention"]) * (layers // 4)
    if hasattr(config, "mlp_only_layers") and config.mlp_only_layers:
        config.mlp_only_layers = list(range(layers))
    return config


def compile_and_count(model, run):
    """Run ``run(compiled_model)`` under torch.compile with a backend that records each graph (and runs it
    as traced). Returns (run's result, the graphs, the graph-break counter)."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    out = run(torch.compile(model, backend=backend))
    return out, graphs, dict(counters["graph_break"])


def compiles_like_stock(stock, fast, run):
    """Compile ``stock`` and ``fast`` (its swapped copy) around ``run``; assert the swapped model has no graph
    break and as many graphs as the stock one. Returns (stock's outputs, fast's outputs, fast's graphs)."""
    stock_out, stock_graphs, _ = compile_and_count(stock, run)
    out, graphs, breaks = compile_and_count(fast, run)
    assert breaks == {}, f"graph breaks in the swapped model: {list(breaks)}"
    assert len(graphs) == len(stock_graphs), (len(graphs), len(stock_graphs))
    return stock_out, out, graphs


def prefill_then_decode(model, prompt, steps):
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    with torch.no_grad():
        outs = [model(prompt, past_key_values=cache, use_cache=True).logits]
        outs += [model(s, past_key_values=cache, use_cache=True).logits for s in steps]
    return outs


@pytest.mark.parametrize("family", FAMILIES)
def test_compiled_swapped_model_equals_eager(family):
    import torch._dynamo

    model = swapped(build(family, torch.float32))
    ids = torch.randint(1, 200, (2, 70), generator=torch.Generator().manual_seed(3))
    torch._dynamo.reset()
    with torch.no_grad():
        ref = model(ids, use_cache=False).logits
        out = torch.compile(model, backend="aot_eager")(ids, use_cache=False).logits
    assert torch.equal(out, ref)


@pytest.mark.parametrize("family", FAMILIES)
def test_compiled_swapped_model_with_cache_equals_eager(family):
    import torch._dynamo

    model = swapped(build(family, torch.float32))
    gen = torch.Generator().manual_seed(4)
    prompt = torch.randint(1, 200, (2, 40), generator=gen)
    steps = [torch.randint(1, 200, (2, 1), generator=gen) for _ in range(3)]
    torch._dynamo.reset()
    ref = prefill_then_decode(model, prompt, steps)
    out = prefill_then_decode(torch.compile(model, backend="aot_eager"), prompt, steps)
    assert all(torch.equal(a, b) for a, b in zip(out, ref))


@pytest.mark.parametrize("family", FAMILIES)
def test_deep_model_compiles_like_stock(family):
    config, cls = _config(family)
    torch.manual_seed(0)
    stock = init_gdn_decay(cls(deep_config(config))).eval()
    fast = swapped(stock, expected_gdn=9)
    gen = torch.Generator().manual_seed(4)
    prompt = torch.randint(1, 200, (2, 40), generator=gen)
    steps = [torch.randint(1, 200, (2, 1), generator=gen) for _ in range(3)]

    def run(m):
        return prefill_then_decode(m, prompt, steps)

    _, out, _ = compiles_like_stock(stock, fast, run)
    ref = run(fast)
    assert all(torch.equal(a, b) for a, b in zip(out, ref))
