/* session.c — the one-call API (xir_session.h): a compiler, a runtime, the plan options and a
 * cache of prepared kernels keyed by (program, shape), where programs are interned by the SHA-256
 * of their canonical text. Sits above plan, lower, runtime and tune (docs/architecture.md).
 *
 * Locking: one mutex guards the program list and the prepared table; it is released while
 * printing, parsing, planning, compiling and launching. Prepared kernels and programs are never
 * freed before the session, so a pointer handed out stays valid without a lock. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "session/choice.h"
#include "util/sha256.h"
#include "util/util.h"
#include "xir_session.h"

typedef struct sprog {
  xir_program *p;
  char hash[65];  /* SHA-256 of the canonical text */
  int builtin;    /* index of the built-in kernel, or -1 */
} sprog;

struct xir_prepared {
  const xir_session *owner;
  const xir_program *p;
  xir_shape shape;
  uint64_t key;
  xir_plan *plan;
  const xir_kernel *kernel;
  uint64_t blocks;
  size_t args_size;
  uint32_t grain, workers;
  xir__choice choice; /* pool or caller at each launch (session/choice.h) */
  xir__store_choice store; /* streaming or regular stores at each launch (session/choice.h) */
  int nparams;
  int nrequired; /* parameters before the trailing run of defaulted scalars */
  /* every launch is one task on the calling thread (not adaptive; one block, the whole launch
   * one grain, one worker, or a pool of one): launched without the choice's bookkeeping */
  int one_task;
  xir_prepared *next; /* hash chain */
};

/* Counters a launch bumps are sharded by thread: an atomic read-modify-write (lock xadd)
 * waits for the store buffer to drain — the kernel's own output stores — and cost 4 ns of a
 * 39 ns session launch (rmsnorm 1x64). The first SHARDS - 1 threads that count in the process
 * each own one shard in every session and bump it with a plain load and store (the only
 * writer: nothing is lost, and a reader's relaxed loads see each counter only grow); later
 * threads share the last shard with an atomic add. */
enum { SHARDS = 16 };

struct xir_session {
  pthread_mutex_t mu;
  xir_compiler *cc;
  xir_runtime *rt;
  xir_plan_options po;
  sprog *progs;
  size_t nprogs, cprogs;
  xir_prepared **buckets;
  size_t nbuckets, nprepared;
  uint64_t hits, misses, plans, compiles;
  uint64_t id;                /* unique in the process (g_session_ids): the memo's key */
  /* launches, and run calls the thread's memo answered (counted as hits): one pair of counters
   * per thread (count_shard), summed by xir_session_get_stats */
  struct {
    _Atomic uint64_t launches;
    _Atomic uint64_t memo_hits;
    unsigned char pad[48]; /* a cache line apart */
  } shard[SHARDS];
};

static _Atomic uint64_t g_session_ids = 1;

/* The run memo (xir_session_run / _run_program): each thread remembers its last few (session,
 * program or kernel name, shape text) -> prepared kernel, so that a repeated call skips the
 * name lookup, the shape parse, the hash lookup and their mutex. Sound because a session's
 * programs and prepared kernels live until it is destroyed, and session ids are never reused;
 * only programs the session owns are remembered by pointer (a caller's program may be freed
 * and its address reused). Names and shapes longer than the slots are not remembered. */
enum { MEMO_SLOTS = 4, MEMO_NAME = 64, MEMO_SHAPE = 160 };
typedef struct run_memo {
  uint64_t sid;                /* 0: empty */
  const xir_program *p;        /* by program (owned by the session), or NULL: by name */
  char name[MEMO_NAME];
  char shape[MEMO_SHAPE];
  const xir_prepared *k;
} run_memo;
static _Thread_local run_memo g_memo[MEMO_SLOTS];
static _Thread_local unsigned g_memo_next;

static const xir_prepared *memo_find(const xir_session *s, const xir_program *p, const char *name,
                                     const char *shape) {
  for (int i = 0; i < MEMO_SLOTS; i++) {
    const run_memo *m = &g_memo[i];
    if (m->sid == s->id && m->p == p && strcmp(m->shape, shape) == 0 &&
        (p || strcmp(m->name, name) == 0))
      return m->k;
  }
  return NULL;
}

static void memo_put(const xir_session *s, const xir_program *p, const char *name,
                     const char *shape, const xir_prepared *k) {
  if (strlen(shape) >= MEMO_SHAPE || (!p && strlen(name) >= MEMO_NAME)) return;
  run_memo *m = &g_memo[g_memo_next++ % MEMO_SLOTS];
  m->sid = s->id;
  m->p = p;
  snprintf(m->name, sizeof m->name, "%s", p ? "" : name);
  snprintf(m->shape, sizeof m->shape, "%s", shape);
  m->k = k;
}

static _Atomic unsigned g_shard_threads;
/* 0: not yet assigned; else shard + 1. initial-exec: an access is one %fs-relative load, where
 * libxir.so's default (general-dynamic) model called __tls_get_addr on every launch; four bytes
 * of the static TLS surplus glibc keeps for libraries loaded later (Python's dlopen). */
static _Thread_local unsigned g_shard __attribute__((tls_model("initial-exec")));

/* c += 1 for the calling thread's shard of a session counter (see SHARDS). */
static void count_shard(_Atomic uint64_t *c, unsigned shard) {
  if (shard + 1 < SHARDS)
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
  else
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static unsigned my_shard(void) {
  if (!g_shard) {
    unsigned t = atomic_fetch_add_explicit(&g_shard_threads, 1, memory_order_relaxed);
    g_shard = (t < SHARDS - 1 ? t : SHARDS - 1) + 1;
  }
  return g_shard - 1;
}

#define COUNT(s, field)                          \
  do {                                           \
    unsigned sh_ = my_shard();                   \
    count_shard(&(s)->shard[sh_].field, sh_);    \
  } while (0)

/* ---- creation ---- */

xir_status xir_session_create(const xir_session_options *opts, xir_session **out, xir_diag *d) {
  if (!out) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_session_create: out is NULL");
  *out = NULL;
  xir_session *s = xir__calloc(1, sizeof *s);
  if (!s) return xir__err(d, XIR_ERR_NOMEM, "out of memory (session)");
  if (pthread_mutex_init(&s->mu, NULL)) {
    xir__free(s);
    return xir__err(d, XIR_ERR_RUNTIME, "xir_session_create: pthread_mutex_init failed");
  }
  for (int i = 0; i < SHARDS; i++) {
    atomic_init(&s->shard[i].launches, 0);
    atomic_init(&s->shard[i].memo_hits, 0);
  }
  s->id = atomic_fetch_add(&g_session_ids, 1);
  xir_status st = xir_compiler_create(opts ? opts->compiler : NULL, &s->cc, d);
  if (st) goto fail;
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  if (opts && opts->workers) ro.workers = opts->workers;
  if ((st = xir_runtime_create(&ro, &s->rt, d))) goto fail;
  if (opts && opts->plan) s->po = *opts->plan;
  else xir_plan_options_default(&s->po);
  s->po.workers = xir_runtime_workers(s->rt);
  s->po.width = xir_compiler_width(s->cc);
  s->nbuckets = 64;
  s->buckets = xir__calloc(s->nbuckets, sizeof *s->buckets);
  if (!s->buckets) {
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory (session)");
    goto fail;
  }
  *out = s;
  return XIR_OK;
fail:
  xir_session_destroy(s);
  return st;
}

void xir_session_destroy(xir_session *s) {
  if (!s) return;
  for (size_t b = 0; b < s->nbuckets; b++) {
    for (xir_prepared *k = s->buckets[b], *next; k; k = next) {
      next = k->next;
      xir_plan_free(k->plan);
      xir__free(k);
    }
  }
  xir__free(s->buckets);
  for (size_t i = 0; i < s->nprogs; i++) xir_program_free(s->progs[i].p);
  xir__free(s->progs);
  xir_runtime_destroy(s->rt);
  xir_compiler_destroy(s->cc); /* frees every kernel */
  pthread_mutex_destroy(&s->mu);
  xir__free(s);
}

uint32_t xir_session_workers(const xir_session *s) { return s ? xir_runtime_workers(s->rt) : 0; }

void xir_session_get_stats(const xir_session *s, xir_session_stats *out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  if (!s) return;
  xir_session *m = (xir_session *)s; /* the mutex only */
  pthread_mutex_lock(&m->mu);
  uint64_t memo_hits = 0, launches = 0;
  for (int i = 0; i < SHARDS; i++) {
    memo_hits += atomic_load_explicit(&m->shard[i].memo_hits, memory_order_relaxed);
    launches += atomic_load_explicit(&m->shard[i].launches, memory_order_relaxed);
  }
  out->hits = s->hits + memo_hits;
  out->misses = s->misses;
  out->plans = s->plans;
  out->compiles = s->compiles;
  out->programs = s->nprogs;
  out->prepared = s->nprepared;
  pthread_mutex_unlock(&m->mu);
  out->launches = launches;
  out->workers = xir_runtime_workers(s->rt);
}

/* ---- programs ---- */

/* The session's program with this hash or built-in index (caller holds the lock), or NULL. */
static const xir_program *find_prog(const xir_session *s, const char *hash, int builtin) {
  for (size_t i = 0; i < s->nprogs; i++) {
    if (builtin >= 0 ? s->progs[i].builtin == builtin : hash && strcmp(s->progs[i].hash, hash) == 0)
      return s->progs[i].p;
  }
  return NULL;
}

static int owns_prog(xir_session *s, const xir_program *p) {
  pthread_mutex_lock(&s->mu);
  int found = 0;
  for (size_t i = 0; i < s->nprogs && !found; i++) found = s->progs[i].p == p;
  pthread_mutex_unlock(&s->mu);
  return found;
}

/* Interns program `own` (consumed): the session keeps it, or an equal one it already has. */
static xir_status intern(xir_session *s, xir_program *own, int builtin, const xir_program **out,
                         xir_diag *d) {
  char *text = NULL;
  xir_status st = xir_program_print(own, &text, d);
  if (st) {
    xir_program_free(own);
    return st;
  }
  char hash[65];
  xir__sha256_hex(text, strlen(text), hash);
  xir_free(text);
  pthread_mutex_lock(&s->mu);
  const xir_program *have = find_prog(s, hash, -1);
  if (have) {
    for (size_t i = 0; i < s->nprogs; i++) {
      if (s->progs[i].p == have && s->progs[i].builtin < 0 && builtin >= 0)
        s->progs[i].builtin = builtin;
    }
    pthread_mutex_unlock(&s->mu);
    xir_program_free(own);
    *out = have;
    return XIR_OK;
  }
  if (xir__grow((void **)&s->progs, &s->cprogs, s->nprogs + 1, sizeof *s->progs)) {
    pthread_mutex_unlock(&s->mu);
    xir_program_free(own);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory (session programs)");
  }
  sprog *e = &s->progs[s->nprogs++];
  e->p = own;
  memcpy(e->hash, hash, sizeof hash);
  e->builtin = builtin;
  pthread_mutex_unlock(&s->mu);
  *out = own;
  return XIR_OK;
}

xir_status xir_session_program(xir_session *s, const char *name, const xir_program **out,
                               xir_diag *d) {
  if (!s || !name || !out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_session_program: %s is NULL",
                    !s ? "the session" : !name ? "the name" : "out");
  *out = NULL;
  int idx = xir_kernel_find(name);
  if (idx >= 0) {
    pthread_mutex_lock(&s->mu);
    *out = find_prog(s, NULL, idx);
    pthread_mutex_unlock(&s->mu);
    if (*out) return XIR_OK;
  }
  xir_program *p;
  xir_status st = xir_kernel_load(name, &p, d); /* XIR_ERR_NOT_FOUND lists the kernels */
  if (st) return st;
  return intern(s, p, idx, out, d);
}

xir_status xir_session_parse(xir_session *s, const char *text, size_t len, const char *filename,
                             const xir_program **out, xir_diag *d) {
  if (!s || !text || !out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_session_parse: %s is NULL",
                    !s ? "the session" : !text ? "the text" : "out");
  *out = NULL;
  xir_program *p;
  xir_status st = xir_program_parse(text, len, filename, &p, d);
  if (st) return st;
  return intern(s, p, -1, out, d);
}

xir_status xir_session_retype(xir_session *s, const xir_program *p, const char *spec,
                              const xir_program **out, xir_diag *d) {
  if (!s || !p || !spec || !out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_session_retype: %s is NULL",
                    !s ? "the session" : !p ? "the program" : !spec ? "the spec" : "out");
  *out = NULL;
  xir_program *copy;
  xir_status st = xir_program_retype(p, spec, &copy, d);
  if (st) return st;
  return intern(s, copy, -1, out, d);
}

/* ---- prepared kernels ---- */

static uint64_t shape_key(const xir_program *p, const xir_shape *shape) {
  uint64_t h = 1469598103934665603ull;
  uintptr_t pv = (uintptr_t)p;
  const unsigned char *b = (const unsigned char *)&pv;
  for (size_t i = 0; i < sizeof pv; i++) h = (h ^ b[i]) * 1099511628211ull;
  for (int i = 0; i < shape->ndims; i++) {
    uint64_t v = (uint64_t)shape->dims[i];
    for (int j = 0; j < 8; j++) h = (h ^ ((v >> (8 * j)) & 0xff)) * 1099511628211ull;
  }
  return h;
}

static int same_shape(const xir_shape *a, const xir_shape *b) {
  if (a->ndims != b->ndims) return 0;
  for (int i = 0; i < a->ndims; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

/* Caller holds the lock. */
static xir_prepared *lookup(const xir_session *s, const xir_program *p, const xir_shape *shape,
                            uint64_t key) {
  for (xir_prepared *k = s->buckets[key & (s->nbuckets - 1)]; k; k = k->next)
    if (k->key == key && k->p == p && same_shape(&k->shape, shape)) return k;
  return NULL;
}

/* Caller holds the lock. Inserting never fails: a table that cannot grow gets longer chains. */
static void insert(xir_session *s, xir_prepared *k) {
  if (s->nprepared + 1 > s->nbuckets) {
    size_t nb = s->nbuckets * 2;
    xir_prepared **nbk = xir__calloc(nb, sizeof *nbk);
    if (nbk) {
      for (size_t b = 0; b < s->nbuckets; b++) {
        for (xir_prepared *e = s->buckets[b], *next; e; e = next) {
          next = e->next;
          e->next = nbk[e->key & (nb - 1)];
          nbk[e->key & (nb - 1)] = e;
        }
      }
      xir__free(s->buckets);
      s->buckets = nbk;
      s->nbuckets = nb;
    }
  }
  xir_prepared **head = &s->buckets[k->key & (s->nbuckets - 1)];
  k->next = *head;
  *head = k;
  s->nprepared++;
}

/* Plans and compiles p (a session program) for shape, without the lock. */
static xir_status make_prepared(xir_session *s, const xir_program *p, const xir_shape *shape,
                                uint64_t key, xir_prepared **out, xir_diag *d) {
  xir_prepared *k = xir__calloc(1, sizeof *k);
  if (!k) return xir__err(d, XIR_ERR_NOMEM, "out of memory (prepared kernel)");
  k->owner = s;
  k->p = p;
  k->shape = *shape;
  k->key = key;
  xir_status st = xir_plan_make(p, shape, &s->po, &k->plan, d);
  if (!st) st = xir_compile(s->cc, p, shape, &k->plan->entries[0].cand, &k->kernel, d);
  pthread_mutex_lock(&s->mu);
  s->plans++;
  if (k->plan) s->compiles++;
  pthread_mutex_unlock(&s->mu);
  if (st) {
    xir_plan_free(k->plan);
    xir__free(k);
    return st;
  }
  k->blocks = xir_kernel_blocks(k->kernel);
  k->args_size = xir_kernel_args_size(k->kernel);
  k->grain = k->plan->entries[0].work.grain;
  k->workers = k->plan->entries[0].work.workers;
  /* the calibrated service model's costs are ns: only then choose at launch time */
  xir__choice_init(&k->choice, k->plan,
                   s->po.coefficients && !s->po.policy &&
                       s->po.coefficients == xir_service_coefficients());
  xir__store_choice_init(&k->store, k->kernel, &k->choice);
  k->one_task = xir__choice_one_task(&k->choice, k->blocks, k->workers, xir_runtime_workers(s->rt));
  k->nparams = xir_program_num_params(p);
  k->nrequired = k->nparams;
  for (int i = k->nparams - 1; i >= 0; i--) {
    xir_param_info pi;
    if (xir_program_param(p, i, &pi) || pi.kind != XIR_PARAM_SCALAR || !pi.has_default) break;
    k->nrequired = i;
  }
  *out = k;
  return XIR_OK;
}

xir_status xir_session_prepare(xir_session *s, const xir_program *p, const xir_shape *shape,
                               const xir_prepared **out, xir_diag *d) {
  if (!s || !p || !shape || !out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_session_prepare: %s is NULL",
                    !s ? "the session" : !p ? "the program" : !shape ? "the shape" : "out");
  *out = NULL;
  if (!owns_prog(s, p)) { /* intern a copy: the caller keeps p */
    char *text = NULL;
    xir_status st = xir_program_print(p, &text, d);
    if (st) return st;
    xir_program *copy;
    st = xir_program_parse(text, strlen(text), xir_program_name(p), &copy, d);
    xir_free(text);
    if (st) return st;
    const xir_program *mine;
    if ((st = intern(s, copy, -1, &mine, d))) return st;
    p = mine;
  }
  uint64_t key = shape_key(p, shape);
  pthread_mutex_lock(&s->mu);
  xir_prepared *k = lookup(s, p, shape, key);
  if (k) s->hits++;
  pthread_mutex_unlock(&s->mu);
  if (k) {
    *out = k;
    return XIR_OK;
  }
  xir_status st = xir_shape_check(p, shape, d);
  if (st) return st;
  if ((st = make_prepared(s, p, shape, key, &k, d))) return st;
  pthread_mutex_lock(&s->mu);
  xir_prepared *other = lookup(s, p, shape, key); /* another thread may have won the race */
  if (other) {
    s->hits++;
  } else {
    s->misses++;
    insert(s, k);
  }
  pthread_mutex_unlock(&s->mu);
  if (other) { /* the kernel itself is the compiler's; only the plan is ours */
    xir_plan_free(k->plan);
    xir__free(k);
    k = other;
  }
  *out = k;
  return XIR_OK;
}

/* ---- launching ---- */

/* "x, w, y, eps = 1e-05" into buf. */
static const char *param_list(const xir_program *p, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < xir_program_num_params(p) && len < cap; i++) {
    xir_param_info pi;
    if (xir_program_param(p, i, &pi)) break;
    int n = pi.kind == XIR_PARAM_SCALAR && pi.has_default
                ? snprintf(buf + len, cap - len, "%s%s = %g", i ? ", " : "", pi.name,
                           pi.default_value)
                : snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", pi.name);
    if (n < 0) break;
    len += (size_t)n;
  }
  return buf;
}

xir_status xir_session_launch(xir_session *s, const xir_prepared *k, const xir_arg *args,
                              int nargs, xir_diag *d) {
  if (!s || !k || (!args && nargs > 0))
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_session_launch: %s is NULL",
                    !s ? "the session" : !k ? "the prepared kernel" : "args");
  if (k->owner != s)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "xir_session_launch: the prepared kernel belongs to another session");
  if (nargs < k->nrequired || nargs > k->nparams) {
    char list[512], count[48];
    if (k->nrequired == k->nparams) snprintf(count, sizeof count, "%d", k->nparams);
    else snprintf(count, sizeof count, "%d to %d", k->nrequired, k->nparams);
    return xir__err(d, XIR_ERR_INVALID_ARG, "%s takes %s argument%s (%s), got %d",
                    xir_program_name(k->p), count, k->nparams == 1 ? "" : "s",
                    param_list(k->p, list, sizeof list), nargs);
  }
  _Alignas(16) unsigned char local[512];
  unsigned char *slots = local;
  if (k->args_size > sizeof local && !(slots = xir__malloc(k->args_size)))
    return xir__err(d, XIR_ERR_NOMEM, "out of memory (argument slots)");
  xir_status st = xir__choice_pack_launch((xir__choice *)&k->choice, (xir__store_choice *)&k->store,
                                          s->rt, k->kernel, args, nargs, k->nparams, slots,
                                          k->workers, k->one_task, d);
  if (!st) COUNT(s, launches);
  if (slots != local) xir__free(slots);
  return st;
}

static xir_status prepare_named(xir_session *s, const xir_program *p, const char *shape,
                                const xir_prepared **k, xir_diag *d) {
  if (!shape) return xir__err(d, XIR_ERR_INVALID_ARG, "the shape is NULL");
  xir_shape sh;
  xir_status st = xir_shape_parse(p, shape, &sh, d);
  if (st) return st;
  return xir_session_prepare(s, p, &sh, k, d);
}

xir_status xir_session_run_program(xir_session *s, const xir_program *p, const char *shape,
                                   const xir_arg *args, int nargs, xir_diag *d) {
  if (!s || !p)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_session_run_program: %s is NULL",
                    !s ? "the session" : "the program");
  const xir_prepared *k = shape ? memo_find(s, p, NULL, shape) : NULL;
  if (k) {
    COUNT(s, memo_hits);
    return xir_session_launch(s, k, args, nargs, d);
  }
  xir_status st = prepare_named(s, p, shape, &k, d);
  if (st) return st;
  if (k->p == p) memo_put(s, p, NULL, shape, k); /* p is the session's own */
  return xir_session_launch(s, k, args, nargs, d);
}

xir_status xir_session_run(xir_session *s, const char *kernel, const char *shape,
                           const xir_arg *args, int nargs, xir_diag *d) {
  const xir_prepared *k = s && kernel && shape ? memo_find(s, NULL, kernel, shape) : NULL;
  if (k) {
    COUNT(s, memo_hits);
    return xir_session_launch(s, k, args, nargs, d);
  }
  const xir_program *p;
  xir_status st = xir_session_program(s, kernel, &p, d);
  if (st) return st;
  if ((st = prepare_named(s, p, shape, &k, d))) return st;
  memo_put(s, NULL, kernel, shape, k);
  return xir_session_launch(s, k, args, nargs, d);
}

xir_status xir_session_run_named(xir_session *s, const char *kernel, const char *shape,
                                 const xir_named_arg *args, int nargs, xir_diag *d) {
  const xir_program *p;
  xir_status st = xir_session_program(s, kernel, &p, d);
  if (st) return st;
  if (nargs < 0 || (nargs > 0 && !args))
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_session_run_named: args is NULL");
  int np = xir_program_num_params(p);
  xir_arg full[XIR_MAX_PARAMS];
  int given[XIR_MAX_PARAMS] = {0};
  char list[512];
  for (int i = 0; i < nargs; i++) {
    int q = args[i].name ? xir_program_find_param(p, args[i].name) : -1;
    if (q < 0)
      return xir__err(d, XIR_ERR_NOT_FOUND, "%s has no parameter '%s' (parameters: %s)", kernel,
                      args[i].name ? args[i].name : "(NULL)", param_list(p, list, sizeof list));
    if (given[q])
      return xir__err(d, XIR_ERR_INVALID_ARG, "%s: parameter '%s' given twice", kernel,
                      args[i].name);
    given[q] = 1;
    full[q] = args[i].arg;
  }
  for (int q = 0; q < np; q++) {
    if (given[q]) continue;
    xir_param_info pi;
    if ((st = xir_program_param(p, q, &pi))) return st;
    if (pi.kind != XIR_PARAM_SCALAR || !pi.has_default)
      return xir__err(d, XIR_ERR_INVALID_ARG, "%s: parameter '%s' is missing (parameters: %s)",
                      kernel, pi.name, param_list(p, list, sizeof list));
    full[q] = (xir_arg){.use_default = 1};
  }
  return xir_session_run_program(s, p, shape, full, np, d);
}

/* ---- explanations ---- */

typedef struct sbuf {
  char *buf;
  size_t len, cap;
  int failed;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->failed) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || xir__grow((void **)&b->buf, &b->cap, b->len + (size_t)n + 1, 1)) {
    b->failed = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

static void grain_text(uint32_t g, char *buf, size_t cap) {
  if (g == UINT32_MAX) snprintf(buf, cap, "max");
  else snprintf(buf, cap, "%u", g);
}

xir_status xir_prepared_explain(const xir_prepared *k, char **text, xir_diag *d) {
  if (!k || !text)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_prepared_explain: %s is NULL",
                    !k ? "the prepared kernel" : "text");
  *text = NULL;
  const xir_plan *pl = k->plan;
  const xir_program *p = k->p;
  sbuf b = {0};
  char shape[512], name[160], g[24];
  xir_shape_format(p, &k->shape, shape, sizeof shape);
  xir_candidate_name(p, &pl->entries[0].cand, name, sizeof name);
  grain_text(pl->entries[0].work.grain, g, sizeof g);
  sb_printf(&b, "plan for %s %s (%u workers): %s, G=%s (%s), total cost %.6g; %zu candidates x "
            "grains ranked, %zu not legal\n",
            xir_program_name(p), shape, k->workers, name, g,
            xir_impl_kind_name(pl->entries[0].work.kind), pl->entries[0].cost.total, pl->count,
            pl->nrejected);
  if (k->choice.adaptive) {
    char gp[24], gc[24];
    grain_text(k->choice.grain[0], gp, sizeof gp);
    grain_text(k->choice.grain[1], gc, sizeof gc);
    sb_printf(&b, "at launch time: the pool (G=%s, measured %.4g ns per launch so far) or the "
              "calling thread (G=%s, %.4g ns), whichever measures faster (-1: not measured yet); "
              "the other explored %llu launches in %llu (the last exploration took %.4g ns)\n",
              gp, xir__choice_average(&k->choice, 0), gc, xir__choice_average(&k->choice, 1),
              (unsigned long long)xir__choice_run(&k->choice),
              (unsigned long long)xir__choice_period(&k->choice), xir__choice_run_cost(&k->choice));
  }
  if (k->store.arms.adaptive) {
    /* by (bits >> 1) & 3: XIR__ARGS_STREAM alone streams the rows that start aligned */
    static const char *const mode[4] = {"regular", "non-temporal (aligned rows)", "regular",
                                         "non-temporal"};
    const xir__choice *a = &k->store.arms;
    sb_printf(&b, "stores at launch time (the footprint is near the last-level cache): %s (the "
              "rule's; measured %.4g ns per launch so far) or %s (%.4g ns), whichever measures "
              "faster (-1: not measured yet); the other explored %llu launches in %llu\n",
              mode[(k->store.bits[0] >> 1) & 3], xir__choice_average(a, 0),
              mode[(k->store.bits[1] >> 1) & 3], xir__choice_average(a, 1),
              (unsigned long long)xir__choice_run(a), (unsigned long long)xir__choice_period(a));
  }
  sb_printf(&b, "%4s %-28s %4s %-12s %7s %6s %6s %3s %7s", "rank", "candidate", "G", "impl", "Q",
            "L", "C", "h", "critQ");
  for (int t = 0; t < XIR_TERM_COUNT; t++) sb_printf(&b, " %10s", xir_cost_term_name(t));
  sb_printf(&b, " %12s\n", "total");
  for (size_t i = 0; i < pl->count; i++) {
    const xir_plan_entry *e = &pl->entries[i];
    xir_candidate_name(p, &e->cand, name, sizeof name);
    grain_text(e->work.grain, g, sizeof g);
    sb_printf(&b, "%4zu %-28s %4s %-12s %7llu %6llu %6llu %3u %7llu", i + 1, name, g,
              xir_impl_kind_name(e->work.kind), (unsigned long long)e->work.packets,
              (unsigned long long)e->work.blocks, (unsigned long long)e->work.tasks,
              e->work.active, (unsigned long long)e->work.critical_packets);
    for (int t = 0; t < XIR_TERM_COUNT; t++) sb_printf(&b, " %10.4g", e->cost.term[t]);
    sb_printf(&b, " %12.6g\n", e->cost.total);
  }
  if (b.failed) {
    xir__free(b.buf);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory (explanation)");
  }
  *text = b.buf;
  return XIR_OK;
}

xir_status xir_session_explain(xir_session *s, const char *kernel, const char *shape,
                               char **text, xir_diag *d) {
  if (text) *text = NULL;
  if (!text) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_session_explain: text is NULL");
  const xir_program *p;
  const xir_prepared *k;
  xir_status st = xir_session_program(s, kernel, &p, d);
  if (!st) st = prepare_named(s, p, shape, &k, d);
  return st ? st : xir_prepared_explain(k, text, d);
}

/* ---- accessors ---- */

const xir_program *xir_prepared_program(const xir_prepared *k) { return k ? k->p : NULL; }
const xir_shape *xir_prepared_shape(const xir_prepared *k) { return k ? &k->shape : NULL; }
const xir_plan *xir_prepared_plan(const xir_prepared *k) { return k ? k->plan : NULL; }
const xir_kernel *xir_prepared_kernel(const xir_prepared *k) { return k ? k->kernel : NULL; }
uint32_t xir_prepared_grain(const xir_prepared *k) { return k ? k->grain : 0; }
uint32_t xir_prepared_workers(const xir_prepared *k) { return k ? k->workers : 0; }
