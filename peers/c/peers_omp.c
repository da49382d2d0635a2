/* peers_omp.c — the c_omp peers: OpenMP over rows, 2 threads, static schedule, no fast-math. */
#include <omp.h>

#define PEER(name) peer_omp_##name
#define PEER_TABLE xir__peers_c_omp
#define PEER_THREADS 2
#define PEER_THREAD_ID omp_get_thread_num()
#define PEER_PARALLEL_FOR _Pragma("omp parallel for schedule(static) num_threads(2)")

#include "peer_kernels.inc"
