"""Run a notebook's code cells top to bottom as one script (for the GPU machine, which has no Jupyter).

Same cells, same order, one namespace; figures go to PNG files instead of a notebook output.
python benchmarks/run_notebook.py examples/flashqla_tour.ipynb OUT_DIR
"""

import json
import os
import sys


def main():
    path, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = []

    def show(*_a, **_k):
        name = os.path.join(out, f"figure_{len(shown)}.png")
        plt.gcf().savefig(name, dpi=100)
        shown.append(name)
        print(f"[figure saved: {name}]")

    plt.show = show
    cells = [c for c in json.load(open(path))["cells"] if c["cell_type"] == "code"]
    os.chdir(os.path.dirname(os.path.abspath(path)))
    ns = {"__name__": "__main__"}
    for i, cell in enumerate(cells):
        print(f"--- cell {i + 1}/{len(cells)}")
        exec(compile("".join(cell["source"]), f"{path}:cell{i + 1}", "exec"), ns)
    print(f"notebook ran top to bottom: {len(cells)} code cells, {len(shown)} figure(s)")


if __name__ == "__main__":
    main()
