/* cmd_run.c — `xir run`: bind dims, make seeded inputs (or read .npy files), evaluate, check
 * against the fp64 oracle, print a summary, optionally save every buffer as .npy. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check/check.h"
#include "cli.h"
#include "util/npy.h"
#include "native.h"
#include "plan_flags.h"
#include "util/util.h"

static void run_help(void) {
  printf(
      "usage: xir run KERNEL|FILE --shape D=N,... [options]\n\n"
      "Binds the dims, makes seeded random inputs (never zero) or reads them, evaluates the\n"
      "program, checks every output against the fp64 reference interpreter and prints a\n"
      "summary. Inputs and outputs are NumPy .npy files (format 1.0, little-endian float32;\n"
      "int64 for i64 input buffers, '<f2' for f16 and ml_dtypes' 'bfloat16' for bf16 buffers)\n"
      "named after the parameters (x.npy, pos.npy, ...).\n\n"
      "options:\n"
      "  --shape D=N,...   value of every dim, e.g. R=129,C=768 (required)\n"
      "  --dtype SPEC      retype buffers: bf16 | f16 | f32 for every float buffer, and/or\n"
      "                    NAME=TYPE items, e.g. --dtype bf16 or --dtype x=bf16,w=f32\n"
      "  --seed N          seed of the random inputs (default 1)\n"
      "  --set NAME=VALUE  set a scalar parameter (repeatable), e.g. --set eps=1e-6\n"
      "  --inputs DIR      read every input from DIR/<param>.npy instead\n"
      "  --save DIR        write every input and output to DIR/<param>.npy (DIR is created)\n"
      "  --json            print the summary as JSON\n"
      "  --candidate NAME  run this mapping candidate (e.g. perm=r,l=16,B=16,W=16)\n"
      "  --all-candidates  run and check every legal candidate\n"
      "  --interpret       evaluate with the fp64 interpreter only (no native code)\n"
      "planner options (as in xir plan): --local N, --search-grain, --grain G, --workers N,\n"
      "  --width W, --policy default|priors|experimental, --budget N\n\n"
      "By default the planner chooses the candidate and grain (and says which ran); native\n"
      "code is compiled for it and launched through the runtime on --workers workers;\n"
      "every output is checked against the fp64 oracle and the exit status is 1 on mismatch.\n"
      "A 'note:' line says when an input is outside a built-in kernel's documented f32 range\n"
      "(rmsnorm/layernorm row norms, rope positions; docs/xir.md), where f32 code may miss.\n"
      "Before any buffer is allocated, the bytes the case needs are compared with the memory\n"
      "available (cgroup limit minus usage, MemAvailable; XIR_MEM_AVAILABLE=BYTES lowers it):\n"
      "a case that does not fit fails with both numbers instead of being OOM-killed. --save is\n"
      "all or nothing: no file is left when one cannot be written.\n"
      "Each run reports its JIT time and whether the on-disk kernel cache had the kernel\n"
      "(cache hit|miss|off; JSON: \"jit_ms\", \"cache\"; docs/cache.md; XIR_NO_KERNEL_CACHE=1\n"
      "turns it off).\n");
}

/* Why creating folder `dir` failed with errno e, naming the path that is actually at fault: the
 * first component that is not a folder, or the first that does not exist. */
static void mkdir_failure(const char *dir, int e, xir_diag *d) {
  char path[4096];
  snprintf(path, sizeof path, "%s", dir);
  struct stat st;
  if (e == ENOTDIR || e == ENOENT) {
    for (char *q = path + 1;; q++) {
      int end = *q == 0;
      if (*q == '/' || end) {
        char c = *q;
        *q = 0;
        if (stat(path, &st) != 0) {
          if (errno == ENOENT && !end) {
            xir__err(d, XIR_ERR_IO, "cannot create output folder '%s': '%s' does not exist", dir, path);
            return;
          }
        } else if (!S_ISDIR(st.st_mode)) {
          if (end) xir__err(d, XIR_ERR_IO, "'%s' exists and is not a folder", dir);
          else xir__err(d, XIR_ERR_IO, "cannot create output folder '%s': '%s' is not a folder", dir, path);
          return;
        }
        *q = c;
      }
      if (end) break;
    }
  }
  xir__err(d, XIR_ERR_IO, "cannot create output folder '%s': %s", dir, strerror(e));
}

/* --save DIR, all or nothing: every buffer is first written under a hidden staging name in DIR;
 * only when all of them are written (and no final name is taken by something that is not a
 * regular file) are they renamed to DIR/<param>.npy. On failure the staged files are removed, and
 * DIR too when this run created it. */
static xir_status save_buffers(const xir_program *p, const xir_shape *shape, const xir_case *cs,
                               const char *save, xir_diag *d) {
  struct stat st;
  int existed = stat(save, &st) == 0;
  if (cli_make_dir(save, 0)) {
    mkdir_failure(save, errno, d);
    return XIR_ERR_IO;
  }
  int np = xir_program_num_params(p), nstaged = 0;
  char (*staged)[4096] = xir__calloc((size_t)np, sizeof *staged);
  char (*final)[4096] = xir__calloc((size_t)np, sizeof *final);
  xir_status s = XIR_OK;
  if (!staged || !final) {
    s = xir__err(d, XIR_ERR_NOMEM, "out of memory saving the buffers");
    goto undo;
  }
  for (int i = 0; i < np; i++) {
    xir_param_info in;
    xir_program_param(p, i, &in);
    if (in.kind != XIR_PARAM_BUFFER) continue;
    size_t sh[XIR_MAX_RANK];
    for (int k = 0; k < in.rank; k++) sh[k] = (size_t)shape->dims[in.dims[k]];
    snprintf(final[nstaged], sizeof final[0], "%s/%s.npy", save, in.name);
    snprintf(staged[nstaged], sizeof staged[0], "%s/.%s.npy.saving.%ld", save, in.name, (long)getpid());
    if (in.elem == XIR_I64)
      s = xir__npy_write_i64(staged[nstaged], cs->idata[i], sh, in.rank, d);
    else if (in.elem == XIR_BF16 || in.elem == XIR_F16)
      s = xir__npy_write_half(staged[nstaged], cs->hdata[i], sh, in.rank, in.elem == XIR_BF16, d);
    else
      s = xir__npy_write_f32(staged[nstaged], cs->data[i], sh, in.rank, d);
    if (s) {
      /* name the file the user asked for, not the staging name */
      char msg[sizeof d->msg];
      snprintf(msg, sizeof msg, "%s", d->msg);
      xir__err(d, s, "cannot save '%s' (nothing was saved): %s", final[nstaged], msg);
      goto undo;
    }
    nstaged++;
  }
  for (int k = 0; k < nstaged; k++)
    if (lstat(final[k], &st) == 0 && !S_ISREG(st.st_mode)) {
      s = xir__err(d, XIR_ERR_IO, "cannot save '%s' (nothing was saved): it exists and is not a "
                   "regular file", final[k]);
      goto undo;
    }
  for (int k = 0; k < nstaged; k++)
    if (rename(staged[k], final[k]) != 0) {
      s = xir__err(d, XIR_ERR_IO, "cannot save '%s': %s (%d of %d files were saved)", final[k],
                   strerror(errno), k, nstaged);
      for (int j = k; j < nstaged; j++) remove(staged[j]);
      nstaged = 0;
      goto out;
    }
  goto out;
undo:
  for (int k = 0; k < nstaged; k++) remove(staged[k]);
  if (!existed) rmdir(save);
out:
  xir__free(staged);
  xir__free(final);
  return s;
}

int cmd_run(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    run_help();
    return 0;
  }
  static const struct option opts[] = {
      {"shape", required_argument, 0, 's'}, {"seed", required_argument, 0, 'e'},
      {"set", required_argument, 0, 'v'},   {"inputs", required_argument, 0, 'i'},
      {"save", required_argument, 0, 'o'},  {"json", no_argument, 0, 'j'},
      {"candidate", required_argument, 0, 'c'}, {"all-candidates", no_argument, 0, 'a'},
      {"interpret", no_argument, 0, 'I'}, {"dtype", required_argument, 0, 'T'},
      CLI_PLAN_LONG_OPTIONS,
      {0, 0, 0, 0}};
  const char *cand_name = NULL;
  int all = 0, interpret = 0;
  cli_plan_flags pf;
  cli_plan_flags_init(&pf);
  const char *shape_spec = NULL, *inputs = NULL, *save = NULL, *dtype = NULL;
  const char *sets[XIR_MAX_PARAMS];
  int nsets = 0, json = 0;
  uint64_t seed = 1;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
      case 's': shape_spec = optarg; break;
      case 'e': {
        if (cli_parse_u64(optarg, &seed))
          return cli_usage_error("run", "--seed needs an integer in [0, 2^64), not '%s'", optarg);
        break;
      }
      case 'v':
        if (nsets >= XIR_MAX_PARAMS) return cli_usage_error("run", "too many --set options");
        sets[nsets++] = optarg;
        break;
      case 'i': inputs = optarg; break;
      case 'o': save = optarg; break;
      case 'j': json = 1; break;
      case 'c': cand_name = optarg; break;
      case 'a': all = 1; break;
      case 'I': interpret = 1; break;
      case 'T': dtype = optarg; break;
      default: {
        int r = cli_plan_flag(&pf, c, optarg, "run");
        if (r < 0) return cli_usage_error("run", "unknown or incomplete option '%s'", argv[optind - 1]);
        if (r) return r;
      }
    }
  }
  if (optind != argc - 1) return cli_usage_error("run", "needs exactly one KERNEL or FILE");
  if (!shape_spec) return cli_usage_error("run", "needs --shape (e.g. --shape R=129,C=768)");
  if (!interpret && cli_plan_flags_finish(&pf)) return 1;

  xir_diag d;
  xir_program *p = NULL;
  xir_case cs = {0};
  int rc = 1, all_failed_native = 0;
  native_result nr;
  memset(&nr, 0, sizeof nr);
  if (cli_load_program(argv[optind], &p, &d)) return cli_fail(&d);
  if (cli_retype(&p, dtype, &d)) goto fail;
  xir_shape shape;
  if (xir_shape_parse(p, shape_spec, &shape, &d)) goto fail;
  if (xir__case_init(&cs, p, &shape, seed, &d)) goto fail;
  for (int i = 0; i < nsets; i++) {
    char name[64];
    const char *eq = strchr(sets[i], '=');
    char *end;
    if (!eq || eq == sets[i] || (size_t)(eq - sets[i]) >= sizeof name) {
      rc = cli_usage_error("run", "--set needs NAME=VALUE, not '%s'", sets[i]);
      goto out;
    }
    memcpy(name, sets[i], (size_t)(eq - sets[i]));
    name[eq - sets[i]] = 0;
    int prm = xir_program_find_param(p, name);
    xir_param_info pi = {0};
    if (prm >= 0) xir_program_param(p, prm, &pi);
    double v;
    if (prm >= 0 && pi.kind == XIR_PARAM_SCALAR && pi.elem == XIR_I64) {
      /* an i64 scalar takes an integer literal, nothing that only rounds to one */
      const char *t = eq + 1;
      errno = 0;
      long long iv = strtoll(t, &end, 10);
      if (!*t || *end || !(isdigit((unsigned char)*t) || ((*t == '-') && isdigit((unsigned char)t[1])))) {
        rc = cli_usage_error("run", "--set %s: '%s' is not an integer (%s is an i64)", name, t, name);
        goto out;
      }
      if (errno == ERANGE || llabs(iv) > (1LL << 53)) {
        rc = cli_usage_error("run", "--set %s: %s is outside [-2^53, 2^53], the range of an i64 "
                             "scalar here", name, t);
        goto out;
      }
      v = (double)iv;
    } else {
      v = strtod(eq + 1, &end);
      if (*end || end == eq + 1) {
        rc = cli_usage_error("run", "--set %s: '%s' is not a number", name, eq + 1);
        goto out;
      }
    }
    if (xir__case_set_scalar(&cs, name, v, &d)) goto fail;
  }
  if (inputs && xir__case_load_inputs(&cs, inputs, &d)) goto fail;
  if (xir__case_oracle(&cs, &d)) goto fail;
  if (interpret) {
    for (int i = 0; i < xir_program_num_params(p); i++)
      if (cs.ref[i]) {
        xir_param_info in;
        xir_program_param(p, i, &in);
        for (size_t k = 0; k < cs.numel[i]; k++) {
          float f = (float)cs.ref[i][k];
          if (cs.hdata[i]) /* a bf16/f16 output: the oracle rounded to its type */
            cs.hdata[i][k] = in.elem == XIR_BF16 ? xir_f32_to_bf16(f) : xir_f32_to_f16(f);
          else
            cs.data[i][k] = f;
        }
      }
  } else {
    native_opts no = {.cand = cand_name, .all = all, .width = pf.width_given ? pf.opt.width : 0,
                      .workers = pf.opt.workers,
                      .grain = pf.opt.blocks_per_task == XIR_PLAN_NO_GRAIN ? 0 : (uint32_t)pf.opt.blocks_per_task,
                      .json = json, .plan = &pf.opt};
    if (run_native(p, &shape, &cs, &no, &nr, &d)) goto fail;
    if (!nr.all_pass) all_failed_native = 1;
  }

  char shape_txt[512], fp[65];
  xir_shape_format(p, &shape, shape_txt, sizeof shape_txt);
  xir__case_input_fingerprint(&cs, fp);
  xir_tolerance tol = xir__kernel_tolerance(xir_program_name(p));
  int all_pass = xir__case_sentinels_ok(&cs) && !all_failed_native;
  cJSON *root = cJSON_CreateObject(), *outs = cJSON_CreateArray();
  cJSON_AddStringToObject(root, "kernel", xir_program_name(p));
  cJSON_AddStringToObject(root, "shape", shape_txt);
  cJSON_AddNumberToObject(root, "seed", (double)seed);
  cJSON_AddStringToObject(root, "inputs", inputs ? inputs : "random");
  cJSON_AddStringToObject(root, "input_sha256", fp);
  cJSON_AddStringToObject(root, "evaluator", interpret ? "interpreter" : "native");
  if (nr.json) cJSON_AddItemToObject(root, "runs", nr.json);
  if (!json) {
    printf("kernel %s  shape %s  inputs %s (sha256 %.16s…)\n", xir_program_name(p), shape_txt,
           inputs ? inputs : "random", fp);
    if (interpret)
      printf("evaluated by the fp64 reference interpreter; outputs are its values rounded to f32\n");
    else
      fputs(nr.text, stdout);
  }
  for (int i = 0; i < xir_program_num_params(p); i++) {
    if (!cs.ref[i]) continue;
    xir_param_info in;
    xir_program_param(p, i, &in);
    xir_compare cmp = xir__case_compare(&cs, i, tol);
    all_pass &= cmp.pass;
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    for (size_t k = 0; k < cs.numel[i]; k++) {
      double v = xir__case_output_f32(&cs, i, k);
      mn = v < mn ? v : mn;
      mx = v > mx ? v : mx;
      sum += v;
    }
    if (json) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "name", in.name);
      cJSON_AddNumberToObject(o, "elements", (double)cs.numel[i]);
      cJSON_AddNumberToObject(o, "min", mn);
      cJSON_AddNumberToObject(o, "max", mx);
      cJSON_AddNumberToObject(o, "mean", sum / (double)cs.numel[i]);
      cJSON_AddNumberToObject(o, "max_abs_err", cmp.max_abs);
      cJSON_AddNumberToObject(o, "rel_l2_err", cmp.rel_l2);
      cJSON_AddBoolToObject(o, "pass", cmp.pass);
      cJSON_AddItemToArray(outs, o);
    } else {
      printf("  %-6s %9zu elements  min %-12.6g max %-12.6g mean %-12.6g  vs oracle: max abs "
             "%.3g, rel l2 %.3g  %s\n",
             in.name, cs.numel[i], mn, mx, sum / (double)cs.numel[i], cmp.max_abs, cmp.rel_l2,
             cmp.pass ? "ok" : "FAIL");
    }
  }
  cJSON_AddItemToObject(root, "outputs", outs);
  cJSON_AddBoolToObject(root, "pass", all_pass);
  char note[512];
  if (xir__case_range_note(&cs, note, sizeof note)) {
    cJSON_AddStringToObject(root, "note", note);
    if (!json) printf("note: %s\n", note);
  }
  if (save) {
    if (save_buffers(p, &shape, &cs, save, &d)) {
      cJSON_Delete(root);
      goto fail;
    }
    cJSON_AddStringToObject(root, "saved", save);
    if (!json) printf("saved every buffer as %s/<param>.npy\n", save);
  }
  if (json) {
    char *s = cJSON_Print(root);
    puts(s);
    cJSON_free(s);
  }
  cJSON_Delete(root);
  rc = all_pass ? 0 : 1;
  if (!all_pass) fprintf(stderr, "xir run: the output does not match the oracle\n");
  goto out;
fail:
  rc = cli_fail(&d);
out:
  xir__free(nr.text);
  xir__case_free(&cs);
  xir_program_free(p);
  return rc;
}
