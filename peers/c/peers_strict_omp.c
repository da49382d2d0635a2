/* peers_strict_omp.c — the c_strict_omp peers (not in the headline table): OpenMP over rows,
 * 2 threads, static schedule, strict IEEE fp32 (no -ffast-math). libm's expf/tanhf/sinf/cosf
 * stay scalar calls per element (glibc declares their vector versions only under fast-math), so
 * this is what `gcc -O3 -march=native -fopenmp` without fast-math gives; kept to show the cost of
 * strict libm, not as the bar xir is measured against. */
#ifdef __FAST_MATH__
#error "peers_strict_omp.c must be compiled without -ffast-math"
#endif
#include <omp.h>

#define PEER(name) peer_strict_omp_##name
#define PEER_TABLE xir__peers_c_strict_omp
#define PEER_THREADS 2
#define PEER_THREAD_ID omp_get_thread_num()
#define PEER_PARALLEL_FOR _Pragma("omp parallel for schedule(static) num_threads(2)")
#define PEER_PARALLEL_FOR_SIMD _Pragma("omp parallel for simd schedule(static) num_threads(2)")
#define PEER_PARALLEL_FOR_CYCLIC _Pragma("omp parallel for schedule(static, 1) num_threads(2)")

#include "peer_kernels.inc"
