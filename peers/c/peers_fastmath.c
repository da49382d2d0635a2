/* peers_fastmath.c — the c_fastmath peers: one thread, compiled with -ffast-math (CMakeLists.txt). */
#ifndef __FAST_MATH__
#error "peers_fastmath.c must be compiled with -ffast-math"
#endif

#define PEER(name) peer_fastmath_##name
#define PEER_TABLE xir__peers_c_fastmath
#define PEER_THREADS 1
#define PEER_THREAD_ID 0
#define PEER_PARALLEL_FOR /* single thread */

#include "peer_kernels.inc"
