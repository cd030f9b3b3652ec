"""Which manifest entry the runtime's loader picks for a call's parameters (`loader.best_entry`). CPU only.

A spec lists only the parameters it sets, so a variant beside the default carries one parameter more (the entries below
are session 31's case: kkt_solve_gva's two-slot experiment, slots=2, beside the one-slot kernel; today grid_order=slots
is such a variant). A call that leaves that parameter out must get the default whatever the manifest's order: by order
alone, "factor_fetch-per_head__slots-2" sorts before "factor_fetch-per_head__use_l2norm-0" and was what every one-slot
call got (found by timing in session 31).
"""

import json
from pathlib import Path

import pytest

from flashqla import loader

REPO = Path(__file__).resolve().parent.parent


def _entry(kernel, **params):
    return {"kernel": kernel, "params": params}


ENTRIES = [  # the variant first, as the sorted manifest has it
    _entry("kkt_solve_gva", dtype="bfloat16", factor_fetch="per_head", slots=2, use_l2norm=False),
    _entry("kkt_solve_gva", dtype="bfloat16", factor_fetch="per_head", use_l2norm=False),
    _entry("kkt_solve_gva", dtype="bfloat16", factor_fetch="once", use_l2norm=False),
]


def test_default_variant_when_the_parameter_is_left_out():
    e = loader.best_entry(ENTRIES, "kkt_solve_gva", {"dtype": "bfloat16", "use_l2norm": False,
                                                     "factor_fetch": "per_head"})
    assert "slots" not in e["params"] and e["params"]["factor_fetch"] == "per_head"


def test_named_variant_when_asked_for():
    e = loader.best_entry(ENTRIES, "kkt_solve_gva", {"dtype": "bfloat16", "use_l2norm": False,
                                                     "factor_fetch": "per_head", "slots": 2})
    assert e["params"]["slots"] == 2


def test_no_entry_for_unknown_parameters():
    assert loader.best_entry(ENTRIES, "kkt_solve_gva", {"dtype": "float16"}) is None
    assert loader.best_entry(ENTRIES, "chunk_fwd", {"dtype": "bfloat16"}) is None


@pytest.mark.skipif(not (REPO / "build" / "_binaries" / "manifest.json").is_file(),
                    reason="no <repo>/build yet (run python -m flashqla_kernels.build)")
def test_real_manifest_every_entry_is_reachable_by_its_own_parameters():
    """Each built specialisation is what a call naming exactly its parameters gets (no entry shadows another)."""
    entries = list(json.loads((REPO / "build" / "_binaries" / "manifest.json").read_text())["kernels"].values())
    for e in entries:
        assert loader.best_entry(entries, e["kernel"], e["params"]) is e, e["params"]
