/* attn_form.h — the attention chain, recognised structurally (internal; see attn_form.c).
 *
 * The bridge offers the attention mapping (docs/lowering.md, "The attention mapping") only for
 * programs of exactly this form, the lowering (lower_attn.c) and the execution work (work_attn.c)
 * read the roles from it:
 *
 *   root b in B, h in HQ, i in Q {            (three root axes, any names, any order)
 *     g   = h / E                             E: a rank-0 i64 expression over dims only
 *     s   = reduce.sum(load k[b, g, :, :] * load q[b, h, i, :], D) * sc   (either operand order)
 *     [s  = select(mask, -inf, s)]            a prefix mask along K (xir__prefix_mask_of) whose
 *                                             end depends on i and dims only (attention_causal)
 *     m   = reduce.max(s, K)
 *     p   = exp(s - select(m == -inf, 0.0, m))
 *     l   = reduce.sum(p, K)
 *     acc = reduce.sum(p * load v[b, g', :, :], K)          g' = h / E' with E' = E
 *     store o[b, h, i, :] = select(l == 0.0, 0.0, acc / l)
 *   }
 *
 * sc is a rank-0 f32 value that is the same in every root program (constants, dims, scalar
 * parameters, and the scalar ops xir__attn_scalar_ok admits). Nothing else may be in the body. */
#ifndef XIR_IR_ATTN_FORM_H
#define XIR_IR_ATTN_FORM_H

#include "ir/program.h"

/* Keys per step of the online softmax (the attention mapping's scratch holds one such block of
 * scores per tile row, plus at most 16 keys of register-block overhang). */
enum { XIR_ATTN_KEY_BLOCK = 64, XIR_ATTN_SCRATCH_MAX = 1 << 20 };
/* Floats per software prefetch of the K and V rows (a 64-byte line), and how many keys ahead
 * of the one being read the prefetched row is (into L1: far enough to cover DRAM latency at
 * decode, near enough that the lines are still in L1 when read). */
enum { XIR_ATTN_PREFETCH_LINE = 16, XIR_ATTN_PREFETCH_KEYS = 16 };

typedef struct xir__attn_form {
  int q, k, v, o;              /* parameter indices */
  int ax_b, ax_h, ax_i;        /* root axes of the batch, query-head and query coordinates */
  int dim_b, dim_hq, dim_hkv, dim_q, dim_k, dim_d, dim_dv; /* dim indices */
  int group_expr;              /* node id of E (g = h / E) */
  uint32_t group_dims;         /* the dims E (and v's E', when another node) read */
  int64_t group;               /* E's value for the shape (≥ 1) */
  int scale;                   /* node id of sc */
  int mask;                    /* node id of the mask select, or -1 */
  xir__prefix_mask pm;         /* the mask (mask ≥ 0): keys j ≥ end(i) of query i are −inf,
                                  end affine in i and dims only (xir__prefix_mask_of) */
  int n_sdot, n_s, n_m, n_p, n_l, n_acc, n_store; /* node ids of the chain */
} xir__attn_form;

/* 1 and *f filled when program p (verified) bound to shape s is the attention chain above (mask
 * forms: see attn_form.c), else 0. */
int xir__attn_form_of(const xir_program *p, const xir_shape *s, xir__attn_form *f);

/* The bit mask of the dims that the expression at node id reads. */
uint32_t xir__attn_dims_read(const xir_program *p, int id);

/* 1 when rank-0 node id is a root-invariant scalar expression the attention lowering emits:
 * constants, dims, scalar parameters, f32(), + − × ÷, min/max, neg/abs, sqrt/rsqrt, comparisons,
 * and/or/not, select. */
int xir__attn_scalar_ok(const xir_program *p, int id);

/* The tile geometry of the attention mapping (lower_attn.c emits it, work_attn.c counts it):
 * W lanes, vec_d (1 = along D), qb × hb rows. */
typedef struct xir__attn_geom {
  unsigned rows;    /* n = qb·hb query rows per tile */
  unsigned vec_d;
  unsigned nv;      /* packets of lanes per score vector: vec q ceil(n/W), vec d 1 */
  unsigned lanes;   /* nv·W: the row stride of the score scratch */
  unsigned npad;    /* the smallest power of two ≥ n */
  unsigned jr;      /* keys per register block of q·kᵀ (vec q: 16/nv... ; vec d: W/npad) */
  unsigned dvec;    /* ceil(D/W) */
  unsigned cv;      /* ceil(DV/W): vectors per accumulator row */
  unsigned cb;      /* accumulator vectors per p·v register block (≤ 8) */
  unsigned rr;      /* rows per p·v register block (a power of two, rr·cb ≤ 16) */
  unsigned rows_pv; /* rows p·v computes: n rounded up to rr */
} xir__attn_geom;
void xir__attn_geometry(unsigned W, int vec_d, unsigned qb, unsigned hb, int64_t D, int64_t DV,
                        xir__attn_geom *g);

#endif
