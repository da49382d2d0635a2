"""One LLM decoder block on NumPy arrays (float32, or bfloat16 through ml_dtypes): RMSNorm -> RoPE -> causal grouped-query attention ->
residual -> RMSNorm -> SwiGLU MLP -> residual. The matrix products are NumPy's; the operators
between them are xir's. docs/python.md walks through it; python/tests checks it against fp64.

    python python/examples/llm_block.py"""
import numpy as np

import xir


def make_weights(C=256, HQ=4, HKV=2, D=64, F=512, seed=0):
    rng = np.random.default_rng(seed)

    def mat(m, n):
        return (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32)

    return dict(HQ=HQ, HKV=HKV, D=D,
                norm1=(1 + 0.1 * rng.standard_normal(C)).astype(np.float32),
                norm2=(1 + 0.1 * rng.standard_normal(C)).astype(np.float32),
                wq=mat(C, HQ * D), wk=mat(C, HKV * D), wv=mat(C, HKV * D), wo=mat(HQ * D, C),
                gate=mat(C, F), up=mat(C, F), down=mat(F, C))


def mm(a, w):
    """a @ w in float32 (NumPy's matmul), the result in a's dtype (float32, bfloat16, float16)."""
    return (a.astype(np.float32) @ w).astype(a.dtype)


def block(x, p):
    """x: [T, C] float32, bfloat16 or float16 (T tokens at positions 0..T-1) -> [T, C], same dtype."""
    T, HQ, HKV, D = x.shape[0], p["HQ"], p["HKV"], p["D"]
    h = xir.rmsnorm(x, p["norm1"])                                   # [T, C], x's dtype
    q = xir.rope(mm(h, p["wq"]), head_dim=D)                         # [T, HQ*D], row t = position t
    k = xir.rope(mm(h, p["wk"]), head_dim=D)                         # [T, HKV*D]
    v = mm(h, p["wv"])
    heads = lambda a, n: a.reshape(T, n, D).transpose(1, 0, 2)[None]  # [1, n, T, D] (a strided view: xir copies it)
    o = xir.attention(heads(q, HQ), heads(k, HKV), heads(v, HKV), causal=True)  # [1, HQ, T, D]
    x = x + mm(o[0].transpose(1, 0, 2).reshape(T, HQ * D), p["wo"])
    h = xir.rmsnorm(x, p["norm2"])
    return x + mm(xir.swiglu(mm(h, p["gate"]), mm(h, p["up"])), p["down"])


if __name__ == "__main__":
    p = make_weights()
    x = np.random.default_rng(1).standard_normal((16, 256)).astype(np.float32)
    y = block(x, p)
    print(f"xir {xir.__version__}: block {x.shape} float32 -> {y.shape}, |y| = {np.linalg.norm(y):.4f}")
    import ml_dtypes  # bfloat16 for NumPy
    yb = block(x.astype(ml_dtypes.bfloat16), p)
    print(f"the same in bfloat16: {yb.dtype}, |y - y_f32| / |y| = "
          f"{np.linalg.norm(yb.astype(np.float32) - y) / np.linalg.norm(y):.2g}")
    print(xir.Kernel(xir._P["rmsnorm"].text).plan(R=16, C=256).explain_text().splitlines()[0])
