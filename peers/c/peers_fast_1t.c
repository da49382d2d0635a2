/* peers_fast_1t.c — the c_fast_1t peers: c_fast_omp's loops and flags (-O3 -march=native
 * -ffast-math -fopenmp, libmvec vector math), one thread (CMakeLists.txt). */
#ifndef __FAST_MATH__
#error "peers_fast_1t.c must be compiled with -ffast-math"
#endif

#define PEER(name) peer_fast_1t_##name
#define PEER_TABLE xir__peers_c_fast_1t
#define PEER_THREADS 1
#define PEER_THREAD_ID 0
#define PEER_PARALLEL_FOR /* single thread */
#define PEER_PARALLEL_FOR_SIMD _Pragma("omp simd")
#define PEER_PARALLEL_FOR_CYCLIC /* single thread */

#include "peer_kernels.inc"
