/* test_memcheck.c — the memory-available probe (util.h): cgroup v2 and v1 limits minus usage on
 * the way up from this process's cgroup, MemAvailable, the XIR_MEM_AVAILABLE hook, all read from
 * fake files; and a case larger than the memory available fails with XIR_ERR_NOMEM and both
 * numbers instead of being allocated (and OOM-killed when touched). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "check/check.h"
#include "util/util.h"
#include "xir.h"

static char g_tmp[256];

static void put(const char *rel, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", g_tmp, rel);
  /* make the parent folders */
  for (char *q = path + strlen(g_tmp) + 1; *q; q++)
    if (*q == '/') {
      *q = 0;
      mkdir(path, 0700);
      *q = '/';
    }
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void paths(char *root, char *cg, char *mi, size_t cap) {
  snprintf(root, cap, "%s/sys", g_tmp);
  snprintf(cg, cap, "%s/cgroup", g_tmp);
  snprintf(mi, cap, "%s/meminfo", g_tmp);
}

static void test_cgroup_v2_limit_minus_usage_tightest_ancestor(void **state) {
  (void)state;
  unsetenv("XIR_MEM_AVAILABLE");
  char root[512], cg[512], mi[512];
  paths(root, cg, mi, sizeof root);
  put("cgroup", "0::/a/b\n");
  put("sys/a/b/memory.max", "1000000\n");
  put("sys/a/b/memory.current", "400000\n");
  put("sys/a/memory.max", "max\n");
  put("sys/a/memory.current", "123\n");
  put("meminfo", "MemTotal:  100 kB\nMemAvailable:   5000 kB\n");
  xir_mem_info m;
  xir__mem_probe(root, cg, mi, &m);
  assert_int_equal(m.cgroup, 600000);
  assert_int_equal(m.meminfo, 5000 * 1024);
  assert_int_equal(m.available, 600000);
  assert_non_null(strstr(m.cgroup_dir, "/sys/a/b"));
  /* an ancestor with less room wins */
  put("sys/a/memory.max", "500000\n");
  put("sys/a/memory.current", "300000\n");
  xir__mem_probe(root, cg, mi, &m);
  assert_int_equal(m.available, 200000);
  /* usage above the limit: nothing available */
  put("sys/a/b/memory.current", "2000000\n");
  xir__mem_probe(root, cg, mi, &m);
  assert_int_equal(m.available, 0);
  /* MemAvailable lower than every cgroup figure */
  put("sys/a/b/memory.current", "0\n");
  put("sys/a/memory.max", "max\n");
  put("meminfo", "MemAvailable:   100 kB\n");
  xir__mem_probe(root, cg, mi, &m);
  assert_int_equal(m.available, 100 * 1024);
}

static void test_cgroup_v1_and_no_limit(void **state) {
  (void)state;
  unsetenv("XIR_MEM_AVAILABLE");
  char root[512], cg[512], mi[512];
  paths(root, cg, mi, sizeof root);
  snprintf(root, sizeof root, "%s/v1", g_tmp);
  put("cgroup", "5:cpu:/x\n4:memory:/x\n0::/\n");
  put("v1/memory/x/memory.limit_in_bytes", "1073741824\n");
  put("v1/memory/x/memory.usage_in_bytes", "73741824\n");
  put("v1/memory/memory.limit_in_bytes", "9223372036854771712\n"); /* v1's "no limit" */
  put("v1/memory/memory.usage_in_bytes", "5\n");
  put("meminfo", "MemAvailable:   99999999 kB\n");
  xir_mem_info m;
  xir__mem_probe(root, cg, mi, &m);
  assert_int_equal(m.cgroup, 1000000000);
  assert_int_equal(m.available, 1000000000);
  /* nothing known: no limit */
  xir__mem_probe(NULL, NULL, NULL, &m);
  assert_true(m.available == UINT64_MAX);
}

static void test_check_and_case_fail_with_both_numbers(void **state) {
  (void)state;
  setenv("XIR_MEM_AVAILABLE", "1000", 1);
  xir_diag d;
  assert_int_equal(xir__mem_check(1000, "x", &d), XIR_OK);
  assert_int_equal(xir__mem_check(2000, "the buffers of 'k'", &d), XIR_ERR_NOMEM);
  assert_non_null(strstr(d.msg, "need 2000 bytes"));
  assert_non_null(strstr(d.msg, "only 1000 bytes"));
  assert_non_null(strstr(d.msg, "MemAvailable"));
  /* a case: 20000 x 20000 rmsnorm needs 6.4 GB; refused before anything is allocated */
  setenv("XIR_MEM_AVAILABLE", "1073741824", 1);
  xir_program *p;
  assert_int_equal(xir_kernel_load("rmsnorm", &p, &d), XIR_OK);
  xir_shape sh;
  assert_int_equal(xir_shape_parse(p, "R=20000,C=20000", &sh, &d), XIR_OK);
  xir_case c;
  assert_int_equal(xir__case_init(&c, p, &sh, 1, &d), XIR_ERR_NOMEM);
  assert_non_null(strstr(d.msg, "need 6400080512 bytes"));
  assert_non_null(strstr(d.msg, "1073741824 bytes"));
  /* a small case still fits */
  assert_int_equal(xir_shape_parse(p, "R=3,C=7", &sh, &d), XIR_OK);
  assert_int_equal(xir__case_init(&c, p, &sh, 1, &d), XIR_OK);
  xir__case_free(&c);
  xir_program_free(p);
  unsetenv("XIR_MEM_AVAILABLE");
}

static int setup(void **state) {
  (void)state;
  snprintf(g_tmp, sizeof g_tmp, "/tmp/xir-mem-XXXXXX");
  return mkdtemp(g_tmp) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cgroup_v2_limit_minus_usage_tightest_ancestor),
      cmocka_unit_test(test_cgroup_v1_and_no_limit),
      cmocka_unit_test(test_check_and_case_fail_with_both_numbers),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
