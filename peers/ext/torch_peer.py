#!/usr/bin/env python3
"""torch_peer.py — the PyTorch peer of `xir bench`, a line-JSON pipe server (docs/peers.md,
"External peers").

    DIR/venv/bin/python peers/ext/torch_peer.py --mode eager     # peer "torch_eager"
    DIR/venv/bin/python peers/ext/torch_peer.py --mode compile   # peer "torch_compile"

The kernels of SPEC.md (and rope_cache, the table form of RoPE) are written the way a PyTorch user would write them (float32, CPU,
torch.nn.functional where it has the op, autograd off).  `--mode compile` wraps each case's
function in torch.compile (default Inductor backend, dynamic=False) during "prepare" and calls it
once there, so compilation stays outside "run".  torch.set_num_threads(2) (`--threads N`).

Inductor's cache goes to DIR/inductor-cache (DIR = the venv's parent) unless
TORCHINDUCTOR_CACHE_DIR is set.  The first compile in a fresh cache takes ~30 s (C++ prelude).

stdout carries the protocol only: file descriptor 1 is moved to stderr at start-up, so whatever
torch, Inductor or a C library prints goes to stderr.
"""
import argparse
import json
import math
import os
import sys
import time
import traceback
import types

# Inductor's on-disk cache: beside the venv (DIR/inductor-cache) unless the caller chose one.
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ and os.access(os.path.dirname(sys.prefix), os.W_OK) \
        and sys.prefix != sys.base_prefix:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(os.path.dirname(sys.prefix), "inductor-cache")

# Keep the real stdout for answers; everything else that writes to fd 1 lands on stderr.
_answer = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def reply(obj):
    _answer.write(json.dumps(obj, separators=(",", ":")) + "\n")
    _answer.flush()


def log(msg):
    print(f"torch_peer: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- kernels
# Each builder takes (dims, scalars, inputs: name -> float32 tensor already shaped) and returns
# (fn, args, out_shape): fn(*args) computes the kernel's output.  Constants a user would keep
# in a module (inverse frequencies, a causal mask) are made here, once, outside the timing.

def _rms_norm(x, w, C, eps):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (C,), w, eps)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def build_rmsnorm(d, s, t):
    C, eps = d["C"], float(s.get("eps", 1e-5))

    def rmsnorm(x, w):
        return _rms_norm(x, w, C, eps)
    return rmsnorm, (t["x"], t["w"]), (d["R"], C)


def build_layernorm(d, s, t):
    C, eps = d["C"], float(s.get("eps", 1e-5))

    def layernorm(x, w, b):
        return F.layer_norm(x, (C,), w, b, eps)
    return layernorm, (t["x"], t["w"], t["b"]), (d["R"], C)


def build_rope(d, s, t):
    R, C, HD = d["R"], d["C"], d["HD"]
    if HD <= 0 or HD % 2 or C % HD:
        raise ValueError(f"rope: HD={HD} must be even and divide C={C}")
    theta, offset = float(s.get("theta", 10000.0)), int(s.get("offset", 0))
    # The usual rotary-embedding module: inv_freq is a buffer; cos/sin are computed per call.
    inv_freq = 1.0 / (theta ** (torch.arange(0, HD, 2, dtype=torch.int64).float() / HD))

    def rope(x, inv_freq):
        pos = torch.arange(offset, offset + R, dtype=torch.float32)
        ang = pos[:, None] * inv_freq[None, :]                # [R, HD/2]
        cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]
        xv = x.view(R, C // HD, HD // 2, 2)                   # interleaved pairs (x2i, x2i+1)
        x0, x1 = xv[..., 0], xv[..., 1]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).view(R, C)
    return rope, (t["x"], inv_freq), (R, C)


def build_rope_cache(d, s, t):
    R, C, HD = d["R"], d["C"], d["HD"]
    if HD <= 0 or HD % 2 or C % HD or d["H2"] * 2 != HD:
        raise ValueError(f"rope_cache: HD={HD} must be even, divide C={C} and be 2*H2")
    # The engine form: gather the cos/sin cache rows of the positions, then rotate each
    # interleaved pair (x2i, x2i+1) of every head.

    def rope_cache(x, pos, cos, sin):
        c, s_ = cos[pos][:, None, :], sin[pos][:, None, :]     # [R, 1, HD/2]
        xv = x.view(R, C // HD, HD // 2, 2)
        x0, x1 = xv[..., 0], xv[..., 1]
        return torch.stack((x0 * c - x1 * s_, x0 * s_ + x1 * c), dim=-1).view(R, C)
    return rope_cache, (t["x"], t["pos"], t["cos"], t["sin"]), (R, C)


def build_softmax_mask(d, s, t):
    scale = float(s.get("scale", 1.0))

    def softmax_mask(x, mask):
        y = torch.softmax(x * scale + mask, dim=-1)
        return torch.nan_to_num(y, nan=0.0)                   # an all -inf row gives NaN: make it 0
    return softmax_mask, (t["x"], t["mask"]), (d["R"], d["C"])


def build_softmax_causal(d, s, t):
    R, C = d["R"], d["C"]
    scale = float(s.get("scale", 1.0))
    masked = torch.ones(R, C, dtype=torch.bool).triu(1)       # column c masked when c > r

    def softmax_causal(x, masked):
        y = torch.softmax((x * scale).masked_fill(masked, float("-inf")), dim=-1)
        return torch.nan_to_num(y, nan=0.0)
    return softmax_causal, (t["x"], masked), (R, C)


def build_swiglu(d, s, t):
    def swiglu(a, b):
        return F.silu(a) * b
    return swiglu, (t["a"], t["b"]), (d["R"], d["C"])


def build_gelu_residual(d, s, t):
    def gelu_residual(x, r):
        return F.gelu(x, approximate="tanh") + r
    return gelu_residual, (t["x"], t["r"]), (d["R"], d["C"])


_SDPA = getattr(F, "scaled_dot_product_attention", None)          # torch >= 2.0
_SDPA_SCALE = _SDPA is not None and "scale=" in (_SDPA.__doc__ or "")  # torch >= 2.1
_SDPA_GQA = _SDPA_SCALE and "enable_gqa" in (_SDPA.__doc__ or "")     # torch >= 2.5


def _attention_by_hand(q, k, v, scale, is_causal, mask):
    """softmax(q k^T * scale (+ mask)) v, for a torch without a usable F.scaled_dot_product_attention."""
    s = (q @ k.transpose(-2, -1)) * scale
    if is_causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def _build_attention(d, s, t, causal):
    B, HQ, HKV, Q, K, D, DV = (d[k] for k in ("B", "HQ", "HKV", "Q", "K", "D", "DV"))
    if HKV <= 0 or HQ % HKV:
        raise ValueError(f"attention: HKV={HKV} must divide HQ={HQ}")
    scale = float(s.get("scale", 0.0) or 0.0)
    if scale == 0.0:                                          # 0 = the default, 1/sqrt(D)
        scale = 1.0 / math.sqrt(D)
    G = HQ // HKV
    extra = {"enable_gqa": True} if (_SDPA_GQA and G > 1) else {}
    mask = None
    if causal and K != Q:
        # key j masked for query i when j > i + (K - Q): bottom-right aligned, so is_causal
        # (top-left) does not fit; a boolean mask (True = attend) built once.
        i = torch.arange(Q)[:, None]
        j = torch.arange(K)[None, :]
        mask = j <= i + (K - Q)

    def attention(q, k, v, mask):
        if G > 1 and not extra:
            k = k.repeat_interleave(G, dim=1)
            v = v.repeat_interleave(G, dim=1)
        if not _SDPA_SCALE:
            o = _attention_by_hand(q, k, v, scale, causal and mask is None, mask)
        elif causal and mask is None:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, **extra)
        else:
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale, **extra)
        return torch.nan_to_num(o, nan=0.0) if mask is not None else o   # fully masked rows
    return attention, (t["q"], t["k"], t["v"], mask), (B, HQ, Q, DV)


def build_attention(d, s, t):
    return _build_attention(d, s, t, causal=False)


def build_attention_causal(d, s, t):
    return _build_attention(d, s, t, causal=True)


# name -> (builder, [(input name, shape from dims[, dtype: float32 unless named])])
KERNELS = {
    "rmsnorm": (build_rmsnorm, [("x", "R C"), ("w", "C")]),
    "layernorm": (build_layernorm, [("x", "R C"), ("w", "C"), ("b", "C")]),
    "rope": (build_rope, [("x", "R C")]),
    "rope_cache": (build_rope_cache, [("x", "R C"), ("pos", "R", "int64"), ("cos", "P H2"), ("sin", "P H2")]),
    "softmax_mask": (build_softmax_mask, [("x", "R C"), ("mask", "R C")]),
    "softmax_causal": (build_softmax_causal, [("x", "R C")]),
    "swiglu": (build_swiglu, [("a", "R C"), ("b", "R C")]),
    "gelu_residual": (build_gelu_residual, [("x", "R C"), ("r", "R C")]),
    "attention": (build_attention, [("q", "B HQ Q D"), ("k", "B HKV K D"), ("v", "B HKV K DV")]),
    "attention_causal": (build_attention_causal, [("q", "B HQ Q D"), ("k", "B HKV K D"), ("v", "B HKV K DV")]),
}


def load_input(path, shape, dtype="float32"):
    a = np.load(path, allow_pickle=False)
    if a.dtype != np.dtype(dtype):
        raise ValueError(f"{path}: dtype {a.dtype}, {dtype} expected")
    if a.size != math.prod(shape):
        raise ValueError(f"{path}: {a.size} elements, expected {math.prod(shape)} {tuple(shape)}")
    return torch.from_numpy(np.ascontiguousarray(a).reshape(shape))


def fresh_function(fn):
    """A copy of fn with its own code object: Dynamo caches compiled code per code object, so every
    case gets its own cache entry (no recompiles against the cache-size limit, no dynamic shapes)."""
    code = fn.__code__.replace()
    if code is fn.__code__:  # replace() without changes may hand back the same object
        code = fn.__code__.replace(co_name=fn.__code__.co_name + "_")
    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


class Peer:
    def __init__(self, mode, threads):
        self.mode = mode
        # Prepared cases, id -> [fn, args, last output].  The documented protocol has one: run /
        # output use the last prepared.  Optional extension: a "case" member (string or number) in
        # prepare/run/output names the case, so a driver may prepare many cases up front.
        self.cases = {}
        self.cur = None
        self.compiled = {}  # (kernel, dims, scalars) -> compiled function (compile mode)
        torch.set_num_threads(threads)
        torch.set_grad_enabled(False)
        self.threads = threads

    def hello(self, req):
        detail = (f"PyTorch {torch.__version__}, mode {self.mode}"
                  + (" (torch.compile, Inductor, dynamic=False)" if self.mode == "compile" else "")
                  + f", {torch.get_num_threads()} threads, cpu capability "
                  f"{torch.backends.cpu.get_cpu_capability()}, numpy {np.__version__}, "
                  f"python {sys.version.split()[0]}, rms_norm {'F.rms_norm' if hasattr(F, 'rms_norm') else 'by hand'}, "
                  f"attention {'F.scaled_dot_product_attention' if _SDPA_SCALE else 'by hand (matmul, softmax, matmul)'}, "
                  f"GQA {'enable_gqa' if _SDPA_GQA else 'repeat_interleave'}, causal "
                  f"{'is_causal=True when K = Q, else a boolean mask j <= i + (K - Q)' if _SDPA_SCALE else 'a boolean mask'}")
        return {"ok": True, "peer": f"torch_{self.mode}", "version": torch.__version__, "detail": detail}

    @staticmethod
    def _case_id(req):
        cid = req.get("case", "")
        if isinstance(cid, bool) or not isinstance(cid, (str, int, float)):
            raise ValueError('"case" must be a string or a number')
        return cid if isinstance(cid, str) else json.dumps(cid)

    def _case(self, req, op):
        cid = self._case_id(req) if "case" in req else self.cur
        if cid is None or cid not in self.cases:
            raise LookupError(f"{op}: no prepared case" + (f" {cid!r}" if "case" in req else ""))
        return self.cases[cid]

    def prepare(self, req):
        cid = self._case_id(req)
        self.cases.pop(cid, None)
        self.cur = None
        kernel = req.get("kernel")
        if kernel not in KERNELS:
            return {"ok": False, "error": f"unknown kernel {kernel!r}"}
        build, params = KERNELS[kernel]
        dims = {k: int(v) for k, v in (req.get("dims") or {}).items()}
        scalars = req.get("scalars") or {}
        inputs = req.get("inputs") or {}
        t = {}
        for name, shape, *dtype in params:
            if name not in inputs:
                return {"ok": False, "error": f"prepare {kernel}: missing input {name!r}"}
            t[name] = load_input(inputs[name], [dims[x] for x in shape.split()], *dtype)
        fn, args, out_shape = build(dims, scalars, t)
        if self.mode == "compile":
            if not hasattr(torch, "compile"):
                return {"ok": False, "error": f"torch.compile needs torch >= 2.0 (this is {torch.__version__})"}
            key = json.dumps([kernel, dims, scalars], sort_keys=True)
            cfn = self.compiled.get(key)
            if cfn is None:
                t0 = time.perf_counter()
                cfn = torch.compile(fresh_function(fn), dynamic=False)
                cfn(*args)  # compile now, outside "run"
                self.compiled[key] = cfn
                log(f"compiled {key} in {time.perf_counter() - t0:.2f} s")
            fn = cfn
        out = fn(*args)  # warm-up call (and the output if no "run" follows)
        if tuple(out.shape) != tuple(out_shape):
            return {"ok": False, "error": f"{kernel}: output shape {tuple(out.shape)} != {tuple(out_shape)}"}
        self.cases[cid] = [fn, args, out]
        self.cur = cid
        return {"ok": True}

    def run(self, req):
        case = self._case(req, "run")
        n = int(req.get("n", 0))
        if n < 1:
            return {"ok": False, "error": "run: n must be a positive integer"}
        fn, args = case[0], case[1]
        out = None
        t0 = time.perf_counter_ns()
        for _ in range(n):
            out = fn(*args)
        t1 = time.perf_counter_ns()
        case[2] = out
        return {"ok": True, "ns": t1 - t0}

    def output(self, req):
        case = self._case(req, "output")
        path = req.get("path")
        if not path:
            return {"ok": False, "error": "output: no path"}
        a = np.ascontiguousarray(case[2].detach().cpu().numpy(), dtype=np.float32)
        with open(path, "wb") as f:
            np.lib.format.write_array(f, a, version=(1, 0), allow_pickle=False)
        return {"ok": True}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=("eager", "compile"), default="eager")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    peer = Peer(a.mode, a.threads)
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
        except Exception as e:  # noqa: BLE001 — every failure is an answer, never a dead pipe
            log(traceback.format_exc())
            reply({"ok": False, "error": str(e) if isinstance(e, LookupError) else f"{op}: {type(e).__name__}: {e}"})


if __name__ == "__main__":
    main()
