/* test_corpus.c — the XIR corpus under tests/corpus/ (found through XIR_SOURCE_DIR).
 *
 * invalid/NAME.xir: the first line is `# expect: LINE:COL: TEXT`. Parsing the file must fail with
 * XIR_ERR_PARSE or XIR_ERR_VERIFY, no program, and a diagnostic at exactly LINE:COL whose message
 * contains TEXT (and names the file). Parsing the same bytes from memory must give the same
 * diagnostic. A second line `# known-bug: WHY` marks an expectation that src/ does not meet yet:
 * the mismatch is reported but not failed, and meeting it fails the test so that the marker gets
 * removed.
 * valid/NAME.xir: parse, print, parse the printed text, print again: the two prints are identical,
 * and the reparsed program keeps the name, dims, parameters and root domain. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xir.h"

#define MAX_FILES 1024

static const char *source_dir(void) {
  const char *s = getenv("XIR_SOURCE_DIR");
  return s && *s ? s : ".";
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted full paths of the .xir files in dir; returns the count. */
static int list_xir(const char *dir, char **out, int cap) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".xir") != 0) continue;
    if (n >= cap) break;
    size_t need = strlen(dir) + len + 2;
    out[n] = malloc(need);
    assert_non_null(out[n]);
    snprintf(out[n], need, "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  qsort(out, (size_t)n, sizeof *out, cmp_str);
  return n;
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (n == cap) buf = realloc(buf, cap *= 2);
    size_t r = fread(buf + n, 1, cap - n, f);
    if (r == 0) break;
    n += r;
  }
  fclose(f);
  buf = realloc(buf, n + 1);
  buf[n] = 0;
  *len = n;
  return buf;
}

/* Copies line `k` (0-based) of text into buf (without the newline). */
static int get_line(const char *text, size_t len, int k, char *buf, size_t cap) {
  const char *s = text, *end = text + len;
  for (int i = 0; i < k; i++) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    if (!nl) return 0;
    s = nl + 1;
  }
  const char *nl = memchr(s, '\n', (size_t)(end - s));
  size_t n = (size_t)((nl ? nl : end) - s);
  if (n >= cap) n = cap - 1;
  memcpy(buf, s, n);
  buf[n] = 0;
  return 1;
}

typedef struct expectation {
  int line, col;
  char text[1024];
  char known[1024]; /* non-empty: a known bug */
} expectation;

static int parse_expectation(const char *text, size_t len, expectation *e) {
  char l0[1024], l1[1024];
  memset(e, 0, sizeof *e);
  if (!get_line(text, len, 0, l0, sizeof l0)) return 0;
  int used = 0;
  if (sscanf(l0, "# expect: %d:%d: %n", &e->line, &e->col, &used) != 2 || used == 0) return 0;
  snprintf(e->text, sizeof e->text, "%s", l0 + used);
  if (get_line(text, len, 1, l1, sizeof l1) && strncmp(l1, "# known-bug: ", 13) == 0)
    snprintf(e->known, sizeof e->known, "%s", l1 + 13);
  return e->line > 0 && e->col > 0 && e->text[0];
}

/* Returns NULL when the diagnostic meets the expectation, else a description (static). */
static const char *mismatch(const char *path, xir_status s, const xir_program *p,
                            const xir_diag *d, const expectation *e) {
  static char why[2048];
  if (s == XIR_OK) return "the invalid program was accepted";
  if (p) return "a program was returned together with an error";
  if (s != XIR_ERR_PARSE && s != XIR_ERR_VERIFY) {
    snprintf(why, sizeof why, "status %s (expected parse or verify error): %s",
             xir_status_name(s), d->msg);
    return why;
  }
  if (d->status != s) return "the diagnostic's status differs from the returned status";
  if (d->line != e->line || d->col != e->col || !strstr(d->msg, e->text)) {
    snprintf(why, sizeof why, "got %d:%d: %s", d->line, d->col, d->msg);
    return why;
  }
  if (path && strcmp(d->file, path) != 0) {
    snprintf(why, sizeof why, "the diagnostic names file '%s'", d->file);
    return why;
  }
  return NULL;
}

static void test_invalid_corpus(void **state) {
  (void)state;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/corpus/invalid", source_dir());
  char *files[MAX_FILES];
  int n = list_xir(dir, files, MAX_FILES);
  if (n < 0) fail_msg("cannot open %s (set XIR_SOURCE_DIR to the source tree)", dir);
  assert_true(n >= 40);
  int failures = 0, known = 0;
  for (int i = 0; i < n; i++) {
    size_t len;
    char *text = read_all(files[i], &len);
    assert_non_null(text);
    expectation e;
    if (!parse_expectation(text, len, &e)) {
      printf("FAIL %s: the first line is not '# expect: LINE:COL: TEXT'\n", files[i]);
      failures++;
      free(text);
      free(files[i]);
      continue;
    }
    if (e.known[0] && strstr(e.known, "crash")) {
      printf("SKIP %s (known crash: %s)\n", files[i], e.known);
      known++;
      free(text);
      free(files[i]);
      continue;
    }
    xir_program *p = (xir_program *)1;
    xir_diag d;
    memset(&d, 0, sizeof d);
    xir_status s = xir_program_parse_file(files[i], &p, &d);
    const char *why = mismatch(files[i], s, p, &d, &e);
    char why_file[2048];
    snprintf(why_file, sizeof why_file, "%s", why ? why : "");
    xir_program_free(p == (xir_program *)1 ? NULL : p);
    /* The same bytes from memory: the same diagnostic. */
    xir_program *q = (xir_program *)1;
    xir_diag dm;
    memset(&dm, 0, sizeof dm);
    xir_status sm = xir_program_parse(text, len, files[i], &q, &dm);
    const char *why_mem = mismatch(files[i], sm, q, &dm, &e);
    xir_program_free(q == (xir_program *)1 ? NULL : q);
    if (!why && (sm != s || strcmp(dm.msg, d.msg) != 0))
      why_mem = "parsing from memory gives another diagnostic than parsing the file";
    int bad = why || why_mem;
    if (e.known[0]) {
      if (bad) {
        printf("KNOWN BUG %s: %s -- %s\n", files[i], e.known, why ? why_file : why_mem);
        known++;
      } else {
        printf("FAIL %s: marked known-bug but now meets its expectation: remove the "
               "'# known-bug' line\n", files[i]);
        failures++;
      }
    } else if (bad) {
      printf("FAIL %s: expected %d:%d: ...%s... -- %s\n", files[i], e.line, e.col, e.text,
             why ? why_file : why_mem);
      failures++;
    }
    free(text);
    free(files[i]);
  }
  printf("invalid corpus: %d files, %d known bugs, %d failures\n", n, known, failures);
  assert_int_equal(failures, 0);
}

static void same_interface(const xir_program *a, const xir_program *b) {
  assert_string_equal(xir_program_name(a), xir_program_name(b));
  assert_int_equal(xir_program_num_dims(a), xir_program_num_dims(b));
  for (int i = 0; i < xir_program_num_dims(a); i++)
    assert_string_equal(xir_program_dim_name(a, i), xir_program_dim_name(b, i));
  assert_int_equal(xir_program_num_params(a), xir_program_num_params(b));
  for (int i = 0; i < xir_program_num_params(a); i++) {
    xir_param_info x, y;
    assert_int_equal(xir_program_param(a, i, &x), XIR_OK);
    assert_int_equal(xir_program_param(b, i, &y), XIR_OK);
    assert_string_equal(x.name, y.name);
    assert_int_equal(x.kind, y.kind);
    assert_int_equal(x.elem, y.elem);
    assert_int_equal(x.is_output, y.is_output);
    assert_int_equal(x.rank, y.rank);
    for (int k = 0; k < x.rank; k++) assert_int_equal(x.dims[k], y.dims[k]);
    assert_int_equal(x.has_default, y.has_default);
    if (x.has_default) assert_memory_equal(&x.default_value, &y.default_value, sizeof(double));
  }
  assert_int_equal(xir_program_num_root(a), xir_program_num_root(b));
  for (int k = 0; k < xir_program_num_root(a); k++) {
    assert_string_equal(xir_program_root_name(a, k), xir_program_root_name(b, k));
    assert_int_equal(xir_program_root_dim(a, k), xir_program_root_dim(b, k));
  }
}

/* parse -> print -> parse -> print; the prints must be identical. */
static void roundtrip_text(const char *label, const char *text, size_t len) {
  xir_program *p, *q;
  xir_diag d;
  char buf[2048];
  if (xir_program_parse(text, len, label, &p, &d))
    fail_msg("%s does not parse: %s", label, xir_diag_format(&d, buf, sizeof buf));
  char *t1, *t2;
  assert_int_equal(xir_program_print(p, &t1, &d), XIR_OK);
  if (xir_program_parse(t1, strlen(t1), "printed", &q, &d))
    fail_msg("the printed form of %s does not parse: %s\n%s", label,
             xir_diag_format(&d, buf, sizeof buf), t1);
  assert_int_equal(xir_program_print(q, &t2, &d), XIR_OK);
  if (strcmp(t1, t2) != 0) fail_msg("%s: print(parse(print)) differs:\n%s\n---\n%s", label, t1, t2);
  same_interface(p, q);
  xir_free(t1);
  xir_free(t2);
  xir_program_free(p);
  xir_program_free(q);
}

static void test_valid_corpus(void **state) {
  (void)state;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/corpus/valid", source_dir());
  char *files[MAX_FILES];
  int n = list_xir(dir, files, MAX_FILES);
  if (n < 0) fail_msg("cannot open %s (set XIR_SOURCE_DIR to the source tree)", dir);
  assert_true(n >= 10);
  for (int i = 0; i < n; i++) {
    size_t len;
    char *text = read_all(files[i], &len);
    assert_non_null(text);
    xir_program *p;
    xir_diag d;
    char buf[2048];
    if (xir_program_parse_file(files[i], &p, &d))
      fail_msg("%s", xir_diag_format(&d, buf, sizeof buf));
    xir_program_free(p);
    roundtrip_text(files[i], text, len);
    free(text);
    free(files[i]);
  }
}

/* The built-in kernels are part of the corpus too. */
static void test_builtin_kernels_roundtrip(void **state) {
  (void)state;
  assert_true(xir_kernel_count() >= 9);
  for (int i = 0; i < xir_kernel_count(); i++)
    roundtrip_text(xir_kernel_name(i), xir_kernel_text(i), strlen(xir_kernel_text(i)));
}

/* A truncated or NUL-padded prefix of a valid program never crashes and never half-succeeds. */
static void test_prefixes_of_valid_programs(void **state) {
  (void)state;
  for (int i = 0; i < xir_kernel_count(); i++) {
    const char *t = xir_kernel_text(i);
    size_t len = strlen(t);
    for (size_t k = 0; k < len; k++) {
      xir_program *p = (xir_program *)1;
      xir_diag d;
      memset(&d, 0, sizeof d);
      xir_status s = xir_program_parse(t, k, "prefix", &p, &d);
      if (s == XIR_OK) {
        xir_program_free(p);
        continue; /* e.g. the text minus its final newline */
      }
      assert_null(p);
      assert_true(s == XIR_ERR_PARSE || s == XIR_ERR_VERIFY);
      assert_true(d.line >= 1 && d.col >= 1);
      assert_true(d.msg[0] != 0);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_invalid_corpus),
      cmocka_unit_test(test_valid_corpus),
      cmocka_unit_test(test_builtin_kernels_roundtrip),
      cmocka_unit_test(test_prefixes_of_valid_programs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
