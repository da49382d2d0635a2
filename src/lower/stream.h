/* stream.h — streaming (non-temporal) stores of large launches and the lines the next-row
 * prefetch takes (internal; stream.c, docs/lowering.md "Streaming stores", "Which line"). No
 * LLVM types: the tests include it. */
#ifndef XIR_LOWER_STREAM_H
#define XIR_LOWER_STREAM_H

#include <stdint.h>

/* Bit 1 of the argument block's flags slot (lower.h): write the outputs with non-temporal
 * stores where they are aligned. Bit 2, with bit 1: also the rows that do not start on a
 * vector boundary, through a row buffer (lower.c realign_ok; docs/lowering.md "Streaming
 * stores"). */
enum { XIR__ARGS_STREAM = 2, XIR__ARGS_STREAM_ROWBUF = 4 };
/* Bit 3: the launch's rows come from memory (xir__far_launch), so a norm's store loop prefetches
 * the next row into L2 (lower.c next_row_prefetch_addrs, on the CPUs of
 * xir__cpu_math_prefetch_only; docs/lowering.md "Next-row prefetch"). */
enum { XIR__ARGS_FAR = 8 };

/* The size of the last-level cache this core shares, in bytes (Linux's sysfs, else sysconf;
 * asked once; 0 when unknown). */
int64_t xir__llc_bytes(void);
/* Replaces the size xir__llc_bytes reports (tests: a launch past the cache without allocating
 * a real cache's worth; -1 asks the system again). Returns the previous value. */
int64_t xir__llc_bytes_set(int64_t bytes);
/* The footprint above which a launch streams its outputs: the measured threshold when one was
 * set (xir__stream_threshold_set) and every output is f32 (half_out = 0: what the probe
 * measured), else half of the last-level cache; 0 when neither is known (never stream). */
int64_t xir__stream_threshold(int half_out);
/* Sets the measured threshold for the process (the service model's `stream_bytes`, set when the
 * planner's default coefficients are loaded: src/tune/service.c); bytes <= 0 restores the
 * cache-size prior. Returns the previous setting (0: the prior). */
int64_t xir__stream_threshold_set(int64_t bytes);
/* The streaming bits of the flags slot for a launch whose buffers span `footprint` bytes
 * (every input and output): XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF when the footprint
 * exceeds t = xir__stream_threshold(half_out) (half_out: some output is bf16 or f16). For a
 * kernel that reduces before it stores (reduces = 1: a norm; 2: the body also evaluates vector
 * math, softmax) when the last-level cache (at least 4 MiB) is smaller than t: past the cache's
 * size both bits for reduces = 2; for reduces = 1 XIR__ARGS_STREAM alone (aligned rows stream,
 * unaligned ones keep regular stores) and both bits past the smaller of t and twice the cache.
 * 0 otherwise. Or as
 * XIR_STREAM_STORES says (read once: 0 never, 1 always, both bits, unset or `auto` by size) or
 * xir__stream_stores_set. */
int xir__stream_launch(uint64_t footprint, int half_out, int reduces);
/* XIR__ARGS_FAR when a launch whose buffers span `footprint` bytes reads its rows from memory:
 * past one and a half times the last-level cache (at least 4 MiB), else past twice the streaming
 * threshold (xir__stream_threshold(0)); 0 otherwise. */
int xir__far_launch(uint64_t footprint);
/* The mode of xir__stream_launch: -1 by size (and, in a session launch, chosen again at launch
 * time where xir__stream_choice_zone says: session/choice.h), 2 by size only, 0 never, 1 always
 * (XIR_STREAM_STORES = auto or unset, rule, 0, 1; tests; overrides the
 * environment). */
void xir__stream_stores_set(int mode);
/* A number that changes (after the new value is stored) whenever xir__stream_stores_set,
 * xir__stream_threshold_set or xir__llc_bytes_set changes what xir__stream_launch and
 * xir__far_launch answer, so that a caller may keep their answer for a footprint until it
 * changes (launch.c, pack_dense). Never 0. */
uint32_t xir__stream_generation(void);
/* The current mode (-1, 0, 1 or 2), the environment's until xir__stream_stores_set. */
int xir__stream_stores_mode(void);

/* The next-row prefetches of one chunk of a row loop (lower.c next_row_prefetch; here with the
 * other memory-side decisions of the row kernels): the chunk's k packets of W elements of esize
 * bytes, len of whose elements exist (ℓ = k·W, or the tail's N mod ℓ), in 64-byte groups from
 * its start (several packets a group for bf16 at W = 16, several groups a packet for i64), one
 * prefetch a group at the element offset of its last existing element: the line where a load
 * ends, the later of the two it touches on a row that is not 64-byte aligned. Writes the offsets
 * in ascending order to out (room for XIR__PREFETCH_MAX) and returns how many. */
enum { XIR__PREFETCH_MAX = 64 };
int xir__prefetch_offsets(unsigned W, unsigned k, int64_t len, int64_t esize, int64_t *out);

/* 1 for the CPUs (by LLVM name) whose next-row prefetch goes only into a later loop that
 * evaluates vector math (softmax's exp), never into a norm's store loop: AMD Zen ("znver*";
 * docs/lowering.md, "Next-row prefetch", with the numbers). 0 for NULL and every other name. */
int xir__cpu_math_prefetch_only(const char *cpu);
/* 1 for a CPU whose lane-crossing 256-bit permutes are slow ("znver1"; stream.c). */
int xir__cpu_slow_lane_cross(const char *cpu);

/* 1 when a launch of `footprint` bytes is near enough to the threshold t and the last-level
 * cache llc (either may be 0: unknown) that the better stores depend on what else the machine
 * runs: from half the smaller to four times the larger. Such launches of a session choose
 * between streaming and regular stores by measuring both (session/choice.h). */
int xir__stream_choice_zone(uint64_t footprint, int64_t t, int64_t llc);

#endif
