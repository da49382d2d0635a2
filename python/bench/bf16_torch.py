#!/usr/bin/env python3
"""bf16_torch.py — xir's bf16 rmsnorm and layernorm (and f32 rmsnorm, for reference) against torch
eager on the same bf16 data, in ONE process, paired per round (issue 12, item 1's last target:
"bf16 rmsnorm <= 1.0x torch eager's bf16 rms_norm / composed ops at the report shapes").

How to run it: torch lives in the peers' venv (~/.cache/xir-peers/venv, docs/peers.md), xir in
build/pyenv (scripts/setup_python.sh). Run the peers' python; this script APPENDS build/pyenv's
site-packages to sys.path (after the venv's own), so numpy and torch come from the peers' venv and
only xir and ml_dtypes (which the peers' venv lacks) from build/pyenv. Nothing is installed or
modified in either venv; both must be the same Python minor version (3.11 here).

    bash scripts/setup.sh build && bash scripts/setup_python.sh build
    XIR_CACHE_DIR=/tmp/bf16torch-cache nice -n -20 ~/.cache/xir-peers/venv/bin/python \
        python/bench/bf16_torch.py [--rounds 6] [--torch-threads 1]
    build/pyenv/bin/python python/bench/bf16_torch.py --check      # outputs only, torch optional

(`--xir-site DIR` names another site-packages holding xir.)

Variants, per shape R x C (x, w, b bf16; eps 1e-5; xir.set_num_threads(2), torch.set_num_threads(2),
autograd off):
  rmsnorm bf16   xir       xir.rmsnorm(x, w), x and w ml_dtypes.bfloat16 NumPy arrays (result allocated)
                 xir_dl    xir.rmsnorm(tx, tw), torch bf16 tensors through DLPack (the result a torch
                           bf16 tensor, torch.empty per call; docs/python.md's xir_dl numbers of
                           2026-12-01 predate that: they returned a NumPy array)
                 xir_c     the same compiled kernel launched from a C loop (Plan._time_launch, no
                           Python in the loop, out preallocated): the C launch alone
                 torch     torch.nn.functional.rms_norm(tx, (C,), tw, eps)
                 torch_hf  HF transformers' LlamaRMSNorm.forward body, as a function:
                             h = x.to(float32); v = h.pow(2).mean(-1, keepdim=True)
                             h = h * torch.rsqrt(v + eps); return w * h.to(bfloat16)
  layernorm bf16 xir, xir_dl, xir_c, torch (torch.nn.functional.layer_norm(tx, (C,), tw, tb, eps))
  rmsnorm f32    xir, xir_c, torch (F.rms_norm on float32 tensors)

Protocol (SPEC.md "Measurement protocol", docs/bench.md): every output of every variant is checked
against a NumPy fp64 reference over the stored (bf16) inputs before any timing — xir's within the
kernel's f32 bound plus half an ulp of the output type (docs/xir.md "Tolerances of 16-bit
outputs"); torch's error is reported in units of that bound, not asserted (the HF form rounds
twice). Then rounds: every case visited once per round, forward and reverse order alternating;
a visit = warm-up ~75 ms (batches doubling until >= 2 ms), n calibrated so a sample lasts ~20 ms,
7 samples; its p50 = median sample / n. A case's time = median over rounds of its p50s; a ratio =
median over rounds of the same-round ratio xir/torch, with its min-max. Each visit starts after
--settle-ms of idleness (torch's OpenMP pool and xir's pool spin a while after a call and would
steal the next case's cores: in one process they cannot be SIGSTOPped as the bench does with
external peers). After the rounds every case's last output is checked again."""
import argparse
import os
import statistics
import sys
import time

import numpy as np

EPS = 1e-5
SHAPES = [(1, 4096), (3, 1000), (129, 768), (257, 1538), (1024, 4096), (4096, 1024), (61, 3001)]
TOL = {"rmsnorm": (1e-4, 1e-5), "layernorm": (1e-4, 1e-5)}  # src/check: xir__kernel_tolerance


def _find_xir(site):
    """Import xir; if the running Python lacks it, append `site` (default: build/pyenv's
    site-packages) to sys.path, after the interpreter's own entries."""
    try:
        import xir  # noqa: F401
        return
    except ImportError:
        pass
    if site is None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        site = os.path.join(root, "build", "pyenv", "lib",
                            f"python{sys.version_info.major}.{sys.version_info.minor}", "site-packages")
    if not os.path.isdir(os.path.join(site, "xir")):
        sys.exit(f"bf16_torch: no xir package in {site}: run scripts/setup_python.sh build, or pass --xir-site")
    sys.path.append(site)


# ---- fp64 references and the check (docs/xir.md, "Tolerances of 16-bit outputs") ----

def ref_rmsnorm(x, w, eps=EPS):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w.astype(np.float64)


def ref_layernorm(x, w, b, eps=EPS):
    x = x.astype(np.float64)
    d = x - x.mean(-1, keepdims=True)
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + eps) * w.astype(np.float64) + b.astype(np.float64)


def half_ulp(dtype, y):
    """Half the spacing of dtype's values at |y| (0 for float32): the final rounding's error."""
    import ml_dtypes
    if np.dtype(dtype) == np.float32:
        return np.zeros_like(y)
    frac, sub = (7, 2.0 ** -134) if np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16) else (10, 2.0 ** -25)
    _, ex = np.frexp(np.abs(y))
    return np.maximum(np.ldexp(1.0, ex - 1 - frac - 1), sub)


def err_over_bound(kernel, y, ref, dtype):
    """max |y - ref| / (atol + rtol |ref| + half an ulp of dtype at |y|) over the whole output
    (inf for a NaN, a wrong shape or a wrong dtype): <= 1 passes."""
    y = np.asarray(y)
    if y.shape != ref.shape or y.dtype != np.dtype(dtype):
        return float("inf")
    rtol, atol = TOL[kernel]
    y64 = y.astype(np.float64)
    if np.isnan(y64).any():
        return float("inf")
    bound = atol + rtol * np.abs(ref) + half_ulp(dtype, y64)
    return float((np.abs(y64 - ref) / bound).max())


def rand(rng, *shape):
    a = rng.uniform(-2.0, 2.0, shape).astype(np.float32)
    a[a == 0] = 0.5  # never zero (as the C tests)
    return a


# ---- cases ----

class Case:
    """One timed variant at one shape: run(n) makes n calls and returns their ns; .last holds the
    last output (a NumPy array or a torch tensor)."""

    def __init__(self, group, shape, variant, side, run, ref, dtype, note=""):
        self.group, self.shape, self.variant, self.side = group, shape, variant, side
        self.run, self.ref, self.dtype, self.note = run, ref, dtype, note
        self.last = None
        self.p50 = []  # ns per call, one per round

    @property
    def name(self):
        return f"{self.group} {self.shape[0]}x{self.shape[1]} {self.variant}"


def _py_loop(case_box, fn, args):
    def run(n):
        y = None
        t0 = time.perf_counter_ns()
        for _ in range(n):
            y = fn(*args)
        t = time.perf_counter_ns() - t0
        case_box[0].last = y
        return t
    return run


def _c_loop(case_box, plan, args, out):
    def run(n):
        ns = plan._time_launch(args, n) * n
        case_box[0].last = out
        return ns
    return run


def make_cases(shapes, groups, torch, rng):
    """The cases of `groups` (rmsnorm_bf16, layernorm_bf16, rmsnorm_f32) at `shapes`; torch None:
    the xir variants only."""
    import ml_dtypes
    import xir
    BF16 = ml_dtypes.bfloat16
    cases = []

    def add(group, shape, variant, side, make_run, ref, dtype, note=""):
        box = [None]
        c = Case(group, shape, variant, side, make_run(box), ref, dtype, note)
        box[0] = c
        cases.append(c)

    def tview(a):  # a torch tensor over the same memory as NumPy array a (bf16 via uint16)
        if a.dtype == np.dtype(BF16):
            return torch.from_numpy(a.view(np.uint16)).view(torch.bfloat16)
        return torch.from_numpy(a)

    for R, C in shapes:
        shape = (R, C)
        if "rmsnorm_bf16" in groups or "rmsnorm_f32" in groups:
            x32, w32 = rand(rng, R, C), rand(rng, C)
        for group in ("rmsnorm_bf16", "rmsnorm_f32"):
            if group not in groups:
                continue
            dt = BF16 if group == "rmsnorm_bf16" else np.float32
            x, w = x32.astype(dt), w32.astype(dt)
            ref = ref_rmsnorm(x, w)
            add(group, shape, "xir", "xir", lambda b: _py_loop(b, xir.rmsnorm, (x, w)), ref, dt)
            plan = xir._P["rmsnorm"].prepare({"R": R, "C": C}, "bf16" if dt == BF16 else None)
            out = np.empty((R, C), dt)
            add(group, shape, "xir_c", "xir",
                lambda b, plan=plan, x=x, w=w, out=out: _c_loop(b, plan, (x, w, out, EPS), out), ref, dt,
                f"{plan.candidate}, G={plan.grain}")
            if torch is None:
                continue
            tx, tw = tview(x), tview(w)
            F = torch.nn.functional
            if dt == BF16:
                add(group, shape, "xir_dl", "xir", lambda b, tx=tx, tw=tw: _py_loop(b, xir.rmsnorm, (tx, tw)),
                    ref, dt)
            add(group, shape, "torch", "torch",
                lambda b, tx=tx, tw=tw, C=C: _py_loop(b, F.rms_norm, (tx, (C,), tw, EPS)), ref, dt)
            if dt == BF16:
                add(group, shape, "torch_hf", "torch",
                    lambda b, tx=tx, tw=tw: _py_loop(b, _hf_rmsnorm(torch), (tx, tw)), ref, dt)
        if "layernorm_bf16" in groups:
            x, w, bb = rand(rng, R, C).astype(BF16), rand(rng, C).astype(BF16), rand(rng, C).astype(BF16)
            ref = ref_layernorm(x, w, bb)
            add("layernorm_bf16", shape, "xir", "xir", lambda b: _py_loop(b, xir.layernorm, (x, w, bb)), ref, BF16)
            plan = xir._P["layernorm"].prepare({"R": R, "C": C}, "bf16")
            out = np.empty((R, C), BF16)
            add("layernorm_bf16", shape, "xir_c", "xir",
                lambda b, plan=plan, out=out: _c_loop(b, plan, (x, w, bb, out, EPS), out), ref, BF16,
                f"{plan.candidate}, G={plan.grain}")
            if torch is not None:
                tx, tw, tb = tview(x), tview(w), tview(bb)
                add("layernorm_bf16", shape, "xir_dl", "xir",
                    lambda b: _py_loop(b, xir.layernorm, (tx, tw, tb)), ref, BF16)
                add("layernorm_bf16", shape, "torch", "torch",
                    lambda b: _py_loop(b, torch.nn.functional.layer_norm, (tx, (C,), tw, tb, EPS)), ref, BF16)
    return cases


def _hf_rmsnorm(torch):
    """transformers' LlamaRMSNorm.forward (weight = w, variance_epsilon = EPS) as a plain function."""
    def hf_rmsnorm(hidden_states, weight):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + EPS)
        return weight * hidden_states.to(input_dtype)
    return hf_rmsnorm


def as_numpy(y):
    if hasattr(y, "detach"):  # a torch tensor: its bits, viewed as bf16 when it is bf16
        import ml_dtypes
        import torch
        if y.dtype == torch.bfloat16:
            return y.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return y.numpy()
    return np.asarray(y)


def check_cases(cases, when):
    """Every xir case's last output within the bound (raises AssertionError naming the failures);
    returns {case name: error / bound} for every case, torch's included."""
    errs, bad = {}, []
    for c in cases:
        e = err_over_bound(c.group.split("_")[0], as_numpy(c.last), c.ref, c.dtype)
        errs[c.name] = e
        if c.side == "xir" and not e <= 1.0:
            bad.append(f"{c.name}: error {e:.3g} x the bound")
    if bad:
        raise AssertionError(f"bf16_torch: outputs out of tolerance {when}: " + "; ".join(bad))
    return errs


def check(shapes, groups=("rmsnorm_bf16", "layernorm_bf16", "rmsnorm_f32"), torch=None, seed=1):
    """Build the cases, run each once and check every output (the --check mode; also the first
    step of a timing run). Returns (cases, {name: error / bound})."""
    cases = make_cases(shapes, groups, torch, np.random.default_rng(seed))
    for c in cases:
        c.run(1)
    return cases, check_cases(cases, "before timing")


# ---- timing ----

def visit(c, warmup_ns, sample_ns, samples):
    n, total, t = 1, 0, 0
    while total < warmup_ns:
        t = c.run(n)
        total += t
        if t < 2_000_000:
            n *= 2
    per = max(t / n, 1.0)
    n = max(1, round(sample_ns / per))
    return statistics.median(c.run(n) / n for _ in range(samples))


COMPARE = {  # group -> (xir variant, torch variant) pairs, ratio = xir / torch
    "rmsnorm_bf16": [("xir", "torch"), ("xir", "torch_hf"), ("xir_dl", "torch"), ("xir_dl", "torch_hf"),
                     ("xir_c", "torch")],
    "layernorm_bf16": [("xir", "torch"), ("xir_dl", "torch"), ("xir_c", "torch")],
    "rmsnorm_f32": [("xir", "torch"), ("xir_c", "torch")],
}


def report(cases, rounds, errs):
    by = {(c.group, c.shape, c.variant): c for c in cases}
    med = lambda c: statistics.median(c.p50) / 1e3  # noqa: E731
    for group in COMPARE:
        shapes = sorted({c.shape for c in cases if c.group == group}, key=lambda s: SHAPES.index(s)
                        if s in SHAPES else len(SHAPES))
        if not shapes:
            continue
        variants = [v for v in ("xir", "xir_dl", "xir_c", "torch", "torch_hf") if (group, shapes[0], v) in by]
        print(f"\n{group}: median over {rounds} rounds of per-round p50, us per call; "
              f"ratio = median (min-max) of the same-round xir/torch")
        head = "| shape | " + " | ".join(f"{v} us" for v in variants) + " | " + " | ".join(
            f"{a}/{b}" for a, b in COMPARE[group] if (group, shapes[0], a) in by and (group, shapes[0], b) in by) + " |"
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        for s in shapes:
            row = [f"{s[0]}x{s[1]}"] + [f"{med(by[(group, s, v)]):.2f}" for v in variants]
            for a, b in COMPARE[group]:
                if (group, s, a) in by and (group, s, b) in by:
                    r = [x / y for x, y in zip(by[(group, s, a)].p50, by[(group, s, b)].p50)]
                    row.append(f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})")
            print("| " + " | ".join(row) + " |")
    print("\nerror / bound (<= 1 passes; torch's reported, not asserted), and xir's plans:")
    for c in cases:
        print(f"  {c.name}: {errs[c.name]:.3f}" + (f"  [{c.note}]" if c.note else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xir-site", help="a site-packages directory holding xir (default build/pyenv's)")
    ap.add_argument("--check", action="store_true", help="check every output against fp64 and stop (no timing)")
    ap.add_argument("--shapes", help="'R,C;R,C;...' (default: the report shapes and 61x3001)")
    ap.add_argument("--groups", default="rmsnorm_bf16,layernorm_bf16,rmsnorm_f32")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--samples", type=int, default=7)
    ap.add_argument("--warmup-ms", type=float, default=75.0)
    ap.add_argument("--sample-ms", type=float, default=20.0)
    ap.add_argument("--settle-ms", type=float, default=50.0)
    ap.add_argument("--threads", type=int, default=2, help="xir's and torch's threads")
    ap.add_argument("--torch-threads", type=int, help="torch's threads, when not --threads")
    o = ap.parse_args()
    _find_xir(o.xir_site)
    import xir
    try:
        import torch
    except ImportError:
        if not o.check:
            sys.exit("bf16_torch: torch is not importable: run the peers' venv python (see the top of this file)")
        torch = None
    shapes = [tuple(int(v) for v in s.split(",")) for s in o.shapes.split(";")] if o.shapes else SHAPES
    groups = o.groups.split(",")
    unknown = set(groups) - set(COMPARE)
    if unknown:
        sys.exit(f"bf16_torch: unknown groups {sorted(unknown)} (known: {sorted(COMPARE)})")
    xir.set_num_threads(o.threads)
    if torch is not None:
        torch.set_num_threads(o.torch_threads or o.threads)
        torch.set_grad_enabled(False)
    import ml_dtypes
    print(f"xir {xir.__version__} ({xir.__file__}), {xir.get_num_threads()} threads; "
          + (f"torch {torch.__version__}, {torch.get_num_threads()} threads, cpu capability "
             f"{torch.backends.cpu.get_cpu_capability()}; " if torch else "torch: not installed; ")
          + f"numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}, python {sys.version.split()[0]}; "
          f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    cases, errs = check(shapes, groups, torch)
    print(f"checked {len(cases)} outputs against fp64: every xir output within its bound "
          f"(max error/bound {max(e for n, e in errs.items() if 'torch' not in n):.3f})")
    if o.check:
        for c in cases:
            print(f"  {c.name}: {errs[c.name]:.3f}")
        return
    order = list(range(len(cases)))
    t_start = time.time()
    for r in range(o.rounds):
        for i in (order if r % 2 == 0 else order[::-1]):
            time.sleep(o.settle_ms / 1e3)
            cases[i].p50.append(visit(cases[i], o.warmup_ms * 1e6, o.sample_ms * 1e6, o.samples))
        print(f"round {r + 1}/{o.rounds} done ({time.time() - t_start:.0f} s)", file=sys.stderr, flush=True)
    errs = check_cases(cases, "after timing")
    report(cases, o.rounds, errs)
    print(f"\nload average at the end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
