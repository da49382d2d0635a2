/* python_side.h — the peers suite's Python side (internal; docs/bench.md, "The Python side").
 *
 * One Python process (python/bench/xir_peer.py --torch) answers for two external peer names:
 * ext:xir_python (the kernel through the xir package, `y = xir.rmsnorm(x, w)`) and
 * ext:torch_eager_py (torch eager, the same code as the torch_eager peer, in that same process).
 * Per kernel × shape with an ext:xir_python case, the statistics below are computed from the raw
 * visits by ONE function, which the benchmark calls (through xir__bench_summarize) to write
 * records.summary.python_side and the audit calls again and compares:
 *
 *   xir_python_ns, torch_ns, default_ns   median over rounds of each case's p50
 *   vs_torch {median, min, max}           same-round ratio xir_python / torch_eager_py
 *   vs_c {median, min, max}               same-round ratio xir_python / default (xir's C launch)
 *   overhead_ns                           median over rounds of the same-round difference
 *                                         xir_python − default (ns per call)
 * and over the rows: n_vs_torch, geomean_vs_torch, xir_faster (rows with vs_torch < 1), n_vs_c,
 * geomean_vs_c, median_overhead_ns (median of the rows' overhead_ns).
 *
 * The declaration records.python_side = {"measured": bool, "reason": "...", "pyenv": "..."}
 * says whether the run measured the Python side, and if not why (every peers run since 2026-12-05
 * writes one; records from before have neither it nor summary.python_side). */
#ifndef XIR_BENCH_PYTHON_SIDE_H
#define XIR_BENCH_PYTHON_SIDE_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "xir_status.h"

#define XIR_PY_SIDE_XIR "ext:xir_python"
#define XIR_PY_SIDE_TORCH "ext:torch_eager_py"

/* The statistics above from records.cases and xir__bench_summarize's table of p50s
 * (p50[round * ncases + case], NaN where no visit); NULL when no case is ext:xir_python, when the
 * records have no declaration (records from before the Python side) or out of memory. */
cJSON *xir__bench_python_side(const cJSON *records, const double *p50, int ncases, int rounds);

/* The audit's checks of the declaration: only in the peers suite, an object whose "measured" is
 * a boolean; not measured: a non-empty "reason" and no Python-side case. A peers suite without
 * it is a record from before the Python side (XIR_BENCH_FORMAT did not change): accepted when it
 * has no summary.python_side either; its ext:xir_python / ext:torch_eager_py cases, if any, are
 * external peers of before (--peer NAME=...: bench_set_ext_peers with python_side 0). */
xir_status xir__bench_python_side_check(const cJSON *records, xir_diag *d);

/* tables.md's section "Python side" (peers suite), from records.summary.python_side and the
 * declaration: the table, or "not measured" and why. Writes nothing when the records have
 * neither a declaration nor a Python-side summary. */
void xir__bench_python_side_table(FILE *f, const cJSON *records);

/* One line for stdout at the end of a run ("" when there is nothing to say). */
void xir__bench_python_side_line(const cJSON *records, char *buf, size_t cap);

#endif
