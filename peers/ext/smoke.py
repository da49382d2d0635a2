#!/usr/bin/env python3
"""smoke.py — drives one external peer server over the line-JSON protocol of docs/peers.md and
compares its output with an fp64 numpy reference (max abs error, and SPEC's tolerance check).

    DIR/venv/bin/python peers/ext/smoke.py [--kernels rmsnorm,...] [--n 1000] -- SERVER COMMAND...

e.g.  ~/.cache/xir-peers/venv/bin/python peers/ext/smoke.py -- ~/.cache/xir-peers/bin/onednn_peer
Default: rmsnorm 64x256 only; `--kernels all` runs the nine kernels (including a fully masked
softmax row and a K < Q causal attention).  Needs numpy only.  Exit status 1 if a supported kernel
is out of tolerance; an unsupported kernel ({"ok":false} on prepare) is listed, not a failure
unless --require.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

TOL = {"rope": (1e-3, 4e-3), "softmax": (1e-4, 1e-6), "attention": (1e-4, 1e-6)}  # (rtol, atol)


def tol(kernel):
    for k, v in TOL.items():
        if kernel.startswith(k):
            return v
    return (1e-4, 1e-5)


def softmax64(z):
    z = z.astype(np.float64)
    m = np.max(z, axis=-1, keepdims=True)
    full = np.isneginf(m)
    e = np.exp(z - np.where(full, 0, m))
    s = e.sum(-1, keepdims=True)
    return np.where(full, 0.0, e / np.where(s == 0, 1, s))


def gelu64(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def cases(rng):
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    R, C = 64, 256
    x, w, b = f(R, C), f(C), f(C)
    yield "rmsnorm", {"R": R, "C": C}, {"eps": 1e-5}, {"x": x, "w": w}, \
        lambda i: (i["x"] / np.sqrt((i["x"].astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-5)) * i["w"]
    yield "layernorm", {"R": 129, "C": 768}, {"eps": 1e-5}, {"x": f(129, 768), "w": f(768), "b": f(768)}, \
        lambda i: ((i["x"] - i["x"].astype(np.float64).mean(-1, keepdims=True))
                   / np.sqrt(i["x"].astype(np.float64).var(-1, keepdims=True) + 1e-5)) * i["w"] + i["b"]

    def rope_ref(i, R=17, C=128, HD=64, theta=10000.0, off=3):
        xx = i["x"].astype(np.float64).reshape(R, C // HD, HD // 2, 2)
        p = np.arange(R, dtype=np.float64)[:, None] + off
        ang = (p * theta ** (-2 * np.arange(HD // 2) / HD))[:, None, :]
        c, s = np.cos(ang), np.sin(ang)
        y = np.stack((xx[..., 0] * c - xx[..., 1] * s, xx[..., 0] * s + xx[..., 1] * c), -1)
        return y.reshape(R, C)
    yield "rope", {"R": 17, "C": 128, "HD": 64}, {"theta": 10000.0, "offset": 3}, {"x": f(17, 128)}, rope_ref

    def rope_cache_ref(i, R=9, C=192, HD=64):
        xx = i["x"].astype(np.float64).reshape(R, C // HD, HD // 2, 2)
        c, s = (i[n].astype(np.float64)[i["pos"]][:, None, :] for n in ("cos", "sin"))
        y = np.stack((xx[..., 0] * c - xx[..., 1] * s, xx[..., 0] * s + xx[..., 1] * c), -1)
        return y.reshape(R, C)
    yield "rope_cache", {"R": 9, "C": 192, "HD": 64, "P": 40, "H2": 32}, {}, \
        {"x": f(9, 192), "pos": rng.integers(0, 40, 9).astype(np.int64), "cos": f(40, 32), "sin": f(40, 32)}, \
        rope_cache_ref
    m = np.where(rng.random((17, 65)) < 0.2, -np.inf, 0).astype(np.float32)
    m[5, :] = -np.inf                                          # a fully masked row: zeros expected
    yield "softmax_mask", {"R": 17, "C": 65}, {"scale": 0.5}, {"x": f(17, 65), "mask": m}, \
        lambda i: softmax64(i["x"].astype(np.float64) * 0.5 + i["mask"])
    cm = np.where(np.arange(65)[None, :] > np.arange(17)[:, None], -np.inf, 0)
    yield "softmax_causal", {"R": 17, "C": 65}, {"scale": 1.0}, {"x": f(17, 65)}, \
        lambda i: softmax64(i["x"].astype(np.float64) + cm)
    yield "swiglu", {"R": R, "C": C}, {}, {"a": f(R, C), "b": f(R, C)}, \
        lambda i: i["a"] / (1 + np.exp(-i["a"].astype(np.float64))) * i["b"]
    yield "gelu_residual", {"R": R, "C": C}, {}, {"x": f(R, C), "r": f(R, C)}, \
        lambda i: gelu64(i["x"].astype(np.float64)) + i["r"]

    def att_ref(i, d, causal):
        q, k, v = (i[n].astype(np.float64) for n in "qkv")
        G = d["HQ"] // d["HKV"]
        k, v = np.repeat(k, G, axis=1), np.repeat(v, G, axis=1)
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d["D"])
        if causal:
            Q, K = d["Q"], d["K"]
            s = s + np.where(np.arange(K)[None, :] > np.arange(Q)[:, None] + (K - Q), -np.inf, 0)
        return softmax64(s) @ v
    for causal, d in ((False, dict(B=1, HQ=4, HKV=2, Q=16, K=32, D=16, DV=16)),
                      (True, dict(B=1, HQ=4, HKV=2, Q=16, K=32, D=16, DV=16)),
                      (True, dict(B=1, HQ=4, HKV=2, Q=16, K=16, D=16, DV=8)),
                      (True, dict(B=2, HQ=4, HKV=1, Q=12, K=8, D=16, DV=16)),   # K < Q: 4 masked rows
                      (True, dict(B=1, HQ=8, HKV=2, Q=5, K=37, D=16, DV=8)),    # Q < K, HQ/HKV = 4
                      (False, dict(B=2, HQ=3, HKV=3, Q=7, K=19, D=9, DV=5)),    # HQ/HKV = 1, odd
                      (False, dict(B=1, HQ=8, HKV=2, Q=1, K=300, D=32, DV=32))):  # decode-like
        ins = {"q": f(d["B"], d["HQ"], d["Q"], d["D"]), "k": f(d["B"], d["HKV"], d["K"], d["D"]),
               "v": f(d["B"], d["HKV"], d["K"], d["DV"])}
        yield ("attention_causal" if causal else "attention"), d, {}, ins, \
            (lambda i, d=d, c=causal: att_ref(i, d, c))


class Server:
    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, req):
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"server closed its stdout after {req}")
        return json.loads(line)

    def quit(self):
        self.p.stdin.write('{"op":"quit"}\n')
        self.p.stdin.close()
        return self.p.wait(timeout=60)


def check(srv, item, case, n, tmp):
    """run + output + compare for one prepared case; returns 1 if it failed."""
    idx, kernel, shape, ins, ref = item
    extra = {} if case is None else {"case": case}
    r = srv.ask({"op": "run", "n": n, **extra})
    if not r.get("ok"):
        print(f"{kernel:16s} {shape:22s} run failed: {r}")
        return 1
    ns = r["ns"]
    out = os.path.join(tmp, f"{idx}_out.npy")
    r = srv.ask({"op": "output", "path": out, **extra})
    if not r.get("ok"):
        print(f"{kernel:16s} {shape:22s} output failed: {r}")
        return 1
    with open(out, "rb") as fh:
        ver = np.lib.format.read_magic(fh)
        hdr = (np.lib.format.read_array_header_1_0(fh) if ver == (1, 0)
               else np.lib.format.read_array_header_2_0(fh))  # (shape, fortran_order, dtype)
    y = np.load(out)
    want_ref = ref(ins)
    rtol, atol = tol(kernel)
    err = np.abs(y.astype(np.float64) - want_ref)
    ok = (y.dtype == np.float32 and hdr[1] is False and y.shape == want_ref.shape
          and bool(np.all(err <= atol + rtol * np.abs(want_ref))))
    print(f"{kernel:16s} {shape:22s} max_abs_err {np.nanmax(err):.3e}  nan {int(np.isnan(y).sum())}  "
          f"{ns / n / 1e3:9.2f} us/call  npy v{ver[0]}.{ver[1]} {y.dtype.str} {y.shape}  "
          f"{'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default="rmsnorm", help="comma list, or 'all'")
    ap.add_argument("--n", type=int, default=1000, help="calls timed in one 'run'")
    ap.add_argument("--case-ids", action="store_true",
                    help='use the optional "case" member: prepare every kernel first, then run them in reverse')
    ap.add_argument("--require", action="store_true",
                    help="an unsupported kernel is a failure too (exit status 1)")
    ap.add_argument("--peer", metavar="NAME",
                    help='add "peer": NAME to every prepare (a server that answers for several names, '
                         'e.g. python/bench/xir_peer.py --torch: xir_python, torch_eager_py)')
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("server command missing (after --)")
    want = None if a.kernels == "all" else set(a.kernels.split(","))
    srv = Server(cmd)
    print("hello:", json.dumps(srv.ask({"op": "hello"})))
    bad = 0
    with tempfile.TemporaryDirectory(prefix="xir-peer-smoke-") as tmp:
        prepared = []
        for idx, (kernel, dims, scalars, ins, ref) in enumerate(cases(np.random.default_rng(7))):
            if want is not None and kernel not in want:
                continue
            paths = {}
            for name, arr in ins.items():
                paths[name] = os.path.join(tmp, f"{idx}_{name}.npy")
                np.save(paths[name], arr)
            shape = "x".join(str(v) for v in dims.values())
            req = {"op": "prepare", "kernel": kernel, "dims": dims, "scalars": scalars,
                   "inputs": paths, "output": "o" if kernel.startswith("attention") else "y"}
            if a.case_ids:
                req["case"] = idx
            if a.peer:
                req["peer"] = a.peer
            r = srv.ask(req)
            if not r.get("ok"):
                print(f"{kernel:16s} {shape:22s} unsupported: {r.get('error')}")
                bad += a.require
                continue
            item = (idx, kernel, shape, ins, ref)
            if a.case_ids:
                prepared.append(item)
            else:
                bad += check(srv, item, None, a.n, tmp)
        for item in reversed(prepared):  # --case-ids: all prepared first, run in reverse order
            bad += check(srv, item, item[0], a.n, tmp)
    rc = srv.quit()
    print(f"server exit status {rc}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
