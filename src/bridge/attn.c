/* attn.c — the attention mapping's legality (docs/lowering.md, "The attention mapping").
 *
 * A block is a tile of hb query heads × qb query rows of one batch entry. The hb heads must
 * share one K/V head: h enters K's and V's addresses only through g = h / E (attn_form.h), so
 * heads h0 … h0 + hb − 1 with hb | E and h0 ≡ 0 (mod hb) have the same g. The tile's rows are
 * its lanes (vec q: at most two packets of W) or are summed across lanes (vec d: at most one
 * packet). Tiles are ordered batch, head block, query block (query blocks fastest, so consecutive
 * tiles reuse the same K/V rows). */
#include <string.h>

#include "bridge/attn.h"
#include "ir/attn_form.h"

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

xir_status xir_candidate_make_attn(const xir_program *p, const xir_shape *shape, uint32_t W,
                                   uint32_t vec, uint32_t qb, uint32_t hb, xir_candidate *c,
                                   xir_diag *d) {
  if (c) memset(c, 0, sizeof *c);
  if (!p || !shape || !c)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_candidate_make_attn: %s is NULL",
                    !p ? "the program" : !shape ? "the shape" : "the candidate");
  if (!(W == 1 || W == 2 || W == 4 || W == 8 || W == 16))
    return xir__err(d, XIR_ERR_INVALID_ARG, "W = %u is not a SIMD width (1, 2, 4, 8 or 16)", W);
  xir__attn_form f;
  if (!xir__attn_form_of(p, shape, &f))
    return xir__err(d, XIR_ERR_NOT_FOUND,
                    "the attention mapping is not legal for '%s': its body is not the attention "
                    "chain (docs/lowering.md)", p->name);
  if (vec != XIR_ATTN_VEC_Q && vec != XIR_ATTN_VEC_D)
    return xir__err(d, XIR_ERR_INVALID_ARG, "vec must be q or d");
  if (!is_pow2(qb) || qb > 64)
    return xir__err(d, XIR_ERR_INVALID_ARG, "qb = %u must be a power of two of at most 64", qb);
  if (hb == 0 || f.group % hb != 0 || (!is_pow2(hb) && (int64_t)hb != f.group))
    return xir__err(d, XIR_ERR_NOT_FOUND,
                    "hb = %u query heads do not share one K/V head: hb must divide HQ/HKV = %lld "
                    "(a power of two, or HQ/HKV itself)", hb, (long long)f.group);
  if (f.mask >= 0 && (shape->dims[f.dim_dv] + W - 1) / W > 64)
    return xir__err(d, XIR_ERR_NOT_FOUND,
                    "with a mask, DV = %lld is above the mapping's %u vectors of columns",
                    (long long)shape->dims[f.dim_dv], 64 * W);
  uint64_t rows = (uint64_t)qb * hb, cap = vec == XIR_ATTN_VEC_Q ? 2u * W : W;
  if (rows > cap)
    return xir__err(d, XIR_ERR_NOT_FOUND,
                    "a tile of hb·qb = %llu rows does not fit %s (at most %llu rows)",
                    (unsigned long long)rows, vec == XIR_ATTN_VEC_Q ? "two packets" : "one packet",
                    (unsigned long long)cap);
  const int64_t *D = shape->dims;
  /* the tile's scratch (lower_attn.c): q transposed (vec q), a block of scores, the accumulators */
  uint64_t lanes = vec == XIR_ATTN_VEC_Q ? (rows + W - 1) / W * W : W;
  uint64_t dvp = (uint64_t)(D[f.dim_dv] + W - 1) / W * W;
  double scratch = 4.0 * (double)lanes *
                   ((vec == XIR_ATTN_VEC_Q ? (double)D[f.dim_d] : 0) + XIR_ATTN_KEY_BLOCK + 16 +
                    (double)dvp + 3);
  if (scratch > XIR_ATTN_SCRATCH_MAX)
    return xir__err(d, XIR_ERR_NOT_FOUND,
                    "a tile needs %.0f bytes of scratch (at most %d)", scratch, XIR_ATTN_SCRATCH_MAX);
  uint64_t qblocks = (uint64_t)(D[f.dim_q] + qb - 1) / qb;
  uint64_t tiles = (uint64_t)D[f.dim_b] * (uint64_t)(D[f.dim_hq] / hb) * qblocks;
  c->W = W;
  c->B = W;
  c->local = 1;
  c->nperm = 3;
  c->perm[0] = (uint8_t)f.ax_b;
  c->perm[1] = (uint8_t)f.ax_h;
  c->perm[2] = (uint8_t)f.ax_i;
  c->inner_dim = -1;
  c->kind = XIR_IMPL_DIRECT;
  c->full_packet_path = 1;
  c->ragged_packets = D[f.dim_q] % qb != 0;
  c->ragged_inner = 0;
  c->root_programs = xir_shape_root_count(p, shape);
  c->blocks = tiles;
  c->packets = tiles;
  c->attn_vec = vec;
  c->attn_qb = qb;
  c->attn_hb = hb;
  /* compile-time: HQ and HKV (the tile decomposition, the group E), D and DV (the register
   * blocking, the tails of the vectors), and any dim the group expression reads; B, Q and K
   * (and the dims of the scale and of a mask's end) are launch arguments (dims.c, rule 7) */
  c->fixed_dims = 1u << f.dim_hq | 1u << f.dim_hkv | 1u << f.dim_d | 1u << f.dim_dv |
                  f.group_dims;
  return XIR_OK;
}

xir_status xir__attn_candidates(const xir_program *p, const xir_shape *shape, uint32_t W,
                                xir_candidate **list, size_t *n, size_t *cap, xir_diag *d) {
  xir__attn_form f;
  if (!xir__attn_form_of(p, shape, &f)) return XIR_OK;
  int64_t Q = shape->dims[f.dim_q];
  for (uint32_t vec = XIR_ATTN_VEC_Q; vec <= XIR_ATTN_VEC_D; vec++)
    for (int64_t hb = 1; hb <= f.group; hb++) {
      if (f.group % hb || (!is_pow2((uint64_t)hb) && hb != f.group)) continue;
      for (uint32_t qb = 1; qb <= 64; qb *= 2) {
        if (qb > 1 && (int64_t)qb / 2 >= Q) break; /* a tile of more rows than Q is no tile */
        xir_candidate c;
        xir_diag why;
        if (xir_candidate_make_attn(p, shape, W, vec, qb, (uint32_t)hb, &c, &why)) continue;
        if (xir__grow((void **)list, cap, *n + 1, sizeof **list))
          return xir__err(d, XIR_ERR_NOMEM, "out of memory enumerating candidates");
        (*list)[(*n)++] = c;
      }
    }
  return XIR_OK;
}
