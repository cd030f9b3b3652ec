"""flashqla's transformers layers against kernels' layer contract, and what register() maps where.

No GPU needed: kernels is asked to kernelize for ``device="cuda"`` with its capability probe
(``kernels.layer.repos._find_capability``) patched, so the capability scoping (9.0 only) is exercised
exactly as on an H100 / H200 while the model stays on the CPU (where the swapped layer runs the
reference).
"""

from __future__ import annotations

import copy
import inspect
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "torch-ext"))

transformers = pytest.importorskip("transformers")
kernels = pytest.importorskip("kernels")

import kernels.layer.repos as kernels_repos  # noqa: E402
from kernels import Mode  # noqa: E402
from kernels.layer.globals import _KERNEL_MAPPING  # noqa: E402
from kernels.layer.layer import _validate_layer  # noqa: E402

import flashqla.layers as fl_layers  # noqa: E402
from flashqla.register import (  # noqa: E402
    FUNCTION_NAMES,
    LAYER_NAMES,
    PackageLayerRepository,
    kernel_mapping,
    mark_transformers_classes,
    register,
)
from transformers.models.qwen3_5 import modeling_qwen3_5 as m35  # noqa: E402
from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as m35moe  # noqa: E402
from transformers.models.qwen3_next import modeling_qwen3_next as mnext  # noqa: E402

MODULE_PAIRS = [
    (m35.Qwen3_5GatedDeltaNet, fl_layers.Qwen3_5GatedDeltaNet),
    (m35moe.Qwen3_5MoeGatedDeltaNet, fl_layers.Qwen3_5GatedDeltaNet),
    (mnext.Qwen3NextGatedDeltaNet, fl_layers.Qwen3NextGatedDeltaNet),
]
FUNCTION_PAIRS = [
    (type(mod.torch_chunk_gated_delta_rule), fl_layers.chunk_gated_delta_rule)
    for mod in (m35, m35moe, mnext)
] + [
    (type(mod.torch_recurrent_gated_delta_rule), fl_layers.recurrent_gated_delta_rule)
    for mod in (m35, m35moe, mnext)
]
ALL_LAYERS = [fl_layers.Qwen3_5GatedDeltaNet, fl_layers.Qwen3NextGatedDeltaNet,
              fl_layers.chunk_gated_delta_rule, fl_layers.recurrent_gated_delta_rule]


def _ids(pairs):
    return [f"{a.__name__}<-{b.__name__}" for a, b in pairs]


# ------------------------------------------------------------------------------------------------
# The layer contract, checked by kernels' own validator
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("check_cls,cls", MODULE_PAIRS + FUNCTION_PAIRS, ids=_ids(MODULE_PAIRS + FUNCTION_PAIRS))
def test_kernels_validate_layer(check_cls, cls):
    _validate_layer(check_cls=check_cls, cls=cls, repo=PackageLayerRepository(cls.__name__))


def test_validator_is_not_vacuous():
    class WithHelper(nn.Module):
        has_backward = False

        def helper(self):
            return 0

        def forward(self, hidden_states, cache_params=None, attention_mask=None, **kwargs):
            return hidden_states

    class WrongKinds(nn.Module):
        def forward(self, hidden_states, cache_params=None, *, attention_mask=None, **kwargs):
            return hidden_states

    for bad in (WithHelper, WrongKinds):
        with pytest.raises(TypeError):
            _validate_layer(check_cls=m35.Qwen3_5GatedDeltaNet, cls=bad, repo="test")


@pytest.mark.parametrize("cls", ALL_LAYERS, ids=lambda c: c.__name__)
def test_flags_and_no_state(cls):
    assert issubclass(cls, nn.Module) and cls.__init__ is nn.Module.__init__
    # no backward kernel yet; compile-ready (traced whole: tests/test_layers_compile_cpu.py)
    assert cls.has_backward is False and cls.can_torch_compile is True
    own = {n for n, _ in inspect.getmembers(cls)} - {n for n, _ in inspect.getmembers(nn.Module)}
    assert own <= {"can_torch_compile", "has_backward"}


def test_forward_kinds_match_exactly():
    for check_cls, cls in MODULE_PAIRS + FUNCTION_PAIRS:
        ref = [(p.name, p.kind) for p in inspect.signature(check_cls.forward).parameters.values()]
        ours = [(p.name, p.kind) for p in inspect.signature(cls.forward).parameters.values()]
        # same kinds (kernels' check) and, for clarity, the same names
        assert ours == ref, (check_cls, ref, ours)


# ------------------------------------------------------------------------------------------------
# register(): what is mapped, where
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def isolated_mapping():
    """A clean kernels mapping for the test (restored afterwards)."""
    with kernels.use_kernel_mapping({}, inherit_mapping=False):
        yield


@pytest.fixture
def capability(monkeypatch):
    def set_capability(cap: int):
        monkeypatch.setattr(kernels_repos, "_find_capability", lambda: cap)

    return set_capability


def _lookup(name: str, device_type: str):
    entry = _KERNEL_MAPPING.get().get(name, {}).get(device_type)
    return None if entry is None else entry.repos


def test_register_scopes_to_capability_90(isolated_mapping, capability):
    mapping = register()
    assert set(mapping) == set(LAYER_NAMES) | set(FUNCTION_NAMES)
    for name in mapping:
        (device,) = mapping[name]
        assert device.type == "cuda"
        assert (device.properties.min_capability, device.properties.max_capability) == (90, 90)
    capability(90)
    for name, layer in {**LAYER_NAMES, **FUNCTION_NAMES}.items():
        repos = _lookup(name, "cuda")
        assert repos == {Mode.FALLBACK: PackageLayerRepository(layer)}
        assert repos[Mode.FALLBACK].load() is getattr(fl_layers, layer)
    for cap in (80, 86, 89, 100, 120, 121):
        capability(cap)
        assert all(not _lookup(name, "cuda") for name in mapping), cap
    assert _lookup("Qwen3_5GatedDeltaNet", "cpu") is None
    register()  # idempotent
    capability(90)
    assert _lookup("Qwen3_5GatedDeltaNet", "cuda") == {Mode.FALLBACK: PackageLayerRepository("Qwen3_5GatedDeltaNet")}


def test_register_wins_over_transformers_defaults_on_sm90_only(isolated_mapping, capability):
    from transformers.integrations.hub_kernels import register_kernel_mapping_transformers

    register()
    register_kernel_mapping_transformers()  # what use_kernels=True adds (after ours, here)
    capability(90)
    for name in ("Qwen3_5GatedDeltaNet", "chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule"):
        assert all(isinstance(r, PackageLayerRepository) for r in _lookup(name, "cuda").values()), name
    capability(121)  # transformers' own GB10 entry stays
    assert not any(isinstance(r, PackageLayerRepository) for r in _lookup("Qwen3_5GatedDeltaNet", "cuda").values())
    capability(80)  # transformers' unscoped FLA entry stays
    assert not any(isinstance(r, PackageLayerRepository) for r in _lookup("chunk_gated_delta_rule", "cuda").values())


def test_register_modes_and_sources():
    with pytest.raises(ValueError, match="backward"):
        kernel_mapping(Mode.TRAINING)
    with pytest.raises(ValueError, match="backward"):
        kernel_mapping(Mode.TRAINING | Mode.TORCH_COMPILE)
    compiled = kernel_mapping(Mode.INFERENCE | Mode.TORCH_COMPILE, devices=["cpu"])
    assert compiled["Qwen3_5GatedDeltaNet"]["cpu"] == {
        Mode.INFERENCE | Mode.TORCH_COMPILE: PackageLayerRepository("Qwen3_5GatedDeltaNet")}
    with pytest.raises(ValueError, match="source"):
        kernel_mapping(source="nowhere")
    m = kernel_mapping(Mode.INFERENCE, devices=["cpu"])
    assert m["Qwen3_5GatedDeltaNet"]["cpu"] == {Mode.INFERENCE: PackageLayerRepository("Qwen3_5GatedDeltaNet")}
    local = kernel_mapping(source="local", devices=["cpu"])["Qwen3NextGatedDeltaNet"]["cpu"]
    assert isinstance(local, kernels.LocalLayerRepository) and local.layer_name == "Qwen3NextGatedDeltaNet"
    hub = kernel_mapping(source="hub", devices=["cpu"])["fused_recurrent_gated_delta_rule"]["cpu"]
    assert isinstance(hub, kernels.LayerRepository) and hub.layer_name == "recurrent_gated_delta_rule"
    assert kernel_mapping(functions=False).keys() == LAYER_NAMES.keys()


def test_qwen3_next_class_is_tagged():
    mark_transformers_classes()
    assert mnext.Qwen3NextGatedDeltaNet.kernel_layer_name == "Qwen3NextGatedDeltaNet"
    assert m35.Qwen3_5GatedDeltaNet.kernel_layer_name == "Qwen3_5GatedDeltaNet"
    assert m35moe.Qwen3_5MoeGatedDeltaNet.kernel_layer_name == "Qwen3_5GatedDeltaNet"
    assert mark_transformers_classes() == []  # nothing left to tag


# ------------------------------------------------------------------------------------------------
# kernelize after register(): swaps on sm_90 only, only for inference
# ------------------------------------------------------------------------------------------------


def _tiny(family: str):
    common = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=2, num_key_value_heads=1, head_dim=16, linear_conv_kernel_dim=4,
                  linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
                  linear_num_value_heads=4, layer_types=["linear_attention", "full_attention"],
                  max_position_embeddings=256)
    torch.manual_seed(0)
    if family == "qwen3_next":
        cfg = transformers.Qwen3NextConfig(**common, num_experts=2, num_experts_per_tok=1,
                                           moe_intermediate_size=32, shared_expert_intermediate_size=32)
        return transformers.Qwen3NextForCausalLM(cfg).eval()
    return transformers.Qwen3_5ForCausalLM(transformers.Qwen3_5TextConfig(**common)).eval()


def _gdn_forwards(model):
    return [m.forward.__func__ for m in model.modules() if type(m).__name__.endswith("GatedDeltaNet")]


OURS = {fl_layers.Qwen3_5GatedDeltaNet.forward, fl_layers.Qwen3NextGatedDeltaNet.forward}


@pytest.mark.parametrize("family", ["qwen3_5", "qwen3_next"])
def test_kernelize_swaps_on_sm90_inference_only(family, isolated_mapping, capability):
    base = _tiny(family)
    # functions=False: kernelizing the function slots would patch transformers' module-level
    # singletons for every later model in this process
    register(functions=False)
    ids = torch.randint(0, 128, (1, 70))
    with torch.no_grad():
        ref = base(ids, use_cache=False).logits

    cases = [(90, Mode.INFERENCE, True), (90, Mode.TRAINING, False),
             (90, Mode.INFERENCE | Mode.TORCH_COMPILE, True), (80, Mode.INFERENCE, False),
             (100, Mode.INFERENCE, False), (121, Mode.INFERENCE, False)]
    for cap, mode, swapped in cases:
        capability(cap)
        model = copy.deepcopy(base)
        kernels.kernelize(model, mode=mode, device="cuda")
        forwards = _gdn_forwards(model)
        assert forwards and all((f in OURS) == swapped for f in forwards), (cap, mode)
        if swapped:  # the swapped model still runs here on the CPU (reference path) and matches
            with torch.no_grad():
                out = model(ids, use_cache=False).logits
            assert (out - ref).abs().max().item() < 1e-4


def test_kernelize_on_cpu_keeps_original(isolated_mapping):
    model = _tiny("qwen3_5")
    register()
    kernels.kernelize(model, mode=Mode.INFERENCE)  # device inferred: cpu
    assert not any(f in OURS for f in _gdn_forwards(model))


def test_from_pretrained_use_kernels_follows_train_eval(isolated_mapping, tmp_path):
    """from_pretrained(..., use_kernels=True) after register() swaps the layers (here with the CPU
    mapped, test only); model.train() re-kernelizes to transformers' forward (has_backward=False) and
    model.eval() back to flashqla's."""
    _tiny("qwen3_5").save_pretrained(tmp_path)
    register(functions=False)
    register(devices=["cpu"], functions=False)
    model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, use_kernels=True).eval()
    assert all(f in OURS for f in _gdn_forwards(model))
    model.train()
    assert not any(f in OURS for f in _gdn_forwards(model))
    model.eval()
    assert all(f in OURS for f in _gdn_forwards(model))


# ------------------------------------------------------------------------------------------------
# Offline sources: a local kernel repository (build/<variant>/) and an HF cache laid out as the hub
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hub_layout_dir():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    hub_layout = pytest.importorskip("flashqla_kernels.hub_layout")
    tmp = Path(tempfile.mkdtemp(prefix="flashqla-layout-"))
    hub_layout.write_hub_layout(ROOT, tmp / "build", None)
    return tmp, hub_layout


def test_local_source_loads_package_under_another_name(hub_layout_dir, isolated_mapping):
    """source='local' loads the layers from build/torch-cpu (kernels imports the package under its
    metadata id, which checks that layers.py / register.py only use relative imports)."""
    repo_dir, _ = hub_layout_dir
    base = _tiny("qwen3_5")
    model = copy.deepcopy(base)
    with kernels.use_kernel_mapping(kernel_mapping(source="local", repo_path=repo_dir, devices=["cpu"],
                                                   functions=False)):
        kernels.kernelize(model, mode=Mode.INFERENCE, device="cpu")
    (fwd,) = _gdn_forwards(model)
    assert fwd.__qualname__ == "Qwen3_5GatedDeltaNet.forward" and fwd not in OURS
    assert not fwd.__module__.startswith("flashqla")  # the copy from build/, not this checkout
    ids = torch.randint(0, 128, (2, 67))
    with torch.no_grad():
        assert (model(ids).logits - base(ids).logits).abs().max().item() < 1e-4


def test_hub_source_from_offline_hf_cache(hub_layout_dir):
    """source='hub' resolves qwen/flashqla version 1 from an HF cache with HF_HUB_OFFLINE=1."""
    repo_dir, hub_layout = hub_layout_dir
    cache = repo_dir / "hf"
    if not cache.exists():
        hub_layout.write_hub_cache(cache, repo_dir / "build")
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'torch-ext')!r})\n"
        "from flashqla.register import kernel_mapping\n"
        "repo = kernel_mapping(source='hub', devices=['cpu'])['Qwen3NextGatedDeltaNet']['cpu']\n"
        "cls = repo.load()\n"
        "assert cls.__name__ == 'Qwen3NextGatedDeltaNet' and not cls.__module__.startswith('flashqla')\n"
        "print('loaded', cls.__module__)\n"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(cache))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "loaded" in r.stdout, r.stderr[-3000:]
