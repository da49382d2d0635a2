/* kcache.h — the on-disk kernel cache: compiled objects (plus their optimized IR) stored in
 * <xir_cache_dir()>/kernels/, one file per key, so that a later process skips lowering,
 * optimization and code generation (docs/cache.md).
 *
 *   key  = SHA-256 over length-prefixed parts (format version, xir version, LLVM version, the
 *          GNU build-id of the module holding xir's code, triple, CPU, features, pipeline,
 *          codegen level, entry name, candidate, compile-time dims, canonical XIR text)
 *   file = <key>.xk: a 280-byte header (magic, key, payload SHA-256, lengths, IR/object
 *          SHA-256) then the IR text and the object bytes. The payload hash covers every byte
 *          after it, so any flipped byte (lengths included) is detected.
 *
 * Writes go to a temporary file in the same folder and are renamed into place (concurrent
 * writers and readers never see half a file). After a write the folder is kept under a size cap
 * by deleting the least recently used entries (a hit touches the entry's mtime). Nothing here
 * fails a compile: every problem becomes a miss and a note. */
#ifndef XIR_LOWER_KCACHE_H
#define XIR_LOWER_KCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "xir_status.h"

#define XIR__KCACHE_DEFAULT_MAX_BYTES (256ull << 20)
#define XIR__KCACHE_HEADER 280

typedef struct xir__kcache {
  int enabled;
  int by_ir;           /* $XIR_KERNEL_CACHE_KEY=ir: keyed by the lowered IR, not the build-id */
  char dir[1024];      /* the kernels/ folder (created on the first write) */
  uint64_t max_bytes;  /* the size cap */
  char why_off[192];   /* why it is disabled ("" when enabled) */
} xir__kcache;

/* Configures the cache. disable: the caller's option; dir: NULL = xir_cache_dir()/kernels;
 * max_bytes: 0 = $XIR_KERNEL_CACHE_MAX_BYTES, else the default. $XIR_NO_KERNEL_CACHE (set, not
 * "" or "0") disables it. $XIR_KERNEL_CACHE_KEY: "build" (or unset, or ""): entries keyed by the
 * build-id and the XIR text, a hit skips lowering; "ir": keyed by the lowered (unoptimized) IR
 * instead of both, so that differently built xir's with the same lowering share entries (the
 * tests' sanitizer builds), a hit skips optimization and code generation only (docs/cache.md).
 * Errors (XIR_ERR_INVALID_ARG): an unreadable XIR_KERNEL_CACHE_MAX_BYTES or XIR_KERNEL_CACHE_KEY.
 * A missing cache folder, or a missing build-id when keyed by it, disables the cache (why_off
 * says so); that is not an error. */
xir_status xir__kcache_open(xir__kcache *kc, int disable, const char *dir, uint64_t max_bytes,
                            xir_diag *d);

/* The GNU build-id (hex) of the ELF module holding this code, or NULL when it has none. */
const char *xir__kcache_build_id(void);

/* SHA-256 (hex) over n parts, each prefixed by its length (no part can run into the next). */
void xir__kcache_key(const char *const *parts, size_t n, char out[65]);

/* A verified entry; the pointers point into buf. */
typedef struct xir__kcache_entry {
  unsigned char *buf;
  size_t size;
  const char *ir_text; /* not NUL-terminated: ir_len bytes */
  size_t ir_len;
  const unsigned char *obj;
  size_t obj_size;
  char ir_sha256[65];
  char obj_sha256[65];
} xir__kcache_entry;

typedef enum xir__kcache_load_result {
  XIR__KC_MISS = 0,    /* no entry (or it cannot be read: note says why) */
  XIR__KC_HIT = 1,     /* *e holds a verified entry; its mtime was touched */
  XIR__KC_CORRUPT = 2, /* the file is damaged (hash, size, magic): never trusted */
  XIR__KC_FOREIGN = 3  /* a sound entry of another key */
} xir__kcache_load_result;

xir__kcache_load_result xir__kcache_load(const xir__kcache *kc, const char key[65],
                                         xir__kcache_entry *e, char *note, size_t cap);
void xir__kcache_entry_free(xir__kcache_entry *e);

/* Writes an entry (temp file + rename), then evicts over the cap. Returns 0, or -1 with a note
 * (the entry is then simply not cached). */
int xir__kcache_store(const xir__kcache *kc, const char key[65], const char *ir, size_t ir_len,
                      const char ir_sha256[65], const unsigned char *obj, size_t obj_size,
                      const char obj_sha256[65], char *note, size_t cap);

/* The path of key's entry in kc (tests, tools). 0 or -1 when it does not fit. */
int xir__kcache_path(const xir__kcache *kc, const char key[65], char *buf, size_t cap);

/* When the folder's entries exceed high bytes, deletes the least recently used ones (by mtime)
 * until they fit in low bytes; keep (a path or name; NULL = none) is never deleted. Deletes
 * temporary files older than 10 minutes. Returns the bytes left. */
uint64_t xir__kcache_evict(const char *dir, uint64_t high, uint64_t low, const char *keep);

#endif
