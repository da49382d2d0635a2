/* work_attn.c — the execution work of the attention mapping, counted from the tile geometry
 * (ir/attn_form.h) exactly as src/lower/lower_attn.c emits it: one op per vector or scalar
 * load, store, shuffle, add, mul, fma, max, compare or select; exp weighs 14 and a division 4
 * (the weights of work.c's table); a loop whose iterations each accumulate into the previous
 * one costs at least its chain (iterations × 8, work.c's accumulate latency).
 *
 * Bytes beyond L1, per tile: every K and V row of its K/V head (K·(D + DV) floats), its q rows
 * and its output rows (n·(D + DV) floats). The tile's scratch (q transposed, one block of scores,
 * the accumulators) stays in L1 and costs its instructions only. */
#include <math.h>

#include "cost/work_attn.h"
#include "ir/attn_form.h"

static const double kExp = 14, kDiv = 4, kChain = 8;

int xir__attn_work(const xir_program *p, const xir_shape *s, const xir_candidate *c,
                   double *arith, double *math, double *bytes) {
  xir__attn_form f;
  if (!c->attn_vec || !xir__attn_form_of(p, s, &f)) return 0;
  const int64_t *dm = s->dims;
  double Dd = (double)dm[f.dim_d], DV = (double)dm[f.dim_dv];
  int64_t K = dm[f.dim_k], KB = XIR_ATTN_KEY_BLOCK;
  unsigned W = c->W;
  xir__attn_geom g;
  xir__attn_geometry(W, c->attn_vec == XIR_ATTN_VEC_D, c->attn_qb, c->attn_hb, dm[f.dim_d],
                     dm[f.dim_dv], &g);
  double n = g.rows, NV = g.nv, JR = g.jr, a = 0, m = 0;
  for (int64_t k0 = 0; k0 < K; k0 += KB) {
    double kn = (double)(K - k0 < KB ? K - k0 : KB), groups = ceil(kn / JR);
    /* q·kᵀ */
    if (!g.vec_d) {
      a += groups * (Dd * (NV + JR + JR * NV) + 2 * JR * NV);
    } else {
      double np = g.npad, full = floor(Dd / W), tail = fmod(Dd, W) > 0;
      double per = (full + tail) * (JR + np + JR * np);
      double tree = 3.0 * (W - 1) + 2 + 2 * JR; /* W − 1 pairs (2 shuffles, 1 add), order, ·sc */
      a += groups * (per + tree);
    }
    /* online softmax, per packet of lanes: max, α, exponentials and their sum */
    double sm = kn * 2 + 5 + kExp + kn * (4 + kExp) + 6;
    a += NV * fmax(sm, 2 * kn * kChain);
    m += NV * (kExp * (kn + 1));
    /* p·v: RR rows × CB vectors per register block */
    double rr = g.rr, groups_pv = g.rows_pv / g.rr;
    for (unsigned cb0 = 0; cb0 < g.cv; cb0 += g.cb) {
      double cbn = g.cv - cb0 < g.cb ? g.cv - cb0 : g.cb;
      double body = kn * (cbn + rr + rr * cbn);
      a += groups_pv * (rr * (1 + 2 * cbn) + fmax(body, kn * kChain) + rr * cbn);
    }
  }
  /* per tile: q packed (vec q), the running state set, the accumulators zeroed, the output */
  if (!g.vec_d) a += 2 * n * Dd;
  a += 2 * NV + (double)g.rows_pv * g.cv;
  a += n * (2 + g.cv * (3 + kDiv));
  m += n * g.cv * kDiv;
  *arith = a;
  *math = m;
  *bytes = 4.0 * ((double)K * (Dd + DV) + n * (Dd + DV));
  return 1;
}
