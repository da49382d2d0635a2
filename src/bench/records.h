/* records.h — benchmark records: gzip'd JSON I/O, the protocol's statistics, and the checks the
 * audit makes on them (internal).
 *
 * The statistics are computed by ONE function (xir__bench_summarize) from the raw samples: the
 * benchmark calls it to write its summary, the audit calls it again and compares. So a summary
 * that does not follow from its samples is always caught, and so is a changed sample (through
 * the sample digest and the per-visit p50s). Medians of an even count are the mean of the middle
 * two values. */
#ifndef XIR_BENCH_RECORDS_H
#define XIR_BENCH_RECORDS_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "xir_status.h"

#define XIR_BENCH_FORMAT "xir-bench-1"

/* Writes root as JSON through gzip to path (atomically: a temporary file, then rename). */
xir_status xir__json_write_gz(const char *path, const cJSON *root, xir_diag *d);
/* The cap on the decompressed size of a records file: 256 MiB (the largest suite's records are a
 * few MiB), unless the environment variable XIR_RECORDS_MAX_BYTES gives another (positive) number
 * of bytes. A file that inflates beyond it is refused (a gzip bomb), before it is all in memory. */
#define XIR_RECORDS_MAX_BYTES ((uint64_t)256 << 20)
uint64_t xir__records_max_bytes(void);

/* Reads a gzip'd JSON file strictly: exactly one gzip member (inflated with zlib, which checks
 * the CRC and size trailer) that must end the file, at most `cap` bytes once inflated, holding
 * one JSON value and nothing after it but white space. XIR_ERR_FORMAT names the problem
 * (truncated stream, corrupt stream, garbage after the member or after the JSON, too large);
 * XIR_ERR_IO when the file cannot be read. */
xir_status xir__json_read_gz_capped(const char *path, uint64_t cap, cJSON **root, xir_diag *d);
/* The same with the cap xir__records_max_bytes(). */
xir_status xir__json_read_gz(const char *path, cJSON **root, xir_diag *d);

/* SHA-256 (hex) of the canonical listing of every visit's samples: "round case n s1 s2 ...\n". */
void xir__bench_samples_digest(const cJSON *records, char hex[65]);

/* Computes, from records.visits[*].samples_ns and .n, every visit's p50 (ns per launch), then
 * records.summary: per case the median over rounds of the p50s (and min, max), per comparison
 * the median over rounds of the same-round ratio variant/baseline (and min, max), the peers
 * suite's Python side when it has one (python_side.h: summary.python_side), and the sample
 * digest. Replaces any existing summary. */
xir_status xir__bench_summarize(cJSON *records, xir_diag *d);

/* 1 when s is a SHA-256 in hex: 64 lowercase hex digits. */
int xir__is_sha256_hex(const char *s);

/* The audit's checks that need no suite definition: format; the declaration's fields (rounds,
 * samples, warmup_ms, sample_ms, settle_ms, seed, workers: types and the ranges xir bench
 * accepts; workers equal to the runtime's; simd_width a legal width); every case's fields
 * (strings, SHA-256 formats, workers within the pool, max_abs_err); every visit's samples sane;
 * every visit's oracle check consistent (pass true with sentinels true, finite max_abs and rel_l2,
 * a SHA-256 output hash); across a case's visits the same output hash as the case's (external
 * peers exempt), the same max_abs/rel_l2 for the same output, max_abs_err their maximum; visits
 * complete, unique and in the declared order of their round; the digest; every p50 and the
 * summary (summary.python_side included) equal to a recomputation; the Python side's declaration
 * (xir__bench_python_side_check); every visit's oracle check present and passed. Fails with
 * XIR_ERR_FORMAT and a message naming the first problem. */
xir_status xir__bench_audit_records(const cJSON *records, xir_diag *d);

#endif
