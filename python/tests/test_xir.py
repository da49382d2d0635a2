"""The xir package against NumPy fp64 references: every kernel x a few shapes (ragged ones too),
out= with sentinels around it, non-contiguous inputs (copied), DLPack and __array_interface__
inputs (no copy), wrong shapes / dtypes / dims, custom XIR (Kernel, Plan.explain, ParseError with
line and column), the cache, and threads calling concurrently.

Tolerances are the library's (src/check: xir__kernel_tolerance): |y - ref| <= atol + rtol |ref|,
the whole output, NaN never passing."""
import os
import sys
import threading

import numpy as np
import pytest

import xir

TOL = {"rope": (1e-3, 4e-3), "softmax": (1e-4, 1e-6), "attention": (1e-4, 1e-6)}


def tol(kernel):
    for k, v in TOL.items():
        if kernel.startswith(k):
            return v
    return (1e-4, 1e-5)


def check(kernel, y, ref):
    rtol, atol = tol(kernel)
    y = np.asarray(y)
    assert y.dtype == np.float32
    assert y.shape == ref.shape
    assert not np.isnan(y).any()
    err = np.abs(y.astype(np.float64) - ref)
    bad = err > atol + rtol * np.abs(ref)
    assert not bad.any(), f"{kernel}: {bad.sum()} of {bad.size} out of tolerance, max abs {err.max():.3g}"


def rand(rng, *shape, lo=-2.0, hi=2.0):
    a = rng.uniform(lo, hi, shape).astype(np.float32)
    a[a == 0] = 0.5  # never zero (as the C tests)
    return a


# ---- fp64 references ----

def ref_rmsnorm(x, w, eps=1e-5):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def ref_layernorm(x, w, b, eps=1e-5):
    x = x.astype(np.float64)
    d = x - x.mean(-1, keepdims=True)
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + eps) * w + b


def ref_rope(x, hd, theta=10000.0, offset=0):
    x = x.astype(np.float64)
    R, C = x.shape
    c = np.arange(C)
    i = (c % hd) // 2
    ang = (np.arange(R)[:, None] + offset) * theta ** (-2.0 * i / hd)
    partner = x[:, c + 1 - 2 * (c % 2)]
    sign = 2 * (c % 2) - 1
    return x * np.cos(ang) + sign * partner * np.sin(ang)


def ref_rope_cache(x, pos, cos, sin):
    x = x.astype(np.float64)
    R, C = x.shape
    hd = 2 * cos.shape[1]
    c = np.arange(C)
    i = (c % hd) // 2
    partner = x[:, c + 1 - 2 * (c % 2)]
    sign = 2 * (c % 2) - 1
    return x * cos[pos][:, i] + sign * partner * sin[pos][:, i]


def ref_softmax(z):
    m = z.max(-1, keepdims=True)
    m = np.where(m == -np.inf, 0.0, m)
    e = np.exp(z - m)
    s = e.sum(-1, keepdims=True)
    return np.where(s == 0, 0.0, e / np.where(s == 0, 1.0, s))


def ref_attention(q, k, v, scale=None, causal=False):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    B, HQ, Q, D = q.shape
    HKV, K = k.shape[1], k.shape[2]
    g = np.arange(HQ) // (HQ // HKV)
    s = np.einsum("bhqd,bhkd->bhqk", q, k[:, g]) * (scale if scale else 1 / np.sqrt(D))
    if causal:
        s = np.where(np.arange(K)[None, :] > np.arange(Q)[:, None] + (K - Q), -np.inf, s)
    return np.einsum("bhqk,bhkd->bhqd", ref_softmax(s), v[:, g])


def silu(a):
    return a / (1 + np.exp(-a))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


ROWS = [(1, 1), (3, 7), (17, 65), (64, 256), (33, 1000)]


def run_threads(work, n):
    """Starts work(0) .. work(n - 1) on n threads and joins them all."""
    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.fixture
def rng():
    return np.random.default_rng(2024)


# ---- every kernel x shapes ----

@pytest.mark.parametrize("R,C", ROWS)
def test_rmsnorm(rng, R, C):
    x, w = rand(rng, R, C), rand(rng, C)
    check("rmsnorm", xir.rmsnorm(x, w), ref_rmsnorm(x, w))
    check("rmsnorm", xir.rmsnorm(x, w, eps=0.25), ref_rmsnorm(x, w, 0.25))


@pytest.mark.parametrize("R,C", ROWS)
def test_layernorm(rng, R, C):
    x, w, b = rand(rng, R, C), rand(rng, C), rand(rng, C)
    check("layernorm", xir.layernorm(x, w, b), ref_layernorm(x, w, b))
    check("layernorm", xir.layernorm(x, w, b, eps=1e-2), ref_layernorm(x, w, b, 1e-2))


@pytest.mark.parametrize("R,C,HD", [(1, 2, 2), (3, 6, 2), (17, 66, 22), (64, 256, 64), (33, 1000, 100)])
def test_rope(rng, R, C, HD):
    x = rand(rng, R, C)
    check("rope", xir.rope(x, HD), ref_rope(x, HD))
    check("rope", xir.rope(x, HD, theta=500.0, offset=7), ref_rope(x, HD, 500.0, 7))


@pytest.mark.parametrize("R,C,HD,P", [(1, 2, 2, 1), (3, 6, 2, 5), (17, 66, 22, 2), (64, 256, 64, 100)])
def test_rope_cache(rng, R, C, HD, P):
    x = rand(rng, R, C)
    pos = rng.integers(0, P, R).astype(np.int64)
    ang = rng.uniform(-3, 3, (P, HD // 2))
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    check("rope_cache", xir.rope_cache(x, pos, cos, sin), ref_rope_cache(x, pos, cos, sin))


@pytest.mark.parametrize("R,C", ROWS)
def test_softmax(rng, R, C):
    x = rand(rng, R, C)
    check("softmax", xir.softmax(x), ref_softmax(x.astype(np.float64)))
    check("softmax", xir.softmax(x, scale=0.5), ref_softmax(0.5 * x.astype(np.float64)))
    mask = np.where(rng.random((R, C)) < 0.3, -np.inf, rand(rng, R, C)).astype(np.float32)
    mask[0, :] = -np.inf  # a fully masked row is zeros
    y = xir.softmax(x, mask, scale=2.0)
    check("softmax_mask", y, ref_softmax(2.0 * x.astype(np.float64) + mask))
    assert (y[0] == 0).all()
    zc = np.where(np.arange(C)[None, :] > np.arange(R)[:, None], -np.inf, 1.5 * x.astype(np.float64))
    check("softmax_causal", xir.softmax(x, scale=1.5, causal=True), ref_softmax(zc))


@pytest.mark.parametrize("R,C", ROWS)
def test_swiglu_gelu(rng, R, C):
    a, b = rand(rng, R, C), rand(rng, R, C)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    check("swiglu", xir.swiglu(a, b), silu(a64) * b64)
    check("gelu_residual", xir.gelu_residual(a, b), gelu_tanh(a64) + b64)


ATTN = [(1, 4, 2, 16, 32, 16, 16), (1, 1, 1, 1, 1, 1, 1), (2, 3, 1, 5, 3, 3, 5), (1, 8, 2, 33, 65, 24, 8)]


@pytest.mark.parametrize("B,HQ,HKV,Q,K,D,DV", ATTN)
def test_attention(rng, B, HQ, HKV, Q, K, D, DV):
    q, k = rand(rng, B, HQ, Q, D, lo=-1, hi=1), rand(rng, B, HKV, K, D, lo=-1, hi=1)
    v = rand(rng, B, HKV, K, DV)
    check("attention", xir.attention(q, k, v), ref_attention(q, k, v))
    check("attention", xir.attention(q, k, v, scale=0.3), ref_attention(q, k, v, 0.3))
    check("attention_causal", xir.attention(q, k, v, causal=True), ref_attention(q, k, v, causal=True))


# ---- out=, layouts, other array types ----

def test_out_with_sentinels(rng):
    x, w = rand(rng, 9, 40), rand(rng, 40)
    buf = np.full(9 * 40 + 32, 12345.0, np.float32)
    out = buf[16:16 + 9 * 40].reshape(9, 40)
    y = xir.rmsnorm(x, w, out=out)
    assert y is out
    check("rmsnorm", out, ref_rmsnorm(x, w))
    assert (buf[:16] == 12345.0).all() and (buf[-16:] == 12345.0).all()


def test_non_contiguous_inputs_are_copied(rng):
    big = rand(rng, 10, 80)
    x = big[::2, 1::2]  # strided rows and columns
    w = rand(rng, 80)[::2]
    assert not x.flags.c_contiguous
    check("rmsnorm", xir.rmsnorm(x, w), ref_rmsnorm(np.ascontiguousarray(x), np.ascontiguousarray(w)))
    xt = rand(rng, 30, 6).T  # a transpose
    check("swiglu", xir.swiglu(xt, xt), silu(xt.astype(np.float64)) * xt)


def test_non_contiguous_out_is_rejected(rng):
    x, w = rand(rng, 4, 16), rand(rng, 16)
    out = np.zeros((4, 32), np.float32)[:, ::2]
    with pytest.raises(ValueError, match="out .y. must be C-contiguous"):
        xir.rmsnorm(x, w, out=out)
    ro = np.zeros((4, 16), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        xir.rmsnorm(x, w, out=ro)


def test_out_aliasing_an_input_is_rejected(rng):
    a, b = rand(rng, 4, 16), rand(rng, 4, 16)
    with pytest.raises(ValueError, match="overlaps a"):
        xir.swiglu(a, b, out=a)


class DLPackOnly:
    """Exposes only DLPack (like a torch CPU tensor without numpy's protocols)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class ArrayInterfaceOnly:
    def __init__(self, a):
        self.a = a
        self.__array_interface__ = a.__array_interface__


def test_dlpack_and_array_interface_without_copy(rng):
    x, w = rand(rng, 5, 32), rand(rng, 32)
    check("rmsnorm", xir.rmsnorm(DLPackOnly(x), ArrayInterfaceOnly(w)), ref_rmsnorm(x, w))
    out = np.zeros((5, 32), np.float32)
    xir.rmsnorm(x, w, out=DLPackOnly(out))  # written in place: shared memory, not a copy
    check("rmsnorm", out, ref_rmsnorm(x, w))
    out2 = np.zeros((5, 32), np.float32)
    xir.rmsnorm(x, w, out=ArrayInterfaceOnly(out2))
    check("rmsnorm", out2, ref_rmsnorm(x, w))


class BadDLPack:
    def __dlpack__(self, **kw):
        raise RuntimeError("Unsupported dtype in DLTensor.")

    def __dlpack_device__(self):
        return (1, 0)


def test_unreadable_array_is_a_clear_error(rng):
    with pytest.raises(ValueError, match=r"rmsnorm: x \(BadDLPack\) could not be read as an array: "
                                         r"Unsupported dtype in DLTensor"):
        xir.rmsnorm(BadDLPack(), rand(rng, 4))


def test_non_contiguous_dlpack_inputs_are_copied(rng):
    """Tensors read through DLPack (torch's path; here NumPy arrays behind a DLPack-only wrapper)
    that are strided, transposed or reversed are copied from their strides (float32, float16,
    int64); a strided out= is refused; a dtype xir has no buffers of is named."""
    big = rand(rng, 10, 80)
    for dt in (np.float32, np.float16):
        b = big.astype(dt)
        x, w = b[::2, 1::2], b[3, ::2]  # strided rows and columns; a strided vector
        assert not x.flags.c_contiguous and not w.flags.c_contiguous
        ref = ref_rmsnorm(x.astype(np.float64), w.astype(np.float64))
        y = xir.rmsnorm(DLPackOnly(x), DLPackOnly(w))
        assert type(y) is np.ndarray
        check16("rmsnorm", y, ref, dt)
        xr, xt = b[::-1, :40], np.ascontiguousarray(b[:, 40:].T).T  # negative strides; a transpose
        check16("swiglu", xir.swiglu(DLPackOnly(xr), DLPackOnly(xt)),
                silu(xr.astype(np.float64)) * xt.astype(np.float64), dt)
    R, C, HD, P = 6, 20, 10, 4
    x = rand(rng, R, C)
    pos = (np.arange(2 * R, dtype=np.int64) % P)[::2]  # int64, strided
    cos, sin = _rope_tables(rng, P, HD // 2)
    sin_t = np.ascontiguousarray(sin.T).T  # the same values, column-major
    check("rope_cache", xir.rope_cache(DLPackOnly(x), DLPackOnly(pos), cos, DLPackOnly(sin_t)),
          ref_rope_cache(x, pos, cos, sin))
    out = np.zeros((10, 80), np.float32)[:, ::2]
    with pytest.raises(ValueError, match=r"rmsnorm: out \(y\) must be C-contiguous"):
        xir.rmsnorm(big[:, :40], big[0, :40], out=DLPackOnly(out))
    with pytest.raises(ValueError, match="rmsnorm: x must be float32, float16 or bfloat16, got float64"):
        xir.rmsnorm(DLPackOnly(big.astype(np.float64)), big[0])


class FakeDLPack:
    """A DLPack producer of a [2, 8] float32 tensor on DLPack device `device_type` (2: CUDA), its
    capsule built with ctypes (the ABI of dlpack.h, the legacy "dltensor" capsule)."""

    def __init__(self, device_type):
        import ctypes as c

        class Tensor(c.Structure):
            _fields_ = [("data", c.c_void_p), ("device_type", c.c_int32), ("device_id", c.c_int32),
                        ("ndim", c.c_int32), ("code", c.c_uint8), ("bits", c.c_uint8), ("lanes", c.c_uint16),
                        ("shape", c.POINTER(c.c_int64)), ("strides", c.c_void_p), ("byte_offset", c.c_uint64),
                        ("manager_ctx", c.c_void_p), ("deleter", c.c_void_p)]

        self.data = np.zeros((2, 8), np.float32)
        self.shape = (c.c_int64 * 2)(2, 8)
        self.m = Tensor(self.data.ctypes.data, device_type, 0, 2, 2, 32, 1, self.shape, None, 0, None, None)
        self.new_capsule = c.pythonapi.PyCapsule_New
        self.new_capsule.restype = c.py_object
        self.new_capsule.argtypes = [c.c_void_p, c.c_char_p, c.c_void_p]
        self.addr = c.addressof(self.m)

    def __dlpack__(self, **kw):
        return self.new_capsule(self.addr, _DLTENSOR, None)

    def __dlpack_device__(self):
        return (self.m.device_type, 0)


_DLTENSOR = b"dltensor"  # the capsule's name: must outlive every capsule


def test_dlpack_device_other_than_the_cpu_is_a_clear_error(rng):
    w = rand(rng, 8)
    with pytest.raises(ValueError, match=r"rmsnorm: x is on DLPack device type 2, not the CPU: xir reads CPU "
                                         r"memory \(pass x\.cpu\(\)\)"):
        xir.rmsnorm(FakeDLPack(2), w)
    check("rmsnorm", xir.rmsnorm(FakeDLPack(1), w), ref_rmsnorm(np.zeros((2, 8)), w))  # the same on the CPU


def need_torch():
    """torch, or a skip where it is not installed (the package's test venv, CI). Under
    XIR_REQUIRE_TORCH=1 (scripts/test.sh's torch step) a missing torch is a failure instead."""
    if os.environ.get("XIR_REQUIRE_TORCH") == "1":
        import torch
        return torch
    return pytest.importorskip("torch")


def test_torch_tensors_if_available(rng):
    torch = need_torch()
    x, w = rand(rng, 5, 32), rand(rng, 32)
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    out = torch.empty(5, 32)
    xir.rmsnorm(tx, tw, out=out)
    check("rmsnorm", out.numpy(), ref_rmsnorm(x, w))


def test_memoryview_input(rng):
    x, w = rand(rng, 3, 16), rand(rng, 16)
    check("rmsnorm", xir.rmsnorm(memoryview(x), memoryview(w)), ref_rmsnorm(x, w))


# ---- errors ----

def test_wrong_shapes(rng):
    x, w = rand(rng, 4, 16), rand(rng, 16)
    with pytest.raises(ValueError, match=r"rmsnorm: w has shape \(8,\), expected \(C=16,\)"):
        xir.rmsnorm(x, w[:8])
    with pytest.raises(ValueError, match=r"rmsnorm: x must have 2 dimensions \(R, C\), got shape \(64,\)"):
        xir.rmsnorm(x.reshape(-1), w)
    with pytest.raises(ValueError, match=r"swiglu: b has shape \(4, 8\), expected \(R=4, C=16\)"):
        xir.swiglu(x, x[:, :8].copy())
    with pytest.raises(ValueError, match=r"rmsnorm: y has shape \(4, 15\), expected \(R=4, C=16\)"):
        xir.rmsnorm(x, w, out=np.zeros((4, 15), np.float32))
    q = rand(rng, 1, 4, 3, 8)
    with pytest.raises(ValueError, match=r"attention: k has shape \(1, 2, 5, 4\), expected \(B=1, HKV=2, K=5, D=8\)"):
        xir.attention(q, rand(rng, 1, 2, 5, 4), rand(rng, 1, 2, 5, 8))
    with pytest.raises(ValueError, match="requirement"):  # HQ % HKV
        xir.attention(q, rand(rng, 1, 3, 5, 8), rand(rng, 1, 3, 5, 8))
    with pytest.raises(ValueError, match="requirement"):  # head_dim must divide C
        xir.rope(x, 6)
    with pytest.raises(ValueError, match="dim C is 16 from x but 8 from dims"):
        xir.Kernel(AXPY.replace("[N]", "[C]").replace("in N", "in C"))(w, w, dims={"C": 8})
    with pytest.raises(ValueError, match="dim HD is not named by any array given; pass it in dims"):
        xir._P["rope"].run((x, None, None, None))
    with pytest.raises(ValueError):  # an empty array: dims are >= 1
        xir.rmsnorm(np.zeros((0, 16), np.float32), w)
    with pytest.raises(ValueError, match="scale must be > 0"):
        xir.attention(q, q, q, scale=0.0)
    with pytest.raises(ValueError, match="not both"):
        xir.softmax(x, x, causal=True)


def test_wrong_dtypes(rng):
    x, w = rand(rng, 4, 16), rand(rng, 16)
    with pytest.raises(ValueError, match="rmsnorm: x must be float32, float16 or bfloat16, got float64"):
        xir.rmsnorm(x.astype(np.float64), w)
    with pytest.raises(ValueError, match="w must be float32, float16 or bfloat16, got int32"):
        xir.rmsnorm(x, w.astype(np.int32))
    with pytest.raises(ValueError, match="y must be float32, float16 or bfloat16, got float64"):
        xir.rmsnorm(x, w, out=np.zeros((4, 16)))
    cos = np.ones((8, 4), np.float32)
    with pytest.raises(ValueError, match="pos must be int64, got float32"):
        xir.rope_cache(rand(rng, 2, 8), np.zeros(2, np.float32), cos, cos)
    with pytest.raises(TypeError, match="must be an array"):
        xir.rmsnorm("not an array", w)


def test_errors_are_library_errors():
    assert issubclass(xir.ArgumentError, ValueError) and issubclass(xir.ArgumentError, xir.Error)
    assert issubclass(xir.ParseError, ValueError)
    with pytest.raises(xir.ParseError) as e:
        xir.Kernel("kernel k[N](x: f32[N], y: out f32[N])\nroot i in N {\n  store y[i] = lod x[i]\n}\n",
                   "mine.xir")
    assert e.value.line == 3 and e.value.col > 0 and e.value.file == "mine.xir"
    assert str(e.value).startswith("mine.xir:3:")
    with pytest.raises(xir.ParseError, match="mine.xir:2"):
        xir.Kernel("kernel k[N](x: f32[N], y: out f32[N])\nroot i in M {\n  store y[i] = load x[i]\n}\n",
                   "mine.xir")


# ---- custom kernels, plans, the cache ----

AXPY = """kernel axpy[N](x: f32[N], y: f32[N], z: out f32[N], a: f32 = 2.0)
root i in N {
  store z[i] = a * load x[i] + load y[i]
}
"""


def test_kernel_call_and_plan(rng):
    k = xir.Kernel(AXPY)
    assert k.name == "axpy" and k.dims == ("N",)
    assert [p[0] for p in k.params] == ["x", "y", "z", "a"]
    x, y = rand(rng, 100), rand(rng, 100)
    check("axpy", k(x, y), 2.0 * x.astype(np.float64) + y)
    check("axpy", k(x, y, a=-0.5), -0.5 * x.astype(np.float64) + y)
    out = np.zeros(100, np.float32)
    assert k(y=y, x=x, z=out) is out
    check("axpy", out, 2.0 * x.astype(np.float64) + y)
    with pytest.raises(TypeError, match="no parameter 'q'"):
        k(x, y, q=1)
    plan = k.plan(N=100)
    assert plan.shape == {"N": 100}
    ranked = plan.explain()
    assert len(ranked) >= 2 and [e["rank"] for e in ranked] == list(range(1, len(ranked) + 1))
    assert ranked[0]["candidate"] == plan.candidate and ranked[0]["grain"] == plan.grain
    totals = [e["total"] for e in ranked]
    assert totals == sorted(totals)
    for term in ("arith", "memory", "block", "imbalance", "dispatch", "activation"):
        assert term in ranked[0]
    assert plan.explain_text().startswith(f"plan for axpy N=100 ({plan.workers} workers): {plan.candidate}")
    check("axpy", plan(x, y, None, 3.0), 3.0 * x.astype(np.float64) + y)
    with pytest.raises(ValueError, match="x has shape"):
        plan(x[:50].copy(), y[:50].copy(), None, None)
    assert xir.Kernel(AXPY).plan("N=100").candidate == plan.candidate


def test_cache_second_call_does_not_compile(rng):
    x, w = rand(rng, 7, 48), rand(rng, 48)
    xir.rmsnorm(x, w)
    a = xir.session_stats()
    xir.rmsnorm(x, w)
    b = xir.session_stats()
    assert b["compiles"] == a["compiles"] and b["plans"] == a["plans"]
    assert b["launches"] == a["launches"] + 1 and b["hits"] == a["hits"] + 1


def test_help_says_what_it_computes():
    assert "rsqrt(mean(x**2" in xir.rmsnorm.__doc__
    assert "silu(a) * b" in xir.swiglu.__doc__
    import inspect
    sig = inspect.signature(xir.attention)
    assert list(sig.parameters) == ["q", "k", "v", "scale", "causal", "out"]
    assert sig.parameters["causal"].default is False
    assert inspect.signature(xir.rmsnorm).parameters["eps"].default == 1e-5


def test_set_num_threads(rng):
    old = xir.get_num_threads()
    try:
        xir.set_num_threads(1)
        assert xir.get_num_threads() == 1
        x, w = rand(rng, 33, 100), rand(rng, 100)
        check("rmsnorm", xir.rmsnorm(x, w), ref_rmsnorm(x, w))
        k = xir.Kernel(AXPY)
        assert k.plan(N=64).workers == 1
        with pytest.raises(ValueError):
            xir.set_num_threads(-1)
    finally:
        xir.set_num_threads(old)
    assert xir.get_num_threads() == old


def test_threads_call_concurrently(rng):
    cases = []
    for i in range(6):
        R, C = (64, 256) if i % 2 else (17 + i, 65)
        x, w = rand(rng, R, C), rand(rng, C)
        cases.append((x, w, ref_rmsnorm(x, w), rand(rng, R, C)))
    errors = []

    def work(i):
        x, w, ref, b = cases[i]
        try:
            for _ in range(20):
                check("rmsnorm", xir.rmsnorm(x, w), ref)
                check("swiglu", xir.swiglu(x, b), silu(x.astype(np.float64)) * b)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    run_threads(work, len(cases))
    assert not errors, errors[0]


# ---- the worked example of docs/python.md ----

def load_example(name):
    """python/examples/<name>.py as a module."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    return ex


def ref_block(x64, f):
    """The worked example's decoder block in fp64 NumPy (x64 [T, C]; f: the weights as float64)."""
    T, HQ, HKV, D = x64.shape[0], f["HQ"], f["HKV"], f["D"]
    h = ref_rmsnorm(x64, f["norm1"])
    q, k, v = ref_rope(h @ f["wq"], D), ref_rope(h @ f["wk"], D), h @ f["wv"]
    heads = lambda a, n: a.reshape(T, n, D).transpose(1, 0, 2)[None]
    o = ref_attention(heads(q, HQ), heads(k, HKV), heads(v, HKV), causal=True)
    x1 = x64 + o[0].transpose(1, 0, 2).reshape(T, HQ * D) @ f["wo"]
    h = ref_rmsnorm(x1, f["norm2"])
    return x1 + (silu(h @ f["gate"]) * (h @ f["up"])) @ f["down"]


def test_llm_block_example():
    ex = load_example("llm_block")
    p = ex.make_weights()
    x = np.random.default_rng(1).standard_normal((16, 256)).astype(np.float32)
    y = ex.block(x, p)
    f = {k: (v.astype(np.float64) if isinstance(v, np.ndarray) else v) for k, v in p.items()}
    ref = ref_block(x.astype(np.float64), f)
    err = np.abs(y - ref).max() / np.abs(ref).max()
    assert y.dtype == np.float32 and err < 1e-4, err
    # in bf16 (activations bf16, weights float32): rounded at every step, so compared with the
    # fp64 block as a whole (bf16 has 8 significant bits: 2^-8 = 0.4% per rounding)
    yb = ex.block(x.astype(BF16), p)
    assert yb.dtype == BF16
    errb = np.linalg.norm(yb.astype(np.float64) - ref) / np.linalg.norm(ref)
    assert errb < 2e-2, errb


def test_bench_peer_serves_the_kernels():
    """python/bench/xir_peer.py (the Python row of `xir bench --suite peers`) through the peers'
    smoke driver: every kernel's output checked against fp64 NumPy by peers/ext/smoke.py."""
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, str(root / "peers/ext/smoke.py"), "--kernels", "all", "--",
                        sys.executable, str(root / "python/bench/xir_peer.py")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(" ok\n") >= 9 and '"peer": "xir_python"' in r.stdout


# ---- bf16 and f16 (docs/xir.md "16-bit buffers"; tolerances: "Tolerances of 16-bit outputs") ----

import ml_dtypes  # noqa: E402

BF16 = ml_dtypes.bfloat16
DT16 = {"bf16": BF16, "f16": np.float16, "f32": np.float32}


def half_ulp(dtype, y):
    """Half the spacing of dtype's values at |y| (0 for float32): the final rounding's error."""
    if dtype == np.float32:
        return np.zeros_like(y)
    frac, sub = (7, 2.0 ** -134) if dtype == BF16 else (10, 2.0 ** -25)
    _, ex = np.frexp(np.abs(y))
    return np.maximum(np.ldexp(1.0, ex - 1 - frac - 1), sub)


def check16(kernel, y, ref, dtype):
    rtol, atol = tol(kernel)
    assert y.dtype == dtype, (y.dtype, dtype)
    assert y.shape == ref.shape
    y64 = y.astype(np.float64)
    assert not np.isnan(y64).any()
    bound = atol + rtol * np.abs(ref) + half_ulp(dtype, y64)
    bad = np.abs(y64 - ref) > bound
    assert not bad.any(), f"{kernel} {np.dtype(dtype).name}: {bad.sum()} of {bad.size} out of tolerance"


def _rope_tables(rng, P, H2):
    ang = rng.uniform(-3, 3, (P, H2))
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def _causal(z, R, C):
    return ref_softmax(np.where(np.arange(C)[None, :] > np.arange(R)[:, None], -np.inf, z))


# 16-bit shapes: the first of each list is test_16bit's; the others (test_16bit_shapes) one row,
# odd row lengths and a few rows
ROWS16 = [(17, 65), (1, 1), (1, 127), (3, 33), (6, 1001)]
ATTN16 = [(1, 1, 1, 1, 1, 1, 1), (1, 2, 1, 3, 7, 5, 3), (2, 4, 2, 9, 17, 16, 8)]


def _attn_inputs(g, s):
    B, HQ, HKV, Q, K, D, DV = s
    return [rand(g, B, HQ, Q, D, lo=-1, hi=1), rand(g, B, HKV, K, D, lo=-1, hi=1), rand(g, B, HKV, K, DV)]


# kernel -> (shapes, make inputs (rng, shape), the xir call (inputs, shape, out), the fp64
# reference over the stored inputs (inputs as float64, shape)); the first input is the activations
K16 = {
    "rmsnorm": (ROWS16, lambda g, s: [rand(g, *s), rand(g, s[1])],
                lambda a, s, o: xir.rmsnorm(*a, out=o), lambda a, s: ref_rmsnorm(*a)),
    "layernorm": ([(9, 130)] + ROWS16[1:], lambda g, s: [rand(g, *s), rand(g, s[1]), rand(g, s[1])],
                  lambda a, s, o: xir.layernorm(*a, out=o), lambda a, s: ref_layernorm(*a)),
    "rope": ([(17, 66, 22), (1, 2, 2), (3, 30, 10), (5, 126, 42)], lambda g, s: [rand(g, s[0], s[1])],
             lambda a, s, o: xir.rope(a[0], s[2], out=o), lambda a, s: ref_rope(a[0], s[2])),
    "rope_cache": ([(17, 66, 22, 5), (1, 2, 2, 1), (3, 30, 10, 4), (6, 126, 42, 9)],
                   lambda g, s: [rand(g, s[0], s[1]), *_rope_tables(g, s[3], s[2] // 2)],
                   lambda a, s, o: xir.rope_cache(a[0], np.arange(s[0], dtype=np.int64) % s[3], a[1], a[2], out=o),
                   lambda a, s: ref_rope_cache(a[0], np.arange(s[0]) % s[3], a[1], a[2])),
    "softmax_mask": (ROWS16, lambda g, s: [rand(g, *s), rand(g, *s)], lambda a, s, o: xir.softmax(a[0], a[1], out=o),
                     lambda a, s: ref_softmax(a[0] + a[1])),
    "softmax_causal": (ROWS16, lambda g, s: [rand(g, *s)], lambda a, s, o: xir.softmax(a[0], causal=True, out=o),
                       lambda a, s: _causal(a[0], *s)),
    "swiglu": (ROWS16, lambda g, s: [rand(g, *s), rand(g, *s)], lambda a, s, o: xir.swiglu(*a, out=o),
               lambda a, s: silu(a[0]) * a[1]),
    "gelu_residual": (ROWS16, lambda g, s: [rand(g, *s), rand(g, *s)], lambda a, s, o: xir.gelu_residual(*a, out=o),
                      lambda a, s: gelu_tanh(a[0]) + a[1]),
    "attention": ([(1, 4, 2, 5, 9, 8, 6)] + ATTN16, _attn_inputs, lambda a, s, o: xir.attention(*a, out=o),
                  lambda a, s: ref_attention(*a)),
    "attention_causal": ([(2, 2, 1, 5, 9, 8, 6)] + ATTN16, _attn_inputs,
                         lambda a, s, o: xir.attention(*a, causal=True, out=o),
                         lambda a, s: ref_attention(*a, causal=True)),
}


def run16(rng, kernel, shape, act, rest, out=None):
    """Runs `kernel` at `shape` with the activations (the first input) of type `act` and the other
    floating-point inputs of type `rest` (np dtypes), into `out` (a dtype: an out= array of it;
    None: allocated), and checks the result against fp64 with the output type's tolerance."""
    shapes, make, call, ref = K16[kernel]
    a = [x.astype(act if i == 0 else rest) for i, x in enumerate(make(rng, shape))]
    o = None if out is None else np.zeros(ref([x.astype(np.float64) for x in a], shape).shape, out)
    y = call(a, shape, o)
    if o is not None:
        assert y is o
    check16(kernel, y, ref([x.astype(np.float64) for x in a], shape), act if out is None else out)


@pytest.mark.parametrize("mode", ["bf16", "f16", "mixed"])
@pytest.mark.parametrize("kernel", sorted(K16))
def test_16bit(rng, kernel, mode):
    """all inputs bf16, all f16, or the first input bf16 and the others float32 (the result
    takes the first input's type in every case)."""
    dt = np.float16 if mode == "f16" else BF16
    run16(rng, kernel, K16[kernel][0][0], dt, np.float32 if mode == "mixed" else dt)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("kernel,shape", [(k, s) for k in sorted(K16) for s in K16[k][0][1:]],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
def test_16bit_shapes(rng, kernel, shape, dtype):
    """every kernel in all-bf16 and all-f16 at one row, odd row lengths and a few rows."""
    run16(rng, kernel, shape, DT16[dtype], DT16[dtype])


@pytest.mark.parametrize("combo", ["f16,bf16->f32", "bf16,f16->f16", "f32,bf16->bf16", "f16,f32->bf16"])
@pytest.mark.parametrize("kernel", sorted(K16))
def test_16bit_mixed(rng, kernel, combo):
    """activations, the other inputs (weights, tables, k and v, the mask) and the output (out=)
    of three different types; the output's tolerance applies (f32: the kernel's own)."""
    ins, out = combo.split("->")
    act, rest = ins.split(",")
    shape = K16[kernel][0][-1]
    run16(rng, kernel, shape, DT16[act], DT16[rest], DT16[out])


def test_16bit_threads_call_concurrently(rng):
    """six threads, started together, each calling 16-bit kernels with types and shapes first
    used here, so that the first calls race to retype, plan and prepare them (the third and the
    sixth case are the same on purpose: two threads racing for one new variant)."""
    cases = [("rmsnorm", (29, 77), BF16, BF16), ("rmsnorm", (29, 77), np.float16, BF16),
             ("swiglu", (29, 77), BF16, np.float16), ("attention_causal", (1, 2, 1, 7, 11, 8, 4), BF16, BF16),
             ("layernorm", (5, 203), np.float16, np.float16), ("swiglu", (29, 77), BF16, np.float16)]
    barrier = threading.Barrier(len(cases))
    errors = []

    def work(i):
        kernel, shape, act, rest = cases[i]
        g = np.random.default_rng(i)
        try:
            barrier.wait()
            for _ in range(15):
                run16(g, kernel, shape, act, rest)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    run_threads(work, len(cases))
    assert not errors, errors[0]
def test_16bit_out_and_plan(rng):
    x, w = rand(rng, 8, 64).astype(BF16), rand(rng, 64)
    ref = ref_rmsnorm(x.astype(np.float64), w)
    out = np.zeros((8, 64), np.float16)  # out= decides the result's type
    assert xir.rmsnorm(x, w, out=out) is out
    check16("rmsnorm", out, ref, np.float16)
    out32 = np.zeros((8, 64), np.float32)
    check("rmsnorm", xir.rmsnorm(x, w, out=out32), ref)
    plan = xir.Kernel(xir._P["rmsnorm"].text).plan(R=8, C=64)
    with pytest.raises(ValueError, match=r"x must be float32, got bfloat16 \(the plan's type\)"):
        plan(x, w, None, None)
    p16 = xir._P["rmsnorm"].prepare({"R": 8, "C": 64}, "bf16,w=f32")
    check16("rmsnorm", p16(x, w, None, None), ref, BF16)
    xt = rand(rng, 64, 8).astype(BF16).T  # a non-contiguous bf16 input is copied too
    check16("rmsnorm", xir.rmsnorm(xt, w), ref_rmsnorm(xt.astype(np.float64), w), BF16)
    with pytest.raises(ValueError, match="out .y. must be C-contiguous"):
        xir.rmsnorm(x, w, out=np.zeros((8, 128), BF16)[:, ::2])


# ---- torch tensors (skipped without torch; scripts/test.sh runs them with the peers' venv) ----

def t2np(t):
    """A torch CPU tensor's values as a NumPy array of the same type (bf16: ml_dtypes.bfloat16)."""
    torch = sys.modules["torch"]
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(BF16)
    return t.numpy()


def tdt(torch, name):
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[name]


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
def test_torch_result_is_a_torch_tensor(rng, dtype):
    """torch activations give a torch result of their dtype (bf16 included, which NumPy cannot
    hand to torch); NumPy activations a NumPy one; out= is still returned as given."""
    torch = need_torch()
    dt = tdt(torch, dtype)
    x, w = torch.from_numpy(rand(rng, 6, 40)).to(dt), torch.from_numpy(rand(rng, 40)).to(dt)
    ref = ref_rmsnorm(x.double().numpy(), w.double().numpy())
    y = xir.rmsnorm(x, w)
    assert type(y) is torch.Tensor and y.dtype == dt and tuple(y.shape) == (6, 40)
    assert y.is_contiguous() and not y.requires_grad and y.data_ptr() != x.data_ptr()
    check16("rmsnorm", t2np(y), ref, DT16[dtype])
    y2 = xir.rmsnorm(x, t2np(w))  # the activations decide
    assert type(y2) is torch.Tensor and y2.dtype == dt and torch.equal(y2, y)
    y3 = xir.rmsnorm(t2np(x), w)
    assert type(y3) is np.ndarray and y3.dtype == DT16[dtype]
    assert np.array_equal(y3.view(np.uint8), t2np(y).view(np.uint8))
    q = torch.from_numpy(rand(rng, 1, 4, 5, 8, lo=-1, hi=1)).to(dt)
    k = torch.from_numpy(rand(rng, 1, 2, 7, 8, lo=-1, hi=1)).to(dt)
    v = torch.from_numpy(rand(rng, 1, 2, 7, 6)).to(dt)
    o = xir.attention(q, k, v, causal=True)
    assert type(o) is torch.Tensor and o.dtype == dt and tuple(o.shape) == (1, 4, 5, 6)
    check16("attention", t2np(o), ref_attention(q.double().numpy(), k.double().numpy(), v.double().numpy(),
                                                causal=True), DT16[dtype])
    z = xir.Kernel(AXPY)(x[0], x[1], a=0.5)  # a custom kernel, retyped for the tensors' type
    assert type(z) is torch.Tensor and z.dtype == dt
    check16("axpy", t2np(z), 0.5 * x[0].double().numpy() + x[1].double().numpy(), DT16[dtype])
    out = np.zeros((6, 40), np.float32)
    assert xir.rmsnorm(x, w, out=out) is out
    check("rmsnorm", out, ref)
    tout = torch.zeros(6, 40, dtype=torch.float16)
    assert xir.rmsnorm(x, w, out=tout) is tout
    check16("rmsnorm", tout.numpy(), ref, np.float16)


def test_torch_result_from_a_plan(rng):
    """A Plan (fixed types) called with torch tensors returns a torch tensor of the plan's type."""
    torch = need_torch()
    x, y = torch.from_numpy(rand(rng, 50)), torch.from_numpy(rand(rng, 50))
    plan = xir.Kernel(AXPY).plan(N=50)
    z = plan(x, y, None, 3.0)
    assert type(z) is torch.Tensor and z.dtype == torch.float32
    check("axpy", z.numpy(), 3.0 * x.double().numpy() + y.double().numpy())


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
def test_torch_non_contiguous_inputs_are_copied(rng, dtype):
    """Transposed, strided, sliced and expanded torch tensors are read through a copy, for every
    dtype (bf16 too); the inputs are left as they were; a strided out= is refused."""
    torch = need_torch()
    dt = tdt(torch, dtype)
    x = torch.from_numpy(rand(rng, 40, 12)).to(dt).T  # [12, 40], a transpose
    w = torch.from_numpy(rand(rng, 80)).to(dt)[::2]  # strided
    assert not x.is_contiguous() and not w.is_contiguous()
    before = x.clone()
    y = xir.rmsnorm(x, w)
    assert type(y) is torch.Tensor and y.dtype == dt and torch.equal(x, before)
    check16("rmsnorm", t2np(y), ref_rmsnorm(x.double().numpy(), w.double().numpy()), DT16[dtype])
    xs = torch.from_numpy(rand(rng, 9, 50)).to(dt)[2:7, 5:45]  # a slice: storage offset, row stride
    xe = torch.from_numpy(rand(rng, 1, 40)).to(dt).expand(5, 40)  # stride 0
    assert not xs.is_contiguous() and xe.stride(0) == 0
    check16("swiglu", t2np(xir.swiglu(xs, xe)), silu(xs.double().numpy()) * xe.double().numpy(), DT16[dtype])
    T, H, D = 9, 2, 8  # the heads of a fused qkv projection, as the worked example takes them
    qkv = torch.from_numpy(rand(rng, T, 3 * H * D, lo=-1, hi=1)).to(dt)
    q, k, v = (qkv[:, i * H * D:(i + 1) * H * D].view(T, H, D).transpose(0, 1)[None] for i in range(3))
    assert not q.is_contiguous()
    o = xir.attention(q, k, v, causal=True)
    check16("attention_causal", t2np(o), ref_attention(q.double().numpy(), k.double().numpy(), v.double().numpy(),
                                                       causal=True), DT16[dtype])
    pos = (torch.arange(24) % 5)[::2]  # int64, strided
    cos, sin = _rope_tables(rng, 5, 4)
    xr = torch.from_numpy(rand(rng, 12, 16)).to(dt)
    yr = xir.rope_cache(xr, pos, torch.from_numpy(cos).to(dt).T.contiguous().T, torch.from_numpy(sin).to(dt))
    check16("rope_cache", t2np(yr), ref_rope_cache(xr.double().numpy(), pos.numpy(),
                                                   torch.from_numpy(cos).to(dt).double().numpy(),
                                                   torch.from_numpy(sin).to(dt).double().numpy()), DT16[dtype])
    with pytest.raises(ValueError, match=r"rmsnorm: out \(y\) must be C-contiguous"):
        xir.rmsnorm(x, w, out=torch.empty(12, 80, dtype=dt)[:, ::2])


def test_torch_requires_grad(rng):
    """xir does not record autograd: a tensor that requires grad is an error while torch's grad
    mode is on (naming the tensor and the way out), and is read under no_grad / inference_mode
    (nn.Parameter weights in inference); .detach() works anywhere."""
    torch = need_torch()
    x = torch.from_numpy(rand(rng, 4, 32)).requires_grad_()
    w = torch.nn.Parameter(torch.from_numpy(rand(rng, 32)))
    ref = ref_rmsnorm(x.detach().double().numpy(), w.detach().double().numpy())
    with pytest.raises(ValueError, match=r"rmsnorm: x requires grad, and xir does not record autograd: "
                                         r"pass x\.detach\(\), or call under torch\.no_grad\(\) or "
                                         r"torch\.inference_mode\(\)"):
        xir.rmsnorm(x, w.detach())
    with pytest.raises(xir.ArgumentError, match="rmsnorm: w requires grad"):
        xir.rmsnorm(x.detach(), w)
    check("rmsnorm", xir.rmsnorm(x.detach(), w.detach()).numpy(), ref)
    with torch.no_grad():
        y = xir.rmsnorm(x, w)
    assert not y.requires_grad
    check("rmsnorm", y.numpy(), ref)
    with torch.inference_mode():
        check("rmsnorm", xir.rmsnorm(x, w).numpy(), ref)
    out = torch.zeros(4, 32, requires_grad=True)
    with pytest.raises(ValueError, match="rmsnorm: y requires grad"):
        xir.rmsnorm(x.detach(), w.detach(), out=out)
    with torch.no_grad():
        assert xir.rmsnorm(x, w, out=out) is out
    check("rmsnorm", out.detach().numpy(), ref)


def test_torch_unreadable_tensors_are_clear_errors(rng):
    torch = need_torch()
    w = torch.ones(8)
    with pytest.raises(ValueError, match=r"rmsnorm: x must be float32, float16 or bfloat16, got torch\.float64"):
        xir.rmsnorm(torch.ones(2, 8, dtype=torch.float64), w)
    with pytest.raises(ValueError, match=r"rope_cache: pos must be int64, got torch\.int32"):
        xir.rope_cache(torch.ones(2, 8), torch.zeros(2, dtype=torch.int32), torch.ones(3, 4), torch.ones(3, 4))
    with pytest.raises(ValueError, match=r"rmsnorm: x \(Tensor\) could not be read as an array: .*meta"):
        xir.rmsnorm(torch.empty(2, 8, device="meta"), w)


def test_torch_out_does_not_bump_the_version_counter(rng):
    """docs/python.md: a write into a torch out= tensor goes through DLPack, so torch's version
    counter stays as it was and autograd does not see the in-place change (no error on backward,
    the new values used) — unlike torch's own in-place ops."""
    torch = need_torch()
    x = torch.from_numpy(rng.standard_normal((2, 8)).astype(np.float32))
    w = torch.ones(8)
    a = torch.ones(2, 8, requires_grad=True)
    buf = torch.zeros(2, 8)
    z = a * buf  # buf saved for the backward pass
    v0 = buf._version
    assert xir.rmsnorm(x, w, out=buf) is buf
    assert buf._version == v0
    z.sum().backward()  # no "modified by an inplace operation"
    assert torch.equal(a.grad, buf) and bool(buf.abs().sum() > 0)


def test_torch_is_not_imported_by_xir():
    """xir uses torch only once the caller has imported it (NumPy calls never load it)."""
    need_torch()
    import subprocess
    site = os.path.dirname(os.path.dirname(os.path.abspath(xir.__file__)))
    code = ("import sys; sys.path.append(sys.argv[1]); import numpy as np, xir; "
            "x = np.ones((2, 8), np.float32); y = xir.rmsnorm(x, x[0]); k = xir.swiglu(x, x); "
            "assert type(y) is np.ndarray and 'torch' not in sys.modules, sorted(sys.modules)")
    r = subprocess.run([sys.executable, "-c", code, site], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


_TORCH_RACE = r"""
import sys, threading, types
sys.path.append(sys.argv[1])
import numpy as np
import xir

# A stand-in for torch (no torch needed): its Tensor attribute is a property, and the first lookup,
# in thread A inside xir's first look at torch, lets thread B run that look to the end before it
# returns: the lookups can run Python code, so the GIL may pass to another thread between them.
class Tensor: pass
def empty(*a, **k): raise AssertionError("not a torch call")
def is_grad_enabled(): return False
def to_dlpack(t): raise AssertionError("not a torch tensor")
f32, f16, bf16, i64 = object(), object(), object(), object()

class D:  # not a buffer, has __dlpack__: xir asks whether it is a torch tensor
    def __init__(self, a): self.a = a
    def __dlpack__(self): return self.a.__dlpack__()
    def __dlpack_device__(self): return self.a.__dlpack_device__()

x = np.ones((2, 8), np.float32)
w = np.ones(8, np.float32)
seen, errors = [], []

def call():
    try:
        y = xir.rmsnorm(D(x), w)
        assert type(y) is np.ndarray
    except BaseException as e:
        errors.append(repr(e))

class FakeTorch(types.ModuleType):
    @property
    def Tensor(self):
        seen.append(threading.current_thread().name)
        if len(seen) == 1:
            b = threading.Thread(target=call, name="B")
            b.start()
            b.join(60)
            assert not b.is_alive(), "thread B did not finish"
        return Tensor

t = FakeTorch("torch")
for k, v in dict(empty=empty, is_grad_enabled=is_grad_enabled, float32=f32, float16=f16,
                 bfloat16=bf16, int64=i64).items():
    setattr(t, k, v)
dl = types.ModuleType("torch.utils.dlpack")
dl.to_dlpack = to_dlpack
sys.modules.update({"torch": t, "torch.utils": types.ModuleType("torch.utils"), "torch.utils.dlpack": dl})
del k, v
parts = [Tensor, empty, is_grad_enabled, to_dlpack, f32, f16, bf16, i64]
before = [sys.getrefcount(p) for p in parts]
call()
assert not errors, errors
assert seen == ["MainThread", "B"], seen
after = [sys.getrefcount(p) for p in parts]
# xir keeps ONE reference to each part (for the life of the process); a second one is a leak
assert [a - b for a, b in zip(after, before)] == [1] * len(parts), (before, after)
print("ok")
"""


def test_torch_lookup_is_thread_safe():
    """xir's first look at torch (torch.Tensor, torch.empty, ... looked up once) fills its
    references once when two threads look at once: the second's are dropped, not leaked over."""
    import subprocess
    site = os.path.dirname(os.path.dirname(os.path.abspath(xir.__file__)))
    r = subprocess.run([sys.executable, "-c", _TORCH_RACE, site], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout == "ok\n", r.stdout + r.stderr


def test_llm_block_torch_example():
    """python/examples/llm_block_torch.py: the block on torch bf16 tensors (weights bf16 too, torch's
    bf16 matmuls) against the same block in fp64 NumPy over the same bf16 values; every step
    rounds to bf16, so compared as a whole like the NumPy example's bf16 run (it measures 0.004)."""
    torch = need_torch()
    ex = load_example("llm_block_torch")
    p = ex.make_weights()
    x = torch.randn(16, 256, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    with torch.inference_mode():
        y = ex.block(x, p)
    assert type(y) is torch.Tensor and y.dtype == torch.bfloat16 and tuple(y.shape) == (16, 256)
    f = {k: (v.double().numpy() if isinstance(v, torch.Tensor) else v) for k, v in p.items()}
    ref = ref_block(x.double().numpy(), f)
    y64 = y.double().numpy()
    assert not np.isnan(y64).any()
    err = np.linalg.norm(y64 - ref) / np.linalg.norm(ref)
    assert err < 2e-2, err


# ---- where results lie ----

@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
def test_large_results_start_on_a_line(rng, dtype):
    """A result of 64 KiB or more starts on a 64-byte line (numpy.empty puts large arrays 16 bytes
    past a page); its values, dtype, shape and C order are those of a plain result, and it stays
    valid after the call's other objects are gone."""
    R, C = 40, 1000  # 160 KB of f32, 80 KB of a 16-bit type
    x, w = rand(rng, R, C).astype(dtype), rand(rng, C).astype(dtype)
    for _ in range(3):  # several allocations: any address malloc gives
        y = xir.rmsnorm(x, w)
        assert y.ctypes.data % 64 == 0
        assert y.shape == (R, C) and y.dtype == dtype and y.flags.c_contiguous and y.flags.writeable
        ref = ref_rmsnorm(x.astype(np.float64), w.astype(np.float64))
        if dtype == np.float32:
            check("rmsnorm", y, ref)
        else:
            check16("rmsnorm", y, ref, dtype)
    y = xir.softmax(rand(rng, 1, 20000))  # one long row: 80 KB
    assert y.ctypes.data % 64 == 0 and abs(float(y.astype(np.float64).sum()) - 1.0) < 1e-4
    small = xir.rmsnorm(rand(rng, 3, 7), rand(rng, 7))  # small results: numpy.empty's own
    assert small.base is None


# ---- leading batch axes ----

def test_leading_axes_are_flattened(rng):
    """rmsnorm, layernorm, plain and masked softmax, swiglu and gelu_residual take x of shape
    [..., C]: the result has x's shape and equals the 2-D call on x.reshape(-1, C); out= of that
    shape is written in place; the second operand must have x's shape."""
    shp = (2, 3, 40)
    x, y2, m = rand(rng, *shp), rand(rng, *shp), rand(rng, *shp)
    w, b = rand(rng, 40), rand(rng, 40)
    flat = lambda a: a.reshape(-1, 40)
    cases = [
        ("rmsnorm", lambda o: xir.rmsnorm(x, w, out=o), ref_rmsnorm(flat(x), w)),
        ("layernorm", lambda o: xir.layernorm(x, w, b, out=o), ref_layernorm(flat(x), w, b)),
        ("softmax_mask", lambda o: xir.softmax(x, m, 0.5, out=o),
         xir.softmax(flat(x), flat(m), 0.5).astype(np.float64)),
        ("softmax_mask", lambda o: xir.softmax(x, None, 0.5, out=o),
         xir.softmax(flat(x), None, 0.5).astype(np.float64)),
        ("swiglu", lambda o: xir.swiglu(x, y2, out=o),
         (flat(x) / (1 + np.exp(-flat(x).astype(np.float64)))) * flat(y2)),
        ("gelu_residual", lambda o: xir.gelu_residual(x, y2, out=o),
         gelu_tanh(flat(x).astype(np.float64)) + flat(y2)),
    ]
    for name, call, ref in cases:
        y = call(None)
        assert y.shape == shp, (name, y.shape)
        check(name, y.reshape(-1, 40), ref)
        out = np.full(shp, np.nan, np.float32)
        assert call(out) is out or np.shares_memory(call(out), out)
        check(name, out.reshape(-1, 40), ref)
    with pytest.raises(ValueError, match="expected"):
        xir.swiglu(x, y2.reshape(6, 40))  # the second operand of another shape
    with pytest.raises(ValueError, match="C-contiguous"):
        xir.rmsnorm(x, w, out=np.empty((2, 40, 3), np.float32).transpose(0, 2, 1))
    with pytest.raises(ValueError):  # causal: the row index is the query position
        xir.softmax(x, causal=True)
    with pytest.raises(ValueError):  # rope: the row index is the position
        xir.rope(x, 8)


def test_torch_leading_axes_are_flattened(rng):
    """A torch bf16 [B, T, C] tensor (the usual hidden-state layout) through rmsnorm and swiglu:
    a torch result of the same shape and dtype, equal to the 2-D call; out= of that shape is
    written in place."""
    torch = need_torch()
    x = torch.from_numpy(rand(rng, 2, 5, 64)).to(torch.bfloat16)
    g = torch.from_numpy(rand(rng, 2, 5, 64)).to(torch.bfloat16)
    w = torch.from_numpy(rand(rng, 64)).to(torch.bfloat16)
    y = xir.rmsnorm(x, w)
    assert type(y) is torch.Tensor and y.dtype == torch.bfloat16 and tuple(y.shape) == (2, 5, 64)
    assert torch.equal(y.reshape(-1, 64), xir.rmsnorm(x.reshape(-1, 64), w))
    s = xir.swiglu(x, g)
    assert tuple(s.shape) == (2, 5, 64) and torch.equal(s.reshape(-1, 64),
                                                         xir.swiglu(x.reshape(-1, 64), g.reshape(-1, 64)))
    out = torch.empty(2, 5, 64, dtype=torch.bfloat16)
    assert xir.rmsnorm(x, w, out=out).data_ptr() == out.data_ptr()
    assert torch.equal(out, y)
