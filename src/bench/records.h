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

#include "xir_status.h"

#define XIR_BENCH_FORMAT "xir-bench-1"

/* Median of n values (the array is reordered). n = 0 gives NaN. */
double xir__median(double *v, size_t n);

/* Writes root as JSON through gzip to path (atomically: a temporary file, then rename). */
xir_status xir__json_write_gz(const char *path, const cJSON *root, xir_diag *d);
/* Reads a gzip'd (or plain) JSON file. */
xir_status xir__json_read_gz(const char *path, cJSON **root, xir_diag *d);

/* SHA-256 (hex) of the canonical listing of every visit's samples: "round case n s1 s2 ...\n". */
void xir__bench_samples_digest(const cJSON *records, char hex[65]);

/* Computes, from records.visits[*].samples_ns and .n, every visit's p50 (ns per launch), then
 * records.summary: per case the median over rounds of the p50s (and min, max), per comparison
 * the median over rounds of the same-round ratio variant/baseline (and min, max), and the sample
 * digest. Replaces any existing summary. */
xir_status xir__bench_summarize(cJSON *records, xir_diag *d);

/* The audit's checks that need no suite definition: format; every visit's samples sane; visits
 * complete, unique and in the declared order of their round; the digest; every p50 and the
 * summary equal to a recomputation; every visit's oracle check present and passed. Fails with
 * XIR_ERR_FORMAT and a message naming the first problem. */
xir_status xir__bench_audit_records(const cJSON *records, xir_diag *d);

#endif
