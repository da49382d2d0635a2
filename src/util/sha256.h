/* sha256.h — SHA-256 in hex, the one implementation (nettle underneath): the JIT's provenance
 * and cache keys, the service-model cache file, the oracle's input fingerprints, the benchmark
 * records and binaries all hash through it. Internal. */
#ifndef XIR_UTIL_SHA256_H
#define XIR_UTIL_SHA256_H

#include <stddef.h>

#include <nettle/sha2.h>

typedef struct sha256_ctx xir__sha256;

static inline void xir__sha256_init(xir__sha256 *h) { sha256_init(h); }
static inline void xir__sha256_update(xir__sha256 *h, const void *data, size_t n) {
  sha256_update(h, n, (const uint8_t *)data);
}
/* Finishes h and writes its digest as 64 lowercase hex digits and a NUL. */
void xir__sha256_final_hex(xir__sha256 *h, char out[65]);
/* SHA-256 (hex) of n bytes. */
void xir__sha256_hex(const void *data, size_t n, char out[65]);

#endif
