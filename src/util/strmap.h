/* strmap.h — a small open-addressing hash table from strings to int32 values (internal).
 *
 * Keys are borrowed: the caller keeps every key alive (and unchanged) while it is in the map (the
 * builder and the printer keep their names in an arena). Linear probing over a power-of-two table
 * kept at most half full; FNV-1a hashing. No deletion (none of the users needs it). Memory goes
 * through the injectable allocator, so an insert can fail with -1 and leave the map unchanged. */
#ifndef XIR_UTIL_STRMAP_H
#define XIR_UTIL_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct xir_strmap_slot {
  const char *key; /* NULL = empty */
  uint32_t hash;
  int32_t value;
} xir_strmap_slot;

typedef struct xir_strmap {
  xir_strmap_slot *slots;
  size_t cap;   /* 0 or a power of two */
  size_t count;
} xir_strmap;

/* A zero-initialized xir_strmap is an empty map. */
void xir__strmap_free(xir_strmap *m);
/* 1 and *value (when not NULL) set when key (len bytes, no NUL needed) is present; else 0. */
int xir__strmap_get(const xir_strmap *m, const char *key, size_t len, int32_t *value);
/* Inserts key (NUL-terminated, borrowed) -> value, replacing the value of an equal key.
 * 0 on success, -1 when out of memory (the map is unchanged). */
int xir__strmap_put(xir_strmap *m, const char *key, int32_t value);
/* Makes room for n keys in total without further allocation. 0, or -1 when out of memory. */
int xir__strmap_reserve(xir_strmap *m, size_t n);

#endif
