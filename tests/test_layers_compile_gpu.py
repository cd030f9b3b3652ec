"""torch.compile with flashqla's layers on the sm_90 kernels (skips without an H100/H200).

- A bf16 model with a cache and 9 GDN layers (past Dynamo's recompile limit of 8), kernelized with
  ``Mode.INFERENCE | Mode.TORCH_COMPILE``: prefill then decode compiles into as many graphs as the stock
  transformers model, with no graph break; the graphs hold the kernels as custom-op nodes (conv, chunked
  forward, recurrence, gated RMSNorm); run as traced, the result moves from the eager swapped model's by no
  more than the stock model's moves from its own eager result (transformers takes other attention-mask
  branches while compiling; on the CPU, in fp32, both are bit-equal: tests/test_layers_compile_cpu.py).
- The inductor backend (fused surrounding ops) on the 4-layer model: as close to the fp32 model as
  transformers' own bf16 model is (the yardstick of test_layers_gpu.py).
"""

import copy

import pytest
import torch

import flashqla
import flashqla.ops as fops
from test_layers_compile_cpu import compiles_like_stock, prefill_then_decode
from test_layers_e2e_cpu import FAMILIES, mean_err, runs_flashqla
from test_layers_gpu import _model, exact_gdn, swapped_trio

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _needs_kernels(kernels_ready):
    pass


def _kernel_nodes(graphs) -> set[str]:
    """Names of flashqla's custom ops called in the graphs (e.g. "chunk_fwd")."""
    names = set()
    for gm in graphs:
        for node in gm.graph.nodes:
            target = str(node.target)
            if node.op == "call_function" and target.startswith(fops._NS + "."):
                names.add(target.split(".")[1])
    return names


def _inputs(steps=3, length=200, seed=5):
    gen = torch.Generator().manual_seed(seed)
    prompt = torch.randint(1, 512, (2, length), generator=gen).cuda()
    return prompt, [torch.randint(1, 512, (2, 1), generator=gen).cuda() for _ in range(steps)]


@pytest.mark.parametrize("family", FAMILIES)
def test_deep_model_compiles_to_kernel_nodes(family):
    import kernels
    from kernels import Mode

    flashqla.register()
    stock = _model(family, layers=12).cuda().to(torch.bfloat16)
    fast = copy.deepcopy(stock)
    kernels.kernelize(fast, mode=Mode.INFERENCE | Mode.TORCH_COMPILE, device="cuda")
    assert runs_flashqla(fast)
    prompt, steps = _inputs()

    def run(m):
        return prefill_then_decode(m, prompt, steps)

    stock_out, out, graphs = compiles_like_stock(stock, fast, run)
    assert {"conv_qkv", "chunk_fwd", "recurrent_fwd", "gated_rmsnorm"} <= _kernel_nodes(graphs)
    # traced vs eager: transformers itself takes other branches while compiling (attention masks, so other
    # bf16 SDPA kernels), so the swapped model may move by as much as the stock model does, not more
    stock_moved = max((a.float() - b.float()).abs().max().item() for a, b in zip(stock_out, run(stock)))
    moved = max((a.float() - b.float()).abs().max().item() for a, b in zip(out, run(fast)))
    print(f"{family}: compiled vs eager max |dlogit| swapped {moved:.3g}, stock {stock_moved:.3g}")
    assert moved <= 2 * stock_moved + 1e-2, (moved, stock_moved)


def test_inductor_compiled_model_on_kernels():
    import torch._dynamo
    from torch._dynamo.utils import counters

    fp32, base, fast = swapped_trio("qwen3_5")
    prompt, steps = _inputs(steps=2)
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(fast)
    with torch.no_grad():
        with exact_gdn("qwen3_5"):
            truth = fp32(prompt, use_cache=False).logits
        ref = base(prompt, use_cache=False).logits
        out = compiled(prompt, use_cache=False).logits
    assert dict(counters["graph_break"]) == {}
    assert torch.isfinite(out).all()
    assert mean_err(out, truth) <= 1.25 * mean_err(ref, truth) + 1e-3
    # with a cache: prefill and decode steps, against the eager swapped model
    eager = prefill_then_decode(fast, prompt, steps)
    got = prefill_then_decode(compiled, prompt, steps)
    for a, b in zip(got, eager):
        assert mean_err(a, b) <= 0.05 * b.float().abs().mean().item() + 1e-3
