/* aot.c — the C header of an ahead-of-time object (docs/aot.md).
 *
 * `xir compile --emit-obj K.o --emit-header K.h` writes the object code of one compiled kernel and
 * this header; a C program includes the header, links the object (nothing else: no LLVM, no
 * libxir) and calls the entry. The header describes exactly what xir_kernel_pack_launch builds
 * (lower.h): one 8-byte slot per parameter in declaration order (a buffer's element pointer; an
 * f32 scalar in the low 4 bytes; an i64 scalar), then the launch-time dims, the buffers' outer
 * strides and a flags word; plus the block count of the bound shape and a convenience function
 * that runs every block of that shape, dense buffers, on the calling thread. */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "lower/kernel.h"
#include "util/util.h"
#include "xir.h"
#include "xir_compile.h"

static const char *c_elem(xir_elem e) {
  switch (e) {
    case XIR_F32: return "float";
    case XIR_I64: return "int64_t";
    case XIR_BF16:
    case XIR_F16: return "uint16_t"; /* the bit patterns (xir_f32_to_bf16 & co.) */
    default: return NULL;
  }
}

static void put_dims(xir__sbuf *b, const xir_program *p, const xir_shape *sh,
                     const xir_param_info *pi) {
  xir__sbuf_put(b, "[");
  for (int r = 0; r < pi->rank; r++)
    xir__sbuf_put(b, "%s%s=%lld", r ? ", " : "", xir_program_dim_name(p, pi->dims[r]),
                  (long long)sh->dims[pi->dims[r]]);
  xir__sbuf_put(b, "]");
}

/* C and C++ keywords a parameter name could be (XIR names are identifiers). */
static int c_keyword(const char *n) {
  static const char *kw[] = {
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
      "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
      "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
      "union", "unsigned", "void", "volatile", "while", "bool", "true", "false", "class",
      "delete", "new", "namespace", "operator", "private", "protected", "public", "template",
      "this", "throw", "try", "catch", "virtual", "typename", "using", "friend", "mutable",
      "explicit", "export", "asm", "nullptr", "alignas", "alignof", "constexpr", "decltype",
      "noexcept", "static_assert", "thread_local", "xir_a_"};
  for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
    if (!strcmp(n, kw[i]) || (n[0] == '_' && (isupper((unsigned char)n[1]) || n[1] == '_')))
      return 1;
  return 0;
}

static int c_identifier(const char *n) {
  if (!n || !(isalpha((unsigned char)n[0]) || n[0] == '_')) return 0;
  for (const char *c = n; *c; c++)
    if (!(isalnum((unsigned char)*c) || *c == '_')) return 0;
  return strlen(n) <= 64;
}

xir_status xir_kernel_c_header(const xir_compiler *cc, const xir_kernel *k, const xir_program *p,
                               const xir_shape *shape, const char *alias, char **out,
                               xir_diag *d) {
  if (out) *out = NULL;
  if (!cc || !k || !p || !shape || !out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_kernel_c_header: %s is NULL",
                    !cc ? "the compiler" : !k ? "the kernel" : !p ? "the program"
                    : !shape ? "the shape" : "out");
  if (alias && (!c_identifier(alias) || c_keyword(alias)))
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "xir_kernel_c_header: alias '%s' is not a C identifier of at most 64 "
                    "characters (or is reserved)",
                    alias);
  int np = xir_program_num_params(p);
  xir__arg_layout lay;
  xir__arg_layout_make(p, xir_kernel_candidate(k)->fixed_dims, &lay);
  if (xir_kernel_args_size(k) != (size_t)lay.nslots * 8 || np != xir_program_num_params(k->base->prog))
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "xir_kernel_c_header: the kernel was not compiled from this program "
                    "(%zu argument slots, the program has %d parameters)",
                    xir_kernel_args_size(k) / 8, np);
  uint64_t nblocks = 0;
  xir_status cs = xir_kernel_check_shape(k, shape, &nblocks, d);
  if (cs) return cs;
  xir_kernel_info info;
  xir_kernel_get_info(k, &info);
  const char *sym = info.entry_symbol;
  char cand[256], sh[512];
  xir_candidate_name(p, xir_kernel_candidate(k), cand, sizeof cand);
  xir_shape_format(p, shape, sh, sizeof sh);
  char guard[96];
  size_t g = 0;
  for (const char *c = sym; *c && g + 3 < sizeof guard; c++)
    guard[g++] = (char)toupper((unsigned char)*c);
  memcpy(guard + g, "_H", 3);

  for (int i = 0; i < np; i++) {
    xir_param_info pi;
    xir_program_param(p, i, &pi);
    if (c_keyword(pi.name))
      return xir__err(d, XIR_ERR_UNSUPPORTED,
                      "xir_kernel_c_header: parameter '%s' is a reserved word or name in C/C++; "
                      "rename it in the kernel to emit a header",
                      pi.name);
  }
  xir__sbuf b = {0};
  xir__sbuf_put(&b,
                "/* %s.h — generated by xir %s (LLVM %s): `xir compile --emit-header`.\n"
                " *\n"
                " * Kernel %s, shape %s, candidate %s.\n"
                " * Object code for CPU %s; it runs only where these features exist:\n *  ",
                sym, xir_version(), xir_llvm_version(), xir_program_name(p), sh, cand,
                xir_compiler_cpu(cc));
  /* The enabled features ("+name"), wrapped. */
  const char *f = xir_compiler_features(cc);
  int col = 4, any = 0;
  while (f && *f) {
    const char *e = strchr(f, ',');
    size_t n = e ? (size_t)(e - f) : strlen(f);
    if (n > 1 && f[0] == '+') {
      if (col + (int)n > 96) {
        xir__sbuf_put(&b, "\n *  ");
        col = 4;
      }
      xir__sbuf_put(&b, " %.*s", (int)n - 1, f + 1);
      col += (int)n;
      any = 1;
    }
    f = e ? e + 1 : f + n;
  }
  if (!any) xir__sbuf_put(&b, " (the CPU's own)");
  xir__sbuf_put(&b,
                "\n *\n"
                " * Link the object from `xir compile --emit-obj` (no other library is needed).\n"
                " * The entry runs blocks [block_begin, block_end) of %s_BLOCKS and returns 0;\n"
                " * blocks are independent, so any split of the range over threads gives the\n"
                " * same bits. Buffers are row-major and dense; no alignment is required.\n"
                " * docs/aot.md describes the contract. */\n"
                "#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n"
                "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
                sym, guard, guard);
  xir__sbuf_put(&b,
                "#define %s_BLOCKS UINT64_C(%llu)\n#define %s_SYMBOL \"%s\"\n"
                "#define %s_KERNEL \"%s\"\n#define %s_SHAPE \"%s\"\n"
                "#define %s_CANDIDATE \"%s\"\n\n",
                sym, (unsigned long long)nblocks, sym, sym, sym, xir_program_name(p),
                sym, sh, sym, cand);
  xir__sbuf_put(&b,
                "/* The argument block: one 8-byte slot per parameter, in declaration order, then the\n"
                " * launch-time dims, the outer strides of every buffer of rank >= 2 (elements)\n"
                " * and a flags word (bit 0: every buffer is contiguous). */\n"
                "typedef struct %s_args {\n", sym);
  for (int i = 0; i < np; i++) {
    xir_param_info pi;
    xir_program_param(p, i, &pi);
    const char *ct = c_elem(pi.elem);
    if (!ct) {
      xir__free(b.s);
      return xir__err(d, XIR_ERR_UNSUPPORTED,
                      "xir_kernel_c_header: parameter '%s' has an element type without a C type",
                      pi.name);
    }
    if (pi.kind == XIR_PARAM_BUFFER) {
      xir__sbuf_put(&b, "  %s%s *%s; /* %s%s ", pi.is_output ? "" : "const ", ct, pi.name,
                    pi.is_output ? "out " : "", xir_elem_name(pi.elem));
      put_dims(&b, p, shape, &pi);
      xir__sbuf_put(&b, " */\n");
    } else if (pi.elem == XIR_I64) {
      xir__sbuf_put(&b, "  int64_t %s; /* i64 scalar", pi.name);
      if (pi.has_default) xir__sbuf_put(&b, ", default %lld", (long long)pi.default_value);
      xir__sbuf_put(&b, " */\n");
    } else {
      xir__sbuf_put(&b, "  union {\n    float value;\n    uint64_t slot_;\n  } %s; /* f32 scalar",
                    pi.name);
      if (pi.has_default) xir__sbuf_put(&b, ", default %.9g", pi.default_value);
      xir__sbuf_put(&b, " */\n");
    }
  }
  for (int i = 0; i < xir_program_num_dims(p); i++)
    if (lay.dim_slot[i] >= 0)
      xir__sbuf_put(&b, "  int64_t dim_%s; /* launch-time dim, %lld here */\n",
                    xir_program_dim_name(p, i), (long long)shape->dims[i]);
  for (int i = 0; i < np; i++) {
    xir_param_info pi;
    xir_program_param(p, i, &pi);
    if (lay.stride_slot[i] >= 0)
      xir__sbuf_put(&b, "  int64_t stride_%s[%d]; /* dims 0..%d, in elements */\n", pi.name,
                    pi.rank - 1, pi.rank - 2);
  }
  xir__sbuf_put(&b, "  uint64_t flags_; /* 1: every buffer contiguous */\n");
  xir__sbuf_put(&b, "} %s_args;\n\n", sym);
  xir__sbuf_put(&b,
                "#ifdef __cplusplus\nstatic_assert(sizeof(%s_args) == %d, \"8-byte slots\");\n"
                "#else\n_Static_assert(sizeof(%s_args) == %d, \"8-byte slots\");\n#endif\n\n",
                sym, lay.nslots * 8, sym, lay.nslots * 8);
  xir__sbuf_put(&b,
                "/* Runs blocks [block_begin, block_end) (end <= %s_BLOCKS); args points at a\n"
                " * %s_args. Returns 0. */\n"
                "int %s(void *args, uint64_t block_begin, uint64_t block_end);\n\n",
                sym, sym, sym);
  /* The launch-time dims, dense strides and flags of the header's shape. */
  xir__sbuf_put(&b,
                "/* Sets the launch-time dims of %s_SHAPE, dense strides and the flags in a\n"
                " * (after the parameters are set). */\n"
                "static inline void %s_set_shape(%s_args *xir_a_) {\n", sym, sym, sym);
  for (int i = 0; i < xir_program_num_dims(p); i++)
    if (lay.dim_slot[i] >= 0)
      xir__sbuf_put(&b, "  xir_a_->dim_%s = %lld;\n", xir_program_dim_name(p, i),
                    (long long)shape->dims[i]);
  for (int i = 0; i < np; i++) {
    xir_param_info pi;
    xir_program_param(p, i, &pi);
    if (lay.stride_slot[i] < 0) continue;
    int64_t st = 1;
    for (int r = pi.rank - 1; r >= 0; r--) {
      if (r < pi.rank - 1) xir__sbuf_put(&b, "  xir_a_->stride_%s[%d] = %lld;\n", pi.name, r, (long long)st);
      st *= shape->dims[pi.dims[r]];
    }
  }
  xir__sbuf_put(&b, "  xir_a_->flags_ = 1;\n");
  xir__sbuf_put(&b, "}\n\n");
  /* The convenience call: every parameter by value, every block on the calling thread. */
  xir__sbuf_put(&b, "/* Every block on the calling thread. */\nstatic inline int %s_run(", sym);
  for (int i = 0; i < np; i++) {
    xir_param_info pi;
    xir_program_param(p, i, &pi);
    const char *ct = c_elem(pi.elem);
    if (pi.kind == XIR_PARAM_BUFFER)
      xir__sbuf_put(&b, "%s%s%s *%s", i ? ", " : "", pi.is_output ? "" : "const ", ct, pi.name);
    else
      xir__sbuf_put(&b, "%s%s %s", i ? ", " : "", ct, pi.name);
  }
  xir__sbuf_put(&b, ") {\n  %s_args xir_a_;\n", sym);
  for (int i = 0; i < np; i++) {
    xir_param_info pi;
    xir_program_param(p, i, &pi);
    if (pi.kind == XIR_PARAM_SCALAR && pi.elem == XIR_F32)
      xir__sbuf_put(&b, "  xir_a_.%s.slot_ = 0;\n  xir_a_.%s.value = %s;\n", pi.name, pi.name, pi.name);
    else
      xir__sbuf_put(&b, "  xir_a_.%s = %s;\n", pi.name, pi.name);
  }
  xir__sbuf_put(&b, "  %s_set_shape(&xir_a_);\n", sym);
  xir__sbuf_put(&b, "  return %s(&xir_a_, 0, %s_BLOCKS);\n}\n\n", sym, sym);
  if (alias) {
    static const char *sfx[] = {"", "_args", "_run", "_set_shape", "_BLOCKS", "_SYMBOL",
                                "_KERNEL", "_SHAPE", "_CANDIDATE"};
    xir__sbuf_put(&b, "/* Stable names for this kernel (the alias %s). */\n", alias);
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++)
      xir__sbuf_put(&b, "#define %s%s %s%s\n", alias, sfx[i], sym, sfx[i]);
    xir__sbuf_put(&b, "\n");
  }
  xir__sbuf_put(&b, "#ifdef __cplusplus\n}\n#endif\n#endif\n");
  if (b.oom) {
    xir__free(b.s);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory writing the header");
  }
  *out = b.s;
  return XIR_OK;
}
