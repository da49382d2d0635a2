/* stream.c — whether a launch writes its outputs with non-temporal stores (docs/lowering.md,
 * "Streaming stores").
 *
 * A regular store to a line that is not in the cache first reads the line (read for ownership),
 * and the written lines then push the launch's inputs out of the cache. When the buffers of a
 * launch take more than half of the last-level cache they do not stay there until the next
 * launch anyway (the cache is shared with the other cores and, in a VM, other guests): writing
 * the outputs with non-temporal stores then saves the read of every output line. Smaller
 * launches keep regular stores, so that a consumer finds the output in the cache.
 *
 * Half the cache size is a prior: a VM may report a cache it does not get (an Intel Xeon guest
 * with 2 vCPUs listed 480 MiB of L3 while its copy ran at memory speed from 16 MiB on). The
 * service model measures where streaming starts to pay (src/tune/calibrate.c) and sets it with
 * xir__stream_threshold_set. The probe writes f32: a launch with a bf16/f16 output keeps the
 * prior. (On that Xeon, forced streaming made bf16 rmsnorm 2048×8192 1.03–1.09× slower — its
 * paired 64-byte stores at ℓ ≥ W — while f32 rmsnorm ran 1.5× faster; ℓ = 1 no longer streams
 * 32-byte packets at all: docs/lowering.md.) */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lower/stream.h"

static _Atomic int64_t llc_cached = -1; /* -1: not asked yet */
static _Atomic int stream_mode = -2;    /* -2: not read yet; -1 auto, 0 never, 1 always */
static _Atomic int64_t stream_bytes = 0; /* measured threshold (xir__stream_threshold_set); 0: prior */
static _Atomic uint32_t stream_gen = 1;  /* xir__stream_generation */

static void bump_generation(void) {
  uint32_t g = atomic_fetch_add_explicit(&stream_gen, 1, memory_order_release) + 1;
  if (g == 0) atomic_compare_exchange_strong(&stream_gen, &g, 1); /* never 0 */
}

uint32_t xir__stream_generation(void) {
  return atomic_load_explicit(&stream_gen, memory_order_acquire);
}

/* The size of the highest-level data or unified cache of cpu0 as Linux reports it (the cache
 * this core shares: 32 MiB for one CCX of an EPYC, where glibc's sysconf says 384 MiB, the whole
 * socket's), or -1. */
static int64_t sysfs_llc(void) {
  int64_t best = -1;
  int best_level = 0;
  for (int i = 0; i < 8; i++) {
    char path[96], buf[64];
    int level = 0;
    long long kb = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f) break;
    if (fscanf(f, "%d", &level) != 1) level = 0;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    if (!(f = fopen(path, "r"))) continue;
    int data = fgets(buf, sizeof buf, f) && strncmp(buf, "Instruction", 11) != 0;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!data || !(f = fopen(path, "r"))) continue;
    char unit = 'K';
    int got = fscanf(f, "%lld%c", &kb, &unit);
    fclose(f);
    if (got < 1 || kb <= 0 || level <= best_level) continue;
    best_level = level;
    best = unit == 'M' ? kb << 20 : unit == 'K' ? kb << 10 : kb;
  }
  return best;
}

int64_t xir__llc_bytes(void) {
  int64_t v = atomic_load_explicit(&llc_cached, memory_order_relaxed);
  if (v >= 0) return v;
  long s = (long)sysfs_llc();
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (s <= 0) s = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
  if (s <= 0) s = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  v = s > 0 ? (int64_t)s : 0;
  atomic_store_explicit(&llc_cached, v, memory_order_relaxed);
  return v;
}

int64_t xir__llc_bytes_set(int64_t bytes) {
  int64_t old = xir__llc_bytes();
  atomic_store_explicit(&llc_cached, bytes < 0 ? -1 : bytes, memory_order_relaxed);
  bump_generation();
  return old;
}

void xir__stream_stores_set(int mode) {
  atomic_store_explicit(&stream_mode, mode < -1 ? -1 : mode > 2 ? 2 : mode, memory_order_relaxed);
  bump_generation();
}

int xir__stream_stores_mode(void) {
  int m = atomic_load_explicit(&stream_mode, memory_order_relaxed);
  if (m != -2) return m;
  const char *e = getenv("XIR_STREAM_STORES");
  m = !e || !*e || !strcmp(e, "auto") ? -1 : !strcmp(e, "rule") ? 2 : !strcmp(e, "0") ? 0 : 1;
  int expect = -2;
  atomic_compare_exchange_strong(&stream_mode, &expect, m);
  return atomic_load_explicit(&stream_mode, memory_order_relaxed);
}

int64_t xir__stream_threshold_set(int64_t bytes) {
  int64_t old = atomic_exchange_explicit(&stream_bytes, bytes > 0 ? bytes : 0, memory_order_relaxed);
  bump_generation();
  return old;
}

int64_t xir__stream_threshold(int half_out) {
  int64_t t = atomic_load_explicit(&stream_bytes, memory_order_relaxed);
  if (t > 0 && !half_out) return t;
  int64_t llc = xir__llc_bytes();
  return llc > 0 ? llc / 2 : 0;
}

/* A kernel that reduces its rows before it stores them (norms, softmax) reads each row, then
 * writes it: its stores do not overlap its loads as a copy's do, and past the last-level cache
 * (where no line survives until the next launch) the read for ownership of every output line is
 * pure loss. On the EPYC of 2026-12-06 (Zen 4, 32 MiB of L3 per CCX, 2 vCPUs) the copy probe
 * put the threshold at 45.3 MiB (its 32 MiB probe a toss-up: streaming / regular 0.74-1.32),
 * and at 32 MiB + KiB streaming against regular stores, xir / the OpenMP C (regular stores) per
 * round, 3 runs of 3 rounds each (`XIR_STREAM_STORES=0` / `=1` alternating, `xir bench --suite
 * peers --kernels rmsnorm,layernorm,rope_cache --shapes 'R=1024,C=4096;R=4096,C=1024'
 * --configs default,peer:c_fast_omp --rounds 3`), medians: rmsnorm 1024x4096 0.95 -> 0.62,
 * layernorm 1024x4096 0.90 -> 0.73, 4096x1024 0.97 -> 0.83, rmsnorm 4096x1024 1.0 -> 1.0; but
 * rope_cache (one pass, like the copy; 35.7 MiB) 1.0 -> 1.23 and 0.99 -> 1.12: it keeps the
 * probe's threshold. Rows that do not start on a vector boundary (through lower.c's row buffer,
 * XIR__ARGS_STREAM_ROWBUF) lost there: they stream only past the smaller of the threshold and
 * twice the cache (session 35: rmsnorm 5000x900 xir / C 1.40 with the row buffer, 0.89 without;
 * docs/lowering.md "Rows through the row buffer start later"). */
int xir__stream_launch(uint64_t footprint, int half_out, int reduces) {
  const int both = XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF;
  int m = xir__stream_stores_mode();
  if (m == 0 || m == 1) return m ? both : 0;
  int64_t t = xir__stream_threshold(half_out);
  int64_t llc = reduces && !half_out ? xir__llc_bytes() : 0;
  if (llc >= (int64_t)4 << 20 && t > llc) {
    /* aligned rows from the cache's size on; a body without vector math (a norm) sends rows
     * through the row buffer only from the smaller of the measured threshold and twice the
     * cache, one with it (softmax) from the cache's size too */
    if (footprint <= (uint64_t)llc) return 0;
    int64_t rowbuf = reduces > 1 ? llc : t < 2 * llc ? t : 2 * llc;
    return footprint > (uint64_t)rowbuf ? both : XIR__ARGS_STREAM;
  }
  return t > 0 && footprint > (uint64_t)t ? both : 0;
}

/* On the EPYC of 2026-12-07 (32 MiB of L3) a norm's next-row prefetch into L2 paid from 64 MiB
 * on (rmsnorm 2048x4096 and 4096x4096 xir / the stream probe 1.11-1.20 -> 1.00-1.06) and cost
 * at 33.6 MB, where the rows are partly in L3 (1024x4096: 1.0-1.4 -> 1.7-1.9); one and a half
 * cache sizes puts the line between. */
int xir__far_launch(uint64_t footprint) {
  int64_t llc = xir__llc_bytes();
  if (llc >= (int64_t)4 << 20) return footprint > (uint64_t)(llc + llc / 2) ? XIR__ARGS_FAR : 0;
  int64_t t = xir__stream_threshold(0);
  return t > 0 && footprint > 2 * (uint64_t)t ? XIR__ARGS_FAR : 0;
}

int xir__prefetch_offsets(unsigned W, unsigned k, int64_t len, int64_t esize, int64_t *out) {
  int n = 0;
  if (W == 0 || esize <= 0 || esize > 64) return 0;
  /* 64-byte groups of the chunk's elements: several packets a group (bf16 at W = 16), or several
   * groups a packet (i64 at W = 16) */
  int64_t line = 64 / esize, total = (int64_t)k * W;
  for (int64_t s = 0; s < total && s < len; s += line) {
    int64_t e = s + line - 1;
    out[n++] = e < len - 1 ? e : len - 1;
  }
  return n;
}

/* On Zen 4 (the EPYC of 2026-12-06: 2 vCPUs, 32 MiB of L3) the next row's prefetch in rmsnorm's
 * and layernorm's store loop cost more than it saved — an AOT object of rmsnorm 5000x900 at
 * l = 128 in one C process, 1 thread: 1381-1484 us with it, 978-1088 without — while softmax's,
 * in its exp loop, still pays (1024x4096 xir / OpenMP C 0.52 with, 0.79 without). */
int xir__cpu_math_prefetch_only(const char *cpu) { return cpu && !strncmp(cpu, "znver", 5); }

/* Zen 1 runs 256-bit ops as two 128-bit halves; a lane-crossing permute (vpermps, vpermd) is 3
 * µops at one per 4 cycles, where an in-lane shuffle of a half is one (docs/lowering.md). */
int xir__cpu_slow_lane_cross(const char *cpu) { return cpu && !strcmp(cpu, "znver1"); }

int xir__stream_choice_zone(uint64_t footprint, int64_t t, int64_t llc) {
  if (t <= 0 && llc <= 0) return 0;
  int64_t lo = t > 0 && (llc <= 0 || t < llc) ? t : llc, hi = t > llc ? t : llc;
  return footprint >= (uint64_t)lo / 2 && footprint <= 4 * (uint64_t)hi;
}
