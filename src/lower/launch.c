/* launch.c — binding a launch shape to a compiled kernel and packing its argument block.
 *
 * A kernel serves every shape whose compile-time dims (xir_candidate.fixed_dims) equal the ones
 * it was compiled for; the launch-time dims, the buffers' strides and a contiguity flag are
 * written into the argument block (lower.h gives the layout), and the block count comes from the
 * launch shape. Overlapping buffers are refused unless the program allows that output to alias
 * that input exactly (xir_program_alias_ok). */
#include <stdint.h>
#include <string.h>

#include "ir/program.h"
#include "lower/kernel.h"
#include "util/util.h"

size_t xir_kernel_args_size(const xir_kernel *k) { return k ? (size_t)k->lay.nslots * 8 : 0; }

const xir_shape *xir_kernel_shape(const xir_kernel *k) { return k ? &k->shape : NULL; }

xir_entry_fn xir_kernel_entry(const xir_kernel *k) {
  if (!k) return NULL;
  xir_entry_fn f;
  void *e = k->art->entry;
  memcpy(&f, &e, sizeof f);
  return f;
}
uint64_t xir_kernel_blocks(const xir_kernel *k) { return k ? k->cand.blocks : 0; }
const xir_candidate *xir_kernel_candidate(const xir_kernel *k) { return k ? &k->cand : NULL; }

xir_status xir_kernel_check_shape(const xir_kernel *k, const xir_shape *shape, uint64_t *blocks,
                                  xir_diag *d) {
  if (blocks) *blocks = 0;
  if (!k || !shape)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_kernel_check_shape: %s is NULL",
                    !k ? "the kernel" : "the shape");
  const xir_program *p = k->base->prog;
  xir_status s = xir_shape_check(p, shape, d);
  if (s) return s;
  char nm[160];
  for (int i = 0; i < p->ndims; i++) {
    if (k->cand.fixed_dims >> i & 1) {
      if (shape->dims[i] != k->shape.dims[i]) {
        char fx[256] = "";
        size_t o = 0;
        for (int j = 0; j < p->ndims && o < sizeof fx; j++)
          if (k->cand.fixed_dims >> j & 1)
            o += (size_t)snprintf(fx + o, sizeof fx - o, "%s%s=%lld", o ? "," : "", p->dims[j],
                                  (long long)k->shape.dims[j]);
        return xir__err(d, XIR_ERR_INVALID_ARG,
                        "'%s' kernel %s was compiled for %s = %lld, a compile-time dim; the "
                        "launch has %s = %lld (compile-time dims: %s; compile a kernel for "
                        "this shape)", p->name, xir_candidate_name(p, &k->cand, nm, sizeof nm),
                        p->dims[i], (long long)k->shape.dims[i], p->dims[i],
                        (long long)shape->dims[i], fx);
      }
    } else {
      int64_t mx = xir_candidate_dim_max(p, &k->cand, i);
      if (shape->dims[i] > mx)
        return xir__err(d, XIR_ERR_UNSUPPORTED,
                        "'%s': launch-time dim %s = %lld is above %lld, the most this kernel's "
                        "stack buffers serve (a shape with a larger %s compiles it in)", p->name,
                        p->dims[i], (long long)shape->dims[i], (long long)mx, p->dims[i]);
    }
  }
  for (int i = 0; i < p->nparams; i++)
    if (xir_param_numel(p, i, shape) >= ((size_t)1 << 40))
      return xir__err(d, XIR_ERR_UNSUPPORTED, "buffer '%s' is too large", p->params[i].name);
  if (blocks) {
    uint64_t lanes = xir_shape_root_count(p, shape) * k->cand.local;
    *blocks = (lanes + k->cand.B - 1) / k->cand.B;
    if (k->cand.attn_vec) { /* its tiles: B · HQ/hb · ceil(Q/qb), in the bridge's order */
      const xir_candidate *c = &k->cand;
      uint64_t Bn = (uint64_t)shape->dims[p->root[c->perm[0]].dim];
      uint64_t HQ = (uint64_t)shape->dims[p->root[c->perm[1]].dim];
      uint64_t Q = (uint64_t)shape->dims[p->root[c->perm[2]].dim];
      *blocks = Bn * (HQ / c->attn_hb) * ((Q + c->attn_qb - 1) / c->attn_qb);
    }
  }
  return XIR_OK;
}

/* The bytes [lo, hi) a buffer's elements span under its strides. */
static void span(const xir_program *p, const xir_shape *shape, int i, const void *ptr,
                 const int64_t *st, uintptr_t *lo, uintptr_t *hi) {
  const xir_param *q = &p->params[i];
  uint64_t last = 0;
  for (int k = 0; k < q->rank; k++) last += (uint64_t)st[k] * (uint64_t)(shape->dims[q->dims[k]] - 1);
  size_t es = xir_elem_size(q->elem);
  *lo = (uintptr_t)ptr;
  *hi = (uintptr_t)ptr + (last + 1) * es;
}

/* A scalar argument's whole 8-byte slot: its value (or the parameter's default) as i64, or as
 * f32 in the low 4 bytes with the rest zero. */
static uint64_t scalar_slot(const xir_param *q, const xir_arg *a) {
  double v = a->use_default ? q->default_value : a->scalar;
  if (q->elem == XIR_I64) {
    int64_t iv = (int64_t)v;
    return (uint64_t)iv;
  }
  float f = (float)v;
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

static void put_scalar(const xir_param *q, const xir_arg *a, unsigned char *slot) {
  uint64_t v = scalar_slot(q, a);
  memcpy(slot, &v, 8);
}

/* 0 when the body has no reduction; 1 when it has one (a norm's row statistics before its
 * store); 2 when it also evaluates vector math (softmax's exp): xir__stream_launch. */
static int program_reduces(const xir_program *p) {
  int r = 0, math = 0;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    r |= xir__is_reduce(p->nodes[i].op);
    math |= xir__is_vector_math(p->nodes[i].op);
  }
  return r ? 1 + math : 0;
}

void xir__kernel_dense_prepare(struct xir_kernel *k) {
  const xir_program *p = k->base->prog;
  k->reduces = program_reduces(p);
  k->dense_ok = 0;
  for (int i = 0; i < p->ndims; i++)
    if (k->shape.dims[i] < 1) return;
  if (k->lay.nslots > XIR_MAX_ARG_SLOTS) return;
  if (xir_kernel_check_shape(k, &k->shape, &k->dense_blocks, NULL) != XIR_OK) return;
  k->dense_footprint = 0;
  k->dense_half_out = 0;
  k->dense_nbuf = k->dense_nscalar = 0;
  k->dense_outputs = 0;
  memset(k->dense_tmpl, 0, sizeof k->dense_tmpl);
  for (int i = 0; i < p->nparams; i++) {
    const xir_param *q = &p->params[i];
    if (q->kind != XIR_PARAM_BUFFER) {
      k->dense_scalar[k->dense_nscalar++] = (uint8_t)i;
      continue;
    }
    int j = k->dense_nbuf++;
    k->dense_buf[j] = (uint8_t)i;
    if (q->is_output) k->dense_outputs |= (uint32_t)1 << j;
    int64_t st = 1;
    for (int r = q->rank - 1; r >= 0; r--) {
      if (r < q->rank - 1) memcpy(&k->dense_tmpl[k->lay.stride_slot[i] + r], &st, 8);
      st *= k->shape.dims[q->dims[r]];
    }
    k->dense_bytes[j] = (uint64_t)st * xir_elem_size(q->elem);
    k->dense_footprint += k->dense_bytes[j];
    k->dense_half_out |= q->is_output && xir_elem_size(q->elem) == 2 && k->cand.local != 1;
  }
  for (int i = 0; i < p->ndims; i++)
    if (k->lay.dim_slot[i] >= 0) memcpy(&k->dense_tmpl[k->lay.dim_slot[i]], &k->shape.dims[i], 8);
  k->dense_tmpl[k->lay.flags_slot] = XIR__ARGS_CONTIGUOUS;
  /* the template's own slots: neither a parameter's (pointer, scalar) nor the flags */
  k->dense_nconst = 0;
  for (int s = p->nparams; s < k->lay.nslots; s++)
    if (s != k->lay.flags_slot) k->dense_const[k->dense_nconst++] = (uint8_t)s;
  atomic_init(&k->dense_sbits, 0);
  k->dense_ok = 1;
}

/* xir_kernel_pack_launch at the kernel's own shape with dense buffers (no strides given), from
 * what xir__kernel_dense_prepare wrote once: the per-call work is the template's copy, the
 * pointers, the scalars (a parameter at or past nargs takes its default), the overlap test of
 * the buffers' byte ranges and the streaming flag. 1 when packed; 0 when the general path must
 * decide (a NULL pointer, strides, buffers that overlap: it gives the error or accepts the
 * exact in-place alias). The slots are those of the general path, bit for bit
 * (test_session: test_dense_pack_matches). */
static int pack_dense(const xir_kernel *k, const xir_arg *args, int nargs, unsigned char *out) {
  const xir_program *p = k->base->prog;
  const void *ptrs[XIR_MAX_PARAMS];
  const int nb = k->dense_nbuf;
  const uint32_t outs = k->dense_outputs;
  for (int j = 0; j < nb; j++) {
    int i = k->dense_buf[j];
    if (i >= nargs) return 0;
    const xir_arg *a = &args[i];
    ptrs[j] = outs >> j & 1 ? (const void *)a->out : (const void *)a->in;
    if (!ptrs[j] || a->strides || a->row_stride) return 0;
  }
  for (int o = 0; o < nb; o++) {
    if (!(outs >> o & 1)) continue;
    uintptr_t olo = (uintptr_t)ptrs[o], ohi = olo + k->dense_bytes[o];
    for (int j = 0; j < nb; j++) {
      if (j == o) continue;
      uintptr_t ilo = (uintptr_t)ptrs[j], ihi = ilo + k->dense_bytes[j];
      if (!(ohi <= ilo || ihi <= olo)) return 0;
    }
  }
  /* The streaming and far bits of this footprint, computed again only when what decides them
   * changed (xir__stream_generation): two loads a launch instead of the two rules' calls */
  uint32_t gen = xir__stream_generation();
  uint64_t cached = atomic_load_explicit(&((xir_kernel *)k)->dense_sbits, memory_order_relaxed);
  int sbits;
  if ((uint32_t)(cached >> 32) == gen) {
    sbits = (int)(uint32_t)cached;
  } else {
    sbits = xir__stream_launch(k->dense_footprint, k->dense_half_out, k->reduces) |
            xir__far_launch(k->dense_footprint);
    atomic_store_explicit(&((xir_kernel *)k)->dense_sbits, (uint64_t)gen << 32 | (uint32_t)sbits,
                          memory_order_relaxed);
  }
  uint64_t flags = XIR__ARGS_CONTIGUOUS | (uint64_t)sbits;
  static const xir_arg dflt = {.use_default = 1};
  /* slot by slot, each once: the entry's 8-byte loads of these slots then each forward from one
   * 8-byte store (a block copy's wide stores, which the pointers then partly overwrote, did not
   * forward to them: pack and entry together took 14 ns more than apart, rmsnorm 1x64).
   * volatile: not merged into a block copy. Slots the caller did not align (the API does not ask
   * it) are written to an aligned copy first. */
  uint64_t tmp[XIR_MAX_ARG_SLOTS];
  const int al = (uintptr_t)out % _Alignof(uint64_t) == 0;
  volatile uint64_t *slot = al ? (volatile uint64_t *)(void *)out : tmp;
  for (int c = 0; c < k->dense_nconst; c++)
    slot[k->dense_const[c]] = k->dense_tmpl[k->dense_const[c]];
  for (int j = 0; j < nb; j++) slot[k->dense_buf[j]] = (uint64_t)(uintptr_t)ptrs[j];
  for (int j = 0; j < k->dense_nscalar; j++) {
    int i = k->dense_scalar[j];
    slot[i] = scalar_slot(&p->params[i], i < nargs ? &args[i] : &dflt);
  }
  slot[k->lay.flags_slot] = flags;
  if (!al) memcpy(out, tmp, (size_t)k->lay.nslots * 8);
  return 1;
}

int xir__kernel_pack_dense(const xir_kernel *k, const xir_arg *args, int nargs, void *slots) {
  return k && args && slots && k->dense_ok && pack_dense(k, args, nargs, slots);
}

xir_status xir_kernel_pack_launch(const xir_kernel *k, const xir_shape *shape, const xir_arg *args,
                                  void *slots, uint64_t *blocks, xir_diag *d) {
  if (blocks) *blocks = 0;
  if (!k || !shape || !args || !slots)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_kernel_pack_launch: %s is NULL",
                    !k ? "the kernel" : !shape ? "the shape" : !args ? "args" : "slots");
  if (shape == &k->shape && k->dense_ok && pack_dense(k, args, XIR_MAX_PARAMS, slots)) {
    if (blocks) *blocks = k->dense_blocks;
    return XIR_OK;
  }
  uint64_t nb = 0;
  xir_status s = xir_kernel_check_shape(k, shape, &nb, d);
  if (s) return s;
  const xir_program *p = k->base->prog;
  unsigned char *out = slots;
  memset(out, 0, xir_kernel_args_size(k));
  int64_t st[XIR_MAX_PARAMS][XIR_MAX_RANK];
  const void *ptrs[XIR_MAX_PARAMS];
  uint64_t flags = XIR__ARGS_CONTIGUOUS;
  for (int i = 0; i < p->nparams; i++) {
    const xir_param *q = &p->params[i];
    const xir_arg *a = &args[i];
    if (q->kind == XIR_PARAM_BUFFER) {
      const void *ptr = q->is_output ? (const void *)a->out : (const void *)a->in;
      if (!ptr)
        return xir__err(d, XIR_ERR_INVALID_ARG, "argument %d: buffer pointer is NULL", i + 1);
      ptrs[i] = ptr;
      if ((s = xir_arg_strides(p, shape, i, a, st[i], d))) return s;
      int64_t want = 1;
      for (int r = q->rank - 1; r >= 0; r--) {
        int64_t ext = shape->dims[q->dims[r]];
        if (r == q->rank - 1 && st[i][r] != 1)
          return xir__err(d, XIR_ERR_UNSUPPORTED,
                          "buffer '%s': native code needs a unit innermost stride (got %lld)",
                          q->name, (long long)st[i][r]);
        if (st[i][r] < want && ext > 1)
          return xir__err(d, XIR_ERR_UNSUPPORTED,
                          "buffer '%s': stride %d (%lld) is below %lld, the span of the dims "
                          "inside it: rows would overlap", q->name, r, (long long)st[i][r],
                          (long long)want);
        if (st[i][r] != want && ext > 1) flags &= ~(uint64_t)XIR__ARGS_CONTIGUOUS;
        want = (ext > 1 ? st[i][r] : want) * ext;
        if (r < q->rank - 1) memcpy(out + 8 * (k->lay.stride_slot[i] + r), &st[i][r], 8);
      }
      memcpy(out + 8 * i, &ptr, sizeof ptr);
    } else {
      put_scalar(q, &args[i], out + 8 * i);
    }
  }
  /* overlaps: an output may share memory only with an input it may alias, exactly */
  for (int o = 0; o < p->nparams; o++) {
    if (p->params[o].kind != XIR_PARAM_BUFFER || !p->params[o].is_output) continue;
    uintptr_t olo, ohi;
    span(p, shape, o, ptrs[o], st[o], &olo, &ohi);
    for (int i = 0; i < p->nparams; i++) {
      if (i == o || p->params[i].kind != XIR_PARAM_BUFFER) continue;
      uintptr_t ilo, ihi;
      span(p, shape, i, ptrs[i], st[i], &ilo, &ihi);
      if (ohi <= ilo || ihi <= olo) continue;
      int exact = ptrs[i] == ptrs[o] && p->params[i].rank == p->params[o].rank;
      for (int r = 0; exact && r < p->params[o].rank; r++)
        exact = st[i][r] == st[o][r] &&
                shape->dims[p->params[i].dims[r]] == shape->dims[p->params[o].dims[r]];
      if (exact && k->alias_ok[o][i] && k->cand.attn_vec)
        return xir__err(d, XIR_ERR_UNSUPPORTED,
                        "in-place launch refused: the attention mapping does not run in place "
                        "('%s' = '%s'); compile a row-mapping candidate or give '%s' its own "
                        "memory", p->params[o].name, p->params[i].name, p->params[o].name);
      if (exact && k->alias_ok[o][i]) continue;
      if (exact && !p->params[i].is_output) {
        xir_diag why;
        xir_program_alias_ok(p, o, i, &why);
        return xir__err(d, XIR_ERR_UNSUPPORTED, "in-place launch refused: %s", why.msg);
      }
      return xir__err(d, XIR_ERR_UNSUPPORTED,
                      "output '%s' overlaps %s '%s'%s", p->params[o].name,
                      p->params[i].is_output ? "output" : "input", p->params[i].name,
                      p->params[i].is_output ? ""
                      : " without being the same elements (in place needs the same pointer, "
                        "extents and strides)");
    }
  }
  for (int i = 0; i < p->ndims; i++)
    if (k->lay.dim_slot[i] >= 0) memcpy(out + 8 * k->lay.dim_slot[i], &shape->dims[i], 8);
  uint64_t footprint = 0;
  int half_out = 0;
  /* A 16-bit output keeps the cache-size prior (stream.c) where it streams as l >= W chunks;
   * at l = 1 it streams only as a bf16 pair unit's 64-byte store (lower.c), which the measured
   * threshold suits: bf16 swiglu 2048x8192 (96 MiB), forced streaming 3010-3014 us against
   * 3824-4198 with the prior (`XIR_STREAM_STORES=1` alternating x2, `xir bench --suite dtype
   * --kernels swiglu --shapes 'R=2048,C=8192' --rounds 5`, 2026-12-04) */
  for (int i = 0; i < p->nparams; i++)
    if (p->params[i].kind == XIR_PARAM_BUFFER) {
      footprint += (uint64_t)xir_param_numel(p, i, shape) * xir_elem_size(p->params[i].elem);
      half_out |= p->params[i].is_output && xir_elem_size(p->params[i].elem) == 2 &&
                  k->cand.local != 1;
    }
  flags |= (uint64_t)(xir__stream_launch(footprint, half_out, k->reduces) | xir__far_launch(footprint));
  memcpy(out + 8 * k->lay.flags_slot, &flags, 8);
  if (blocks) *blocks = nb;
  return XIR_OK;
}

xir_status xir_kernel_set_task_stride(const xir_kernel *k, void *slots, uint64_t stride,
                                      xir_diag *d) {
  if (!k || !slots)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_kernel_set_task_stride: %s is NULL",
                    !k ? "the kernel" : "slots");
  if (stride > UINT32_MAX) stride = 0; /* past any launch's blocks: no next task to prefetch */
  unsigned char *p = (unsigned char *)slots + 8 * k->lay.flags_slot;
  uint64_t flags;
  memcpy(&flags, p, 8);
  flags = (flags & (((uint64_t)1 << XIR__ARGS_HOME_SHIFT) - 1)) | stride << XIR__ARGS_HOME_SHIFT;
  memcpy(p, &flags, 8);
  return XIR_OK;
}

xir_status xir_kernel_pack_args(const xir_kernel *k, const xir_arg *args, void *slots,
                                xir_diag *d) {
  if (!k || !args || !slots)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_kernel_pack_args: %s is NULL",
                    !k ? "the kernel" : !args ? "args" : "slots");
  return xir_kernel_pack_launch(k, &k->shape, args, slots, NULL, d);
}

/* 1 when every row of every output of rank >= 2 of k's dense launch starts on a vector boundary
 * (given an aligned base): the rows the streaming stores take without the row buffer. */
static int dense_rows_aligned(const xir_kernel *k) {
  const xir_program *p = k->base->prog;
  for (int i = 0; i < p->nparams; i++) {
    const xir_param *q = &p->params[i];
    if (q->kind != XIR_PARAM_BUFFER || !q->is_output || q->rank < 2) continue;
    uint64_t V = (uint64_t)k->cand.W * xir_elem_size(q->elem);
    uint64_t row = (uint64_t)k->shape.dims[q->dims[q->rank - 1]] * xir_elem_size(q->elem);
    if (V == 0 || row % V) return 0;
  }
  return 1;
}

int xir__kernel_stream_choice(const xir_kernel *k, int bits[2]) {
  bits[0] = bits[1] = 0;
  if (!k || !k->dense_ok || k->cand.attn_vec) return 0;
  int m = xir__stream_stores_mode();
  if (m != -1) return 0; /* forced, or the rule only */
  uint64_t f = k->dense_footprint;
  if (!xir__stream_choice_zone(f, xir__stream_threshold(k->dense_half_out), xir__llc_bytes()))
    return 0;
  const int both = XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF;
  bits[0] = xir__stream_launch(f, k->dense_half_out, k->reduces);
  /* the rule's partial streaming (aligned rows only: a norm between the cache and its row
   * buffer's start) is regular stores for unaligned rows, whose other arm is the full
   * streaming; but the full streaming itself when every row is aligned, whose other arm is
   * none */
  int full = bits[0] == both || (bits[0] == XIR__ARGS_STREAM && dense_rows_aligned(k));
  bits[1] = full ? 0 : both;
  return 1;
}

void xir__kernel_set_stream_bits(const xir_kernel *k, void *slots, int bits) {
  const uint64_t mask = XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF;
  unsigned char *p = (unsigned char *)slots + 8 * k->lay.flags_slot;
  uint64_t flags;
  memcpy(&flags, p, 8);
  flags = (flags & ~mask) | ((uint64_t)bits & mask);
  memcpy(p, &flags, 8);
}
