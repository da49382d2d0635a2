#!/usr/bin/env python3
"""xir_peer.py — the Python side of `xir bench --suite peers`: the built-in kernels called through
the xir Python package (peer `xir_python`), and with `--torch` torch eager in the SAME process
(peer `torch_eager_py`), served over the line-JSON protocol of docs/peers.md ("External peers").

The peers suite starts it by itself when it finds both the xir package (BUILD/pyenv, made by
scripts/setup_python.sh; `xir bench --pyenv DIR` or $XIR_PYENV name another) and the peers' venv
(--peers-dir DIR: DIR/venv/bin/python, scripts/setup_peers.sh), as

    DIR/venv/bin/python python/bench/xir_peer.py --torch --threads N --xir-pyenv BUILD/pyenv

(N = the run's --workers, the threads of xir's C launch too; every path one quoted sh word)

One server answers for both names: a prepare request carries "peer": "xir_python" (the default)
or "peer": "torch_eager_py"; run and output find the case by its "case" member (or the last one
prepared). Both are timed alike: "run n" is n calls `out = fn(*args)` in a Python loop timed with
time.perf_counter_ns, where fn is what a user writes — `lambda x, w: xir.rmsnorm(x, w, eps)` (the
result allocated per call; `--out`: preallocated with out=) or torch_peer.py's eager function of
the kernel (peers/ext/torch_peer.py, imported: the same code as the `torch_eager` peer) — on the
same seeded inputs (.npy files written by the bench), NumPy arrays for xir, tensors over NumPy
arrays (torch.from_numpy) for torch.

By hand (without the bench), xir only, in any Python that has the package:

    build/pyenv/bin/python python/bench/xir_peer.py
    xir bench --suite peers ... --peer "xir_python=build/pyenv/bin/python python/bench/xir_peer.py"

`--xir-pyenv DIR` APPENDS DIR's site-packages (for this interpreter's version) to sys.path, after
the interpreter's own entries, so numpy and torch come from the running venv and only xir from DIR
(as python/bench/bf16_torch.py does); both must be the same Python minor version. `--xir-site DIR`
appends DIR itself, the directory that holds xir/ (for a package outside a venv's lib/pythonX.Y/
site-packages; python/tests/test_xir_peer.py passes the one its own Python imported). If xir or torch
cannot be imported, the server still answers: hello says {"ok": false, "error": WHY}, and the
bench reports the Python side as not measured, with that reason. `--threads N` =
xir.set_num_threads(N) and torch.set_num_threads(N) (default 2, as the other peers). stdout
carries the protocol only."""
import argparse
import glob
import importlib.util
import json
import math
import os
import sys
import time
import traceback

_answer = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TORCH_PEER = os.path.join(ROOT, "peers", "ext", "torch_peer.py")

np = None   # numpy, imported in main() (an import failure is an answer, not a dead pipe)
xir = None  # the xir package


def reply(obj):
    _answer.write(json.dumps(obj, separators=(",", ":")) + "\n")
    _answer.flush()


def site_packages(pyenv):
    """DIR/lib/pythonX.Y/site-packages of the running interpreter's version, or ValueError with
    what DIR has instead."""
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = os.path.join(pyenv, "lib", ver, "site-packages")
    if os.path.isfile(os.path.join(site, "xir", "__init__.py")):
        return site
    have = sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
                  for p in glob.glob(os.path.join(pyenv, "lib", "python*", "site-packages", "xir")))
    if have:
        raise ValueError(f"the xir package in {pyenv} is for {', '.join(have)}, this Python is {ver} "
                         f"({sys.executable}): its extension cannot load here")
    raise ValueError(f"no xir package in {pyenv} (lib/{ver}/site-packages/xir): "
                     "run bash scripts/setup_python.sh BUILD")


def _attn_scale(s):
    v = float(s.get("scale", 0.0) or 0.0)
    return v if v > 0 else None


# kernel -> (inputs with their dims, builder: (t: name -> array, dims, scalars) -> (fn, args)),
# fn(*args, out=None) -> y. The scalars are bound once, as a user's code holds its constants.
def _k(params, build):
    return (params, build)


KERNELS = {
    "rmsnorm": _k([("x", "R C"), ("w", "C")], lambda t, d, s: (
        lambda x, w, eps=float(s.get("eps", 1e-5)), out=None: xir.rmsnorm(x, w, eps, out=out),
        (t["x"], t["w"]))),
    "layernorm": _k([("x", "R C"), ("w", "C"), ("b", "C")], lambda t, d, s: (
        lambda x, w, b, eps=float(s.get("eps", 1e-5)), out=None: xir.layernorm(x, w, b, eps, out=out),
        (t["x"], t["w"], t["b"]))),
    "rope": _k([("x", "R C")], lambda t, d, s: (
        lambda x, hd=int(d["HD"]), th=float(s.get("theta", 10000.0)), off=int(s.get("offset", 0)),
        out=None: xir.rope(x, hd, th, off, out=out),
        (t["x"],))),
    "rope_cache": _k([("x", "R C"), ("pos", "R"), ("cos", "P H2"), ("sin", "P H2")], lambda t, d, s: (
        lambda x, pos, cos, sin, out=None: xir.rope_cache(x, pos, cos, sin, out=out),
        (t["x"], t["pos"], t["cos"], t["sin"]))),
    "softmax_mask": _k([("x", "R C"), ("mask", "R C")], lambda t, d, s: (
        lambda x, mask, sc=float(s.get("scale", 1.0)), out=None: xir.softmax(x, mask, sc, out=out),
        (t["x"], t["mask"]))),
    "softmax_causal": _k([("x", "R C")], lambda t, d, s: (
        lambda x, sc=float(s.get("scale", 1.0)), out=None: xir.softmax(x, None, sc, True, out=out),
        (t["x"],))),
    "swiglu": _k([("a", "R C"), ("b", "R C")], lambda t, d, s: (
        lambda a, b, out=None: xir.swiglu(a, b, out=out), (t["a"], t["b"]))),
    "gelu_residual": _k([("x", "R C"), ("r", "R C")], lambda t, d, s: (
        lambda x, r, out=None: xir.gelu_residual(x, r, out=out), (t["x"], t["r"]))),
    "attention": _k([("q", "B HQ Q D"), ("k", "B HKV K D"), ("v", "B HKV K DV")], lambda t, d, s: (
        lambda q, k, v, sc=_attn_scale(s), out=None: xir.attention(q, k, v, sc, out=out),
        (t["q"], t["k"], t["v"]))),
    "attention_causal": _k([("q", "B HQ Q D"), ("k", "B HKV K D"), ("v", "B HKV K DV")], lambda t, d, s: (
        lambda q, k, v, sc=_attn_scale(s), out=None: xir.attention(q, k, v, sc, True, out=out),
        (t["q"], t["k"], t["v"]))),
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


def _case_id(req):
    cid = req.get("case", "")
    if isinstance(cid, bool) or not isinstance(cid, (str, int, float)):
        raise ValueError('"case" must be a string or a number')
    return cid if isinstance(cid, str) else json.dumps(cid)


class XirPeer:
    """`xir_python`: the kernels through the xir package."""

    def __init__(self, threads, prealloc):
        xir.set_num_threads(threads)
        self.prealloc = prealloc
        self.cases = {}  # id -> [fn, args, out (preallocated or None), last output]

    def detail(self):
        return (f"xir {xir.__version__} from Python {sys.version.split()[0]} ({xir.__file__}), numpy "
                f"{np.__version__}, {xir.get_num_threads()} threads, "
                + ("out= preallocated" if self.prealloc else "result allocated per call"))

    def prepare(self, cid, req):
        self.cases.pop(cid, None)
        kernel = req.get("kernel")
        if kernel not in KERNELS:
            return {"ok": False, "error": f"unknown kernel {kernel!r}"}
        params, build = KERNELS[kernel]
        dims = {k: int(v) for k, v in (req.get("dims") or {}).items()}
        scalars = req.get("scalars") or {}
        inputs = req.get("inputs") or {}
        t = {}
        for name, shape in params:
            if name not in inputs:
                return {"ok": False, "error": f"prepare {kernel}: missing input {name!r}"}
            t[name] = load_input(inputs[name], [dims[x] for x in shape.split()], name)
        fn, args = build(t, dims, scalars)
        y = fn(*args)  # plans and compiles now, outside "run"
        if self.prealloc:
            out = y
            fn = (lambda f, o: (lambda *a: f(*a, out=o)))(fn, out)
        self.cases[cid] = [fn, args, y]
        return {"ok": True}

    def run(self, case, n):
        fn, args = case[0], case[1]
        y = None
        t0 = time.perf_counter_ns()
        for _ in range(n):
            y = fn(*args)
        t1 = time.perf_counter_ns()
        case[2] = y
        return {"ok": True, "ns": t1 - t0}

    def output(self, case, path):
        with open(path, "wb") as f:
            np.lib.format.write_array(f, np.ascontiguousarray(case[2], np.float32), version=(1, 0),
                                      allow_pickle=False)
        return {"ok": True}


class Server:
    """One process, the names it answers for: xir_python, and torch_eager_py with --torch."""

    def __init__(self, a):
        self.error = None
        self.xir = self.torch = None
        self.owner = {}  # case id -> "xir_python" | "torch_eager_py"
        self.cur = None
        global np, xir
        try:
            if a.xir_pyenv:
                site = site_packages(a.xir_pyenv)
                if site not in sys.path:
                    sys.path.append(site)
            if a.xir_site:
                if not os.path.isfile(os.path.join(a.xir_site, "xir", "__init__.py")):
                    raise ValueError(f"no xir package in {a.xir_site} (--xir-site: the directory "
                                     "that holds xir/__init__.py)")
                if a.xir_site not in sys.path:
                    sys.path.append(a.xir_site)
            import numpy
            np = numpy
            import xir as xir_mod
            xir = xir_mod
            self.xir = XirPeer(a.threads, a.out)
        except Exception as e:  # noqa: BLE001 — the reason goes into hello
            print(traceback.format_exc(), file=sys.stderr)
            self.error = f"xir: {type(e).__name__}: {e}" if not isinstance(e, ValueError) else str(e)
            return
        if a.torch:
            try:
                spec = importlib.util.spec_from_file_location("torch_peer", TORCH_PEER)
                tp = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(tp)  # imports torch (its fd juggling is a no-op here)
                self.torch = tp.Peer("eager", a.threads)
            except Exception as e:  # noqa: BLE001
                print(traceback.format_exc(), file=sys.stderr)
                self.error = f"torch (peers/ext/torch_peer.py in {sys.executable}): {type(e).__name__}: {e}"

    def hello(self, req):
        if self.error:
            return {"ok": False, "error": self.error}
        names = ["xir_python"] + (["torch_eager_py"] if self.torch else [])
        detail = self.xir.detail()
        if self.torch:
            detail += "; in the same process torch_eager_py: " + self.torch.hello(req)["detail"]
        return {"ok": True, "peer": "+".join(names), "peers": names, "version": xir.__version__,
                "detail": detail}

    def _serve(self, name):
        if self.error:
            raise RuntimeError(self.error)
        if name == "xir_python":
            return self.xir
        if name == "torch_eager_py" and self.torch:
            return self.torch
        raise LookupError(f"this server does not answer for peer {name!r}"
                          + ("" if self.torch else " (torch_eager_py needs --torch)"))

    def prepare(self, req):
        cid = _case_id(req)
        name = req.get("peer", "xir_python")
        p = self._serve(name)
        self.owner.pop(cid, None)
        self.cur = None
        if p is self.torch:
            r = p.prepare(dict(req, case=cid))
        else:
            r = p.prepare(cid, req)
        if r.get("ok"):
            self.owner[cid] = name
            self.cur = cid
        return r

    def _case(self, req, op):
        cid = _case_id(req) if "case" in req else self.cur
        if cid is None or cid not in self.owner:
            raise LookupError(f"{op}: no prepared case" + (f" {cid!r}" if "case" in req else ""))
        return cid, self.owner[cid]

    def run(self, req):
        cid, name = self._case(req, "run")
        n = int(req.get("n", 0))
        if n < 1:
            return {"ok": False, "error": "run: n must be a positive integer"}
        if name == "torch_eager_py":
            return self.torch.run({"case": cid, "n": n})
        return self.xir.run(self.xir.cases[cid], n)

    def output(self, req):
        cid, name = self._case(req, "output")
        path = req.get("path")
        if not path:
            return {"ok": False, "error": "output: no path"}
        if name == "torch_eager_py":
            return self.torch.output({"case": cid, "path": path})
        return self.xir.output(self.xir.cases[cid], path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", action="store_true", help="preallocate xir's result (out=)")
    ap.add_argument("--torch", action="store_true",
                    help="also serve torch eager in this process (peer torch_eager_py)")
    ap.add_argument("--xir-pyenv", metavar="DIR",
                    help="append DIR's site-packages (BUILD/pyenv) to sys.path to find xir")
    ap.add_argument("--xir-site", metavar="DIR",
                    help="append DIR itself (the directory holding xir/, e.g. the dirname of the "
                         "dirname of xir.__file__) to sys.path to find xir")
    a = ap.parse_args()
    srv = Server(a)
    ops = {"hello": srv.hello, "prepare": srv.prepare, "run": srv.run, "output": srv.output}
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
            reply({"ok": False, "error": str(e) if isinstance(e, LookupError) else f"{op}: {type(e).__name__}: {e}"})


if __name__ == "__main__":
    main()
