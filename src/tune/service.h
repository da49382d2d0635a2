/* service.h — internal seam of the service model (src/tune/service.c), for tests. */
#ifndef XIR_TUNE_SERVICE_H
#define XIR_TUNE_SERVICE_H

#include "xir_plan.h"

/* How xir_service_model measures a calibration it cannot read from its file. */
typedef xir_status (*xir__measure_fn)(xir_compiler *cc, xir_runtime *rt, xir_calibration *out,
                                      xir_diag *d);
/* Replaces that measurement for the process (NULL: xir_calibrate, the default); returns the
 * previous one. test_service measures for real once, then checks which files are trusted with
 * a stand-in that takes no time: whether a file is read or measured again is what it asserts,
 * not the figures. Not thread-safe: set it before any planning. */
xir__measure_fn xir__service_set_measure(xir__measure_fn fn);

/* A process that writes its service model removes the cache directory's service files (other
 * builds', their locks, leftover temporaries) not written for this many days. */
#define XIR__SERVICE_STALE_DAYS 30

/* The XIR text of the calibration's arithmetic probe (src/tune/calibrate.c), for its test. */
const char *xir__calibration_arith_probe(void);

/* The streaming threshold the calibration's copy probe finds (src/tune/calibrate.c,
 * stream_probe): t[f] = {regular, streaming} ns at footprint F[f] bytes, f < n, F increasing.
 * Streaming wins a footprint when at least 5% faster; the threshold is the geometric mean of the
 * largest losing footprint and the smallest of the run of wins that reaches F[n - 1], F[0] when
 * it wins everywhere, and 0 (keep the cache-size prior) when it loses F[n - 1]. */
double xir__stream_threshold_from(const double (*t)[2], const double *F, int n);

#endif
