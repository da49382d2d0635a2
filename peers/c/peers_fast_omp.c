/* peers_fast_omp.c — the c_fast_omp peers, the headline C peer: OpenMP over rows
 * (`schedule(static) num_threads(2)`), compiled with -O3 -march=native -ffast-math -fopenmp, so
 * that libm's expf/tanhf/sinf/cosf in the inner loops become glibc's libmvec calls
 * (_ZGVeN16v_expf etc. on AVX-512; CMakeLists.txt, docs/peers.md). */
#ifndef __FAST_MATH__
#error "peers_fast_omp.c must be compiled with -ffast-math"
#endif
#include <omp.h>

#define PEER(name) peer_fast_omp_##name
#define PEER_TABLE xir__peers_c_fast_omp
#define PEER_THREADS 2
#define PEER_THREAD_ID omp_get_thread_num()
#define PEER_PARALLEL_FOR _Pragma("omp parallel for schedule(static) num_threads(2)")
#define PEER_PARALLEL_FOR_SIMD _Pragma("omp parallel for simd schedule(static) num_threads(2)")
#define PEER_PARALLEL_FOR_CYCLIC _Pragma("omp parallel for schedule(static, 1) num_threads(2)")

#include "peer_kernels.inc"
