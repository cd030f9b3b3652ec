"""The benchmark grid of DESIGN.md section 2: head configs, sequence layouts, inputs and roofline floors."""

import torch

HEAD_CONFIGS = {  # name: (H key heads, HV value heads) per GPU
    "397B-TP1": (16, 64), "397B-TP2": (8, 32), "397B-TP4": (4, 16), "397B-TP8": (2, 8),
    "27B-TP1": (16, 48), "27B-TP2": (8, 24), "35B-TP1": (16, 32), "2B-TP1": (16, 16),
}
SEQ_LAYOUTS = {  # name: sequence lengths packed into one varlen batch
    "1x32768": [32768], "1x8192": [8192], "1x2048": [2048], "16384+16384": [16384, 16384],
    "8192x4": [8192] * 4, "1024x8": [1024] * 8,
}


def seq_layout(name: str) -> list[int]:
    """The sequence lengths of a layout: a grid layout by name, or any other "LENxCOUNT" (COUNT sequences of LEN
    tokens, e.g. "2048x16") for probes off the grid."""
    if name in SEQ_LAYOUTS:
        return SEQ_LAYOUTS[name]
    length, count = (int(x) for x in name.split("x"))
    return [length] * count


K = V = 128
FLOP_PER_TOKEN_HEAD = 166_600
PEAK = {"H200": (790e12, 4.3e12), "H100": (790e12, 3.0e12)}  # measured bf16 FLOP/s, HBM bytes/s


def device_kind() -> str:
    name = torch.cuda.get_device_name()
    return "H200" if "H200" in name else "H100"


def floor_seconds(H: int, HV: int, seqlens: list[int], kind: str) -> float:
    T, N = sum(seqlens), len(seqlens)
    flop = FLOP_PER_TOKEN_HEAD * T * HV
    bytes_ = (512 * H / HV + 264) * T * HV + 128 * 1024 * N * HV
    peak_flop, peak_bw = PEAK[kind]
    return max(flop / peak_flop, bytes_ / peak_bw)


def make_inputs(H: int, HV: int, seqlens: list[int], seed: int = 0, device="cuda"):
    """DESIGN.md section 2 inputs: bf16 q/k/v (q, k L2-normalised), g = logsigmoid(randn)/16 with 25% of
    heads at g = 0, beta = sigmoid(randn) fp32, h0 fp32, packed varlen B = 1."""
    gen = torch.Generator(device=device).manual_seed(seed)
    T, N = sum(seqlens), len(seqlens)
    q = torch.nn.functional.normalize(torch.randn(1, T, H, K, device=device, generator=gen), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(1, T, H, K, device=device, generator=gen), dim=-1)
    v = torch.randn(1, T, HV, V, device=device, generator=gen)
    g = torch.nn.functional.logsigmoid(torch.randn(1, T, HV, device=device, generator=gen)) / 16
    g[..., torch.arange(HV, device=device) % 4 == 0] = 0.0
    beta = torch.sigmoid(torch.randn(1, T, HV, device=device, generator=gen))
    h0 = 0.1 * torch.randn(N, HV, K, V, device=device, generator=gen)
    cu = torch.tensor([0] + list(torch.tensor(seqlens).cumsum(0).tolist()), dtype=torch.int32, device=device)
    bf = torch.bfloat16
    return dict(q=q.to(bf), k=k.to(bf), v=v.to(bf), g=g, beta=beta, initial_state=h0, cu_seqlens=cu)


def placed_inputs(H: int, HV: int, seqlens: list[int], placements: int):
    """(p, inputs) for the memory placements p = 0 .. placements - 1 of one row, made one after another: placement
    p > 0 puts the inputs (and so the call's outputs and workspaces) behind one more spacer of p x (37 MiB + 4 KiB), the
    spacers kept until the loop ends (results/2026-11-24-h200-s17/placement: freeing each spacer before the next
    placement spread the times far less). The caller drops its reference to a placement's inputs at the end of the loop
    body, so that the next ones are made after they are freed."""
    spacers = []
    for p in range(placements):
        if p:
            spacers.append(torch.empty(p * (37 << 20) + p * 4096, dtype=torch.uint8, device="cuda"))
        yield p, make_inputs(H, HV, seqlens)
