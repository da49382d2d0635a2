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
    ap.add_argument("--dtype", choices=("f32", "bf16", "f16"), default="f32",
                    help="the activations' type (the first input; its result has it too)")
    ap.add_argument("--cpu", action="store_true",
                    help="time the calling thread's CPU time, not the wall clock (a loaded machine; "
                         "exact for caller-path launches only)")
    ap.add_argument("cases", nargs="*")
    o = ap.parse_args()
    todo = list(zip(o.cases[::2], o.cases[1::2])) or [(k, v[0]) for k, v in CASES.items()]
    rng = np.random.default_rng(1)
    clock = time.thread_time_ns if o.cpu else time.perf_counter_ns
    print(f"xir {xir.__version__}, {xir.get_num_threads()} threads, {o.rounds} rounds x {o.n} calls, "
          f"activations {o.dtype}, {'thread CPU time' if o.cpu else 'wall clock'}")
    for kernel, shape in todo:
        dims = {p.split("=")[0]: int(p.split("=")[1]) for p in shape.split(",")}
        _, make, call, plan_args = CASES[kernel]
        arrays = make(dims, rng)
        spec = None
        if o.dtype != "f32":
            import ml_dtypes
            dt = ml_dtypes.bfloat16 if o.dtype == "bf16" else np.float16
            arrays = (arrays[0].astype(dt),) + tuple(arrays[1:])
            spec = f"{xir._P[kernel].params[0][0]}={o.dtype}," + ",".join(
                f"{p[0]}={o.dtype}" for p in xir._P[kernel].params if p[3])
        plan = xir._P[kernel].prepare(dims, spec)
        out = call(arrays, None)
        diffs, diffs_alloc, cs = [], [], []
        for _ in range(o.rounds):
            t_c = plan._time_launch(plan_args(arrays, out), o.n, o.cpu)
            t0 = clock()
            for _ in range(o.n):
                call(arrays, out)
            t_py = (clock() - t0) / o.n
            t0 = clock()
            for _ in range(o.n):
                call(arrays, None)
            t_alloc = (clock() - t0) / o.n
            cs.append(t_c)
            diffs.append(t_py - t_c)
            diffs_alloc.append(t_alloc - t_c)
        print(f"{kernel} {shape} ({plan.candidate}, G={plan.grain}): C launch "
              f"{statistics.median(cs) / 1e3:.2f} us; Python overhead with out= "
              f"{statistics.median(diffs) / 1e3:.2f} us (range {min(diffs) / 1e3:.2f}-"
              f"{max(diffs) / 1e3:.2f}), allocating the result {statistics.median(diffs_alloc) / 1e3:.2f} us")


if __name__ == "__main__":
    main()
