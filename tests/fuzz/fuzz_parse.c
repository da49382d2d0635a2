/* fuzz_parse.c — libFuzzer target for the XIR parser.
 *
 * Parses the input; when it parses (and verifies), prints it, parses the printed text, prints
 * again and aborts unless both prints are byte-identical (print∘parse must be the identity on
 * printed text). Any crash, sanitizer report or abort is a bug in src/ir/.
 *
 * Built by tests/fuzz/run_fuzz.sh (clang -fsanitize=fuzzer,address,undefined). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xir.h"

static void die(const char *what, const char *a, const char *b, const xir_diag *d) {
  fprintf(stderr, "fuzz_parse: %s\n", what);
  if (d) {
    char buf[2048];
    fprintf(stderr, "  diag: %s\n", xir_diag_format(d, buf, sizeof buf));
  }
  if (a) fprintf(stderr, "--- first print ---\n%s\n", a);
  if (b) fprintf(stderr, "--- second print ---\n%s\n", b);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  xir_program *p = NULL;
  xir_diag d;
  xir_status s = xir_program_parse((const char *)data, size, "fuzz.xir", &p, &d);
  if (s != XIR_OK) {
    if (p) die("failed parse returned a program", NULL, NULL, &d);
    if (s != XIR_ERR_PARSE && s != XIR_ERR_VERIFY && s != XIR_ERR_NOMEM)
      die("parse failed with an unexpected status", NULL, NULL, &d);
    if (d.msg[0] == 0) die("parse failed with an empty message", NULL, NULL, &d);
    return 0;
  }
  char *t1 = NULL, *t2 = NULL;
  if (xir_program_print(p, &t1, &d)) die("print failed", NULL, NULL, &d);
  xir_program *q = NULL;
  if (xir_program_parse(t1, strlen(t1), "print1.xir", &q, &d))
    die("the printed text does not parse", t1, NULL, &d);
  if (xir_program_print(q, &t2, &d)) die("second print failed", t1, NULL, &d);
  if (strcmp(t1, t2) != 0) die("print(parse(print(p))) != print(p)", t1, t2, NULL);
  xir_free(t1);
  xir_free(t2);
  xir_program_free(p);
  xir_program_free(q);
  return 0;
}
