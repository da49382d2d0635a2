/* xir_bridge.h — the bridge: legal mapping candidates of a program and shape onto SIMD lanes.
 *
 *   program + shape + W ──► candidates (perm × B × ℓ), each with its implementation kind and counts
 *
 * Legality is decided here only; the bridge knows nothing of cost (xir_plan.h scores candidates)
 * or of code generation (xir_compile.h compiles them). */
#ifndef XIR_BRIDGE_H
#define XIR_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include "xir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a candidate is implemented (the cost depends on it). */
typedef enum xir_impl_kind {
  XIR_IMPL_DIRECT = 1,      /* ℓ ≤ W: straight-line per packet, exchanges inside registers */
  XIR_IMPL_MULTI_PACKET = 2 /* ℓ > W: a root program spans ℓ/W packets; partials are combined
                               across the packets in a fixed tree, then inside the packet */
} xir_impl_kind;

/* One legal way to map a program onto SIMD lanes. */
typedef struct xir_candidate {
  uint32_t W;                 /* SIMD width in f32 lanes: 1, 2, 4, 8, 16 */
  uint32_t B;                 /* lanes per block, a multiple of W */
  uint32_t local;             /* ℓ: lanes per root program (1 = whole-program mapping) */
  int nperm;
  uint8_t perm[XIR_MAX_ROOT]; /* root-axis order, outermost first (last = fastest) */
  /* Implementation, as reported by the bridge for this shape: */
  xir_impl_kind kind;
  int full_packet_path;       /* a mask-free path exists for full packets */
  int ragged_packets;         /* some packet has inactive lanes (masked path used) */
  int ragged_inner;           /* the inner extent is not a multiple of ℓ (masked tail chunk) */
  int inner_dim;              /* the distributed inner axis (a dim index), -1 when ℓ = 1 only */
  /* Counts for this shape: */
  uint64_t root_programs;     /* P */
  uint64_t blocks;            /* L = ceil(P·ℓ / B) */
  uint64_t packets;           /* Q = ceil(P·ℓ / W) */
  /* Compile-time dims: bit i set = dim i is a constant of the compiled code; every other dim is
   * a launch argument, so one kernel serves every value of it (xir_kernel_pack_launch). The
   * bridge sets the dims the code needs or that pay to specialize (docs/lowering.md, "Launch-time
   * dims"): the shared inner axis (ℓ > 1), the innermost dim of every buffer (the row length),
   * dims read by index computations or hoisted tiles, and tile axes beyond
   * XIR_RUNTIME_TILE_MAX. A caller of xir_compile may set more bits (all of them: a kernel for
   * exactly one shape), never fewer. */
  uint32_t fixed_dims;
  /* The attention mapping (docs/lowering.md, "The attention mapping"); attn_vec = 0 for every
   * other candidate. A block is one tile of attn_hb query heads (that share one K/V head) ×
   * attn_qb query rows; B = W, ℓ = 1, blocks = packets = the tile count, and perm is the tile
   * order (batch, head block, query block: the order of the root axes in q's indices). */
  uint32_t attn_vec;          /* XIR_ATTN_VEC_Q or XIR_ATTN_VEC_D, 0 = not this mapping */
  uint32_t attn_qb;           /* query rows per tile */
  uint32_t attn_hb;           /* query heads per tile: divides HQ/HKV */
} xir_candidate;

/* How the attention mapping vectorizes q·kᵀ (p·v is always vectorized along DV). */
enum {
  XIR_ATTN_VEC_Q = 1, /* "q": the lanes are the tile's query rows; each k element is broadcast */
  XIR_ATTN_VEC_D = 2  /* "d": along D, one vector per (row, key), summed across lanes in a tree */
};

/* The largest value a launch-time dim that is a tile axis may take (it sizes stack buffers of
 * the kernel, e.g. attention's K: the score row and its exponentials); a larger value is made a
 * compile-time dim by the bridge. */
enum { XIR_RUNTIME_TILE_MAX = 16384 };

/* The largest value candidate `c` serves for dim `dim` at launch: XIR_RUNTIME_TILE_MAX for a
 * launch-time dim that is a tile axis, else 2^31 - 1 (a compile-time dim must equal the value it
 * was compiled for). 0 for a bad argument. */
int64_t xir_candidate_dim_max(const xir_program *p, const xir_candidate *c, int dim);

/* Enumerates every legal candidate for W, in a deterministic order (perms in lexicographic
 * order × B ∈ {W, 2W, 4W, 8W} × ℓ ∈ {1, 2, 4, …, B}, where ℓ > 1 only if the body's cross-lane
 * exchanges are implemented: every tile is 1-D over one inner axis), then, for the attention
 * chain, the attention mapping's tiles (vec q, d × hb × qb ascending; xir_candidate_make_attn).
 * *out is freed with xir_free. */
xir_status xir_candidates(const xir_program *p, const xir_shape *shape, uint32_t W,
                          xir_candidate **out, size_t *count, xir_diag *d);

/* Why a (perm, B, ℓ) is or is not legal; XIR_OK fills *c. The message says which rule fails. */
xir_status xir_candidate_make(const xir_program *p, const xir_shape *shape, uint32_t W,
                              uint32_t B, uint32_t local, const uint8_t *perm,
                              xir_candidate *c, xir_diag *d);

/* The attention mapping: a tile of hb query heads × qb query rows per block, vectorized as vec
 * says (XIR_ATTN_VEC_Q or _D). Legal when the program is the attention chain (docs/lowering.md),
 * hb divides HQ/HKV (a power of two, or HQ/HKV itself), qb is a power of two at most 64, and the
 * tile's hb·qb rows fit 2 packets (vec q) or one packet (vec d). The message says which rule
 * fails. */
xir_status xir_candidate_make_attn(const xir_program *p, const xir_shape *shape, uint32_t W,
                                   uint32_t vec, uint32_t qb, uint32_t hb, xir_candidate *c,
                                   xir_diag *d);

/* The stable name of a candidate: "perm=r,l=8,B=32,W=16" (perm axes joined by '.'); the attention
 * mapping appends ",vec=q,qb=8,hb=4". */
char *xir_candidate_name(const xir_program *p, const xir_candidate *c, char *buf, size_t cap);

/* Parses a candidate name and checks that it is legal for the program, shape and W. */
xir_status xir_candidate_parse(const xir_program *p, const xir_shape *shape, const char *name,
                               uint32_t W, xir_candidate *c, xir_diag *d);

/* "direct" / "multi-packet". */
const char *xir_impl_kind_name(xir_impl_kind k);

#ifdef __cplusplus
}
#endif
#endif
