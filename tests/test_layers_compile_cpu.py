"""torch.compile over the swapped layers (CPU: the reference path), the evidence for can_torch_compile=True.

The kernel launches are torch.compiler.disable regions (graph breaks; run eagerly between graphs, where on
CPU they decline at once); everything else in the layer is traced, and the compiled model must equal eager
to the bit (aot_eager keeps the same kernels, so any difference would be a tracing error, not rounding).
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


def test_only_kernel_launches_break_the_graph():
    import torch._dynamo

    model = swapped(build("qwen3_5", torch.float32))
    ids = torch.randint(1, 200, (1, 40), generator=torch.Generator().manual_seed(4))
    torch._dynamo.reset()
    with torch.no_grad():
        explained = torch._dynamo.explain(model)(ids, use_cache=False)
    reasons = [str(r.reason) for r in explained.break_reasons]
    assert reasons and all("torch.compiler.disable" in r for r in reasons), [r[:200] for r in reasons]
