/* compile.c — the public compile API: a compiler (one JIT + cache) turns (program, shape,
 * candidate) into an xir_kernel, and packs launch arguments for it.
 *
 * The cache key is the program's canonical text, the shape and the candidate name: compiling the
 * same thing twice returns the first kernel (the JIT has its own cache keyed by IR as well).
 * Below it sits the on-disk kernel cache (kcache.h): a miss in memory looks on disk before
 * lowering, and a fresh compile is written there. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "ir/program.h"
#include "lower/jit.h"
#include "lower/kcache.h"
#include "lower/kernel.h"
#include "lower/lower.h"
#include "lower/stream.h"
#include "util/util.h"
#include "xir.h"

struct xir_compiler {
  xir__jit *jit;
  pthread_mutex_t mu;
  struct xir_kernel *kernels;
  uint32_t width;
  xir__kcache kc;
};

xir_status xir_compiler_create(const xir_compiler_options *opt, xir_compiler **out, xir_diag *d) {
  if (!out) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_compiler_create: out is NULL");
  *out = NULL;
  xir_compiler *c = xir__calloc(1, sizeof *c);
  if (!c) return xir__err(d, XIR_ERR_NOMEM, "out of memory creating a compiler");
  xir__jit_options jo;
  memset(&jo, 0, sizeof jo);
  jo.pipeline = opt ? opt->pipeline : NULL;
  jo.cpu = opt ? opt->cpu : NULL;
  jo.features = opt ? opt->features : NULL;
  jo.codegen_level = -1; /* the JIT default (LLVMCodeGenLevelDefault) */
  if (opt && opt->codegen && strcmp(opt->codegen, "default") != 0) {
    static const char *levels[] = {"none", "less", "default", "aggressive"};
    jo.codegen_level = -2;
    for (int i = 0; i < 4; i++)
      if (!strcmp(opt->codegen, levels[i])) jo.codegen_level = i;
    if (jo.codegen_level < 0) {
      xir__free(c);
      return xir__err(d, XIR_ERR_INVALID_ARG,
                      "codegen level '%s' is not none, less, default or aggressive", opt->codegen);
    }
  }
  xir_status s = xir__kcache_open(&c->kc, opt ? opt->no_kernel_cache : 0,
                                  opt ? opt->kernel_cache_dir : NULL,
                                  opt ? opt->kernel_cache_max_bytes : 0, d);
  if (s) {
    xir__free(c);
    return s;
  }
  s = xir__jit_create(&jo, &c->jit, d);
  if (s) {
    xir__free(c);
    return s;
  }
  if (opt && opt->force_width) {
    if ((s = xir__jit_check_width(c->jit, opt->force_width, d))) {
      xir__jit_destroy(c->jit);
      xir__free(c);
      return s;
    }
  }
  pthread_mutex_init(&c->mu, NULL);
  c->width = (uint32_t)(opt && opt->force_width ? opt->force_width : xir__jit_max_width(c->jit));
  *out = c;
  return XIR_OK;
}

void xir_compiler_destroy(xir_compiler *c) {
  if (!c) return;
  for (struct xir_kernel *k = c->kernels; k;) {
    struct xir_kernel *n = k->next;
    if (k->base == k) {
      xir__free(k->key);
      xir__free(k->note);
      xir_program_free(k->prog);
    }
    xir__free(k);
    k = n;
  }
  xir__jit_destroy(c->jit);
  pthread_mutex_destroy(&c->mu);
  xir__free(c);
}

uint32_t xir_compiler_width(const xir_compiler *c) { return c ? c->width : 0; }
const char *xir_compiler_cpu(const xir_compiler *c) { return c ? xir__jit_cpu(c->jit) : ""; }
const char *xir_compiler_features(const xir_compiler *c) { return c ? xir__jit_features(c->jit) : ""; }
const char *xir_llvm_version(void) { return XIR_LLVM_VERSION; }
const char *xir_compiler_kernel_cache(const xir_compiler *c, const char **why) {
  if (why) *why = !c ? "no compiler" : c->kc.enabled ? "" : c->kc.why_off;
  return c && c->kc.enabled ? c->kc.dir : NULL;
}

/* The entry's symbol: "xir_" + the program name (characters outside [A-Za-z0-9_] become '_', at
 * most 48 of them) + "_" + the first 16 hex digits of the SHA-256 of the compile key (canonical
 * program text, shape, candidate). Unique per (program, shape, candidate), independent of the
 * grain and of the process: an AOT object can be linked next to others. */
static void entry_symbol(const char *prog, const char *jkey, char out[80]) {
  size_t n = 0;
  memcpy(out, "xir_", 4);
  n = 4;
  for (const char *c = prog ? prog : ""; *c && n < 4 + 48; c++) {
    char ch = *c;
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    out[n++] = ok ? ch : '_';
  }
  out[n++] = '_';
  memcpy(out + n, jkey, 16);
  out[n + 16] = 0;
}

/* The on-disk key of a compile: everything that determines the object bytes (kcache.h). */
static void disk_key(xir_compiler *cc, const xir_program *p, const xir_candidate *c,
                     const char *text, const char *shape, const char *name, const char *entry,
                     char out[65]) {
  char cand[256 + 64], lvl[16];
  int n = snprintf(cand, sizeof cand, "%s W=%u B=%u l=%u perm=", name, c->W, c->B, c->local);
  for (int i = 0; i < c->nperm && n > 0 && (size_t)n < sizeof cand - 4; i++)
    n += snprintf(cand + n, sizeof cand - (size_t)n, "%s%u", i ? "." : "", c->perm[i]);
  snprintf(lvl, sizeof lvl, "%d", xir__jit_codegen_level(cc->jit));
  (void)p;
  /* keyed by the IR (XIR_KERNEL_CACHE_KEY=ir): text is the lowered IR's SHA-256, which stands
   * for the build's lowering code and the program both */
  const char *parts[] = {cc->kc.by_ir ? "xir kernel cache 1 ir" : "xir kernel cache 1",
                         xir_version(), XIR_LLVM_VERSION,
                         cc->kc.by_ir ? "" : xir__kcache_build_id(), xir__jit_triple(cc->jit),
                         xir__jit_cpu(cc->jit),
                         xir__jit_features(cc->jit), xir__jit_pipeline(cc->jit), lvl,
                         entry, cand, xir__lower_env_key(),
                         shape, /* the compile-time dims (names and values), nothing else */
                         text};
  xir__kcache_key(parts, XIR_ARRAY_LEN(parts), out);
}

/* Looks dkey up in the disk cache and links a hit's object into the JIT (*art). 1 on a hit; 0
 * otherwise, with note saying why when the entry was there but not used. */
static int disk_load(xir_compiler *cc, const char *dkey, const char *jkey, const char *entry,
                     const xir__jit_artifact **art, char *note, size_t cap) {
  xir__kcache_entry e;
  if (xir__kcache_load(&cc->kc, dkey, &e, note, cap) != XIR__KC_HIT) return 0;
  xir_diag ld;
  int hit = xir__jit_add_object(cc->jit, jkey, entry, e.ir_text, e.ir_len, e.ir_sha256, e.obj,
                                e.obj_size, e.obj_sha256, art, &ld) == XIR_OK;
  if (!hit) {
    *art = NULL;
    snprintf(note, cap, "kernel cache entry not used (rebuilt): %s", ld.msg);
  }
  xir__kcache_entry_free(&e);
  return hit;
}

/* "C=768": the compile-time dims of a candidate, by name (the only dims the code depends on). */
static void fixed_dims_text(const xir_program *p, const xir_shape *s, uint32_t fixed, char *buf,
                            size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < p->ndims && o < cap; i++)
    if (fixed >> i & 1)
      o += (size_t)snprintf(buf + o, cap - o, "%s%s=%lld", o ? "," : "", p->dims[i],
                            (long long)s->dims[i]);
  if (!o) snprintf(buf, cap, "(none)");
}

static int same_shape(const xir_shape *a, const xir_shape *b) {
  if (a->ndims != b->ndims) return 0;
  for (int i = 0; i < a->ndims; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

/* Fills the per-shape fields of a kernel (view or base). */
static void kernel_fill(struct xir_kernel *k, const xir_program *p, const xir_shape *shape,
                        const xir_candidate *legal) {
  k->shape = *shape;
  k->cand = *legal;
  xir__arg_layout_make(p, legal->fixed_dims, &k->lay);
  xir__kernel_dense_prepare(k);
}

xir_status xir_compile(xir_compiler *cc, const xir_program *p, const xir_shape *shape,
                       const xir_candidate *cand, const xir_kernel **out, xir_diag *d) {
  if (out) *out = NULL;
  if (!cc || !p || !shape || !cand || !out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_compile: %s is NULL",
                    !cc ? "the compiler" : !p ? "the program" : !shape ? "the shape"
                    : !cand ? "the candidate" : "out");
  *out = NULL;
  xir_status s = xir_shape_check(p, shape, d);
  if (s) return s;
  if ((s = xir__jit_check_width(cc->jit, cand->W, d))) return s;
  /* Re-derive the candidate: legality is the bridge's, never the caller's. The caller may fix
   * more dims than the bridge requires, never fewer. */
  xir_candidate legal;
  if ((s = cand->attn_vec ? xir_candidate_make_attn(p, shape, cand->W, cand->attn_vec,
                                                    cand->attn_qb, cand->attn_hb, &legal, d)
                          : xir_candidate_make(p, shape, cand->W, cand->B, cand->local, cand->perm,
                                               &legal, d)))
    return s;
  uint32_t all = p->ndims >= 32 ? UINT32_MAX : (1u << p->ndims) - 1;
  legal.fixed_dims |= cand->fixed_dims & all;
  for (int i = 0; i < p->nparams; i++)
    if (xir_param_numel(p, i, shape) >= ((size_t)1 << 40))
      return xir__err(d, XIR_ERR_UNSUPPORTED, "buffer '%s' is too large", p->params[i].name);
  char *text = NULL;
  if ((s = xir_program_print(p, &text, d))) return s;
  char name[256], sh[512];
  xir_candidate_name(p, &legal, name, sizeof name);
  fixed_dims_text(p, shape, legal.fixed_dims, sh, sizeof sh);
  size_t klen = strlen(text) + strlen(name) + strlen(sh) + 8;
  char *key = xir__malloc(klen);
  if (!key) {
    xir__free(text);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  }
  snprintf(key, klen, "%s\n%s\n%s", text, sh, name);
  char jkey[65], entry[80];
  xir__jit_sha256_hex(key, strlen(key), jkey);
  entry_symbol(p->name, jkey, entry);
  char dkey[65] = "";
  if (cc->kc.enabled && !cc->kc.by_ir) disk_key(cc, p, &legal, text, sh, name, entry, dkey);
  pthread_mutex_lock(&cc->mu);
  struct xir_kernel *base = NULL;
  for (struct xir_kernel *k = cc->kernels; k && !base; k = k->next)
    if (k->base == k && strcmp(k->key, key) == 0) base = k;
  if (base) {
    /* the same code: this shape's kernel if it was asked for before, else a new view of it */
    xir__free(text);
    xir__free(key);
    struct xir_kernel *k = NULL;
    for (struct xir_kernel *v = cc->kernels; v && !k; v = v->next)
      if (v->base == base && same_shape(&v->shape, shape)) k = v;
    if (!k) {
      if (!(k = xir__calloc(1, sizeof *k))) {
        pthread_mutex_unlock(&cc->mu);
        return xir__err(d, XIR_ERR_NOMEM, "out of memory");
      }
      *k = *base;
      k->base = base;
      kernel_fill(k, p, shape, &legal);
      k->jit_ms = 0;
      k->next = cc->kernels;
      cc->kernels = k;
    }
    k->cached = 1;
    pthread_mutex_unlock(&cc->mu);
    *out = k;
    return XIR_OK;
  }
  double t0 = (xir__now_ns() / 1e6);
  struct xir_kernel *k = NULL;
  xir_program *copy = NULL;
  const xir__jit_artifact *art = NULL;
  int disk = cc->kc.enabled ? 1 : 0;
  char note[1600] = "";
  /* the program copy the kernel keeps for shape checks and messages */
  if ((s = xir_program_parse(text, strlen(text), p->file, &copy, d))) goto fail;
  if (disk && !cc->kc.by_ir && disk_load(cc, dkey, jkey, entry, &art, note, sizeof note)) disk = 2;
  xir__jit_module m = {0};
  if (!art) {
    /* only the compile-time dims reach the lowering: the others are 0 here and read from the
     * argument block by the code */
    xir_shape canon = *shape;
    for (int i = 0; i < p->ndims; i++)
      if (!(legal.fixed_dims >> i & 1)) canon.dims[i] = 0;
    if ((s = xir__jit_module_create(cc->jit, p->name, &m, d))) goto fail;
    xir__cvt_target cvt = {xir__jit_has_feature(cc->jit, "f16c"),
                           xir__jit_has_feature(cc->jit, "avx512bf16"),
                           xir__jit_has_feature(cc->jit, "fma"),
                           xir__jit_has_feature(cc->jit, "avx512f") &&
                               xir__jit_has_feature(cc->jit, "avx512vl"),
                           xir__jit_has_feature(cc->jit, "avx512dq"),
                           xir__cpu_math_prefetch_only(xir__jit_cpu(cc->jit)),
                           xir__cpu_slow_lane_cross(xir__jit_cpu(cc->jit))};
    if ((s = xir__lower_for(p, &canon, &legal, &cvt, m.mod, entry, d))) {
      xir__jit_module_dispose(&m);
      goto fail;
    }
    if (disk && cc->kc.by_ir) {
      char irh[65];
      if ((s = xir__jit_module_ir_sha256(&m, irh, d))) {
        xir__jit_module_dispose(&m);
        goto fail;
      }
      disk_key(cc, p, &legal, irh, sh, name, entry, dkey);
      if (disk_load(cc, dkey, jkey, entry, &art, note, sizeof note)) {
        disk = 2;
        xir__jit_module_dispose(&m);
      }
    }
  }
  if (!art) {
    int cached = 0;
    if ((s = xir__jit_add(cc->jit, &m, entry, jkey, &art, &cached, d))) goto fail;
    if (disk && !art->loaded) {
      char wnote[1600];
      if (xir__kcache_store(&cc->kc, dkey, art->ir_text, art->ir_len, art->ir_sha256, art->obj,
                            art->obj_size, art->obj_sha256, wnote, sizeof wnote) != 0) {
        size_t l = strlen(note);
        snprintf(note + l, sizeof note - l, "%s%.*s", l ? "; " : "", (int)(sizeof note - l),
                 wnote);
      }
    }
  }
  k = xir__calloc(1, sizeof *k);
  if (!k || !(k->note = xir__strdup(note))) {
    xir__free(k);
    s = xir__err(d, XIR_ERR_NOMEM, "out of memory");
    goto fail;
  }
  k->base = k;
  k->disk = disk;
  k->key = key;
  k->prog = copy;
  kernel_fill(k, p, shape, &legal);
  xir__alias_table(copy, k->alias_ok);
  memcpy(k->symbol, entry, sizeof k->symbol);
  k->art = art;
  k->jit_ms = (xir__now_ns() / 1e6) - t0;
  k->next = cc->kernels;
  cc->kernels = k;
  pthread_mutex_unlock(&cc->mu);
  xir__free(text);
  *out = k;
  return XIR_OK;
fail:
  pthread_mutex_unlock(&cc->mu);
  xir_program_free(copy);
  xir__free(text);
  xir__free(key);
  return s;
}

void xir_kernel_get_info(const xir_kernel *k, xir_kernel_info *info) {
  if (!info) return;
  if (!k) {
    memset(info, 0, sizeof *info);
    return;
  }
  info->ir_text = k->art->ir_text;
  info->ir_len = k->art->ir_len;
  info->obj = k->art->obj;
  info->obj_size = k->art->obj_size;
  info->ir_sha256 = k->art->ir_sha256;
  info->obj_sha256 = k->art->obj_sha256;
  info->jit_ms = k->jit_ms;
  info->cached = k->cached;
  info->from_disk = k->disk == 2;
  info->disk_cache = k->disk == 2 ? "hit" : k->disk == 1 ? "miss" : "off";
  info->cache_note = k->note;
  info->entry_symbol = k->symbol;
}
