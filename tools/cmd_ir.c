/* cmd_ir.c — `xir kernels`, `xir check`, `xir print`: the commands that read programs only. */
#include <cjson/cJSON.h>
#include <string.h>

#include "cli.h"

/* "x: f32[R, C]" / "y: out f32[R, C]" / "eps: f32 = 1e-05" into buf. */
static const char *param_str(const xir_program *p, int i, char *buf, size_t cap) {
  xir_param_info in;
  xir_program_param(p, i, &in);
  size_t o = (size_t)snprintf(buf, cap, "%s: ", in.name);
  if (in.kind == XIR_PARAM_BUFFER) {
    o += (size_t)snprintf(buf + o, cap - o, "%s%s[", in.is_output ? "out " : "",
                          xir_elem_name(in.elem));
    for (int k = 0; k < in.rank; k++)
      o += (size_t)snprintf(buf + o, cap - o, "%s%s", k ? ", " : "",
                            xir_program_dim_name(p, in.dims[k]));
    snprintf(buf + o, cap - o, "]");
  } else {
    o += (size_t)snprintf(buf + o, cap - o, "%s", in.elem == XIR_I64 ? "i64" : "f32");
    if (in.has_default) snprintf(buf + o, cap - o, " = %g", in.default_value);
  }
  return buf;
}

int cmd_kernels(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: xir kernels [--json]\n\n"
           "Lists the built-in kernels: name, dims (bound at launch with --shape), parameters\n"
           "(buffers and scalars with their defaults) and what each computes.\n");
    return 0;
  }
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) json = 1;
    else return cli_usage_error("kernels", "unknown option '%s'", argv[i]);
  }
  cJSON *arr = json ? cJSON_CreateArray() : NULL;
  for (int k = 0; k < xir_kernel_count(); k++) {
    xir_program *p;
    xir_diag d;
    if (xir_kernel_load(xir_kernel_name(k), &p, &d)) return cli_fail(&d);
    char dims[256] = "", params[1024] = "", buf[256];
    size_t o = 0;
    for (int i = 0; i < xir_program_num_dims(p); i++)
      o += (size_t)snprintf(dims + o, sizeof dims - o, "%s%s", i ? ", " : "",
                            xir_program_dim_name(p, i));
    o = 0;
    for (int i = 0; i < xir_program_num_params(p); i++)
      o += (size_t)snprintf(params + o, sizeof params - o, "%s%s", i ? ", " : "",
                            param_str(p, i, buf, sizeof buf));
    if (json) {
      cJSON *o1 = cJSON_CreateObject();
      cJSON_AddStringToObject(o1, "name", xir_kernel_name(k));
      cJSON_AddStringToObject(o1, "summary", xir_kernel_summary(k));
      cJSON *jd = cJSON_AddArrayToObject(o1, "dims");
      for (int i = 0; i < xir_program_num_dims(p); i++)
        cJSON_AddItemToArray(jd, cJSON_CreateString(xir_program_dim_name(p, i)));
      cJSON *jp = cJSON_AddArrayToObject(o1, "params");
      for (int i = 0; i < xir_program_num_params(p); i++) {
        xir_param_info in;
        xir_program_param(p, i, &in);
        cJSON *q = cJSON_CreateObject();
        cJSON_AddStringToObject(q, "name", in.name);
        cJSON_AddStringToObject(q, "kind", in.kind == XIR_PARAM_BUFFER ? "buffer" : "scalar");
        cJSON_AddStringToObject(q, "type", xir_elem_name(in.elem));
        if (in.kind == XIR_PARAM_BUFFER) {
          cJSON_AddBoolToObject(q, "output", in.is_output);
          cJSON *sh = cJSON_AddArrayToObject(q, "dims");
          for (int r = 0; r < in.rank; r++)
            cJSON_AddItemToArray(sh, cJSON_CreateString(xir_program_dim_name(p, in.dims[r])));
        } else if (in.has_default) {
          cJSON_AddNumberToObject(q, "default", in.default_value);
        }
        cJSON_AddItemToArray(jp, q);
      }
      cJSON *jr = cJSON_AddArrayToObject(o1, "root");
      for (int r = 0; r < xir_program_num_root(p); r++)
        cJSON_AddItemToArray(jr, cJSON_CreateString(xir_program_root_name(p, r)));
      cJSON_AddItemToArray(arr, o1);
    } else {
      printf("%-17s [%s]\n    (%s)\n    %s\n", xir_kernel_name(k), dims, params,
             xir_kernel_summary(k));
    }
    xir_program_free(p);
  }
  if (json) {
    char *s = cJSON_Print(arr);
    puts(s);
    cJSON_free(s);
    cJSON_Delete(arr);
  }
  return 0;
}

int cmd_check(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: xir check FILE...\n\n"
           "Parses and verifies each XIR file. Prints 'FILE: ok (kernel NAME)' or the first\n"
           "error as FILE:LINE:COL: error: MESSAGE. Exit status 1 if any file fails.\n");
    return 0;
  }
  if (argc < 2) return cli_usage_error("check", "needs a FILE");
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    xir_program *p;
    xir_diag d;
    if (xir_program_parse_file(argv[i], &p, &d)) {
      rc = cli_fail(&d);
      continue;
    }
    printf("%s: ok (kernel %s)\n", argv[i], xir_program_name(p));
    xir_program_free(p);
  }
  return rc;
}

int cmd_print(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: xir print FILE|KERNEL\n\n"
           "Prints the canonical text of an XIR file or a built-in kernel: one statement per\n"
           "value, every op in call form. Printing what it prints gives the same text.\n");
    return 0;
  }
  if (argc != 2) return cli_usage_error("print", "needs exactly one FILE or KERNEL");
  xir_program *p;
  xir_diag d;
  if (cli_load_program(argv[1], &p, &d)) return cli_fail(&d);
  char *text;
  if (xir_program_print(p, &text, &d)) {
    xir_program_free(p);
    return cli_fail(&d);
  }
  fputs(text, stdout);
  xir_free(text);
  xir_program_free(p);
  return 0;
}
