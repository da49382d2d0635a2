/* peers.c — name lookup of the C peers (see xir_peers.h). */
#ifdef __FAST_MATH__
#error "peers.c must be compiled without -ffast-math"
#endif
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "peers_internal.h"

typedef struct variant {
  const char *name;
  const xir__peer_entry *table;
  int threads;
} variant;

static const variant kVariantTable[] = {
    {"c_fast_omp", xir__peers_c_fast_omp, 2},
    {"c_fast_1t", xir__peers_c_fast_1t, 1},
    {"c_strict_omp", xir__peers_c_strict_omp, 2},
};
#define NVARIANTS (sizeof kVariantTable / sizeof kVariantTable[0])

static const char *const kVariants[NVARIANTS + 1] = {"c_fast_omp", "c_fast_1t", "c_strict_omp", NULL};
static const char *const kHeadline[] = {"c_fast_omp", "c_fast_1t", NULL};

static const variant *find_variant(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < NVARIANTS; i++)
    if (strcmp(kVariantTable[i].name, name) == 0) return &kVariantTable[i];
  return NULL;
}

xir_peer_fn xir_peer_find(const char *kernel, const char *variant_name) {
  const variant *v = find_variant(variant_name);
  if (!v || !kernel) return NULL;
  for (int i = 0; i < XIR__PEER_NKERNELS; i++)
    if (strcmp(v->table[i].kernel, kernel) == 0) return v->table[i].fn;
  return NULL;
}

const char *const *xir_peer_variants(void) { return kVariants; }

const char *const *xir_peer_headline_variants(void) { return kHeadline; }

const char *const *xir_peer_kernels(void) {
  static const char *const kNames[XIR__PEER_NKERNELS + 1] = {
      "rmsnorm",        "layernorm", "rope",          "rope_cache", "softmax_mask",
      "softmax_causal", "swiglu",    "gelu_residual", "attention",  "attention_causal",
      NULL};
  return kNames;
}

const char *const *xir_peer_dims(const char *kernel) {
  static const char *const kRows[] = {"R", "C", NULL};
  static const char *const kRope[] = {"R", "C", "HD", NULL};
  static const char *const kRopeCache[] = {"R", "C", "HD", "P", "H2", NULL};
  static const char *const kAttn[] = {"B", "HQ", "HKV", "Q", "K", "D", "DV", NULL};
  if (!kernel) return NULL;
  const char *const *k = xir_peer_kernels();
  int known = 0;
  for (int i = 0; k[i]; i++) known |= strcmp(k[i], kernel) == 0;
  if (!known) return NULL;
  if (!strcmp(kernel, "rope")) return kRope;
  if (!strcmp(kernel, "rope_cache")) return kRopeCache;
  if (!strncmp(kernel, "attention", 9)) return kAttn;
  return kRows;
}

int xir__peer_positions_ok(const float *pos, int64_t R, int64_t P) {
  for (int64_t r = 0; r < R; r++) {
    const float p = pos[r];
    if (!(p >= 0.0f && p < (float)P)) return 0; /* also NaN */
    if (p != (float)(int64_t)p) return 0;
  }
  return 1;
}

int xir_peer_threads(const char *variant_name) {
  const variant *v = find_variant(variant_name);
  return v ? v->threads : 0;
}
