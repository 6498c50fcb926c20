"""Server-side time of a view at the largest random model, without a browser: hit and miss.

The page's whole script in AppTest (``/attention``, ``weights=random&d_model=768&heads=16``,
a text of about 2,000 characters): a fresh text (a cache miss), then the same script
again (a repeated view, a hit). Checkouts are measured alternately, each in a subprocess
with ``PYTHONPATH`` set to it, so the same machine load falls on both.

Run: ``python benchmarks/memory_script.py /work/main . [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ONE_ROUND = """
import json, sys, time
sys.path.insert(0, {bench!r})
from memory import LARGEST, long_text
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({main!r}, default_timeout=600)
at.query_params.update({{**LARGEST, "text": long_text({i})}})
at.run()
at.switch_page("../pages/attention.py")
start = time.perf_counter(); at.run(); miss = time.perf_counter() - start
start = time.perf_counter(); at.run(); hit = time.perf_counter() - start
assert not at.exception, at.exception
print(json.dumps({{"miss": miss, "hit": hit}}))
"""


def one_round(root, i):
    code = ONE_ROUND.format(bench=str(HERE), main=str(Path(root) / "app" / "main.py"), i=i)
    env = {**os.environ, "PYTHONPATH": str(root), "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd="/", capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("roots", nargs="+")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    roots = [str(Path(root).resolve()) for root in args.roots]
    times = {root: {"hit": [], "miss": []} for root in roots}
    print(f"load average at the start: {os.getloadavg()}")
    for r in range(args.rounds):
        for root in roots:
            result = one_round(root, 500 + r)
            for kind in ("hit", "miss"):
                times[root][kind].append(result[kind])
            print(f"{root}: miss {result['miss']:.2f} s, hit {result['hit']:.2f} s", flush=True)
    print(f"load average at the end: {os.getloadavg()}")
    print("| checkout | fresh view (miss), s | repeated view (hit), s |")
    print("| --- | ---: | ---: |")
    for root, kinds in times.items():
        cells = [
            f"{statistics.median(kinds[k]):.2f} ({min(kinds[k]):.2f}–{max(kinds[k]):.2f})"
            for k in ("miss", "hit")
        ]
        print(f"| {root} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
