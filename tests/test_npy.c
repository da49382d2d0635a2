/* test_npy.c — .npy reading and writing (src/util/npy.h): exact header layout, round trips,
 * every malformed-file diagnostic, atomic writes, and (when numpy is installed) a cross-check
 * with numpy itself. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/npy.h"
#include "util/util.h"

/* ---------------------------------------------------------------------------------------------- */
/* Scratch folder                                                                                  */

static char g_dir[512];

static int count_entries(const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dp)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(dp);
  return n;
}

/* Entries whose name marks a temporary file of xir__npy_write_f32. */
static int count_tmp(const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dp)))
    if (strstr(e->d_name, ".tmp.")) n++;
  closedir(dp);
  return n;
}

static void remove_tree(const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp) return;
  struct dirent *e;
  char p[1024];
  while ((e = readdir(dp))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
      chmod(p, 0755);
      remove_tree(p);
    } else {
      unlink(p);
    }
  }
  closedir(dp);
  rmdir(dir);
}

/* The folder is made and removed in main (not in cmocka group fixtures, whose teardown does not
 * run after a failed test), so a failing run leaves nothing behind either. */
static int make_dir(void) {
  const char *t = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/xir_test_npy_XXXXXX", t && *t ? t : "/tmp");
  return mkdtemp(g_dir) ? 0 : -1;
}

static void path_in(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", g_dir, name);
}

static void write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (n) assert_int_equal(fwrite(p, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)len + 1);
  assert_non_null(b);
  assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return b;
}

static void assert_contains(const char *hay, const char *needle) {
  if (!strstr(hay, needle)) fail_msg("message \"%s\" does not contain \"%s\"", hay, needle);
}

/* ---------------------------------------------------------------------------------------------- */
/* Header layout                                                                                   */

static void check_preamble(const unsigned char *b, size_t total, const size_t *shape, int ndim) {
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  assert_memory_equal(b, magic, 6);
  assert_int_equal(b[6], 1);
  assert_int_equal(b[7], 0);
  size_t hlen = (size_t)b[8] | (size_t)b[9] << 8;
  assert_int_equal(10 + hlen, total);
  assert_int_equal(total % 64, 0);
  assert_int_equal(b[total - 1], '\n');
  char sh[512], dict[640];
  xir__npy_format_shape(sh, sizeof sh, shape, ndim);
  int dl = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }",
                    sh);
  assert_memory_equal(b + 10, dict, (size_t)dl);
  for (size_t i = 10 + (size_t)dl; i < total - 1; i++) assert_int_equal(b[i], ' ');
  /* the fewest spaces: less than one alignment unit */
  assert_true(total - 1 - (10 + (size_t)dl) < 64);
}

static void test_header_exact_bytes(void **state) {
  (void)state;
  char buf[XIR_NPY_HEADER_CAP];
  size_t len = 0;
  size_t shape[2] = {2, 3};
  assert_int_equal(xir__npy_build_header(buf, sizeof buf, &len, shape, 2, NULL), XIR_OK);
  /* 10 + len(dict) = 69, + 58 spaces + newline = 128 */
  assert_int_equal(len, 128);
  const char *expect_start = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, "
                             "'shape': (2, 3), }";
  assert_memory_equal(buf, expect_start, 69);
  for (size_t i = 69; i < 127; i++) assert_int_equal(buf[i], ' ');
  assert_int_equal(buf[127], '\n');
  check_preamble((unsigned char *)buf, len, shape, 2);

  /* The written file is exactly this preamble followed by the little-endian floats. */
  char p[1024];
  path_in(p, sizeof p, "layout.npy");
  float v[6] = {1.0f, -2.0f, 0.5f, 3.25f, -0.0f, 1e-30f};
  assert_int_equal(xir__npy_write_f32(p, v, shape, 2, NULL), XIR_OK);
  size_t n = 0;
  unsigned char *b = slurp(p, &n);
  assert_int_equal(n, 128 + 24);
  assert_memory_equal(b, buf, 128);
  /* 1.0f = 0x3f800000 little-endian */
  assert_int_equal(b[128], 0x00);
  assert_int_equal(b[129], 0x00);
  assert_int_equal(b[130], 0x80);
  assert_int_equal(b[131], 0x3f);
  /* -2.0f = 0xc0000000 */
  assert_int_equal(b[135], 0xc0);
  free(b);
}

static void test_header_every_rank(void **state) {
  (void)state;
  size_t shape[XIR_NPY_MAX_NDIM];
  for (int nd = 0; nd <= XIR_NPY_MAX_NDIM; nd++) {
    for (int i = 0; i < nd; i++) shape[i] = (size_t)1 << (i % 40); /* varied widths */
    if (nd > 3) shape[nd - 1] = SIZE_MAX; /* widest possible dim */
    char buf[XIR_NPY_HEADER_CAP];
    size_t len = 0;
    assert_int_equal(xir__npy_build_header(buf, sizeof buf, &len, shape, nd, NULL), XIR_OK);
    check_preamble((unsigned char *)buf, len, shape, nd);
  }
  char small[32];
  size_t len;
  xir_diag d;
  xir_diag_clear(&d);
  assert_int_equal(xir__npy_build_header(small, sizeof small, &len, shape, 2, &d),
                   XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__npy_build_header(small, sizeof small, &len, shape, -1, &d),
                   XIR_ERR_INVALID_ARG);
  assert_int_equal(
      xir__npy_build_header(small, sizeof small, &len, shape, XIR_NPY_MAX_NDIM + 1, &d),
      XIR_ERR_INVALID_ARG);
}

static void test_format_shape(void **state) {
  (void)state;
  char b[64];
  size_t s[3] = {3, 7, 11};
  assert_string_equal(xir__npy_format_shape(b, sizeof b, s, 0), "()");
  assert_string_equal(xir__npy_format_shape(b, sizeof b, s, 1), "(3,)");
  assert_string_equal(xir__npy_format_shape(b, sizeof b, s, 2), "(3, 7)");
  assert_string_equal(xir__npy_format_shape(b, sizeof b, s, 3), "(3, 7, 11)");
  char t[6];
  xir__npy_format_shape(t, sizeof t, s, 3);
  assert_true(strlen(t) < sizeof t);
  assert_string_equal(t + strlen(t) - 3, "...");
  int ovf = 5;
  assert_int_equal(xir__npy_numel(s, 3, &ovf), 231);
  assert_int_equal(ovf, 0);
  assert_int_equal(xir__npy_numel(s, 0, NULL), 1);
  size_t big[2] = {SIZE_MAX / 2, 3};
  assert_int_equal(xir__npy_numel(big, 2, &ovf), 0);
  assert_int_equal(ovf, 1);
}

/* ---------------------------------------------------------------------------------------------- */
/* Round trips                                                                                     */

static void roundtrip(const size_t *shape, int ndim, const char *name) {
  int ovf = 0;
  size_t n = xir__npy_numel(shape, ndim, &ovf);
  assert_false(ovf);
  float *v = malloc((n ? n : 1) * sizeof(float));
  assert_non_null(v);
  for (size_t i = 0; i < n; i++) v[i] = (float)((double)i * 0.37 - 1000.0) * (i % 3 ? 1.f : -1.f);
  if (n > 2) {
    v[1] = INFINITY;
    v[2] = -0.0f;
    uint32_t nanbits = 0x7fc01234u;
    memcpy(&v[0], &nanbits, 4);
  }
  char p[1024];
  path_in(p, sizeof p, name);
  xir_diag d;
  xir_diag_clear(&d);
  assert_int_equal(xir__npy_write_f32(p, v, shape, ndim, &d), XIR_OK);

  float *r = NULL;
  size_t got[XIR_NPY_MAX_NDIM];
  int gnd = -1;
  assert_int_equal(xir__npy_read_f32(p, &r, got, &gnd, XIR_NPY_MAX_NDIM, &d), XIR_OK);
  assert_non_null(r);
  assert_int_equal(gnd, ndim);
  for (int i = 0; i < ndim; i++) assert_int_equal(got[i], shape[i]);
  if (n) assert_memory_equal(r, v, n * sizeof(float)); /* bit-exact, NaN payload included */
  assert_int_equal(xir__npy_check_shape(name, got, gnd, shape, ndim, &d), XIR_OK);

  /* The same bytes decode identically from memory. */
  size_t blen;
  unsigned char *bytes = slurp(p, &blen);
  float *r2 = NULL;
  assert_int_equal(xir__npy_decode_f32(bytes, blen, name, &r2, got, &gnd, XIR_NPY_MAX_NDIM, &d),
                   XIR_OK);
  assert_int_equal(gnd, ndim);
  if (n) assert_memory_equal(r2, v, n * sizeof(float));
  assert_int_equal(blen % 64, (n * 4) % 64); /* data starts at a multiple of 64 */
  free(bytes);
  xir__free(r);
  xir__free(r2);
  free(v);
}

static void test_roundtrip_shapes(void **state) {
  (void)state;
  size_t s0[1] = {0};
  roundtrip(s0, 0, "scalar.npy");
  size_t s1[1] = {5};
  roundtrip(s1, 1, "vec.npy");
  size_t s1b[1] = {1};
  roundtrip(s1b, 1, "one.npy");
  size_t s2[2] = {129, 768};
  roundtrip(s2, 2, "mat.npy");
  size_t s2e[2] = {0, 4};
  roundtrip(s2e, 2, "empty.npy");
  size_t s4[4] = {1, 4, 16, 16};
  roundtrip(s4, 4, "q.npy");
  size_t s7[7] = {2, 1, 3, 1, 2, 1, 2};
  roundtrip(s7, 7, "rank7.npy");
  size_t big[2] = {1024, 4096};
  roundtrip(big, 2, "big.npy");
  assert_int_equal(count_tmp(g_dir), 0); /* no temporary files left behind */
}

static void test_overwrite_is_atomic_replace(void **state) {
  (void)state;
  char sub[1024], p[1100];
  path_in(sub, sizeof sub, "replace");
  assert_int_equal(mkdir(sub, 0755), 0);
  snprintf(p, sizeof p, "%s/x.npy", sub);
  float a[3] = {1, 2, 3}, b[2] = {4, 5};
  size_t sa = 3, sb = 2;
  assert_int_equal(xir__npy_write_f32(p, a, &sa, 1, NULL), XIR_OK);
  assert_int_equal(xir__npy_write_f32(p, b, &sb, 1, NULL), XIR_OK);
  float *r;
  size_t shape[2];
  int nd;
  assert_int_equal(xir__npy_read_f32(p, &r, shape, &nd, 2, NULL), XIR_OK);
  assert_int_equal(nd, 1);
  assert_int_equal(shape[0], 2);
  assert_memory_equal(r, b, sizeof b);
  xir__free(r);
  assert_int_equal(count_entries(sub), 1);
  /* The file gets ordinary permissions (umask applied), not mkstemp's 0600. */
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  mode_t um = umask(022);
  umask(um);
  assert_int_equal(st.st_mode & 0777, 0666 & ~um);
}

/* ---------------------------------------------------------------------------------------------- */
/* Write failures                                                                                  */

static void test_write_missing_folder(void **state) {
  (void)state;
  char p[1024];
  path_in(p, sizeof p, "no/such/folder/x.npy");
  float v[2] = {1, 2};
  size_t s = 2;
  xir_diag d;
  xir_diag_clear(&d);
  assert_int_equal(xir__npy_write_f32(p, v, &s, 1, &d), XIR_ERR_IO);
  assert_int_equal(d.status, XIR_ERR_IO);
  assert_contains(d.msg, p);
  assert_contains(d.msg, strerror(ENOENT));
}

static void test_write_unwritable_folder(void **state) {
  (void)state;
  float v[2] = {1, 2};
  size_t s = 2;
  xir_diag d;
  xir_diag_clear(&d);
  if (geteuid() == 0) {
    /* Permissions do not stop root; sysfs refuses new files even to root. */
    const char *p = "/sys/xir_test_npy_unwritable.npy";
    assert_int_equal(xir__npy_write_f32(p, v, &s, 1, &d), XIR_ERR_IO);
    assert_contains(d.msg, p);
    assert_contains(d.msg, "temporary file");
    assert_int_equal(access(p, F_OK), -1);
  } else {
    char sub[1024], p[1100];
    path_in(sub, sizeof sub, "readonly");
    assert_int_equal(mkdir(sub, 0555), 0);
    snprintf(p, sizeof p, "%s/x.npy", sub);
    assert_int_equal(xir__npy_write_f32(p, v, &s, 1, &d), XIR_ERR_IO);
    assert_contains(d.msg, p);
    assert_contains(d.msg, strerror(EACCES));
    assert_int_equal(count_entries(sub), 0);
  }
  /* A path through a regular file: ENOTDIR. */
  char f[1024], p2[1100];
  path_in(f, sizeof f, "plainfile");
  write_bytes(f, "x", 1);
  snprintf(p2, sizeof p2, "%s/x.npy", f);
  xir_diag_clear(&d);
  assert_int_equal(xir__npy_write_f32(p2, v, &s, 1, &d), XIR_ERR_IO);
  assert_contains(d.msg, p2);
  assert_contains(d.msg, strerror(ENOTDIR));
  unlink(f);
}

static void test_write_failure_removes_temp(void **state) {
  (void)state;
  /* The target is an existing non-empty folder: the temporary file is written, the rename fails,
   * and the temporary file must be gone afterwards. Works even as root. */
  char sub[1024], p[1100], inner[1200];
  path_in(sub, sizeof sub, "target_is_dir");
  assert_int_equal(mkdir(sub, 0755), 0);
  snprintf(p, sizeof p, "%s/x.npy", sub);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(inner, sizeof inner, "%s/keep", p);
  write_bytes(inner, "k", 1);
  float v[2] = {1, 2};
  size_t s = 2;
  xir_diag d;
  xir_diag_clear(&d);
  assert_int_equal(xir__npy_write_f32(p, v, &s, 1, &d), XIR_ERR_IO);
  assert_contains(d.msg, p);
  assert_contains(d.msg, "rename");
  assert_int_equal(count_entries(sub), 1); /* only the folder x.npy itself */
  assert_int_equal(count_entries(p), 1);
}

static void test_write_invalid_args(void **state) {
  (void)state;
  xir_diag d;
  size_t s = 2;
  float v[2] = {0};
  char p[1024];
  path_in(p, sizeof p, "inv.npy");
  assert_int_equal(xir__npy_write_f32(NULL, v, &s, 1, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__npy_write_f32("", v, &s, 1, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__npy_write_f32(p, NULL, &s, 1, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__npy_write_f32(p, v, &s, -1, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__npy_write_f32(p, v, &s, XIR_NPY_MAX_NDIM + 1, &d), XIR_ERR_INVALID_ARG);
  size_t huge[2] = {SIZE_MAX / 2, 4};
  assert_int_equal(xir__npy_write_f32(p, v, huge, 2, &d), XIR_ERR_INVALID_ARG);
  size_t zero = 0;
  assert_int_equal(xir__npy_write_f32(p, NULL, &zero, 1, &d), XIR_OK); /* no data needed */
  float *r;
  size_t sh[1];
  int nd;
  assert_int_equal(xir__npy_read_f32(p, &r, sh, &nd, 1, NULL), XIR_OK);
  assert_int_equal(nd, 1);
  assert_int_equal(sh[0], 0);
  xir__free(r);
  unlink(p);
}

/* ---------------------------------------------------------------------------------------------- */
/* Reading: hand-made files                                                                        */

/* Builds a file: magic, version major.minor, the header length field for that version, hdr
 * (verbatim), then data. Returns the byte count. */
static size_t make_npy(unsigned char *out, int major, int minor, const char *hdr, const void *data,
                       size_t nbytes) {
  size_t hl = strlen(hdr), pos = 0;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (unsigned char)major;
  out[7] = (unsigned char)minor;
  pos = 8;
  out[pos++] = (unsigned char)(hl & 0xff);
  out[pos++] = (unsigned char)((hl >> 8) & 0xff);
  if (major >= 2) {
    out[pos++] = (unsigned char)((hl >> 16) & 0xff);
    out[pos++] = (unsigned char)((hl >> 24) & 0xff);
  }
  memcpy(out + pos, hdr, hl);
  pos += hl;
  if (nbytes) memcpy(out + pos, data, nbytes);
  return pos + nbytes;
}

static const float k6[6] = {1, 2, 3, 4, 5, 6};

/* Reads bytes both from a file named name and from memory; both must give status st and a
 * message containing the file name and every key word. */
static void expect_read(const char *name, const void *bytes, size_t n, int max_ndim,
                        xir_status st, const char *k1, const char *k2) {
  char p[1024];
  path_in(p, sizeof p, name);
  write_bytes(p, bytes, n);
  float *r = (float *)(uintptr_t)1;
  size_t shape[XIR_NPY_MAX_NDIM];
  int nd = 99;
  xir_diag d;
  xir_diag_clear(&d);
  xir_status got = xir__npy_read_f32(p, &r, shape, &nd, max_ndim, &d);
  if (got != st)
    fail_msg("%s: expected status %s, got %s (%s)", name, xir_status_name(st),
             xir_status_name(got), d.msg);
  assert_int_equal(d.status, st);
  if (st == XIR_OK) {
    xir__free(r);
  } else {
    assert_null(r);
    assert_int_equal(nd, 0);
    assert_contains(d.msg, p);
    if (k1) assert_contains(d.msg, k1);
    if (k2) assert_contains(d.msg, k2);
  }
  xir_diag_clear(&d);
  r = NULL;
  got = xir__npy_decode_f32(bytes, n, name, &r, shape, &nd, max_ndim, &d);
  if (got != st)
    fail_msg("%s (memory): expected status %s, got %s (%s)", name, xir_status_name(st),
             xir_status_name(got), d.msg);
  if (st == XIR_OK) {
    xir__free(r);
  } else {
    assert_null(r);
    assert_contains(d.msg, name);
    if (k1) assert_contains(d.msg, k1);
    if (k2) assert_contains(d.msg, k2);
  }
  unlink(p);
}

#define GOOD_23 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n"

static void test_read_bad_magic_and_version(void **state) {
  (void)state;
  unsigned char b[512];
  size_t n = make_npy(b, 1, 0, GOOD_23, k6, 24);
  b[5] = 'Z';
  expect_read("magic.npy", b, n, 4, XIR_ERR_FORMAT, "bad magic", NULL);
  expect_read("text.npy", "hello world, not numpy", 22, 4, XIR_ERR_FORMAT, "bad magic", NULL);
  expect_read("short_wrong.npy", "\x93NU", 3, 4, XIR_ERR_FORMAT, "truncated", NULL);
  expect_read("empty.npy", "", 0, 4, XIR_ERR_FORMAT, "truncated header", NULL);
  expect_read("mag_only.npy", "\x93NUMPY\x01", 7, 4, XIR_ERR_FORMAT, "truncated header", NULL);
  expect_read("no_len.npy", "\x93NUMPY\x01\x00\x10", 9, 4, XIR_ERR_FORMAT, "truncated header",
              NULL);
  expect_read("no_len2.npy", "\x93NUMPY\x02\x00\x10\x00\x00", 11, 4, XIR_ERR_FORMAT,
              "truncated header", NULL);
  n = make_npy(b, 4, 0, GOOD_23, k6, 24);
  expect_read("v4.npy", b, n, 4, XIR_ERR_FORMAT, "version 4.0", NULL);
  n = make_npy(b, 1, 1, GOOD_23, k6, 24);
  expect_read("v11.npy", b, n, 4, XIR_ERR_FORMAT, "version 1.1", NULL);
}

static void test_read_truncated(void **state) {
  (void)state;
  unsigned char b[512];
  size_t n = make_npy(b, 1, 0, GOOD_23, k6, 24);
  /* header cut in the middle */
  expect_read("trunc_hdr.npy", b, 40, 4, XIR_ERR_FORMAT, "truncated header", NULL);
  /* data cut: 20 of 24 bytes */
  expect_read("trunc_data.npy", b, n - 4, 4, XIR_ERR_FORMAT, "truncated data", "(2, 3)");
  /* no data at all */
  expect_read("no_data.npy", b, n - 24, 4, XIR_ERR_FORMAT, "truncated data", "24 bytes");
  /* extra bytes */
  unsigned char b2[512];
  memcpy(b2, b, n);
  memset(b2 + n, 0, 8);
  expect_read("extra.npy", b2, n + 8, 4, XIR_ERR_FORMAT, "size mismatch", "(2, 3)");
  /* a version-2 header claiming 4 GB */
  expect_read("huge_hdr.npy", "\x93NUMPY\x02\x00\xff\xff\xff\xff{", 13, 4, XIR_ERR_FORMAT,
              "truncated header", NULL);
  /* a shape whose byte size does not fit memory */
  n = make_npy(b, 1, 0,
               "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n",
               NULL, 0);
  expect_read("huge_shape.npy", b, n, 4, XIR_ERR_FORMAT, "too large", NULL);
  n = make_npy(b, 1, 0,
               "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000, 100), }\n", NULL, 0);
  expect_read("big_claim.npy", b, n, 4, XIR_ERR_FORMAT, "truncated data", NULL);
}

static void test_read_dtype_and_order(void **state) {
  (void)state;
  unsigned char b[512];
  size_t n;
  n = make_npy(b, 1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }\n", k6, 24);
  expect_read("f8.npy", b, n, 4, XIR_ERR_FORMAT, "dtype", "'<f8'");
  n = make_npy(b, 1, 0, "{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }\n", k6, 24);
  expect_read("be.npy", b, n, 4, XIR_ERR_FORMAT, "dtype", "'>f4'");
  n = make_npy(b, 1, 0, "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }\n", k6, 24);
  expect_read("i4.npy", b, n, 4, XIR_ERR_FORMAT, "dtype", "'<i4'");
  n = make_npy(b, 1, 0, "{'descr': '|u1', 'fortran_order': False, 'shape': (24,), }\n", k6, 24);
  expect_read("u1.npy", b, n, 4, XIR_ERR_FORMAT, "dtype", "'|u1'");
  n = make_npy(b, 1, 0,
               "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }\n", k6, 24);
  expect_read("struct.npy", b, n, 4, XIR_ERR_FORMAT, "dtype", "structured");
  n = make_npy(b, 1, 0, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", k6, 24);
  expect_read("fortran.npy", b, n, 4, XIR_ERR_FORMAT, "fortran_order", "True");
}

static void test_read_malformed_dict(void **state) {
  (void)state;
  static const struct {
    const char *name, *hdr, *k1, *k2;
  } cases[] = {
      {"nobrace.npy", "'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)\n", "malformed",
       "'{'"},
      {"unclosed.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), \n",
       "malformed", NULL},
      {"nocolon.npy", "{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", "malformed",
       "':'"},
      {"nocomma.npy", "{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3), }\n", "malformed",
       NULL},
      {"missing.npy", "{'descr': '<f4', 'fortran_order': False, }\n", "malformed",
       "missing key 'shape'"},
      {"missing2.npy", "{'shape': (2, 3), 'descr': '<f4'}\n", "malformed",
       "missing key 'fortran_order'"},
      {"unknown.npy",
       "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1, }\n", "malformed",
       "'extra'"},
      {"dup.npy", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}\n",
       "malformed", "duplicate key 'descr'"},
      {"notuple.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (6), }\n", "malformed",
       "(6,)"},
      {"list.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }\n", "malformed",
       "shape tuple"},
      {"neg.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }\n", "malformed",
       "integer"},
      {"float_dim.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2.0, 3), }\n",
       "malformed", NULL},
      {"emptydim.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (,), }\n", "malformed",
       NULL},
      {"dimovf.npy",
       "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, 3), }\n",
       "malformed", "too large"},
      {"boolnum.npy", "{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }\n", "malformed",
       "True or False"},
      {"lower.npy", "{'descr': '<f4', 'fortran_order': false, 'shape': (2, 3), }\n",
       "malformed", "True or False"},
      {"unq.npy", "{descr: '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", "malformed",
       "quoted string"},
      {"unterminated.npy", "{'descr: <f4, fortran_order: False, shape: (2, 3), }\n", "malformed",
       NULL},
      {"trailing.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x\n",
       "malformed", "'x'"},
      {"twodicts.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }{}\n",
       "malformed", NULL},
      {"descrnum.npy", "{'descr': 4, 'fortran_order': False, 'shape': (2, 3), }\n", "malformed",
       NULL},
      {"nul.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", NULL, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    unsigned char b[512];
    size_t n = make_npy(b, 1, 0, cases[i].hdr, k6, 24);
    if (!strcmp(cases[i].name, "nul.npy")) {
      b[10 + 5] = '\0'; /* a NUL inside the key 'descr' */
      expect_read(cases[i].name, b, n, 4, XIR_ERR_FORMAT, "malformed", NULL);
      continue;
    }
    expect_read(cases[i].name, b, n, 4, XIR_ERR_FORMAT, cases[i].k1, cases[i].k2);
  }
}

static void test_read_too_many_dims(void **state) {
  (void)state;
  unsigned char b[512];
  size_t n = make_npy(
      b, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 2, 1, 3), }\n", k6, 24);
  expect_read("dims5.npy", b, n, 4, XIR_ERR_FORMAT, "too many dims", "5");
  expect_read("dims5ok.npy", b, n, 5, XIR_OK, NULL, NULL);
  n = make_npy(b, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", k6, 4);
  expect_read("scalar0.npy", b, n, 0, XIR_OK, NULL, NULL);
  n = make_npy(b, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }\n", k6, 24);
  expect_read("vec_as_scalar.npy", b, n, 0, XIR_ERR_FORMAT, "too many dims", NULL);
  /* more dims than XIR_NPY_MAX_NDIM */
  char hdr[400] = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 40; i++) strcat(hdr, "1, ");
  strcat(hdr, "), }\n");
  n = make_npy(b, 1, 0, hdr, k6, 4);
  expect_read("dims40.npy", b, n, XIR_NPY_MAX_NDIM, XIR_ERR_FORMAT, "too many dims", "40");
}

/* Header spellings that Python's literal syntax allows (and numpy versions have produced). */
static void test_read_robust_header(void **state) {
  (void)state;
  static const struct {
    int major;
    const char *hdr;
    int ndim;
    size_t s0, s1;
  } ok[] = {
      /* numpy >= 1.23 leaves spare spaces after the dict for in-place growth */
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }                    "
          "                                       \n", 2, 2, 3},
      {1, "{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(2,3)}\n", 2, 2, 3},
      {1, "{ 'shape' : ( 2 , 3 , ) , 'fortran_order' : False , 'descr' : '<f4' , }   \n", 2, 2,
       3},
      {1, "{'descr':\t'<f4',\n 'fortran_order': False,\r\n 'shape': (6,)}", 1, 6, 0},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': ( 6 , ), }\n", 1, 6, 0},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }\n", 2, 2, 3},
      {2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }\n", 2, 3, 2},
      {3, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 6), }\n", 2, 1, 6},
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    unsigned char b[512];
    size_t nb = ok[i].ndim == 0 ? 4 : 24;
    size_t n = make_npy(b, ok[i].major, 0, ok[i].hdr, k6, nb);
    float *r = NULL;
    size_t shape[4];
    int nd = -1;
    xir_diag d;
    xir_diag_clear(&d);
    xir_status st = xir__npy_decode_f32(b, n, "robust.npy", &r, shape, &nd, 4, &d);
    if (st != XIR_OK) fail_msg("case %zu: %s", i, d.msg);
    assert_int_equal(nd, ok[i].ndim);
    if (nd >= 1) assert_int_equal(shape[0], ok[i].s0);
    if (nd >= 2) assert_int_equal(shape[1], ok[i].s1);
    assert_memory_equal(r, k6, nb);
    xir__free(r);
  }
}

static void test_read_io_errors(void **state) {
  (void)state;
  char p[1024];
  path_in(p, sizeof p, "does_not_exist.npy");
  float *r = NULL;
  size_t shape[2];
  int nd;
  xir_diag d;
  xir_diag_clear(&d);
  assert_int_equal(xir__npy_read_f32(p, &r, shape, &nd, 2, &d), XIR_ERR_IO);
  assert_null(r);
  assert_contains(d.msg, p);
  assert_contains(d.msg, strerror(ENOENT));
  assert_int_equal(xir__npy_read_f32(g_dir, &r, shape, &nd, 2, &d), XIR_ERR_IO);
  assert_contains(d.msg, g_dir);
  assert_contains(d.msg, strerror(EISDIR));
  /* invalid arguments */
  assert_int_equal(xir__npy_read_f32(NULL, &r, shape, &nd, 2, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__npy_read_f32(p, NULL, shape, &nd, 2, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__npy_read_f32(p, &r, NULL, &nd, 2, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__npy_read_f32(p, &r, shape, NULL, 2, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__npy_read_f32(p, &r, shape, &nd, -1, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__npy_read_f32(p, &r, shape, &nd, XIR_NPY_MAX_NDIM + 1, &d),
                   XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__npy_decode_f32(NULL, 5, NULL, &r, shape, &nd, 2, &d),
                   XIR_ERR_INVALID_ARG);
}

static void test_check_shape(void **state) {
  (void)state;
  xir_diag d;
  xir_diag_clear(&d);
  size_t got[2] = {3, 7}, want[2] = {129, 768}, same[2] = {3, 7};
  assert_int_equal(xir__npy_check_shape("x.npy", got, 2, same, 2, &d), XIR_OK);
  assert_int_equal(xir__npy_check_shape("x.npy", got, 2, want, 2, &d), XIR_ERR_FORMAT);
  assert_string_equal(d.msg, "x.npy has shape (3, 7) but the kernel expects (129, 768)");
  assert_int_equal(xir__npy_check_shape("w.npy", got, 1, want, 2, &d), XIR_ERR_FORMAT);
  assert_string_equal(d.msg, "w.npy has shape (3,) but the kernel expects (129, 768)");
  assert_int_equal(xir__npy_check_shape("s.npy", got, 0, want, 1, &d), XIR_ERR_FORMAT);
  assert_string_equal(d.msg, "s.npy has shape () but the kernel expects (129,)");
  assert_int_equal(xir__npy_check_shape(NULL, got, 2, got, 1, &d), XIR_ERR_FORMAT);
  assert_string_equal(d.msg, "the array has shape (3, 7) but the kernel expects (3,)");
  assert_int_equal(xir__npy_check_shape("e.npy", NULL, 0, NULL, 0, &d), XIR_OK);
}

/* ---------------------------------------------------------------------------------------------- */
/* Allocation failure                                                                              */

static int g_fail_after = -1;
static void *failing_alloc(void *ud, size_t n) {
  (void)ud;
  if (g_fail_after == 0) return NULL;
  if (g_fail_after > 0) g_fail_after--;
  return malloc(n);
}
static void *failing_realloc(void *ud, void *p, size_t n) {
  (void)ud;
  return realloc(p, n);
}
static void plain_free(void *ud, void *p) {
  (void)ud;
  free(p);
}

static void test_alloc_failure(void **state) {
  (void)state;
  unsigned char b[512];
  size_t n = make_npy(b, 1, 0, GOOD_23, k6, 24);
  xir_allocator a = {failing_alloc, failing_realloc, plain_free, NULL};
  xir_set_allocator(&a);
  for (int k = 0; k < 3; k++) {
    g_fail_after = k;
    float *r = NULL;
    size_t shape[2];
    int nd;
    xir_diag d;
    xir_diag_clear(&d);
    xir_status st = xir__npy_decode_f32(b, n, "oom.npy", &r, shape, &nd, 2, &d);
    if (k < 2) {
      assert_int_equal(st, XIR_ERR_NOMEM);
      assert_null(r);
    } else {
      assert_int_equal(st, XIR_OK);
      xir__free(r);
    }
  }
  char p[1024];
  path_in(p, sizeof p, "oom_w.npy");
  size_t s = 6;
  g_fail_after = 0;
  xir_diag d;
  assert_int_equal(xir__npy_write_f32(p, k6, &s, 1, &d), XIR_ERR_NOMEM);
  g_fail_after = -1;
  xir_set_allocator(NULL);
  assert_int_equal(access(p, F_OK), -1);
}

/* ---------------------------------------------------------------------------------------------- */
/* int64 ('<i8') arrays: the i64 input buffers                                                     */

static void test_i64_roundtrip_and_layout(void **state) {
  (void)state;
  const int64_t v[21] = {0, 1, -1, INT64_MAX, INT64_MIN, (int64_t)1 << 40, 4095, -4096, 7, 8, 9,
                         10, 11, 12, 13, 14, 15, 16, 17, 18, 0x0102030405060708};
  static const struct {
    int ndim;
    size_t s[2];
    const char *dict;
  } cases[] = {{1, {21, 0}, "{'descr': '<i8', 'fortran_order': False, 'shape': (21,), }"},
               {2, {3, 7}, "{'descr': '<i8', 'fortran_order': False, 'shape': (3, 7), }"},
               {0, {0, 0}, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }"},
               {2, {0, 5}, "{'descr': '<i8', 'fortran_order': False, 'shape': (0, 5), }"}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    char p[1024];
    path_in(p, sizeof p, "pos.npy");
    xir_diag d;
    xir_diag_clear(&d);
    assert_int_equal(xir__npy_write_i64(p, v, cases[c].s, cases[c].ndim, &d), XIR_OK);
    size_t n = xir__npy_numel(cases[c].s, cases[c].ndim, NULL);
    size_t blen;
    unsigned char *bytes = slurp(p, &blen);
    /* version 1.0, the dict verbatim, the data at a multiple of 64, little-endian int64 */
    assert_memory_equal(bytes, "\x93NUMPY\x01\x00", 8);
    size_t hl = (size_t)bytes[8] | (size_t)bytes[9] << 8;
    assert_int_equal((10 + hl) % 64, 0);
    assert_memory_equal(bytes + 10, cases[c].dict, strlen(cases[c].dict));
    assert_int_equal(bytes[10 + hl - 1], '\n');
    assert_int_equal(blen, 10 + hl + n * 8);
    for (size_t i = 0; i < n; i++)
      for (int k = 0; k < 8; k++)
        assert_int_equal(bytes[10 + hl + 8 * i + (size_t)k], (unsigned char)((uint64_t)v[i] >> (8 * k)));
    int64_t *r = NULL;
    size_t got[XIR_NPY_MAX_NDIM];
    int gnd = -1;
    assert_int_equal(xir__npy_read_i64(p, &r, got, &gnd, XIR_NPY_MAX_NDIM, &d), XIR_OK);
    assert_non_null(r);
    assert_int_equal(gnd, cases[c].ndim);
    for (int k = 0; k < gnd; k++) assert_int_equal(got[k], cases[c].s[k]);
    for (size_t i = 0; i < n; i++) assert_true(r[i] == v[i]);
    xir__free(r);
    r = NULL;
    assert_int_equal(xir__npy_decode_i64(bytes, blen, "pos.npy", &r, got, &gnd, XIR_NPY_MAX_NDIM,
                                         &d), XIR_OK);
    for (size_t i = 0; i < n; i++) assert_true(r[i] == v[i]);
    xir__free(r);
    /* an int64 file is not a float32 file, and the other way round */
    float *f = (float *)(uintptr_t)1;
    assert_int_equal(xir__npy_decode_f32(bytes, blen, "pos.npy", &f, got, &gnd, 2, &d),
                     XIR_ERR_FORMAT);
    assert_null(f);
    assert_contains(d.msg, "unsupported dtype '<i8'");
    assert_contains(d.msg, "float32 '<f4'");
    free(bytes);
  }
  assert_int_equal(count_tmp(g_dir), 0);
}

static void test_i64_read_errors(void **state) {
  (void)state;
  unsigned char b[512];
  int64_t *r = (int64_t *)(uintptr_t)1;
  size_t shape[4];
  int nd = 9;
  xir_diag d;
  size_t n = make_npy(b, 1, 0, GOOD_23, k6, 24);
  assert_int_equal(xir__npy_decode_i64(b, n, "x.npy", &r, shape, &nd, 4, &d), XIR_ERR_FORMAT);
  assert_null(r);
  assert_int_equal(nd, 0);
  assert_contains(d.msg, "x.npy");
  assert_contains(d.msg, "unsupported dtype '<f4' (only little-endian int64 '<i8' is supported)");
  /* 6 int64 elements need 48 bytes: 24 is truncated data */
  n = make_npy(b, 1, 0, "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }\n", k6, 24);
  assert_int_equal(xir__npy_decode_i64(b, n, "t.npy", &r, shape, &nd, 4, &d), XIR_ERR_FORMAT);
  assert_contains(d.msg, "truncated data");
  assert_contains(d.msg, "48 bytes of int64 data");
  n = make_npy(b, 1, 0, "{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }\n", k6, 24);
  assert_int_equal(xir__npy_decode_i64(b, n, "be.npy", &r, shape, &nd, 4, &d), XIR_ERR_FORMAT);
  assert_contains(d.msg, "'>i8'");
  n = make_npy(b, 1, 0, "{'descr': '<i8', 'fortran_order': True, 'shape': (3,), }\n", k6, 24);
  assert_int_equal(xir__npy_decode_i64(b, n, "fo.npy", &r, shape, &nd, 4, &d), XIR_ERR_FORMAT);
  assert_contains(d.msg, "fortran_order");
  /* writing: no path, no data */
  size_t s1[1] = {3};
  assert_int_equal(xir__npy_write_i64(NULL, NULL, s1, 1, &d), XIR_ERR_INVALID_ARG);
  char p[1024];
  path_in(p, sizeof p, "nodata.npy");
  assert_int_equal(xir__npy_write_i64(p, NULL, s1, 1, &d), XIR_ERR_INVALID_ARG);
  path_in(p, sizeof p, "no/such/folder/pos.npy");
  const int64_t v[3] = {1, 2, 3};
  assert_int_equal(xir__npy_write_i64(p, v, s1, 1, &d), XIR_ERR_IO);
}

/* ---------------------------------------------------------------------------------------------- */
/* numpy cross-check (skipped when numpy is not installed)                                         */

static void test_numpy_crosscheck(void **state) {
  (void)state;
  if (system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    print_message("numpy not available: skipping the cross-check\n");
    skip();
  }
  /* Shapes both ways: 0-D, 1-D, empty, 3-D, 2-D. Element i holds i * 0.25 - 1. */
  static const struct {
    const char *py;
    int ndim;
    size_t s[3];
  } shapes[] = {{"()", 0, {0}}, {"(5,)", 1, {5}}, {"(0, 4)", 2, {0, 4}},
                {"(2, 3, 2)", 3, {2, 3, 2}}, {"(17, 65)", 2, {17, 65}}};
  char script[8192];
  int pos = snprintf(script, sizeof script, "python3 -c \"import numpy as np\n");
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    char ours[1024], theirs[1024];
    snprintf(ours, sizeof ours, "%s/ours%zu.npy", g_dir, i);
    snprintf(theirs, sizeof theirs, "%s/theirs%zu.npy", g_dir, i);
    size_t n = xir__npy_numel(shapes[i].s, shapes[i].ndim, NULL);
    float *v = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(v);
    for (size_t j = 0; j < n; j++) v[j] = (float)j * 0.25f - 1.0f;
    assert_int_equal(xir__npy_write_f32(ours, v, shapes[i].s, shapes[i].ndim, NULL), XIR_OK);
    free(v);
    pos += snprintf(script + pos, sizeof script - (size_t)pos,
                    "a = np.load('%s')\n"
                    "assert a.dtype == np.dtype('<f4') and a.shape == %s, (a.dtype, a.shape)\n"
                    "assert (a.ravel() == np.arange(a.size, dtype=np.float32) * 0.25 - 1).all()\n"
                    "np.save('%s', (np.arange(a.size, dtype=np.float32) * 0.25 - 1).reshape(%s))\n",
                    ours, shapes[i].py, theirs, shapes[i].py);
  }
  snprintf(script + pos, sizeof script - (size_t)pos, "\"");
  assert_int_equal(system(script), 0);
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    char theirs[1024];
    snprintf(theirs, sizeof theirs, "%s/theirs%zu.npy", g_dir, i);
    float *r = NULL;
    size_t shape[3];
    int nd;
    xir_diag d;
    xir_diag_clear(&d);
    xir_status st = xir__npy_read_f32(theirs, &r, shape, &nd, 3, &d);
    if (st) fail_msg("%s", d.msg);
    assert_int_equal(nd, shapes[i].ndim);
    for (int k = 0; k < nd; k++) assert_int_equal(shape[k], shapes[i].s[k]);
    size_t n = xir__npy_numel(shape, nd, NULL);
    for (size_t j = 0; j < n; j++) assert_true(r[j] == (float)j * 0.25f - 1.0f);
    xir__free(r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header_exact_bytes),
      cmocka_unit_test(test_header_every_rank),
      cmocka_unit_test(test_format_shape),
      cmocka_unit_test(test_roundtrip_shapes),
      cmocka_unit_test(test_overwrite_is_atomic_replace),
      cmocka_unit_test(test_write_missing_folder),
      cmocka_unit_test(test_write_unwritable_folder),
      cmocka_unit_test(test_write_failure_removes_temp),
      cmocka_unit_test(test_write_invalid_args),
      cmocka_unit_test(test_read_bad_magic_and_version),
      cmocka_unit_test(test_read_truncated),
      cmocka_unit_test(test_read_dtype_and_order),
      cmocka_unit_test(test_i64_roundtrip_and_layout),
      cmocka_unit_test(test_i64_read_errors),
      cmocka_unit_test(test_read_malformed_dict),
      cmocka_unit_test(test_read_too_many_dims),
      cmocka_unit_test(test_read_robust_header),
      cmocka_unit_test(test_read_io_errors),
      cmocka_unit_test(test_check_shape),
      cmocka_unit_test(test_alloc_failure),
      cmocka_unit_test(test_numpy_crosscheck),
  };
  if (make_dir()) {
    fprintf(stderr, "cannot create a scratch folder in %s\n", g_dir);
    return 1;
  }
  int rc = cmocka_run_group_tests_name("npy", tests, NULL, NULL);
  remove_tree(g_dir);
  return rc;
}
