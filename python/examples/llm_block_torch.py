"""The decoder block of llm_block.py on torch CPU tensors in bfloat16: RMSNorm -> RoPE -> causal
grouped-query attention -> residual -> RMSNorm -> SwiGLU MLP -> residual. The matrix products are
torch's (bf16 in and out); the operators between them are xir's, which read the tensors through
DLPack without a copy (the attention heads are strided views: xir copies those) and return torch
tensors of the same dtype. docs/python.md walks through it; python/tests checks it against fp64.

Run it with a Python that has torch and xir (e.g. `pip install ./python` next to torch):

    python python/examples/llm_block_torch.py"""
from typing import Dict, Union

import torch

import xir

Weights = Dict[str, Union[int, torch.Tensor]]


def make_weights(C: int = 256, HQ: int = 4, HKV: int = 2, D: int = 64, F: int = 512, seed: int = 0,
                 dtype: torch.dtype = torch.bfloat16) -> Weights:
    """Random weights of one block, every tensor in `dtype`; matrices are [in, out] (x @ w)."""
    g = torch.Generator().manual_seed(seed)

    def mat(m: int, n: int) -> torch.Tensor:
        return (torch.randn(m, n, generator=g) / m ** 0.5).to(dtype)

    def norm() -> torch.Tensor:
        return (1 + 0.1 * torch.randn(C, generator=g)).to(dtype)

    return dict(HQ=HQ, HKV=HKV, D=D, norm1=norm(), norm2=norm(),
                wq=mat(C, HQ * D), wk=mat(C, HKV * D), wv=mat(C, HKV * D), wo=mat(HQ * D, C),
                gate=mat(C, F), up=mat(C, F), down=mat(F, C))


def block(x: torch.Tensor, p: Weights) -> torch.Tensor:
    """x: [T, C] torch tensor (bfloat16, float16 or float32; T tokens at positions 0..T-1) ->
    [T, C], same dtype. Call it under torch.inference_mode() (or no_grad) when the weights are
    nn.Parameters: xir does not record autograd and refuses tensors that require grad otherwise."""
    T, HQ, HKV, D = x.shape[0], p["HQ"], p["HKV"], p["D"]
    h = xir.rmsnorm(x, p["norm1"])                                   # [T, C], a torch tensor
    q = xir.rope(h @ p["wq"], head_dim=D)                            # [T, HQ*D], row t = position t
    k = xir.rope(h @ p["wk"], head_dim=D)                            # [T, HKV*D]
    v = h @ p["wv"]
    heads = lambda a, n: a.view(T, n, D).transpose(0, 1)[None]       # [1, n, T, D] (strided: xir copies it)
    o = xir.attention(heads(q, HQ), heads(k, HKV), heads(v, HKV), causal=True)  # [1, HQ, T, D]
    x = x + o[0].transpose(0, 1).reshape(T, HQ * D) @ p["wo"]
    h = xir.rmsnorm(x, p["norm2"])
    return x + xir.swiglu(h @ p["gate"], h @ p["up"]) @ p["down"]


if __name__ == "__main__":
    p = make_weights()
    x = torch.randn(16, 256, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    with torch.inference_mode():
        y = block(x, p)
        y32 = block(x.float(), {k: v.float() if isinstance(v, torch.Tensor) else v for k, v in p.items()})
    print(f"xir {xir.__version__}, torch {torch.__version__}: block {tuple(x.shape)} {x.dtype} -> "
          f"{type(y).__name__} {tuple(y.shape)} {y.dtype}")
    print(f"against the same block in float32: |y - y_f32| / |y_f32| = "
          f"{((y.float() - y32).norm() / y32.norm()).item():.2g}")
