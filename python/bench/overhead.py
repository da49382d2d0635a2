"""Per-call overhead of the Python path over the C launch, in one process, paired per round.

    python python/bench/overhead.py [--rounds 7] [--n 20000] [KERNEL SHAPE ...]

For each case: t_c = ns per xir_session_launch in a C loop over the same bound arrays
(Plan._time_launch, no Python in the loop) and t_py = ns per call of the xir function (with
out=, so no allocation; and without out=, allocating the result), alternating within each round;
the overhead is the median over rounds of t_py - t_c."""
import argparse
import statistics
import time

import numpy as np

import xir

# kernel -> (default shape, make inputs, the Python call, the plan's argument tuple)
CASES = {
    "rmsnorm": ("R=1,C=64",
                lambda d, rng: (rng.random((d["R"], d["C"]), np.float32), rng.random(d["C"], np.float32)),
                lambda a, out: xir.rmsnorm(a[0], a[1], out=out),
                lambda a, out: (a[0], a[1], out, None)),
    "swiglu": ("R=1,C=64",
               lambda d, rng: (rng.random((d["R"], d["C"]), np.float32),
                               rng.random((d["R"], d["C"]), np.float32)),
               lambda a, out: xir.swiglu(a[0], a[1], out=out),
               lambda a, out: (a[0], a[1], out)),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("cases", nargs="*")
    o = ap.parse_args()
    todo = list(zip(o.cases[::2], o.cases[1::2])) or [(k, v[0]) for k, v in CASES.items()]
    rng = np.random.default_rng(1)
    print(f"xir {xir.__version__}, {xir.get_num_threads()} threads, {o.rounds} rounds x {o.n} calls")
    for kernel, shape in todo:
        dims = {p.split("=")[0]: int(p.split("=")[1]) for p in shape.split(",")}
        _, make, call, plan_args = CASES[kernel]
        arrays = make(dims, rng)
        plan = xir._P[kernel].prepare(dims)
        out = call(arrays, None)
        diffs, diffs_alloc, cs = [], [], []
        for _ in range(o.rounds):
            t_c = plan._time_launch(plan_args(arrays, out), o.n)
            t0 = time.perf_counter_ns()
            for _ in range(o.n):
                call(arrays, out)
            t_py = (time.perf_counter_ns() - t0) / o.n
            t0 = time.perf_counter_ns()
            for _ in range(o.n):
                call(arrays, None)
            t_alloc = (time.perf_counter_ns() - t0) / o.n
            cs.append(t_c)
            diffs.append(t_py - t_c)
            diffs_alloc.append(t_alloc - t_c)
        print(f"{kernel} {shape} ({plan.candidate}, G={plan.grain}): C launch "
              f"{statistics.median(cs) / 1e3:.2f} us; Python overhead with out= "
              f"{statistics.median(diffs) / 1e3:.2f} us (range {min(diffs) / 1e3:.2f}-"
              f"{max(diffs) / 1e3:.2f}), allocating the result {statistics.median(diffs_alloc) / 1e3:.2f} us")


if __name__ == "__main__":
    main()
