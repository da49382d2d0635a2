/* sha256.c — SHA-256 in hex (see sha256.h). */
#include "util/sha256.h"

void xir__sha256_final_hex(xir__sha256 *h, char out[65]) {
  uint8_t dig[SHA256_DIGEST_SIZE];
  sha256_digest(h, SHA256_DIGEST_SIZE, dig);
  static const char hx[] = "0123456789abcdef";
  for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
    out[2 * i] = hx[dig[i] >> 4];
    out[2 * i + 1] = hx[dig[i] & 15];
  }
  out[64] = '\0';
}

void xir__sha256_hex(const void *data, size_t n, char out[65]) {
  xir__sha256 h;
  xir__sha256_init(&h);
  xir__sha256_update(&h, data, n);
  xir__sha256_final_hex(&h, out);
}
