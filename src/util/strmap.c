/* strmap.c — the open-addressing string table of strmap.h. */
#include "util/strmap.h"

#include <string.h>

#include "util/util.h"

static uint32_t hash_bytes(const char *s, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)s[i];
    h *= 16777619u;
  }
  return h;
}

void xir__strmap_free(xir_strmap *m) {
  if (!m) return;
  xir__free(m->slots);
  m->slots = NULL;
  m->cap = m->count = 0;
}

/* The slot holding key, or the empty slot where it would go. cap must be non-zero. */
static xir_strmap_slot *find(const xir_strmap_slot *slots, size_t cap, const char *key,
                             size_t len, uint32_t h) {
  size_t mask = cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const xir_strmap_slot *s = &slots[i];
    if (!s->key) return (xir_strmap_slot *)s;
    if (s->hash == h && strncmp(s->key, key, len) == 0 && s->key[len] == 0)
      return (xir_strmap_slot *)s;
  }
}

int xir__strmap_get(const xir_strmap *m, const char *key, size_t len, int32_t *value) {
  if (!m || !m->cap || !key) return 0;
  const xir_strmap_slot *s = find(m->slots, m->cap, key, len, hash_bytes(key, len));
  if (!s->key) return 0;
  if (value) *value = s->value;
  return 1;
}

int xir__strmap_reserve(xir_strmap *m, size_t n) {
  if (n > SIZE_MAX / 4) return -1;
  size_t want = m->cap ? m->cap : 16;
  while (want < 2 * n) want *= 2;
  if (want == m->cap) return 0;
  if (want > SIZE_MAX / sizeof(xir_strmap_slot)) return -1;
  xir_strmap_slot *ns = xir__calloc(want, sizeof *ns);
  if (!ns) return -1;
  for (size_t i = 0; i < m->cap; i++) {
    const xir_strmap_slot *o = &m->slots[i];
    if (o->key) *find(ns, want, o->key, strlen(o->key), o->hash) = *o;
  }
  xir__free(m->slots);
  m->slots = ns;
  m->cap = want;
  return 0;
}

int xir__strmap_put(xir_strmap *m, const char *key, int32_t value) {
  if (!m || !key) return -1;
  size_t len = strlen(key);
  uint32_t h = hash_bytes(key, len);
  if (m->cap) {
    xir_strmap_slot *s = find(m->slots, m->cap, key, len, h);
    if (s->key) {
      s->value = value;
      return 0;
    }
  }
  if (xir__strmap_reserve(m, m->count + 1)) return -1;
  xir_strmap_slot *s = find(m->slots, m->cap, key, len, h);
  s->key = key;
  s->hash = h;
  s->value = value;
  m->count++;
  return 0;
}
