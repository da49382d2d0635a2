#!/usr/bin/env python3
"""xir_peer.py — the Python-side row of `xir bench --suite peers`: the built-in kernels called
through the xir Python package, served as an external peer (the line-JSON protocol of
docs/peers.md, "External peers"), so that the bench times them in the same run, visit order and
rounds as xir's C launches and torch eager:

    xir bench --suite peers --peers-dir ~/.cache/xir-peers \
        --peer "xir_python=build/pyenv/bin/python python/bench/xir_peer.py"

Each call is what a user writes (`y = xir.rmsnorm(x, w)`: the result allocated per call, as torch
eager does); `--out` preallocates it instead. `--threads N` = xir.set_num_threads(N) (default 2,
as the other peers). stdout carries the protocol only."""
import argparse
import json
import math
import os
import sys
import time
import traceback

_answer = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

import numpy as np  # noqa: E402

import xir  # noqa: E402


def reply(obj):
    _answer.write(json.dumps(obj, separators=(",", ":")) + "\n")
    _answer.flush()


def _attn_scale(s):
    v = float(s.get("scale", 0.0))
    return v if v > 0 else None


# kernel -> (inputs with their dims, the call: (inputs, dims, scalars, out) -> y)
KERNELS = {
    "rmsnorm": ([("x", "R C"), ("w", "C")],
                lambda t, d, s, o: xir.rmsnorm(t["x"], t["w"], float(s.get("eps", 1e-5)), out=o)),
    "layernorm": ([("x", "R C"), ("w", "C"), ("b", "C")],
                  lambda t, d, s, o: xir.layernorm(t["x"], t["w"], t["b"], float(s.get("eps", 1e-5)), out=o)),
    "rope": ([("x", "R C")],
             lambda t, d, s, o: xir.rope(t["x"], d["HD"], float(s.get("theta", 10000.0)),
                                         int(s.get("offset", 0)), out=o)),
    "rope_cache": ([("x", "R C"), ("pos", "R"), ("cos", "P H2"), ("sin", "P H2")],
                   lambda t, d, s, o: xir.rope_cache(t["x"], t["pos"], t["cos"], t["sin"], out=o)),
    "softmax_mask": ([("x", "R C"), ("mask", "R C")],
                     lambda t, d, s, o: xir.softmax(t["x"], t["mask"], float(s.get("scale", 1.0)), out=o)),
    "softmax_causal": ([("x", "R C")],
                       lambda t, d, s, o: xir.softmax(t["x"], None, float(s.get("scale", 1.0)), True, out=o)),
    "swiglu": ([("a", "R C"), ("b", "R C")], lambda t, d, s, o: xir.swiglu(t["a"], t["b"], out=o)),
    "gelu_residual": ([("x", "R C"), ("r", "R C")],
                      lambda t, d, s, o: xir.gelu_residual(t["x"], t["r"], out=o)),
    "attention": ([("q", "B HQ Q D"), ("k", "B HKV K D"), ("v", "B HKV K DV")],
                  lambda t, d, s, o: xir.attention(t["q"], t["k"], t["v"], _attn_scale(s), out=o)),
    "attention_causal": ([("q", "B HQ Q D"), ("k", "B HKV K D"), ("v", "B HKV K DV")],
                         lambda t, d, s, o: xir.attention(t["q"], t["k"], t["v"], _attn_scale(s), True, out=o)),
}


def load_input(path, shape, name):
    a = np.load(path, allow_pickle=False)
    if a.size != math.prod(shape):
        raise ValueError(f"{path}: {a.size} elements, expected {math.prod(shape)} {tuple(shape)}")
    a = np.ascontiguousarray(a).reshape(shape)
    if name == "pos":  # an integer position: int64 for xir (the bench may hold it in float32)
        if not np.array_equal(a, np.round(a)):
            raise ValueError(f"{path}: positions must be integers")
        return a.astype(np.int64)
    if a.dtype != np.float32:
        raise ValueError(f"{path}: dtype {a.dtype}, float32 expected")
    return a


class Peer:
    def __init__(self, threads, prealloc):
        xir.set_num_threads(threads)
        self.prealloc = prealloc
        self.cases = {}
        self.cur = None

    def hello(self, req):
        return {"ok": True, "peer": "xir_python", "version": xir.__version__,
                "detail": f"xir {xir.__version__} from Python {sys.version.split()[0]}, numpy "
                          f"{np.__version__}, {xir.get_num_threads()} threads, "
                          + ("out= preallocated" if self.prealloc else "result allocated per call")}

    def _cid(self, req):
        cid = req.get("case", "")
        return cid if isinstance(cid, str) else json.dumps(cid)

    def _case(self, req, op):
        cid = self._cid(req) if "case" in req else self.cur
        if cid is None or cid not in self.cases:
            raise LookupError(f"{op}: no prepared case")
        return self.cases[cid]

    def prepare(self, req):
        cid = self._cid(req)
        self.cases.pop(cid, None)
        self.cur = None
        kernel = req.get("kernel")
        if kernel not in KERNELS:
            return {"ok": False, "error": f"unknown kernel {kernel!r}"}
        params, call = KERNELS[kernel]
        dims = {k: int(v) for k, v in (req.get("dims") or {}).items()}
        scalars = req.get("scalars") or {}
        inputs = req.get("inputs") or {}
        t = {}
        for name, shape in params:
            if name not in inputs:
                return {"ok": False, "error": f"prepare {kernel}: missing input {name!r}"}
            t[name] = load_input(inputs[name], [dims[x] for x in shape.split()], name)
        y = call(t, dims, scalars, None)  # plans and compiles now, outside "run"
        out = y if self.prealloc else None
        self.cases[cid] = [call, t, dims, scalars, out, y]
        self.cur = cid
        return {"ok": True}

    def run(self, req):
        case = self._case(req, "run")
        n = int(req.get("n", 0))
        if n < 1:
            return {"ok": False, "error": "run: n must be a positive integer"}
        call, t, dims, scalars, out = case[:5]
        y = None
        t0 = time.perf_counter_ns()
        for _ in range(n):
            y = call(t, dims, scalars, out)
        t1 = time.perf_counter_ns()
        case[5] = y
        return {"ok": True, "ns": t1 - t0}

    def output(self, req):
        case = self._case(req, "output")
        path = req.get("path")
        if not path:
            return {"ok": False, "error": "output: no path"}
        with open(path, "wb") as f:
            np.lib.format.write_array(f, np.ascontiguousarray(case[5], np.float32), version=(1, 0),
                                      allow_pickle=False)
        return {"ok": True}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", action="store_true", help="preallocate the result (out=)")
    a = ap.parse_args()
    peer = Peer(a.threads, a.out)
    ops = {"hello": peer.hello, "prepare": peer.prepare, "run": peer.run, "output": peer.output}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            op = req.get("op") if isinstance(req, dict) else None
        except ValueError as e:
            reply({"ok": False, "error": f"bad request: {e}"})
            continue
        if op == "quit":
            break
        if op not in ops:
            reply({"ok": False, "error": f"unknown op {op!r}"})
            continue
        try:
            reply(ops[op](req))
        except Exception as e:  # noqa: BLE001 — every failure is an answer
            print(traceback.format_exc(), file=sys.stderr)
            reply({"ok": False, "error": f"{op}: {type(e).__name__}: {e}"})


if __name__ == "__main__":
    main()
