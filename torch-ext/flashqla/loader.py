"""Find and load the prebuilt sm_90a binaries (C-ABI shared libraries) with ctypes.

Each binary exports `init()`, `call(<args>, stream)`, `call_packed(<args in 8-byte slots>, stream)` and
`get_last_error()`; `_binaries/manifest.json` (written by the ahead-of-time build) lists them with their static
parameters and argument kinds. Launches go through `call_packed` (one packed buffer instead of a ctypes
conversion per argument; binaries built before it existed are called through `call`).
Search order for the binaries directory:
  1. $FLASHQLA_BINARIES_DIR
  2. `_binaries/` next to this file (the hub kernel layout and an installed wheel)
  3. `<repo>/build/_binaries` (an editable checkout after `python -m flashqla_kernels.build`)
With FLASHQLA_JIT=1 and tilelang importable, a missing specialisation is compiled at first use into
$FLASHQLA_JIT_CACHE (default ~/.cache/flashqla/jit) with the same programs as the AOT build.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import threading
from pathlib import Path

_CTYPES = {"ptr": ctypes.c_void_p, "i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float,
           "stream": ctypes.c_void_p}
# call_packed's 8-byte slot of each argument kind (aot.add_packed_entry reads them back)
_SLOTS = {"ptr": "Q", "i32": "q", "i64": "q", "f32": "d"}
_LOCK = threading.Lock()
_LOADED: dict[tuple, "Binary"] = {}
_MANIFEST: dict | None = None
_MANIFEST_DIR: Path | None = None


class Binary:
    """One loaded specialisation: `binary(*args, stream=...)` launches it."""

    def __init__(self, path: Path, entry: dict):
        self.path = path
        self.entry = entry
        self.name = entry["name"]
        self.lib = ctypes.CDLL(str(path))
        self.arg_kinds = [a["kind"] for a in entry["args"]]
        # (name, is a pointer) for every argument but the stream, in the generated `call` order
        self.arg_ptrs = [(a["name"], a["kind"] == "ptr") for a in entry["args"] if a["kind"] != "stream"]
        self._call = self.lib.call
        self._call.restype = ctypes.c_int
        self._call.argtypes = [_CTYPES[k] for k in self.arg_kinds]
        self._packed = getattr(self.lib, "call_packed", None)
        if self._packed is not None:
            self._packed.restype = ctypes.c_int
            self._packed.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
            self._slots = struct.Struct("<" + "".join(_SLOTS[k] for k in self.arg_kinds if k != "stream"))
        self.lib.init.restype = ctypes.c_int
        self.lib.get_last_error.restype = ctypes.c_char_p
        self._initialised_devices: set[int] = set()

    def _error(self) -> str:
        return self.lib.get_last_error().decode(errors="replace")

    def ensure_init(self, device_index: int) -> None:
        if device_index in self._initialised_devices:
            return
        import torch

        with torch.cuda.device(device_index):
            if self.lib.init() != 0:
                raise RuntimeError(f"flashqla: init of {self.name} failed: {self._error()}")
        self._initialised_devices.add(device_index)

    def __call__(self, *args, stream: int) -> None:
        if len(args) + 1 != len(self.arg_kinds):
            raise TypeError(f"{self.name}: expected {len(self.arg_kinds) - 1} arguments, got {len(args)}")
        if self._packed is not None:
            status = self._packed(self._slots.pack(*args), stream)
        else:
            status = self._call(*args, ctypes.c_void_p(stream))
        if status != 0:
            raise RuntimeError(f"flashqla: launch of {self.name} failed: {self._error()}")


def _candidate_dirs() -> list[Path]:
    here = Path(os.path.abspath(__file__)).parent  # not resolve(): HF cache files are symlinks to blobs
    dirs = []
    if os.environ.get("FLASHQLA_BINARIES_DIR"):
        dirs.append(Path(os.environ["FLASHQLA_BINARIES_DIR"]))
    dirs.append(here / "_binaries")
    dirs.append(here.parents[1] / "build" / "_binaries")
    return dirs


def binaries_dir() -> Path | None:
    for d in _candidate_dirs():
        if (d / "manifest.json").is_file():
            return d
    return None


def manifest() -> dict:
    global _MANIFEST, _MANIFEST_DIR
    if _MANIFEST is None:
        d = binaries_dir()
        _MANIFEST_DIR = d
        _MANIFEST = json.loads((d / "manifest.json").read_text()) if d else {"kernels": {}}
    return _MANIFEST


def _match(entry: dict, kernel: str, params: dict) -> bool:
    return entry["kernel"] == kernel and all(entry["params"].get(k) == v for k, v in params.items())


def best_entry(entries, kernel: str, params: dict) -> dict | None:
    """The manifest entry of `kernel` for `params`: among the entries whose parameters include `params`, the one with
    the fewest parameters beyond them. A spec lists only the parameters it sets (specs.make_spec), so an entry with
    a parameter the call does not name is a variant beside the default (e.g. kkt_solve_gva's slots=2): a call that
    leaves a parameter out gets the default, whatever the manifest's order (by order alone it once got slots=2).
    Ties (a call naming fewer parameters than every entry has, as a presence check may) go to the first."""
    matches = [e for e in entries if _match(e, kernel, params)]
    return min(matches, key=lambda e: len(e["params"]), default=None)


def find(kernel: str, **params) -> Binary | None:
    """The loaded binary of `kernel` whose static parameters equal `params` (`best_entry`), or None."""
    key = (kernel, *sorted(params.items()))
    if key in _LOADED:
        return _LOADED[key]
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
        entry = best_entry(manifest()["kernels"].values(), kernel, params)
        if entry is not None:
            _LOADED[key] = Binary(_MANIFEST_DIR / entry["library"], entry)
            return _LOADED[key]
        if os.environ.get("FLASHQLA_JIT") == "1":
            _LOADED[key] = _jit_compile(kernel, params)
            return _LOADED[key]
    return None


def _jit_compile(kernel: str, params: dict) -> Binary:
    """Development path: compile one specialisation now with tilelang (FLASHQLA_JIT=1)."""
    try:
        from flashqla_kernels.aot import build_spec
        from flashqla_kernels.specs import make_spec
    except ImportError as e:  # pragma: no cover - needs the repository checkout and tilelang
        raise RuntimeError("FLASHQLA_JIT=1 needs the flashqla_kernels package and tilelang importable") from e
    spec = make_spec(kernel, **params)
    out = Path(os.environ.get("FLASHQLA_JIT_CACHE", Path.home() / ".cache" / "flashqla" / "jit"))
    ck = build_spec(spec, out)
    entry = {"name": spec.name, "kernel": kernel, "params": params, "library": ck.library.name, "args": ck.args}
    return Binary(ck.library, entry)


def available_kernels() -> list[str]:
    return sorted(manifest()["kernels"])
