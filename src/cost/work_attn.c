/* work_attn.c — the execution work of the attention mapping, counted from the tile geometry
 * (ir/attn_form.h) exactly as src/lower/lower_attn.c emits it: one op per vector or scalar
 * load, store, shuffle, add, mul, fma, max, compare or select; exp weighs 14 and a division 4
 * (the weights of work.c's table); a loop whose iterations each accumulate into the previous
 * one costs at least its chain (iterations × 8, work.c's accumulate latency); a software
 * prefetch of the K and V rows XIR_ATTN_PREFETCH_KEYS ahead costs 1 per 64-byte line plus 1 per row.
 *
 * Bytes beyond L1, per tile: every K and V row of its K/V head (K·(D + DV) floats), its q rows
 * and its output rows (n·(D + DV) floats). With a mask (attention_causal) a tile runs the keys
 * [0, kmax) only, kmax the largest end of its rows: each tile is counted with its own kmax (the
 * triangle), plus one pass over the V rows past kmax (0·v: NaN for a non-finite v, as the
 * oracle), and the longest home assignment's arithmetic and bytes are summed tile by tile. The tile's scratch (q transposed, one block of scores,
 * the accumulators) stays in L1 and costs its instructions only. */
#include <math.h>

#include "cost/work_attn.h"
#include "ir/attn_form.h"
#include "xir_runtime.h"

static const double kExp = 14, kDiv = 4, kChain = 8;

/* One tile that runs keys [0, kmax): its arithmetic and math part. */
static void tile_cost(const xir__attn_geom *g, unsigned W, double Dd, double DV, int masked,
                      int64_t kmax, double *arith, double *math) {
  int64_t KB = XIR_ATTN_KEY_BLOCK;
  double n = g->rows, NV = g->nv, JR = g->jr, a = 0, m = 0;
  double line = XIR_ATTN_PREFETCH_LINE, kpf = JR * (1 + ceil(Dd / line)); /* per group */
  /* vec d: the scores of a group packed in one vector, the max and the sum folded over the
   * log2(W/npad) key slots (a shuffle and a max or an add each) */
  double folds = g->vec_d ? log2((double)W / g->npad) : 0;
  for (int64_t k0 = 0; k0 < kmax; k0 += KB) {
    double kn = (double)(kmax - k0 < KB ? kmax - k0 : KB), groups = ceil(kn / JR);
    /* q·kᵀ */
    /* the block's max folded in per group: a tree over the JR keys and one running step per
     * packet (vec q), one running step (vec d) */
    if (!g->vec_d) {
      a += groups * (Dd * (NV + JR + JR * NV) + 2 * JR * NV + kpf + JR * NV);
    } else {
      double np = g->npad, full = floor(Dd / W), tail = fmod(Dd, W) > 0;
      double per = (full + tail) * (JR + np + JR * np);
      /* W − 1 pairs (2 shuffles, 1 add), order, ·sc, the dead lanes (key index, compare,
       * select; with a mask a compare and an or more), one store */
      double tree = 3.0 * (W - 1) + 2 + 3 + (masked ? 2 : 0) + 1;
      a += groups * (per + tree + kpf + 1);
    }
    /* online softmax, per packet of lanes: α, exponentials and their sum (vec d: one vector per
     * group of keys); the sum is a chain */
    double nvec = g->vec_d ? groups : kn;
    double sm = 4 * folds + 5 + kExp + nvec * (4 + kExp) + 6;
    a += NV * fmax(sm, nvec * kChain);
    m += NV * (kExp * (nvec + 1));
    /* p·v: RR rows × CB vectors per register block */
    double rr = g->rr, groups_pv = g->rows_pv / g->rr;
    for (unsigned cb0 = 0; cb0 < g->cv; cb0 += g->cb) {
      double cbn = g->cv - cb0 < g->cb ? g->cv - cb0 : g->cb;
      /* the first row group also prefetches the V lines of the column block 16 keys ahead */
      double vpf = 1 + ceil(fmin(cbn * W, DV - cb0 * W) / line);
      double body = kn * (cbn + rr + rr * cbn);
      a += groups_pv * (rr * (1 + 2 * cbn) + rr * cbn) + fmax(body + kn * vpf, kn * kChain) +
           (groups_pv - 1) * fmax(body, kn * kChain);
    }
  }
  /* per tile: q packed (vec q: W rows × W columns at a time — a load per row, W·log2 W
   * shuffles per packet, a store per column), the running state set, the accumulators zeroed,
   * the output */
  if (!g->vec_d) a += ceil(Dd / W) * (n + NV * W * log2((double)W)) + NV * Dd;
  a += 2 * NV + (double)g->rows_pv * g->cv;
  a += n * (2 + g->cv * (3 + kDiv));
  m += n * g->cv * kDiv;
  *arith = a;
  *math = m;
}

enum { ATTN_WALK_MAX = 1 << 22 };

int xir__attn_work(const xir_program *p, const xir_shape *s, const xir_candidate *c,
                   uint64_t grain, uint32_t active, xir_execution_work *w) {
  xir__attn_form f;
  if (!c->attn_vec || !xir__attn_form_of(p, s, &f)) return 0;
  const int64_t *dm = s->dims;
  double Dd = (double)dm[f.dim_d], DV = (double)dm[f.dim_dv];
  int64_t K = dm[f.dim_k], Q = dm[f.dim_q];
  xir__attn_geom g;
  xir__attn_geometry(c->W, c->attn_vec == XIR_ATTN_VEC_D, c->attn_qb, c->attn_hb, dm[f.dim_d],
                     dm[f.dim_dv], &g);
  double n = g.rows;
  w->critical_arith_packets = w->critical_memory_packets = (double)w->critical_packets;
  if (f.mask < 0 || c->blocks > ATTN_WALK_MAX) {
    /* every tile runs every key */
    tile_cost(&g, c->W, Dd, DV, 0, K, &w->arith_per_packet, &w->math_per_packet);
    w->memory_per_packet = 4.0 * ((double)K * (Dd + DV) + n * (Dd + DV));
    return 1;
  }
  /* the mask: tile t runs keys [0, kmax(t)), kmax the largest end of its rows that exist; the
   * costs of each kmax summed over the tiles, and per home worker (task t / G′, mod h) */
  uint64_t nqb = (uint64_t)(Q + c->attn_qb - 1) / c->attn_qb;
  uint32_t h = active > 1 ? active : 1;
  double tot_a = 0, tot_m = 0, tot_b = 0, wa[XIR_RUNTIME_MAX_WORKERS] = {0},
         wb[XIR_RUNTIME_MAX_WORKERS] = {0};
  int64_t last = -1;
  double ta = 0, tm = 0;
  for (uint64_t t = 0; t < c->blocks; t++) {
    int64_t i0 = (int64_t)(t % nqb) * c->attn_qb, kmax = 0;
    int64_t root[XIR_MAX_ROOT] = {0};
    for (int64_t i = i0; i < i0 + (int64_t)c->attn_qb && i < Q; i++) {
      root[f.ax_i] = i;
      int64_t e = xir__prefix_mask_end(&f.pm, root, dm, K);
      if (e > kmax) kmax = e;
    }
    if (kmax != last) tile_cost(&g, c->W, Dd, DV, 1, kmax, &ta, &tm);
    last = kmax;
    /* the keys past kmax: V read once for 0·v (a load, a mul and an add per vector) */
    double tb = 4.0 * ((double)kmax * (Dd + DV) + n * (Dd + DV) + (double)(K - kmax) * DV);
    double tz = (double)(K - kmax) * g.cv * 3;
    uint32_t hw = h > 1 ? (uint32_t)((t / (grain ? grain : 1)) % h) : 0;
    tot_a += ta + tz;
    tot_m += tm;
    tot_b += tb;
    wa[hw] += ta + tz;
    wb[hw] += tb;
  }
  double T = (double)c->blocks, ca = 0, cb = 0;
  for (uint32_t i = 0; i < h; i++) {
    if (wa[i] > ca) ca = wa[i];
    if (wb[i] > cb) cb = wb[i];
  }
  w->arith_per_packet = tot_a / T;
  w->math_per_packet = tot_m / T;
  w->memory_per_packet = tot_b / T;
  if (h > 1) {
    w->critical_arith_packets = w->arith_per_packet > 0 ? ca / w->arith_per_packet : 0;
    w->critical_memory_packets = w->memory_per_packet > 0 ? cb / w->memory_per_packet : 0;
  }
  return 1;
}
