/* cmd_compile.c — `xir compile`: lower and JIT one candidate, write its IR or object, print the
 * JIT time and the IR/object hashes. */
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "native.h"
#include "util/util.h"

static int write_error(const char *path, xir_diag *d) {
  int e = errno;
  xir_diag_clear(d);
  d->status = XIR_ERR_IO;
  snprintf(d->msg, sizeof d->msg, "cannot write '%s': %s", path, strerror(e));
  return 1;
}

/* Writes n bytes to path. A regular file (or a new one) is written through a temporary file and a
 * rename, so that it is never half-written. Anything else that exists at path (a character
 * device such as /dev/null, a FIFO, a socket...) is opened and written in place: renaming over
 * it would replace the device node itself. A directory is refused. */
static int write_file(const char *path, const void *data, size_t n, xir_diag *d) {
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) {
      errno = EISDIR;
      return write_error(path, d);
    }
    FILE *f = fopen(path, "wb");
    if (!f) return write_error(path, d);
    errno = 0;
    int bad = fwrite(data, 1, n, f) != n;
    int e = errno;
    bad |= fclose(f) != 0;
    if (bad) {
      if (!errno) errno = e ? e : EIO;
      return write_error(path, d);
    }
    return 0;
  }
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
    errno = ENAMETOOLONG;
    return write_error(path, d);
  }
  FILE *f = fopen(tmp, "wb");
  if (!f) return write_error(path, d);
  int bad = fwrite(data, 1, n, f) != n;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    int e = errno;
    remove(tmp);
    errno = e ? e : EIO;
    return write_error(path, d);
  }
  return 0;
}

int cmd_compile(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: xir compile KERNEL|FILE --shape D=N,... [options]\n\n"
           "Lowers one mapping candidate to LLVM IR, optimizes it for the host CPU and JIT-compiles\n"
           "it. Prints the candidate, its implementation, the SHA-256 of the optimized IR and of the\n"
           "object code, and (with --time) the JIT time.\n\n"
           "options:\n"
           "  --shape D=N,...     value of every dim (required)\n"
           "  --dtype SPEC        retype buffers (bf16, f16, x=bf16,w=f32; docs/xir.md)\n"
           "  --candidate NAME    the candidate (default: the planner's choice with the defaults,\n"
           "                      xir_plan_options_default, as `xir plan` shows)\n"
           "  --width W           SIMD width (default: the host's widest)\n"
           "  --emit-llvm FILE    write the optimized LLVM IR text\n"
           "  --emit-obj FILE     write the object code (ELF relocatable); its entry symbol is\n"
           "                      printed (xir_<kernel>_<hash>, unique per kernel, shape and\n"
           "                      candidate)\n"
           "  --emit-header FILE  write the C header for that object: the entry's prototype, its\n"
           "                      argument struct, the block count and <symbol>_run() (docs/aot.md)\n"
           "  --header-alias NAME also define NAME, NAME_args, NAME_run, NAME_BLOCKS, ... in the\n"
           "                      header, so that code can use a stable name\n"
           "  --time              print the JIT time (lowering+optimization+codegen, or loading\n"
           "                      from the kernel cache), cache hit|miss|off, and the time of\n"
           "                      the whole xir_compile call\n\n"
           "Compiled kernels are kept in the on-disk kernel cache ($XIR_CACHE_DIR/kernels, else\n"
           "$XDG_CACHE_HOME/xir/kernels, else ~/.cache/xir/kernels; XIR_NO_KERNEL_CACHE=1 turns it\n"
           "off, XIR_KERNEL_CACHE_MAX_BYTES caps it, default 256 MiB).\n");
    return 0;
  }
  static const struct option opts[] = {
      {"shape", required_argument, 0, 's'},     {"candidate", required_argument, 0, 'c'},
      {"width", required_argument, 0, 'w'},     {"emit-llvm", required_argument, 0, 'l'},
      {"emit-obj", required_argument, 0, 'o'},  {"time", no_argument, 0, 't'},
      {"emit-header", required_argument, 0, 'h'}, {"header-alias", required_argument, 0, 'a'},
      {"dtype", required_argument, 0, 'T'},
      {0, 0, 0, 0}};
  const char *shape_spec = NULL, *cand = NULL, *ll = NULL, *obj = NULL, *hdr = NULL,
             *alias = NULL, *dtype = NULL;
  uint32_t width = 0;
  int timing = 0, c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
      case 's': shape_spec = optarg; break;
      case 'c': cand = optarg; break;
      case 'l': ll = optarg; break;
      case 'o': obj = optarg; break;
      case 'h': hdr = optarg; break;
      case 'a': alias = optarg; break;
      case 't': timing = 1; break;
      case 'T': dtype = optarg; break;
      case 'w':
        if (cli_parse_u32(optarg, 0, &width))
          return cli_usage_error("compile", "--width needs 1, 2, 4, 8 or 16, not '%s'", optarg);
        break;
      default: return cli_usage_error("compile", "unknown or incomplete option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1) return cli_usage_error("compile", "needs exactly one KERNEL or FILE");
  if (!shape_spec) return cli_usage_error("compile", "needs --shape");
  if (alias && !hdr) return cli_usage_error("compile", "--header-alias needs --emit-header");
  xir_diag d;
  xir_program *p = NULL;
  xir_compiler *cc = NULL;
  int rc = 1;
  if (cli_load_program(argv[optind], &p, &d)) return cli_fail(&d);
  if (cli_retype(&p, dtype, &d)) {
    xir_program_free(p);
    return cli_fail(&d);
  }
  xir_shape shape;
  xir_candidate cd;
  const xir_kernel *k;
  xir_compiler_options co = {.force_width = width};
  if (xir_shape_parse(p, shape_spec, &shape, &d) || xir_compiler_create(&co, &cc, &d)) goto fail;
  if (cand) {
    if (xir_candidate_parse(p, &shape, cand, xir_compiler_width(cc), &cd, &d)) goto fail;
  } else {
    /* the planner's choice with the defaults a user gets (xir_plan_options_default) */
    xir_plan_options po;
    xir_plan_options_default(&po);
    po.width = xir_compiler_width(cc);
    xir_plan *pl;
    if (xir_plan_make(p, &shape, &po, &pl, &d)) goto fail;
    cd = pl->entries[0].cand;
    xir_plan_free(pl);
  }
  double t0 = xir__now_ns();
  if (xir_compile(cc, p, &shape, &cd, &k, &d)) goto fail;
  double call_ms = (xir__now_ns() - t0) / 1e6;
  xir_kernel_info info;
  xir_kernel_get_info(k, &info);
  char name[160];
  xir_candidate_name(p, xir_kernel_candidate(k), name, sizeof name);
  printf("kernel %s  candidate %s  implementation %s  cpu %s\n", xir_program_name(p), name,
         xir_impl_kind_name(xir_kernel_candidate(k)->kind), xir_compiler_cpu(cc));
  printf("ir sha256 %s (%zu bytes)\nobj sha256 %s (%zu bytes)\nsymbol %s  blocks %llu\n",
         info.ir_sha256, info.ir_len, info.obj_sha256, info.obj_size, info.entry_symbol,
         (unsigned long long)xir_kernel_blocks(k));
  if (timing)
    printf("jit %.3f ms  cache %s  (xir_compile call %.3f ms)\n", info.jit_ms, info.disk_cache,
           call_ms);
  if (info.cache_note[0]) fprintf(stderr, "xir compile: warning: %s\n", info.cache_note);
  if (ll && write_file(ll, info.ir_text, info.ir_len, &d)) goto fail;
  if (obj && write_file(obj, info.obj, info.obj_size, &d)) goto fail;
  if (hdr) {
    char *text = NULL;
    if (xir_kernel_c_header(cc, k, p, &shape, alias, &text, &d)) goto fail;
    int wf = write_file(hdr, text, strlen(text), &d);
    xir_free(text);
    if (wf) goto fail;
  }
  rc = 0;
  goto out;
fail:
  rc = cli_fail(&d);
out:
  xir_compiler_destroy(cc);
  xir_program_free(p);
  return rc;
}
