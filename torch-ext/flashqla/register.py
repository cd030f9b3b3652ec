"""One call that routes transformers' Gated DeltaNet layers to flashqla on Hopper.

    import flashqla
    flashqla.register()
    model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.bfloat16, device_map="cuda",
                                                 use_kernels=True)
    # or, on a model already built:  kernels.kernelize(model, mode=kernels.Mode.INFERENCE)

:func:`register` adds layer mappings to kernels' global mapping (kernels 0.17.2, the version that
transformers 5.20.2-5.22.2 accepts), scoped to ``Device("cuda", CUDAProperties(90, 90))``: only an
sm_90 GPU (H100 / H200 / H20 / GH200) selects them; other GPUs and the CPU keep the original forward
(kernelize finds no mapping for their device or capability and falls back).

Where the layers come from (``source``):

- ``"package"`` (default): the ``layers`` module of the flashqla package this function belongs to,
  through :class:`PackageLayerRepository`, a minimal object satisfying kernels' repository protocol
  (``load()`` returning the layer class). No network, no build directory, no HF cache: it works
  offline with whatever flashqla was imported, a pip install, a source checkout or the package that
  ``get_kernel("qwen/flashqla")`` itself loaded. This is the default because the one-call enable is
  run from flashqla, so flashqla is by construction importable, and serving another copy (from the
  hub or a build directory) would mix two versions of the package in one process. kernels still
  checks each layer against the class it replaces (``_validate_layer``) when it loads it.
- ``"local"``: ``kernels.LocalLayerRepository(repo_path)``, a kernel repository on disk whose
  ``build/<variant>/`` directories were written by ``flashqla_kernels.hub_layout`` (``repo_path``
  defaults to the checkout this file lives in, two levels up). kernels picks the variant matching
  this machine and validates its metadata; offline.
- ``"hub"``: ``kernels.LayerRepository("qwen/flashqla", version=1)``, what users of the published
  kernel get: needs the network or a warm HF cache (``HF_HUB_OFFLINE=1``). kernels' ``LOCAL_KERNELS``
  override also applies here.

Modes: with ``mode=None`` the mappings are registered for every mode (``Mode.FALLBACK``) and kernels
applies the layers' flags: while ``has_backward`` is False, kernelize uses flashqla for
``Mode.INFERENCE`` and ``Mode.INFERENCE | Mode.TORCH_COMPILE`` (the layers are compile-ready) and keeps
transformers' forward for ``Mode.TRAINING`` (``model.train()`` re-kernelizes a transformers model, so
training falls back by itself). Naming a mode the layers cannot serve raises here rather than in kernelize.

``Qwen3NextGatedDeltaNet`` carries no ``@use_kernel_forward_from_hub`` in transformers: register marks
it with ``kernels.replace_kernel_forward_from_hub`` (as it does any Qwen3.5 GDN class found undecorated,
which happens when transformers runs with ``USE_HUB_KERNELS=0``).

transformers' ``use_kernels=True`` also registers transformers' own default hub mappings (for
RMSNormGated, causal_conv1d, ...) and tries to fetch those kernels; flashqla's capability-90 entries
are narrower than its unscoped ``cuda`` entries, so kernels prefers flashqla's on sm_90. For a run that
must not touch the network, call ``kernels.kernelize(model, mode=Mode.INFERENCE)`` (only the
mappings registered here and any you add) instead of ``use_kernels=True``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "HUB_REPO_ID",
    "LAYER_NAMES",
    "FUNCTION_NAMES",
    "PackageLayerRepository",
    "kernel_mapping",
    "mark_transformers_classes",
    "register",
]

HUB_REPO_ID = "qwen/flashqla"

# kernels layer name (what transformers' classes are tagged with) -> class in flashqla.layers
LAYER_NAMES = {
    "Qwen3_5GatedDeltaNet": "Qwen3_5GatedDeltaNet",
    "Qwen3NextGatedDeltaNet": "Qwen3NextGatedDeltaNet",
}
# transformers' function slots -> function layer in flashqla.layers
FUNCTION_NAMES = {
    "chunk_gated_delta_rule": "chunk_gated_delta_rule",
    "fused_recurrent_gated_delta_rule": "recurrent_gated_delta_rule",
}

# transformers classes to tag (module path, class name, kernels layer name)
_TRANSFORMERS_CLASSES = (
    ("transformers.models.qwen3_next.modeling_qwen3_next", "Qwen3NextGatedDeltaNet", "Qwen3NextGatedDeltaNet"),
    ("transformers.models.qwen3_5.modeling_qwen3_5", "Qwen3_5GatedDeltaNet", "Qwen3_5GatedDeltaNet"),
    ("transformers.models.qwen3_5_moe.modeling_qwen3_5_moe", "Qwen3_5MoeGatedDeltaNet", "Qwen3_5GatedDeltaNet"),
)


class PackageLayerRepository:
    """A kernels layer repository serving a layer of this flashqla package (no download, no build dir).

    kernels only needs ``load()`` (returning the layer class) and hashing (it memoises loaded layers
    per repository)."""

    def __init__(self, layer_name: str):
        self.layer_name = layer_name

    def load(self):
        from . import layers

        layer = getattr(layers, self.layer_name, None)
        if layer is None:
            raise ValueError(f"Layer `{self.layer_name}` not found in {layers.__name__}")
        return layer

    def __eq__(self, other):
        return isinstance(other, PackageLayerRepository) and other.layer_name == self.layer_name

    def __hash__(self):
        return hash((PackageLayerRepository, self.layer_name))

    def __str__(self):
        return f"flashqla package `{__package__}`, layer `{self.layer_name}`"

    __repr__ = __str__


def _default_repo_path() -> Path:
    # torch-ext/flashqla/register.py -> the checkout root, where build/<variant>/ lives
    return Path(__file__).resolve().parents[2]


def _repository(source: str, layer_name: str, repo_path, repo_id: str, version, revision):
    if source == "package":
        return PackageLayerRepository(layer_name)
    from kernels import LayerRepository, LocalLayerRepository

    if source == "local":
        path = Path(repo_path) if repo_path is not None else _default_repo_path()
        return LocalLayerRepository(repo_path=path, layer_name=layer_name)
    if source == "hub":
        if revision is not None:
            version = None
        return LayerRepository(repo_id, layer_name=layer_name, version=version, revision=revision,
                               trust_remote_code=[repo_id])
    raise ValueError(f"source: expected 'package', 'local' or 'hub', got {source!r}")


def _check_mode(mode) -> None:
    from kernels import Mode

    from . import layers

    if mode is None:
        return
    if not isinstance(mode, Mode) or mode == Mode.FALLBACK:
        raise ValueError(f"mode: expected None or a kernels.Mode such as Mode.INFERENCE, got {mode!r}")
    every = [getattr(layers, n) for n in (*LAYER_NAMES.values(), *FUNCTION_NAMES.values())]
    if Mode.TRAINING in mode and not all(layer.has_backward for layer in every):
        raise ValueError(
            f"mode: {mode} asks for training, but flashqla's layers have no backward kernel yet "
            "(has_backward=False); register with mode=None (inference uses flashqla, training keeps "
            "transformers' forward) or Mode.INFERENCE"
        )
    if Mode.TORCH_COMPILE in mode and not all(layer.can_torch_compile for layer in every):
        raise ValueError(
            f"mode: {mode} asks for torch.compile, but flashqla's layers are not compile-ready yet "
            "(can_torch_compile=False); register with mode=None or Mode.INFERENCE"
        )


def kernel_mapping(
    mode=None,
    *,
    source: str = "package",
    repo_path: str | Path | None = None,
    repo_id: str = HUB_REPO_ID,
    version: int | None = 1,
    revision: str | None = None,
    devices=None,
    functions: bool = True,
) -> dict:
    """Build (without registering) the kernels mapping that :func:`register` registers.

    ``devices`` defaults to ``[Device("cuda", CUDAProperties(min_capability=90, max_capability=90))]``;
    tests pass ``["cpu"]`` to exercise the layers through kernelize on a machine without a GPU.
    ``functions`` also maps transformers' ``chunk_gated_delta_rule`` /
    ``fused_recurrent_gated_delta_rule`` function slots (used by GDN modules that are not swapped
    whole). See the module docstring for ``mode`` and ``source``.
    """
    from kernels import CUDAProperties, Device

    _check_mode(mode)
    if devices is None:
        devices = [Device(type="cuda", properties=CUDAProperties(min_capability=90, max_capability=90))]
    names = dict(LAYER_NAMES)
    if functions:
        names.update(FUNCTION_NAMES)
    mapping: dict = {}
    for kernels_name, layer_name in names.items():
        repo = _repository(source, layer_name, repo_path, repo_id, version, revision)
        per_device = {}
        for device in devices:
            per_device[device] = repo if mode is None else {mode: repo}
        mapping[kernels_name] = per_device
    return mapping


def mark_transformers_classes() -> list[str]:
    """Tag transformers' GDN classes that lack a kernels layer name (always Qwen3NextGatedDeltaNet;
    the Qwen3.5 ones only when transformers left them undecorated). Returns the classes tagged.
    Missing transformers or models are skipped."""
    import importlib

    tagged = []
    for module_name, class_name, layer_name in _TRANSFORMERS_CLASSES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        cls = getattr(module, class_name, None)
        if cls is None or getattr(cls, "kernel_layer_name", None) is not None:
            continue
        from kernels import replace_kernel_forward_from_hub

        replace_kernel_forward_from_hub(cls, layer_name)
        tagged.append(class_name)
    return tagged


def register(
    mode=None,
    *,
    source: str = "package",
    repo_path: str | Path | None = None,
    repo_id: str = HUB_REPO_ID,
    version: int | None = 1,
    revision: str | None = None,
    devices=None,
    functions: bool = True,
) -> dict:
    """Enable flashqla's layers for kernels / transformers on sm_90 GPUs; returns the mapping registered.

    After this call, ``AutoModelForCausalLM.from_pretrained(..., use_kernels=True)`` or
    ``kernels.kernelize(model, mode=Mode.INFERENCE)`` on a model on an sm_90 GPU runs flashqla's
    ``Qwen3_5GatedDeltaNet`` (Qwen3.5 / 3.6 dense and MoE) and ``Qwen3NextGatedDeltaNet`` layers.

    Args:
        mode: None (default: every mode; kernels applies the layers' has_backward / can_torch_compile
            flags, so inference, compiled or not, uses flashqla and training keeps transformers' forward) or a
            kernels.Mode the layers support (e.g. ``Mode.INFERENCE``).
        source: ``"package"`` (this package, offline; default), ``"local"`` (a kernel repository with
            ``build/<variant>/`` at ``repo_path``) or ``"hub"`` (``repo_id`` at ``version`` / ``revision``).
        devices: kernels devices to scope the mapping to (default: cuda, capability 9.0 only).
        functions: also map the ``chunk_gated_delta_rule`` / ``fused_recurrent_gated_delta_rule`` slots.

    Idempotent: registering again replaces the same entries.
    """
    from kernels import register_kernel_mapping

    mapping = kernel_mapping(mode, source=source, repo_path=repo_path, repo_id=repo_id, version=version,
                             revision=revision, devices=devices, functions=functions)
    mark_transformers_classes()
    register_kernel_mapping(mapping)
    return mapping
