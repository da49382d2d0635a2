"""xir: LLM operator kernels compiled to SIMD code for this CPU.

Every built-in kernel is a function (``rmsnorm``, ``layernorm``, ``rope``, ``rope_cache``,
``softmax``, ``swiglu``, ``gelu_residual``, ``attention``) taking NumPy arrays or anything with
the buffer protocol, DLPack (torch CPU tensors) or ``__array_interface__``, without a copy.
Arrays are float32, float16 or bfloat16 (``ml_dtypes.bfloat16``; ``pos`` of ``rope_cache`` is
int64), row-major ([R, C]; the row-wise kernels without a position also [..., C]); inputs that
are not C-contiguous are copied, an ``out=`` array must be
C-contiguous, writable and must not overlap an input. Results are new arrays of the first
input's dtype (or ``out``, whose dtype then decides): NumPy arrays, or torch tensors when that
input (the activations: x, a, q) is a torch tensor. A torch tensor that requires grad is read
only when torch's grad mode is off (``torch.no_grad()``, ``torch.inference_mode()``): xir does not
record autograd, so otherwise it is an ``ArgumentError`` asking for ``.detach()``.

The first call of a kernel for a shape plans it (the ranked SIMD mappings and task grains of
xir's cost model) and compiles it (LLVM; about 10 ms, or 1 ms from the on-disk kernel cache);
later calls with that shape only launch it. A default session holds the thread pool
(``set_num_threads``) and that cache. ``Kernel(text)`` compiles custom XIR.

Each array is float32, float16 or bfloat16, independently.

Errors: ``ValueError`` (``xir.ArgumentError``) for wrong shapes, dtypes and dims;
``xir.ParseError`` (a ``ValueError`` too, with ``.line`` and ``.col``) for bad XIR text;
``xir.NotFoundError`` for unknown kernels; ``xir.Error`` for anything else libxir reports.
See docs/python.md.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _xir
from ._xir import ArgumentError, Error, NotFoundError, ParseError

__all__ = [
    "rmsnorm", "layernorm", "rope", "rope_cache", "softmax", "swiglu", "gelu_residual",
    "attention", "Kernel", "Plan", "set_num_threads", "get_num_threads", "session_stats",
    "Error", "ArgumentError", "ParseError", "NotFoundError", "__version__",
]

__version__: str = _xir.version()

Array = Any  # a NumPy array, a torch CPU tensor, or any object with the buffer protocol
Plan = _xir.Plan

_lock = threading.Lock()
_session: "_xir.Session" = None  # type: ignore[assignment]
_P: Dict[str, "_xir.Program"] = {}

# Plain softmax (no mask), as custom XIR: the built-in library has the masked and causal forms.
_SOFTMAX_TEXT = """# softmax(x * scale) along the row.
kernel softmax[R, C](x: f32[R, C], y: out f32[R, C], scale: f32 = 1.0)
root r in R {
  z = load x[r, :] * scale
  m = reduce.max(z)
  e = exp(z - select(m == -inf, 0.0, m))
  s = reduce.sum(e)
  store y[r, :] = e * select(s == 0.0, 0.0, 1.0 / s)
}
"""

_BUILTINS = ("rmsnorm", "layernorm", "rope", "rope_cache", "softmax_mask", "softmax_causal",
             "swiglu", "gelu_residual", "attention", "attention_causal")


def _new_session(workers: int) -> None:
    global _session, _P
    s = _xir.Session(workers)
    progs = {name: s.program(name) for name in _BUILTINS}
    progs["softmax"] = s.parse(_SOFTMAX_TEXT, "<xir.softmax>")
    _session, _P = s, progs


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (the caller included) for every later call; 0 = the online CPUs.

    Starts a new default session: its kernel cache starts empty (the on-disk kernel cache
    still answers compiles). Calls running at that moment finish on the old session."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"set_num_threads needs an int >= 0, not {n!r}")
    with _lock:
        _new_session(n)


def get_num_threads() -> int:
    """The default session's thread count (the caller included)."""
    return _session.workers


def session_stats() -> Dict[str, int]:
    """The default session's counters: launches, cache hits and misses, plans, compiles,
    programs and prepared (planned + compiled) kernels held, workers."""
    return _session.stats()


_new_session(0)


def _flat_rows(fn: str, x: Array, others: Tuple[Any, ...], out: Optional[Array]):
    """Leading batch axes: x of shape [..., C] (rank > 2) is viewed as [N, C] (a reshape: a view
    of a C-contiguous array; anything else is copied, as inputs are); ``others`` of the same
    shape as x (a mask, the second operand) likewise; ``out`` must be C-contiguous (a view is
    written, so a reshape that copied would lose the result). Callers check that x has rank > 2.
    Returns (x2, others2, out2, shape), or None when x has no reshape (a memoryview: the
    kernel's own shape check answers). Only for kernels whose rows are independent and do not
    depend on the row index (not rope, rope_cache or causal softmax)."""
    if not hasattr(x, "reshape"):
        return None
    shape = tuple(x.shape)
    c = shape[-1]
    conv = []
    for name, o in others:
        if o is not None:
            if tuple(getattr(o, "shape", ())) != shape or not hasattr(o, "reshape"):
                raise ArgumentError(f"{fn}: {name} has shape {tuple(getattr(o, 'shape', ()))}, "
                                    f"expected {shape} (the shape of x)")
            o = o.reshape(-1, c)
        conv.append(o)
    if out is not None:
        if tuple(getattr(out, "shape", ())) != shape:
            raise ArgumentError(f"{fn}: out has shape {tuple(getattr(out, 'shape', ()))}, "
                                f"expected {shape}")
        contiguous = getattr(out, "flags", None)
        ok = contiguous["C_CONTIGUOUS"] if contiguous is not None else out.is_contiguous()
        if not ok:
            raise ArgumentError(f"{fn}: out must be C-contiguous")
        out = out.reshape(-1, c)
    return x.reshape(-1, c), conv, out, shape


def rmsnorm(x: Array, w: Array, eps: float = 1e-5, out: Optional[Array] = None) -> Array:
    """RMSNorm over the last axis: ``y = x * rsqrt(mean(x**2, axis=-1) + eps) * w``.

    x: [R, C] or [..., C] (leading axes flattened); w: [C]. Returns y of x's shape in x's
    dtype, a torch tensor when x is one (or ``out``)."""
    if getattr(x, "ndim", 2) <= 2 or (f := _flat_rows("rmsnorm", x, (), out)) is None:
        return _P["rmsnorm"].run((x, w, out, eps))
    return _P["rmsnorm"].run((f[0], w, f[2], eps)).reshape(f[3])


def layernorm(x: Array, w: Array, b: Array, eps: float = 1e-5,
              out: Optional[Array] = None) -> Array:
    """LayerNorm over the last axis (population variance):
    ``y = (x - mean) * rsqrt(var + eps) * w + b``.

    x: [R, C] or [..., C] (leading axes flattened); w, b: [C]. Returns y of x's shape in x's
    dtype, a torch tensor when x is one (or ``out``)."""
    if getattr(x, "ndim", 2) <= 2 or (f := _flat_rows("layernorm", x, (), out)) is None:
        return _P["layernorm"].run((x, w, b, out, eps))
    return _P["layernorm"].run((f[0], w, b, f[2], eps)).reshape(f[3])


def rope(x: Array, head_dim: int, theta: float = 10000.0, offset: int = 0,
         out: Optional[Array] = None) -> Array:
    """Rotary position embedding computed from positions: row r is position ``p = r + offset``;
    in each head of width ``head_dim`` (even, dividing C) the pair ``(x[2i], x[2i+1])`` is
    rotated by the angle ``p * theta**(-2i/head_dim)``.

    x: [R, C]. Returns y: [R, C] in x's dtype, a torch tensor when x is one (or
    ``out``)."""
    return _P["rope"].run((x, out, theta, offset), {"HD": head_dim})


def rope_cache(x: Array, pos: Array, cos: Array, sin: Array,
               out: Optional[Array] = None) -> Array:
    """Rotary position embedding from cos/sin tables, as LLM engines run it: row r is at
    position ``pos[r]``; in each head of width ``HD = 2 * H2`` the pair ``(x[2i], x[2i+1])`` is
    rotated by the angle whose cosine and sine are ``cos[pos[r], i]`` and ``sin[pos[r], i]``.

    x: [R, C] (C a multiple of HD); pos: int64 [R] in [0, P) (clamped into it);
    cos, sin: [P, H2]. Returns y: [R, C] in x's dtype, a torch tensor when x is one (or
    ``out``)."""
    hd = 2 * _last_dim(cos)
    return _P["rope_cache"].run((x, pos, cos, sin, out), {"HD": hd})


def softmax(x: Array, mask: Optional[Array] = None, scale: float = 1.0, causal: bool = False,
            out: Optional[Array] = None) -> Array:
    """Softmax along the last axis of ``x * scale``: plain, with an additive ``mask``
    (``softmax(x * scale + mask)``, mask may hold -inf), or ``causal`` (column c of row r is
    masked when c > r). A row whose every column is masked gives zeros, never NaN.

    x, mask: [R, C]; without ``causal`` also [..., C] (leading axes flattened; mask of x's
    shape). Returns y of x's shape in x's dtype, a torch tensor when x is one (or ``out``)."""
    if not causal and getattr(x, "ndim", 2) > 2:
        f = _flat_rows("softmax", x, (("mask", mask),), out)
        if f is not None:
            m = f[1][0]
            y = (_P["softmax_mask"].run((f[0], m, f[2], scale)) if m is not None
                 else _P["softmax"].run((f[0], f[2], scale)))
            return y.reshape(f[3])
    if causal:
        if mask is not None:
            raise ValueError("softmax: give a mask or causal=True, not both")
        return _P["softmax_causal"].run((x, out, scale))
    if mask is not None:
        return _P["softmax_mask"].run((x, mask, out, scale))
    return _P["softmax"].run((x, out, scale))


def swiglu(a: Array, b: Array, out: Optional[Array] = None) -> Array:
    """SwiGLU: ``y = silu(a) * b`` with ``silu(a) = a * sigmoid(a)``, elementwise.

    a, b: [R, C], or both [..., C] (leading axes flattened). Returns y of a's shape in a's
    dtype, a torch tensor when a is one (or ``out``)."""
    if getattr(a, "ndim", 2) <= 2 or (f := _flat_rows("swiglu", a, (("b", b),), out)) is None:
        return _P["swiglu"].run((a, b, out))
    return _P["swiglu"].run((f[0], f[1][0], f[2])).reshape(f[3])


def gelu_residual(x: Array, r: Array, out: Optional[Array] = None) -> Array:
    """GELU (tanh approximation) plus a residual, elementwise:
    ``y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))) + r``.

    x, r: [R, C], or both [..., C] (leading axes flattened). Returns y of x's shape in x's
    dtype, a torch tensor when x is one (or ``out``)."""
    if getattr(x, "ndim", 2) <= 2 or (f := _flat_rows("gelu_residual", x, (("r", r),), out)) is None:
        return _P["gelu_residual"].run((x, r, out))
    return _P["gelu_residual"].run((f[0], f[1][0], f[2])).reshape(f[3])


def attention(q: Array, k: Array, v: Array, scale: Optional[float] = None, causal: bool = False,
              out: Optional[Array] = None) -> Array:
    """Grouped-query attention: ``o = softmax(q @ k^T * scale) @ v`` per batch and head, the
    HQ query heads sharing HKV key/value heads (head h uses K/V head ``h // (HQ // HKV)``).
    ``scale`` defaults to ``1/sqrt(D)``. ``causal``: key j is masked for query i when
    ``j > i + (K - Q)``; a query that sees no key gets a zero row.

    q: [B, HQ, Q, D]; k: [B, HKV, K, D]; v: [B, HKV, K, DV].
    Returns o: [B, HQ, Q, DV] in q's dtype, a torch tensor when q is one (or
    ``out``)."""
    if scale is not None and not scale > 0:
        raise ValueError(f"attention: scale must be > 0 (None = 1/sqrt(D)), not {scale!r}")
    return _P["attention_causal" if causal else "attention"].run((q, k, v, out, scale))


def _last_dim(a: Array) -> int:
    shape = getattr(a, "shape", None)
    if shape is None:
        shape = memoryview(a).shape
    if not shape:
        raise ArgumentError("expected an array of rank >= 1")
    return int(shape[-1])


class Kernel:
    """A custom XIR kernel (docs/xir.md), parsed and verified now (``ParseError`` with
    ``.line`` and ``.col`` otherwise), planned and compiled per shape on first use.

    ``k(*arrays_and_scalars, dims=None, **by_name)`` runs it: one argument per parameter in
    order or by name; outputs left out (or None) are allocated; scalars left out take their
    defaults; ``dims`` gives the dims that no array names. ``k.plan(R=64, C=4096)`` returns the
    ``Plan`` for a shape: ``.explain()`` lists the ranked candidates with their cost terms, and
    calling it runs the kernel with that shape."""

    def __init__(self, text: str, filename: str = "<string>") -> None:
        self.text = text
        self.filename = filename
        self._bind()

    def _bind(self) -> "_xir.Program":
        s = _session
        if getattr(self, "_session", None) is not s:
            self._program = s.parse(self.text, self.filename)
            self._session = s
            params = self._program.params
            self._names = [p[0] for p in params]
        return self._program

    @property
    def name(self) -> str:
        """The kernel's name."""
        return self._bind().name

    @property
    def dims(self) -> Tuple[str, ...]:
        """The dims' names, in order."""
        return self._bind().dims

    @property
    def params(self) -> Tuple[Tuple[str, str, str, bool, Tuple[str, ...], Optional[float]], ...]:
        """(name, 'buffer'|'scalar', 'f32'|'i64', is_output, dims, default) per parameter."""
        return self._bind().params

    def plan(self, shape: Union[Mapping[str, int], str, None] = None, **dims: int) -> Plan:
        """The plan (and compiled code) for a shape: a mapping, "R=64,C=4096", or keywords."""
        d: Dict[str, int] = {}
        if isinstance(shape, str):
            for part in shape.split(","):
                name, _, val = part.partition("=")
                if not _:
                    raise ArgumentError(f"{self.name}: bad shape {shape!r} (want 'R=64,C=4096')")
                d[name.strip()] = int(val)
        elif shape is not None:
            d.update(shape)
        d.update(dims)
        return self._bind().prepare(d)

    def __call__(self, *args: Any, dims: Optional[Mapping[str, int]] = None, **named: Any) -> Any:
        prog = self._bind()
        n = len(self._names)
        if len(args) > n:
            raise TypeError(f"{prog.name} takes at most {n} arguments, got {len(args)}")
        full: List[Any] = list(args) + [None] * (n - len(args))
        for key, val in named.items():
            try:
                i = self._names.index(key)
            except ValueError:
                raise TypeError(f"{prog.name} has no parameter {key!r} "
                                f"(parameters: {', '.join(self._names)})") from None
            if i < len(args):
                raise TypeError(f"{prog.name}: {key} given twice")
            full[i] = val
        return prog.run(full, dict(dims) if dims else None)

    def __repr__(self) -> str:
        return f"xir.Kernel({self.name!r})"
