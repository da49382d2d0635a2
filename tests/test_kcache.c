/* test_kcache.c — the on-disk kernel cache (docs/cache.md): a miss then a hit across compiler
 * instances with identical object bytes, IR and outputs; damaged and foreign entries are never
 * trusted and are rebuilt; every part of the key changes the entry; LRU eviction under a cap;
 * the disabled modes write nothing; concurrent writers (threads and processes) never leave a
 * damaged entry. Every test uses its own temporary cache folder. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "check/check.h"
#include "lower/jit.h"
#include "xir_compile.h"

static void die(const xir_diag *d) {
  char b[2048];
  fail_msg("%s", xir_diag_format(d, b, sizeof b));
}

/* ---- folders and files ---- */

static char *make_tmp_dir(void) {
  char *t = malloc(64);
  snprintf(t, 64, "/tmp/xir_kcache_XXXXXX");
  assert_non_null(mkdtemp(t));
  return t;
}

static void rm_rf(const char *path) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  assert_int_equal(system(cmd), 0);
}

/* The names of the entries (*.xk) in dir, sorted; returns their count. */
static int list_entries(const char *dir, char names[][80], int max) {
  DIR *dp = opendir(dir);
  if (!dp) return 0;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(dp)) != NULL) {
    size_t l = strlen(de->d_name);
    if (l > 3 && !strcmp(de->d_name + l - 3, ".xk") && n < max)
      snprintf(names[n++], 80, "%s", de->d_name);
  }
  closedir(dp);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (strcmp(names[j], names[i]) < 0) {
        char t[80];
        memcpy(t, names[i], 80);
        memcpy(names[i], names[j], 80);
        memcpy(names[j], t, 80);
      }
  return n;
}

/* Files in dir other than "." and "..", entries or not. */
static int count_files(const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp) return 0;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(dp)) != NULL)
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
  closedir(dp);
  return n;
}

static unsigned char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)sz + 1);
  assert_int_equal(fread(b, 1, (size_t)sz, f), (size_t)sz);
  fclose(f);
  *n = (size_t)sz;
  return b;
}

static void write_file(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static off_t file_size(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  return st.st_size;
}

/* ---- compiling ---- */

typedef struct job {
  const char *kernel, *shape;
  uint32_t B, local;         /* 0 = W */
  const char *pipeline, *codegen;
  uint32_t width;
} job;

static xir_compiler *new_compiler(const char *dir, const job *j, uint64_t cap, int off) {
  xir_compiler_options o = {.force_width = j ? j->width : 0,
                            .pipeline = j ? j->pipeline : NULL,
                            .codegen = j ? j->codegen : NULL,
                            .no_kernel_cache = off,
                            .kernel_cache_dir = dir,
                            .kernel_cache_max_bytes = cap};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&o, &cc, &d)) die(&d);
  return cc;
}

/* Compiles j with cc; *p receives the program (the caller frees it). */
static const xir_kernel *compile_job(xir_compiler *cc, const job *j, xir_program **pp,
                                     xir_kernel_info *info) {
  xir_program *p;
  xir_diag d;
  xir_shape s;
  if (xir_kernel_load(j->kernel, &p, &d) || xir_shape_parse(p, j->shape, &s, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  uint8_t perm[XIR_MAX_ROOT];
  for (int k = 0; k < xir_program_num_root(p); k++) perm[k] = (uint8_t)k;
  xir_candidate c;
  if (xir_candidate_make(p, &s, W, j->B ? j->B : W, j->local ? j->local : W, perm, &c, &d))
    die(&d);
  const xir_kernel *k;
  if (xir_compile(cc, p, &s, &c, &k, &d)) die(&d);
  xir_kernel_get_info(k, info);
  if (pp) *pp = p;
  else xir_program_free(p);
  return k;
}

/* Runs k on seeded inputs; checks the oracle and returns a copy of every output's bytes. */
static float *run_kernel(const xir_kernel *k, const job *j, size_t *bytes) {
  xir_program *p;
  xir_diag d;
  xir_shape s;
  if (xir_kernel_load(j->kernel, &p, &d) || xir_shape_parse(p, j->shape, &s, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &s, 7, &d) || xir__case_oracle(&c, &d)) die(&d);
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  if (xir_kernel_pack_args(k, c.args, slots, &d)) die(&d);
  assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
  assert_true(xir__case_sentinels_ok(&c));
  size_t total = 0;
  for (int i = 0; i < xir_program_num_params(p); i++)
    if (c.ref[i]) {
      xir_compare cmp = xir__case_compare(&c, i, xir__kernel_tolerance(j->kernel));
      if (!cmp.pass) fail_msg("%s %s: output %d does not match the oracle", j->kernel, j->shape, i);
      total += c.numel[i] * sizeof(float);
    }
  float *out = malloc(total), *q = out;
  for (int i = 0; i < xir_program_num_params(p); i++)
    if (c.ref[i]) {
      memcpy(q, c.data[i], c.numel[i] * sizeof(float));
      q += c.numel[i];
    }
  *bytes = total;
  xir__case_free(&c);
  xir_program_free(p);
  return out;
}

static void assert_same_code(const xir_kernel_info *a, const xir_kernel_info *b) {
  assert_int_equal(a->obj_size, b->obj_size);
  assert_memory_equal(a->obj, b->obj, a->obj_size);
  assert_int_equal(a->ir_len, b->ir_len);
  assert_memory_equal(a->ir_text, b->ir_text, a->ir_len);
  assert_string_equal(a->ir_sha256, b->ir_sha256);
  assert_string_equal(a->obj_sha256, b->obj_sha256);
}

/* The hashes a kernel reports are the hashes of the bytes it reports. */
static void assert_truthful(const xir_kernel_info *i) {
  char h[65];
  xir__jit_sha256_hex(i->obj, i->obj_size, h);
  assert_string_equal(h, i->obj_sha256);
  xir__jit_sha256_hex(i->ir_text, i->ir_len, h);
  assert_string_equal(h, i->ir_sha256);
  assert_int_equal(strlen(i->ir_text), i->ir_len);
}

static const job k_rms = {.kernel = "rmsnorm", .shape = "R=33,C=100"};
static const job k_soft = {.kernel = "softmax_mask", .shape = "R=9,C=70"};

/* ---- tests ---- */

/* A miss writes one entry; a second compiler (as a second process would) hits it: the same
 * object bytes, IR and hashes as the fresh compile and as a compile with the cache off, truthful
 * hashes, bit-identical outputs that match the oracle. */
static void test_miss_then_hit(void **state) {
  (void)state;
  const job *jobs[] = {&k_rms, &k_soft};
  for (int t = 0; t < 2; t++) {
    const job *j = jobs[t];
    char *dir = make_tmp_dir();
    xir_compiler *a = new_compiler(dir, j, 0, 0), *b = new_compiler(dir, j, 0, 0),
                 *off = new_compiler(dir, j, 0, 1);
    assert_string_equal(xir_compiler_kernel_cache(a, NULL), dir);
    xir_kernel_info ia, ib, io;
    const xir_kernel *ka = compile_job(a, j, NULL, &ia);
    assert_string_equal(ia.disk_cache, "miss");
    assert_int_equal(ia.from_disk, 0);
    assert_int_equal(ia.cached, 0);
    assert_string_equal(ia.cache_note, "");
    char names[4][80];
    assert_int_equal(list_entries(dir, names, 4), 1);
    assert_int_equal(count_files(dir), 1); /* no temporary file left */
    const xir_kernel *kb = compile_job(b, j, NULL, &ib);
    assert_string_equal(ib.disk_cache, "hit");
    assert_int_equal(ib.from_disk, 1);
    assert_int_equal(ib.cached, 0);
    assert_string_equal(ib.cache_note, "");
    assert_true(ib.jit_ms < ia.jit_ms); /* nothing was compiled */
    const xir_kernel *ko = compile_job(off, j, NULL, &io);
    assert_string_equal(io.disk_cache, "off");
    assert_same_code(&ia, &ib);
    assert_same_code(&ia, &io); /* the object bytes are stable across compilers */
    assert_truthful(&ib);
    size_t na, nb, no;
    float *oa = run_kernel(ka, j, &na), *ob = run_kernel(kb, j, &nb), *oo = run_kernel(ko, j, &no);
    assert_int_equal(na, nb);
    assert_memory_equal(oa, ob, na);
    assert_memory_equal(oa, oo, na);
    /* the in-memory cache still answers a repeated compile with the first kernel */
    xir_kernel_info ib2;
    assert_ptr_equal(compile_job(b, j, NULL, &ib2), kb);
    assert_int_equal(ib2.cached, 1);
    assert_int_equal(list_entries(dir, names, 4), 1);
    free(oa);
    free(ob);
    free(oo);
    xir_compiler_destroy(a);
    xir_compiler_destroy(b);
    xir_compiler_destroy(off);
    rm_rf(dir);
    free(dir);
  }
}

/* Without a folder option the cache lives in $XIR_CACHE_DIR/kernels. */
static void test_default_folder(void **state) {
  (void)state;
  char *dir = make_tmp_dir();
  setenv("XIR_CACHE_DIR", dir, 1);
  xir_compiler *a = new_compiler(NULL, NULL, 0, 0);
  char want[256];
  snprintf(want, sizeof want, "%s/kernels", dir);
  assert_string_equal(xir_compiler_kernel_cache(a, NULL), want);
  xir_kernel_info i;
  compile_job(a, &k_rms, NULL, &i);
  assert_string_equal(i.disk_cache, "miss");
  char names[4][80];
  assert_int_equal(list_entries(want, names, 4), 1);
  xir_compiler_destroy(a);
  unsetenv("XIR_CACHE_DIR");
  rm_rf(dir);
  free(dir);
}

/* Damage at any offset (magic, key, hashes, lengths, IR, object), truncation and an empty file
 * are detected: the entry is rebuilt (a correct kernel, a note) and the rewritten entry hits. */
static void test_corrupt_entry_rebuilt(void **state) {
  (void)state;
  char *dir = make_tmp_dir();
  xir_compiler *a = new_compiler(dir, NULL, 0, 0);
  xir_kernel_info ref; /* a owns ref's bytes: it lives to the end */
  compile_job(a, &k_rms, NULL, &ref);
  char names[4][80], path[512];
  assert_int_equal(list_entries(dir, names, 4), 1);
  snprintf(path, sizeof path, "%s/%.79s", dir, names[0]);
  size_t n;
  unsigned char *good = read_file(path, &n);
  assert_int_equal(n, 280 + ref.ir_len + ref.obj_size);
  size_t offs[] = {0, 5, 8, 70, 72, 135, 136, 140, 144, 152, 216, 279, 280, 280 + ref.ir_len / 2,
                   280 + ref.ir_len, n - 1};
  for (size_t t = 0; t < sizeof offs / sizeof *offs + 3; t++) {
    unsigned char *bad = malloc(n);
    memcpy(bad, good, n);
    size_t len = n;
    if (t < sizeof offs / sizeof *offs) bad[offs[t]] ^= 0x01;
    else if (t == sizeof offs / sizeof *offs) len = n - 1;           /* truncated */
    else if (t == sizeof offs / sizeof *offs + 1) len = 100;         /* inside the header */
    else len = 0;                                                    /* empty */
    write_file(path, bad, len);
    free(bad);
    xir_compiler *b = new_compiler(dir, NULL, 0, 0);
    xir_kernel_info ib;
    const xir_kernel *kb = compile_job(b, &k_rms, NULL, &ib);
    if (strcmp(ib.disk_cache, "miss") != 0) fail_msg("damage case %zu was trusted", t);
    assert_non_null(strstr(ib.cache_note, "rebuilt"));
    assert_same_code(&ref, &ib);
    size_t no;
    free(run_kernel(kb, &k_rms, &no));
    xir_compiler_destroy(b);
    size_t n2;
    unsigned char *again = read_file(path, &n2); /* rewritten whole */
    assert_int_equal(n2, n);
    assert_memory_equal(again, good, n);
    free(again);
    xir_compiler *c = new_compiler(dir, NULL, 0, 0);
    xir_kernel_info ic;
    compile_job(c, &k_rms, NULL, &ic);
    assert_string_equal(ic.disk_cache, "hit");
    xir_compiler_destroy(c);
  }
  free(good);
  xir_compiler_destroy(a);
  rm_rf(dir);
  free(dir);
}

/* A sound entry of another key under this key's name is a miss: the kernel compiled is the
 * right one, and the right entry replaces the foreign one. */
static void test_foreign_entry_is_a_miss(void **state) {
  (void)state;
  char *dir = make_tmp_dir();
  xir_compiler *a = new_compiler(dir, NULL, 0, 0);
  xir_kernel_info ir, is;
  compile_job(a, &k_rms, NULL, &ir);
  char names[4][80], prms[512], psoft[512];
  assert_int_equal(list_entries(dir, names, 4), 1);
  snprintf(prms, sizeof prms, "%s/%.79s", dir, names[0]);
  compile_job(a, &k_soft, NULL, &is); /* a owns is's bytes: it lives to the end */
  assert_int_equal(list_entries(dir, names, 4), 2);
  snprintf(psoft, sizeof psoft, "%s/%s", dir, strcmp(names[0], strrchr(prms, '/') + 1) ? names[0] : names[1]);
  size_t n;
  unsigned char *rms = read_file(prms, &n);
  write_file(psoft, rms, n); /* softmax's name, rmsnorm's content */
  free(rms);
  xir_compiler *b = new_compiler(dir, NULL, 0, 0);
  xir_kernel_info ib;
  const xir_kernel *kb = compile_job(b, &k_soft, NULL, &ib);
  assert_string_equal(ib.disk_cache, "miss");
  assert_non_null(strstr(ib.cache_note, "another key"));
  assert_same_code(&is, &ib);
  size_t no;
  free(run_kernel(kb, &k_soft, &no));
  xir_compiler_destroy(b);
  xir_compiler *c = new_compiler(dir, NULL, 0, 0);
  xir_kernel_info ic;
  compile_job(c, &k_soft, NULL, &ic);
  assert_string_equal(ic.disk_cache, "hit");
  assert_same_code(&is, &ic);
  xir_compiler_destroy(c);
  xir_compiler_destroy(a);
  rm_rf(dir);
  free(dir);
}

/* Each part of the key gives a new entry: a compile-time dim (C), the candidate (B, l), the
 * pipeline, the codegen level, the width; the same job again hits. A launch-time dim (R) is not
 * part of the key: another R hits the first entry. */
static void test_key_changes_miss(void **state) {
  (void)state;
  char *dir = make_tmp_dir();
  xir_compiler *probe = new_compiler(dir, NULL, 0, 1);
  uint32_t W = xir_compiler_width(probe);
  xir_compiler_destroy(probe);
  job jobs[] = {
      {.kernel = "rmsnorm", .shape = "R=33,C=100"},
      {.kernel = "rmsnorm", .shape = "R=33,C=101"},                      /* shape: C */
      {.kernel = "rmsnorm", .shape = "R=33,C=100", .B = 2 * W},          /* candidate: B */
      {.kernel = "rmsnorm", .shape = "R=33,C=100", .local = 1},          /* candidate: l */
      {.kernel = "rmsnorm", .shape = "R=33,C=100", .pipeline = XIR__JIT_LIGHT_PIPELINE},
      {.kernel = "rmsnorm", .shape = "R=33,C=100", .codegen = "less"},   /* codegen level */
      {.kernel = "layernorm", .shape = "R=33,C=100"},                    /* program */
      {.kernel = "rmsnorm", .shape = "R=33,C=100", .width = W / 2},      /* width */
  };
  int nj = W >= 2 ? 8 : 7;
  char names[16][80];
  for (int i = 0; i < nj; i++) {
    xir_compiler *c = new_compiler(dir, &jobs[i], 0, 0);
    xir_kernel_info info;
    compile_job(c, &jobs[i], NULL, &info);
    if (strcmp(info.disk_cache, "miss") != 0) fail_msg("job %d hit another job's entry", i);
    xir_compiler_destroy(c);
    assert_int_equal(list_entries(dir, names, 16), i + 1);
  }
  for (int i = 0; i < nj; i++) {
    xir_compiler *c = new_compiler(dir, &jobs[i], 0, 0);
    xir_kernel_info info;
    const xir_kernel *k = compile_job(c, &jobs[i], NULL, &info);
    if (strcmp(info.disk_cache, "hit") != 0) fail_msg("job %d did not hit its entry", i);
    size_t no;
    free(run_kernel(k, &jobs[i], &no));
    xir_compiler_destroy(c);
  }
  /* R is a launch-time dim of rmsnorm: R=34 and R=1000 are served by job 0's entry */
  const char *other_r[] = {"R=34,C=100", "R=1000,C=100"};
  for (int i = 0; i < 2; i++) {
    job j = {.kernel = "rmsnorm", .shape = other_r[i]};
    xir_compiler *c = new_compiler(dir, &j, 0, 0);
    xir_kernel_info info;
    const xir_kernel *k = compile_job(c, &j, NULL, &info);
    assert_string_equal(info.disk_cache, "hit");
    size_t no;
    free(run_kernel(k, &j, &no));
    xir_compiler_destroy(c);
    assert_int_equal(list_entries(dir, names, 16), nj);
  }
  rm_rf(dir);
  free(dir);
}

/* Under a cap of three entries minus a byte, the third write evicts the least recently used
 * entry: B (A was used after B was written). An entry larger than the cap is not written. */
static void test_lru_eviction(void **state) {
  (void)state;
  job ja = {.kernel = "rmsnorm", .shape = "R=5,C=9"}, jb = {.kernel = "rmsnorm", .shape = "R=5,C=10"},
      jc = {.kernel = "rmsnorm", .shape = "R=5,C=11"};
  const job *js[3] = {&ja, &jb, &jc};
  /* the entries' sizes */
  char *dir0 = make_tmp_dir();
  char names[8][80], path[512];
  off_t sz[3];
  for (int i = 0; i < 3; i++) {
    xir_compiler *c = new_compiler(dir0, NULL, 0, 0);
    xir_kernel_info info;
    compile_job(c, js[i], NULL, &info);
    sz[i] = (off_t)(280 + info.ir_len + info.obj_size);
    xir_compiler_destroy(c);
  }
  assert_int_equal(list_entries(dir0, names, 8), 3);
  rm_rf(dir0);
  free(dir0);
  uint64_t cap = (uint64_t)(sz[0] + sz[1] + sz[2] - 1);
  /* eviction goes down to 90% of the cap: A and C must fit there */
  assert_true((uint64_t)(sz[0] + sz[2]) <= cap - cap / 10);
  char *dir = make_tmp_dir();
  char pa[512];
  xir_kernel_info info;
  xir_compiler *c = new_compiler(dir, NULL, cap, 0);
  compile_job(c, &ja, NULL, &info);
  xir_compiler_destroy(c);
  assert_int_equal(list_entries(dir, names, 8), 1);
  snprintf(pa, sizeof pa, "%s/%.79s", dir, names[0]);
  struct timespec ms10 = {0, 10 * 1000 * 1000};
  nanosleep(&ms10, NULL);
  c = new_compiler(dir, NULL, cap, 0);
  compile_job(c, &jb, NULL, &info);
  xir_compiler_destroy(c);
  assert_int_equal(list_entries(dir, names, 8), 2);
  nanosleep(&ms10, NULL);
  c = new_compiler(dir, NULL, cap, 0);
  compile_job(c, &ja, NULL, &info); /* a hit: A becomes the most recently used */
  assert_string_equal(info.disk_cache, "hit");
  xir_compiler_destroy(c);
  nanosleep(&ms10, NULL);
  c = new_compiler(dir, NULL, cap, 0);
  compile_job(c, &jc, NULL, &info);
  assert_string_equal(info.disk_cache, "miss");
  xir_compiler_destroy(c);
  assert_int_equal(list_entries(dir, names, 8), 2);
  uint64_t total = 0;
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%.79s", dir, names[i]);
    total += (uint64_t)file_size(path);
  }
  assert_true(total <= cap);
  assert_int_equal(access(pa, F_OK), 0); /* A survived */
  const job *expect[3] = {&ja, &jb, &jc};
  int hit[3];
  for (int i = 0; i < 3; i++) {
    c = new_compiler(dir, NULL, UINT64_MAX / 2, 0); /* no eviction while probing */
    compile_job(c, expect[i], NULL, &info);
    hit[i] = !strcmp(info.disk_cache, "hit");
    xir_compiler_destroy(c);
  }
  assert_int_equal(hit[0], 1);
  assert_int_equal(hit[1], 0); /* B was evicted (and has just been rewritten) */
  assert_int_equal(hit[2], 1);
  rm_rf(dir);
  free(dir);

  /* a cap below one entry: nothing is written, the compile succeeds and says why */
  dir = make_tmp_dir();
  c = new_compiler(dir, NULL, 100, 0);
  const xir_kernel *k = compile_job(c, &ja, NULL, &info);
  assert_string_equal(info.disk_cache, "miss");
  assert_non_null(strstr(info.cache_note, "exceed the cap"));
  size_t no;
  free(run_kernel(k, &ja, &no));
  xir_compiler_destroy(c);
  assert_int_equal(count_files(dir), 0);
  rm_rf(dir);
  free(dir);
}

/* The option and XIR_NO_KERNEL_CACHE turn the cache off: nothing is read or written (not even
 * the folder); XIR_NO_KERNEL_CACHE=0 leaves it on. */
static void test_disabled_writes_nothing(void **state) {
  (void)state;
  char *dir = make_tmp_dir();
  char sub[256];
  snprintf(sub, sizeof sub, "%s/kernels", dir);
  xir_kernel_info info;
  const char *why;
  xir_compiler *c = new_compiler(sub, NULL, 0, 1);
  assert_null(xir_compiler_kernel_cache(c, &why));
  assert_non_null(strstr(why, "options"));
  compile_job(c, &k_rms, NULL, &info);
  assert_string_equal(info.disk_cache, "off");
  assert_int_equal(info.from_disk, 0);
  xir_compiler_destroy(c);
  setenv("XIR_NO_KERNEL_CACHE", "1", 1);
  c = new_compiler(sub, NULL, 0, 0);
  assert_null(xir_compiler_kernel_cache(c, &why));
  assert_non_null(strstr(why, "XIR_NO_KERNEL_CACHE"));
  compile_job(c, &k_rms, NULL, &info);
  assert_string_equal(info.disk_cache, "off");
  xir_compiler_destroy(c);
  assert_int_equal(count_files(dir), 0);
  setenv("XIR_NO_KERNEL_CACHE", "0", 1);
  c = new_compiler(sub, NULL, 0, 0);
  compile_job(c, &k_rms, NULL, &info);
  assert_string_equal(info.disk_cache, "miss");
  xir_compiler_destroy(c);
  unsetenv("XIR_NO_KERNEL_CACHE");
  char names[4][80];
  assert_int_equal(list_entries(sub, names, 4), 1);
  rm_rf(dir);
  free(dir);
}

/* Each value of environment variable `name` makes xir_compiler_create fail with
 * XIR_ERR_INVALID_ARG and a message that names the variable (the variable stays set). */
static void env_refused(const char *name, const char *const *values, size_t n) {
  for (size_t i = 0; i < n; i++) {
    setenv(name, values[i], 1);
    xir_compiler *c = NULL;
    xir_diag d;
    assert_int_equal(xir_compiler_create(NULL, &c, &d), XIR_ERR_INVALID_ARG);
    assert_null(c);
    assert_non_null(strstr(d.msg, name));
  }
}

/* A malformed XIR_KERNEL_CACHE_MAX_BYTES is an error of xir_compiler_create that names it; a
 * valid one is the cap. */
static void test_max_bytes_env(void **state) {
  (void)state;
  const char *bad[] = {"abc", "12x", "-5", "0", "99999999999999999999999"};
  env_refused("XIR_KERNEL_CACHE_MAX_BYTES", bad, sizeof bad / sizeof *bad);
  char *dir = make_tmp_dir();
  setenv("XIR_KERNEL_CACHE_MAX_BYTES", "100", 1);
  xir_compiler *c = new_compiler(dir, NULL, 0, 0);
  xir_kernel_info info;
  compile_job(c, &k_rms, NULL, &info);
  assert_non_null(strstr(info.cache_note, "exceed the cap of 100"));
  xir_compiler_destroy(c);
  unsetenv("XIR_KERNEL_CACHE_MAX_BYTES");
  assert_int_equal(count_files(dir), 0);
  rm_rf(dir);
  free(dir);
}

/* XIR_KERNEL_CACHE_KEY=ir keys entries by the lowered IR (the sanitizer builds of the tests share
 * the normal build's entries): a second compiler hits the first one's entry with the same code
 * and outputs; the build-keyed cache does not see it (and the reverse); another compile-time dim
 * (other IR) misses; "build" is the default; any other value is an error that names the variable. */
static void test_ir_keyed(void **state) {
  (void)state;
  const char *bad[] = {"IR", "sha", "build "};
  env_refused("XIR_KERNEL_CACHE_KEY", bad, sizeof bad / sizeof *bad);
  char *dir = make_tmp_dir();
  char names[8][80];
  setenv("XIR_KERNEL_CACHE_KEY", "ir", 1);
  xir_compiler *a = new_compiler(dir, &k_rms, 0, 0), *b = new_compiler(dir, &k_rms, 0, 0);
  xir_kernel_info ia, ib;
  const xir_kernel *ka = compile_job(a, &k_rms, NULL, &ia);
  assert_string_equal(ia.disk_cache, "miss");
  assert_int_equal(list_entries(dir, names, 8), 1);
  const xir_kernel *kb = compile_job(b, &k_rms, NULL, &ib);
  assert_string_equal(ib.disk_cache, "hit");
  assert_int_equal(ib.from_disk, 1);
  assert_same_code(&ia, &ib);
  assert_truthful(&ib);
  size_t na, nb;
  float *oa = run_kernel(ka, &k_rms, &na), *ob = run_kernel(kb, &k_rms, &nb);
  assert_int_equal(na, nb);
  assert_memory_equal(oa, ob, na);
  free(oa);
  free(ob);
  job other = {.kernel = "rmsnorm", .shape = "R=33,C=101"};
  xir_compiler *o = new_compiler(dir, &other, 0, 0);
  xir_kernel_info io;
  compile_job(o, &other, NULL, &io);
  assert_string_equal(io.disk_cache, "miss");
  assert_int_equal(list_entries(dir, names, 8), 2);
  xir_compiler_destroy(b);
  xir_compiler_destroy(o);
  /* keyed by the build: the IR-keyed entries are not its own (ia stays valid while a lives) */
  for (int t = 0; t < 2; t++) {
    if (t) setenv("XIR_KERNEL_CACHE_KEY", "build", 1);
    else unsetenv("XIR_KERNEL_CACHE_KEY");
    xir_compiler *c = new_compiler(dir, &k_rms, 0, 0);
    xir_kernel_info ic;
    compile_job(c, &k_rms, NULL, &ic);
    assert_string_equal(ic.disk_cache, t ? "hit" : "miss");
    assert_same_code(&ia, &ic);
    assert_int_equal(list_entries(dir, names, 8), 3);
    xir_compiler_destroy(c);
  }
  xir_compiler_destroy(a);
  /* and the reverse: a build-keyed entry alone is not an IR-keyed hit */
  rm_rf(dir);
  free(dir);
  dir = make_tmp_dir();
  xir_compiler *c1 = new_compiler(dir, &k_soft, 0, 0);
  compile_job(c1, &k_soft, NULL, &ia);
  assert_string_equal(ia.disk_cache, "miss");
  setenv("XIR_KERNEL_CACHE_KEY", "ir", 1);
  xir_compiler *c2 = new_compiler(dir, &k_soft, 0, 0);
  compile_job(c2, &k_soft, NULL, &ib);
  assert_string_equal(ib.disk_cache, "miss");
  assert_same_code(&ia, &ib);
  assert_int_equal(list_entries(dir, names, 8), 2);
  xir_compiler_destroy(c1);
  xir_compiler_destroy(c2);
  unsetenv("XIR_KERNEL_CACHE_KEY");
  rm_rf(dir);
  free(dir);
}

/* A folder that cannot be created (a file is in the way) never fails a compile: the note says
 * why the entry was not written. */
static void test_unwritable_folder(void **state) {
  (void)state;
  char *dir = make_tmp_dir();
  char file[256], sub[300];
  snprintf(file, sizeof file, "%s/file", dir);
  write_file(file, "x", 1);
  snprintf(sub, sizeof sub, "%s/kernels", file);
  xir_compiler *c = new_compiler(sub, NULL, 0, 0);
  xir_kernel_info info;
  const xir_kernel *k = compile_job(c, &k_rms, NULL, &info);
  assert_string_equal(info.disk_cache, "miss");
  assert_non_null(strstr(info.cache_note, "not written"));
  size_t no;
  free(run_kernel(k, &k_rms, &no));
  xir_compiler_destroy(c);
  rm_rf(dir);
  free(dir);
}

/* ---- concurrency ---- */

typedef struct thr {
  const char *dir;
  const job *j;
  xir_kernel_info info;
  char note[512];
  char sha[65];
  char disk[8];
} thr;

static void *thr_main(void *arg) {
  thr *t = arg;
  xir_compiler_options o = {.kernel_cache_dir = t->dir};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&o, &cc, &d)) return NULL;
  xir_program *p;
  xir_shape s;
  if (xir_kernel_load(t->j->kernel, &p, &d) || xir_shape_parse(p, t->j->shape, &s, &d)) return NULL;
  uint32_t W = xir_compiler_width(cc);
  uint8_t perm[XIR_MAX_ROOT] = {0};
  xir_candidate c;
  const xir_kernel *k;
  if (!xir_candidate_make(p, &s, W, W, W, perm, &c, &d) && !xir_compile(cc, p, &s, &c, &k, &d)) {
    xir_kernel_get_info(k, &t->info);
    snprintf(t->note, sizeof t->note, "%s", t->info.cache_note);
    snprintf(t->sha, sizeof t->sha, "%s", t->info.obj_sha256);
    snprintf(t->disk, sizeof t->disk, "%s", t->info.disk_cache);
  }
  xir_program_free(p);
  xir_compiler_destroy(cc);
  return NULL;
}

/* The entry in dir whose object is obj (the object is the tail of an entry). */
static int find_entry_of(const char *dir, const xir_kernel_info *want, char *path, size_t cap) {
  char names[8][80];
  int n = list_entries(dir, names, 8);
  for (int i = 0; i < n; i++) {
    snprintf(path, cap, "%s/%.79s", dir, names[i]);
    size_t len;
    unsigned char *b = read_file(path, &len);
    int same = len >= want->obj_size &&
               !memcmp(b + len - want->obj_size, want->obj, want->obj_size);
    free(b);
    if (same) return 1;
  }
  return 0;
}

/* Four threads (four compilers) compile two kernels at once, in three rounds: on an empty
 * folder (racing writers), with one kernel's entry deleted (writers racing readers), with both
 * entries (readers). No compile ever sees a damaged entry, every object is the expected one,
 * and the folder ends with one sound entry per kernel and no temporary file. */
static void test_concurrent_threads(void **state) {
  (void)state;
  char *dir = make_tmp_dir();
  xir_compiler *ref = new_compiler(dir, NULL, 0, 1);
  xir_kernel_info want[2];
  const job *js[2] = {&k_rms, &k_soft};
  for (int i = 0; i < 2; i++) compile_job(ref, js[i], NULL, &want[i]);
  for (int round = 0; round < 3; round++) {
    int existed[2] = {round > 0, round > 0};
    if (round == 1) {
      char p[512];
      assert_true(find_entry_of(dir, &want[0], p, sizeof p));
      assert_int_equal(unlink(p), 0);
      existed[0] = 0;
    }
    thr t[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
      memset(&t[i], 0, sizeof t[i]);
      t[i].dir = dir;
      t[i].j = js[i & 1];
      assert_int_equal(pthread_create(&th[i], NULL, thr_main, &t[i]), 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) {
      assert_string_equal(t[i].sha, want[i & 1].obj_sha256);
      assert_string_equal(t[i].note, "");
      if (existed[i & 1]) assert_string_equal(t[i].disk, "hit");
    }
    char names[4][80];
    assert_int_equal(list_entries(dir, names, 4), 2);
    assert_int_equal(count_files(dir), 2);
  }
  for (int i = 0; i < 2; i++) {
    xir_compiler *c = new_compiler(dir, NULL, 0, 0);
    xir_kernel_info info;
    compile_job(c, js[i], NULL, &info);
    assert_string_equal(info.disk_cache, "hit");
    assert_same_code(&want[i], &info);
    xir_compiler_destroy(c);
  }
  xir_compiler_destroy(ref);
  rm_rf(dir);
  free(dir);
}

/* Six `xir compile` processes at once on an empty folder, twice: no process fails or warns, all
 * print the same object hash, and the folder holds one sound entry. The candidate is given: which
 * one the planner picks is not this test's subject (six processes calibrating at once under load
 * may rank two candidates differently). */
static void test_concurrent_processes(void **state) {
  (void)state;
  const char *bin = getenv("XIR_BIN");
  if (!bin || access(bin, X_OK) != 0) {
    print_message("XIR_BIN not set: skipping the multi-process test\n");
    skip();
  }
  char *dir = make_tmp_dir();
  char cmd[2048];
  for (int round = 0; round < 2; round++) {
    snprintf(cmd, sizeof cmd,
             "cd '%s' && for i in 1 2 3 4 5 6; do XIR_CACHE_DIR='%s/c' '%s' compile rmsnorm "
             "--shape R=65,C=300 --width 4 --candidate perm=r,l=4,B=4,W=4 >out.$i 2>err.$i & done; wait; "
             "test $(cat out.* | grep -c '^obj sha256') -eq 6 && "
             "test $(cat out.* | grep '^obj sha256' | sort -u | wc -l) -eq 1 && "
             "! test -s err.1 && ! test -s err.2 && ! test -s err.3 && ! test -s err.4 && "
             "! test -s err.5 && ! test -s err.6",
             dir, dir, bin);
    if (system(cmd) != 0) {
      snprintf(cmd, sizeof cmd, "cat '%s'/out.* '%s'/err.*", dir, dir);
      (void)system(cmd);
      fail_msg("round %d: concurrent xir compile processes disagreed or warned", round);
    }
  }
  /* the object bytes are stable across processes: a process with the cache off compiles the
   * same object as the one the cache holds */
  snprintf(cmd, sizeof cmd,
           "cd '%s' && XIR_NO_KERNEL_CACHE=1 '%s' compile rmsnorm --shape R=65,C=300 --width 4 "
           "--candidate perm=r,l=4,B=4,W=4 --time >fresh && grep -q 'cache off' fresh && "
           "test \"$(grep '^obj sha256' fresh)\" = \"$(grep '^obj sha256' out.1)\"",
           dir, bin);
  if (system(cmd) != 0) fail_msg("a fresh compile in another process gave another object");
  char sub[256], names[4][80];
  snprintf(sub, sizeof sub, "%s/c/kernels", dir);
  assert_int_equal(list_entries(sub, names, 4), 1);
  assert_int_equal(count_files(sub), 1);
  rm_rf(dir);
  free(dir);
}

int main(void) {
  /* the tests choose their folders; the environment must not turn the cache off or cap it */
  unsetenv("XIR_NO_KERNEL_CACHE");
  unsetenv("XIR_KERNEL_CACHE_MAX_BYTES");
  unsetenv("XIR_KERNEL_CACHE_KEY");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_miss_then_hit),
      cmocka_unit_test(test_default_folder),
      cmocka_unit_test(test_corrupt_entry_rebuilt),
      cmocka_unit_test(test_foreign_entry_is_a_miss),
      cmocka_unit_test(test_key_changes_miss),
      cmocka_unit_test(test_lru_eviction),
      cmocka_unit_test(test_disabled_writes_nothing),
      cmocka_unit_test(test_max_bytes_env),
      cmocka_unit_test(test_ir_keyed),
      cmocka_unit_test(test_unwritable_folder),
      cmocka_unit_test(test_concurrent_threads),
      cmocka_unit_test(test_concurrent_processes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
