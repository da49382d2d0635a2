/* peers.c — name lookup of the C peers (see xir_peers.h). */
#include <stddef.h>
#include <string.h>

#include "peers_internal.h"

static const char *const kVariants[] = {"c_omp", "c_fastmath", NULL};

static const xir__peer_entry *variant_table(const char *variant) {
  if (!variant) return NULL;
  if (strcmp(variant, "c_omp") == 0) return xir__peers_c_omp;
  if (strcmp(variant, "c_fastmath") == 0) return xir__peers_c_fastmath;
  return NULL;
}

xir_peer_fn xir_peer_find(const char *kernel, const char *variant) {
  const xir__peer_entry *t = variant_table(variant);
  if (!t || !kernel) return NULL;
  for (int i = 0; i < XIR__PEER_NKERNELS; i++)
    if (strcmp(t[i].kernel, kernel) == 0) return t[i].fn;
  return NULL;
}

const char *const *xir_peer_variants(void) { return kVariants; }

const char *const *xir_peer_kernels(void) {
  static const char *const kNames[XIR__PEER_NKERNELS + 1] = {
      "rmsnorm", "layernorm",     "rope",      "softmax_mask",     "softmax_causal",
      "swiglu",  "gelu_residual", "attention", "attention_causal", NULL};
  return kNames;
}

int xir_peer_threads(const char *variant) {
  if (!variant) return 0;
  if (strcmp(variant, "c_omp") == 0) return 2;
  if (strcmp(variant, "c_fastmath") == 0) return 1;
  return 0;
}
