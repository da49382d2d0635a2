/* bridge.c — legal mapping candidates: root-axis permutation × block width B × local width ℓ.
 *
 * Legality lives here and nowhere else. A candidate is legal when W ∈ {1,2,4,8,16}, B is a
 * multiple of W, ℓ is 1 or a power of two dividing B, and — for ℓ > 1 — the body's cross-lane
 * exchanges are implemented: every tile value is 1-D over one inner axis (the one the ℓ lanes
 * share), and the reductions over it are sum/max/min. The bridge also reports how a candidate is
 * implemented for the shape (direct or multi-packet, full-packet path, ragged packets and tails)
 * and its counts (P root programs, L blocks, Q packets). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/attn.h"
#include "bridge/dims.h"
#include "ir/program.h"
#include "xir_bridge.h"

/* The single axis every tile ranges over, or -1 (no tiles, or tiles of rank ≥ 2 / mixed axes). */
static int inner_axis(const xir_program *p, const char **why) {
  int axis = -1;
  *why = "the body has no tile to distribute (every value is per root program)";
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_type *t = &p->nodes[i].type;
    if (t->rank == 0) continue;
    if (t->rank > 1) {
      *why = "the body has 2-D tiles: local redistribution is implemented for 1-D tiles only";
      return -1;
    }
    if (axis >= 0 && t->axes[0] != axis) {
      *why = "the body's tiles range over different axes";
      return -1;
    }
    axis = t->axes[0];
  }
  if (axis >= 0) *why = NULL;
  return axis;
}

static int is_pow2(uint32_t x) { return x && !(x & (x - 1)); }

static int is_simd_width(uint32_t W) { return W == 1 || W == 2 || W == 4 || W == 8 || W == 16; }

const char *xir_impl_kind_name(xir_impl_kind k) {
  return k == XIR_IMPL_MULTI_PACKET ? "multi-packet" : "direct";
}

xir_status xir_candidate_make(const xir_program *p, const xir_shape *shape, uint32_t W,
                              uint32_t B, uint32_t local, const uint8_t *perm,
                              xir_candidate *c, xir_diag *d) {
  if (c) memset(c, 0, sizeof *c);
  if (!p || !shape || !perm || !c)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_candidate_make: %s is NULL",
                    !p ? "the program" : !shape ? "the shape" : !perm ? "perm" : "the candidate");
  if (!is_simd_width(W))
    return xir__err(d, XIR_ERR_INVALID_ARG, "W = %u is not a SIMD width (1, 2, 4, 8 or 16)", W);
  if (B == 0 || B % W != 0 || B > 4096)
    return xir__err(d, XIR_ERR_INVALID_ARG, "B = %u must be a multiple of W = %u (at most 4096)",
                    B, W);
  if (!is_pow2(local) || local > B || B % local != 0)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "l = %u must be 1 or a power of two that divides B = %u", local, B);
  int seen[XIR_MAX_ROOT] = {0};
  for (int k = 0; k < p->nroot; k++) {
    if (perm[k] >= p->nroot || seen[perm[k]]++)
      return xir__err(d, XIR_ERR_INVALID_ARG, "perm is not a permutation of the root axes");
  }
  const char *why;
  int axis = inner_axis(p, &why);
  if (local > 1 && axis < 0)
    return xir__err(d, XIR_ERR_NOT_FOUND, "l = %u is not legal for '%s': %s", local, p->name, why);
  c->W = W;
  c->B = B;
  c->local = local;
  c->nperm = p->nroot;
  memcpy(c->perm, perm, (size_t)p->nroot);
  c->inner_dim = axis;
  c->kind = local > W ? XIR_IMPL_MULTI_PACKET : XIR_IMPL_DIRECT;
  c->root_programs = xir_shape_root_count(p, shape);
  uint64_t lanes = c->root_programs * local;
  c->blocks = (lanes + B - 1) / B;
  c->packets = (lanes + W - 1) / W;
  c->ragged_packets = lanes % W != 0;
  c->ragged_inner = local > 1 && shape->dims[axis] % local != 0;
  c->full_packet_path = 1;
  xir_status s = xir__fixed_dims(p, shape, local, W, axis, &c->fixed_dims, d);
  if (s) memset(c, 0, sizeof *c);
  return s;
}

char *xir_candidate_name(const xir_program *p, const xir_candidate *c, char *buf, size_t cap) {
  if (!buf || !cap) return buf;
  if (!p || !c) {
    snprintf(buf, cap, "(none)");
    return buf;
  }
  size_t o = (size_t)snprintf(buf, cap, "perm=");
  for (int k = 0; k < c->nperm && k < XIR_MAX_ROOT; k++)
    o += (size_t)snprintf(buf + (o < cap ? o : cap), o < cap ? cap - o : 0, "%s%s", k ? "." : "",
                          c->perm[k] < p->nroot ? p->root[c->perm[k]].var : "?");
  o += (size_t)snprintf(buf + (o < cap ? o : cap), o < cap ? cap - o : 0, ",l=%u,B=%u,W=%u",
                        c->local, c->B, c->W);
  if (c->attn_vec)
    snprintf(buf + (o < cap ? o : cap), o < cap ? cap - o : 0, ",vec=%s,qb=%u,hb=%u",
             c->attn_vec == XIR_ATTN_VEC_D ? "d" : "q", c->attn_qb, c->attn_hb);
  return buf;
}

/* Next permutation in lexicographic order; 0 after the last. */
static int next_perm(uint8_t *a, int n) {
  int i = n - 2;
  while (i >= 0 && a[i] >= a[i + 1]) i--;
  if (i < 0) return 0;
  int j = n - 1;
  while (a[j] <= a[i]) j--;
  uint8_t t = a[i];
  a[i] = a[j];
  a[j] = t;
  for (int l = i + 1, r = n - 1; l < r; l++, r--) {
    t = a[l];
    a[l] = a[r];
    a[r] = t;
  }
  return 1;
}

xir_status xir_candidates(const xir_program *p, const xir_shape *shape, uint32_t W,
                          xir_candidate **out, size_t *count, xir_diag *d) {
  if (out) *out = NULL;
  if (count) *count = 0;
  if (!p || !shape || !out || !count)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_candidates: %s is NULL",
                    !p ? "the program" : !shape ? "the shape" : !out ? "out" : "count");
  /* W = 0 (or a huge W) would never end the B loop below */
  if (!is_simd_width(W))
    return xir__err(d, XIR_ERR_INVALID_ARG, "W = %u is not a SIMD width (1, 2, 4, 8 or 16)", W);
  xir_status s = xir_shape_check(p, shape, d);
  if (s) return s;
  size_t n = 0, cap = 0;
  xir_candidate *list = NULL;
  uint8_t perm[XIR_MAX_ROOT];
  for (int k = 0; k < p->nroot; k++) perm[k] = (uint8_t)k;
  const char *why;
  int has_inner = inner_axis(p, &why) >= 0;
  do {
    for (uint32_t B = W; B <= 8 * W; B *= 2)
      for (uint32_t l = 1; l <= (has_inner ? B : 1); l *= 2) {
        xir_candidate c;
        if ((s = xir_candidate_make(p, shape, W, B, l, perm, &c, d))) {
          xir__free(list);
          return s;
        }
        if (xir__grow((void **)&list, &cap, n + 1, sizeof *list)) {
          xir__free(list);
          return xir__err(d, XIR_ERR_NOMEM, "out of memory enumerating candidates");
        }
        list[n++] = c;
      }
  } while (next_perm(perm, p->nroot));
  if ((s = xir__attn_candidates(p, shape, W, &list, &n, &cap, d))) {
    xir__free(list);
    return s;
  }
  *out = list;
  *count = n;
  return XIR_OK;
}

xir_status xir_candidate_parse(const xir_program *p, const xir_shape *shape, const char *name,
                               uint32_t W, xir_candidate *c, xir_diag *d) {
  if (c) memset(c, 0, sizeof *c);
  if (!p || !shape || !name || !c)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_candidate_parse: %s is NULL",
                    !p ? "the program" : !shape ? "the shape" : !name ? "the name" : "the candidate");
  uint8_t perm[XIR_MAX_ROOT];
  int nperm = 0;
  long long l = -1, B = -1, w = -1, qb = -1, hb = -1;
  int vec = 0;
  const char *s = name;
  while (*s) {
    const char *end = strchr(s, ',');
    if (!end) end = s + strlen(s);
    const char *eq = memchr(s, '=', (size_t)(end - s));
    if (!eq) goto bad;
    size_t kl = (size_t)(eq - s);
    const char *v = eq + 1;
    if (kl == 4 && memcmp(s, "perm", 4) == 0) {
      while (v < end) {
        const char *dot = memchr(v, '.', (size_t)(end - v));
        if (!dot) dot = end;
        int found = -1;
        for (int k = 0; k < p->nroot; k++)
          if (strlen(p->root[k].var) == (size_t)(dot - v) &&
              memcmp(p->root[k].var, v, (size_t)(dot - v)) == 0)
            found = k;
        if (found < 0 || nperm >= p->nroot)
          return xir__err(d, XIR_ERR_NOT_FOUND,
                          "candidate '%s': '%.*s' is not a root variable of '%s'", name,
                          (int)(dot - v), v, p->name);
        perm[nperm++] = (uint8_t)found;
        v = dot < end ? dot + 1 : end;
      }
    } else if (kl == 3 && memcmp(s, "vec", 3) == 0) {
      if (end - v != 1 || (*v != 'q' && *v != 'd')) goto bad;
      vec = *v == 'q' ? XIR_ATTN_VEC_Q : XIR_ATTN_VEC_D;
    } else {
      char *e;
      if (v == end || *v < '0' || *v > '9') goto bad; /* digits only: no sign, no blank */
      errno = 0;
      unsigned long long val = strtoull(v, &e, 10);
      if (e != end || val == 0) goto bad;
      if (errno == ERANGE || val > UINT32_MAX)
        return xir__err(d, XIR_ERR_INVALID_ARG,
                        "candidate '%s': %.*s is out of range (at most %u)", name,
                        (int)(end - s), s, UINT32_MAX);
      if (kl == 1 && *s == 'l') l = val;
      else if (kl == 1 && *s == 'B') B = val;
      else if (kl == 1 && *s == 'W') w = val;
      else if (kl == 2 && memcmp(s, "qb", 2) == 0) qb = val;
      else if (kl == 2 && memcmp(s, "hb", 2) == 0) hb = val;
      else goto bad;
    }
    s = *end ? end + 1 : end;
  }
  if (nperm != p->nroot || l < 0 || B < 0)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "candidate '%s' must give perm (all %d root axes), l and B, e.g. "
                    "perm=%s,l=1,B=%u,W=%u", name, p->nroot, p->root[0].var, W, W);
  if (w > 0 && (uint32_t)w != W)
    return xir__err(d, XIR_ERR_UNSUPPORTED,
                    "candidate '%s' is for W = %lld, but code is generated for W = %u", name, w, W);
  if (vec || qb >= 0 || hb >= 0) {
    /* the attention mapping: its perm, l and B are fixed (the tile order, 1, W) */
    if (!vec || qb < 0 || hb < 0)
      return xir__err(d, XIR_ERR_INVALID_ARG,
                      "candidate '%s': the attention mapping needs vec, qb and hb together", name);
    xir_status st = xir_candidate_make_attn(p, shape, W, (uint32_t)vec, (uint32_t)qb,
                                            (uint32_t)hb, c, d);
    if (st) return st;
    if (l != 1 || B != W || memcmp(perm, c->perm, (size_t)p->nroot) != 0) {
      memset(c, 0, sizeof *c);
      return xir__err(d, XIR_ERR_NOT_FOUND,
                      "candidate '%s': the attention mapping has l = 1, B = W and its tiles in "
                      "the order of q's indices", name);
    }
    return XIR_OK;
  }
  return xir_candidate_make(p, shape, W, (uint32_t)B, (uint32_t)l, perm, c, d);
bad:
  return xir__err(d, XIR_ERR_INVALID_ARG,
                  "cannot read candidate name '%s' (expected perm=AXES,l=N,B=N,W=N)", name);
}
