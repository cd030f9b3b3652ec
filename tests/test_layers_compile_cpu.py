"""torch.compile around the swapped layers (CPU: the reference path) gives eager's result, bit for bit,
without a cache and with one (prefill, then decode steps).

The kernel launches are torch.compiler.disable regions (graph breaks, run eagerly between graphs; on CPU
they decline at once); aot_eager keeps the same kernels, so any difference would be a tracing error, not
rounding. This is correctness only: the layers still declare can_torch_compile=False, because with a cache
the frames resumed after each graph break recompile per layer and, from about 8 GDN layers on, fall back
to eager at Dynamo's recompile limit (layers.py).
"""

import pytest
import torch

from test_layers_e2e_cpu import FAMILIES, build, swapped


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
    from transformers import DynamicCache

    model = swapped(build(family, torch.float32))
    gen = torch.Generator().manual_seed(4)
    prompt = torch.randint(1, 200, (2, 40), generator=gen)
    steps = [torch.randint(1, 200, (2, 1), generator=gen) for _ in range(3)]

    def run(m):
        cache = DynamicCache(config=model.config)
        outs = [m(prompt, past_key_values=cache, use_cache=True).logits]
        outs += [m(s, past_key_values=cache, use_cache=True).logits for s in steps]
        return outs

    torch._dynamo.reset()
    with torch.no_grad():
        ref = run(model)
        out = run(torch.compile(model, backend="aot_eager"))
    assert all(torch.equal(a, b) for a, b in zip(out, ref))
