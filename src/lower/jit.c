/* jit.c — ORC LLJIT wrapper: verify, optimize (new pass manager), JIT, capture IR and object bytes,
 * hash them, cache the artifacts (see jit.h for the picture).
 *
 * How it thinks:
 * - One LLJIT per xir__jit; one JITDylib per added module (symbol names may repeat across modules).
 * - LLJIT runs with the in-place task dispatcher (no compile threads), so a lookup compiles the
 *   module on the calling thread. Compiles are serialized by jit->mu; while one runs, the object
 *   transform appends the emitted object into jit->cap, which therefore belongs to that module.
 * - The optimizer's target machine and the LLJIT's (built from a twin target machine) have the same
 *   triple, CPU, features, reloc model and code model: TTI answers and codegen agree.
 * - No fast-math anywhere: nothing here sets flags; TargetOptions keep their defaults
 *   (fp-contract only fuses operations that carry the contract flag, and xir never emits it).
 *
 * The default pipeline (XIR__JIT_DEFAULT_PIPELINE) was chosen by measurement, see docs/vmath.md
 * ("JIT time") and bench/jit_time.c. */
#include "lower/jit.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "util/sha256.h"
#include "util/util.h"

struct xir__jit {
  pthread_mutex_t mu;
  LLVMOrcLLJITRef lljit;
  LLVMOrcExecutionSessionRef es;
  LLVMTargetMachineRef tm; /* the optimizer's target machine (TTI) */
  char *triple, *cpu, *features, *pipeline, *datalayout;
  int codegen_level;
  unsigned max_width;
  unsigned long long next_dylib;
  /* the object captured by the transform during the current compile */
  unsigned char *cap;
  size_t cap_len, cap_cap;
  int cap_active, cap_oom;
  char es_error[512]; /* the last error the execution session reported on its own */
  /* artifacts, in creation order; the cache is a linear table over the same pointers */
  xir__jit_artifact **arts;
  size_t n_arts, cap_arts;
};

/* Consumes e; writes "what: message" into d. */
static xir_status llvm_err(xir_diag *d, xir_status s, const char *what, LLVMErrorRef e) {
  char *m = LLVMGetErrorMessage(e);
  xir__err(d, s, "%s: %s", what, m ? m : "(no message)");
  LLVMDisposeErrorMessage(m);
  return s;
}

/* ---- target description ---- */

static pthread_once_t g_llvm_once = PTHREAD_ONCE_INIT;
static int g_llvm_ok;
static void llvm_init_once(void) {
  g_llvm_ok = !LLVMInitializeNativeTarget() && !LLVMInitializeNativeAsmPrinter();
}

/* 1 when the comma list has the exact token "+name". */
static int has_feature(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n + 1 && p[0] == '+' && !memcmp(p + 1, name, n)) return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

static unsigned width_of_features(const char *f) {
  if (has_feature(f, "avx512f")) return 16;
  if (has_feature(f, "avx2") || has_feature(f, "avx")) return 8;
  if (has_feature(f, "sse2")) return 4;
  return 1;
}

/* CPU names a caller may force, with the fp32 width their features give and the feature that
 * width needs on the host. */
static const struct {
  const char *name;
  unsigned width;
} k_cpus[] = {
    {"x86-64", 4},          {"x86-64-v2", 4},     {"nehalem", 4},         {"westmere", 4},
    {"sandybridge", 8},     {"ivybridge", 8},     {"haswell", 8},         {"broadwell", 8},
    {"skylake", 8},         {"alderlake", 8},     {"x86-64-v3", 8},       {"znver1", 8},
    {"znver2", 8},          {"znver3", 8},        {"x86-64-v4", 16},      {"skylake-avx512", 16},
    {"cascadelake", 16},    {"cooperlake", 16},   {"icelake-client", 16}, {"icelake-server", 16},
    {"tigerlake", 16},      {"sapphirerapids", 16}, {"znver4", 16},
};

int xir__jit_has_feature(const xir__jit *jit, const char *name) {
  if (!jit || !name) return 0;
  static const char *const no_f16c[] = {"x86-64", "x86-64-v2", "nehalem", "westmere",
                                        "sandybridge"};
  static const char *const bf16[] = {"cooperlake", "sapphirerapids", "znver4"};
  int has = 0;
  unsigned known_w = 0;
  for (size_t i = 0; i < XIR_ARRAY_LEN(k_cpus); i++)
    if (!strcmp(k_cpus[i].name, jit->cpu)) known_w = k_cpus[i].width;
  int known = known_w > 0;
  if (known && !strcmp(name, "f16c")) {
    has = known_w >= 8; /* f16c needs avx */
    for (size_t i = 0; i < XIR_ARRAY_LEN(no_f16c); i++) has &= !!strcmp(no_f16c[i], jit->cpu);
  }
  if (known && !strcmp(name, "avx512bf16"))
    for (size_t i = 0; i < XIR_ARRAY_LEN(bf16); i++) has |= !strcmp(bf16[i], jit->cpu);
  if (known && !strcmp(name, "fma")) /* Haswell and Zen on; not Sandy/Ivy Bridge */
    has = known_w >= 8 && strcmp(jit->cpu, "sandybridge") && strcmp(jit->cpu, "ivybridge");
  if (known && (!strcmp(name, "avx512f") || !strcmp(name, "avx512vl") || !strcmp(name, "avx512dq")))
    has = known_w >= 16; /* every 16-wide name above has all three */
  size_t n = strlen(name);
  for (const char *p = jit->features; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n + 1 && !memcmp(p + 1, name, n)) has = p[0] == '+';
    if (!strcmp(name, "f16c") && len == 8 && !memcmp(p, "+avx512f", 8)) has = 1;
    p = e ? e + 1 : NULL;
  }
  return has;
}

static const char *width_feature(unsigned w) {
  return w >= 16 ? "avx512f" : w >= 8 ? "avx" : w >= 4 ? "sse2" : "";
}

static char *host_features(void) {
  char *f = LLVMGetHostCPUFeatures();
  char *r = xir__strdup(f ? f : "");
  LLVMDisposeMessage(f);
  return r;
}

unsigned xir__jit_host_max_width(void) {
  char *f = host_features();
  unsigned w = f ? width_of_features(f) : 1;
  xir__free(f);
  return w;
}

/* Checks a forced feature list against the host's: every "+x" must be a host feature. */
static xir_status check_forced_features(const char *forced, const char *host, xir_diag *d) {
  for (const char *p = forced; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char tok[64];
    if (len == 0 || len >= sizeof tok || (p[0] != '+' && p[0] != '-'))
      return xir__err(d, XIR_ERR_INVALID_ARG,
                      "feature string '%s': each item must be +name or -name", forced);
    memcpy(tok, p, len);
    tok[len] = 0;
    if (tok[0] == '+' && !has_feature(host, tok + 1))
      return xir__err(d, XIR_ERR_UNSUPPORTED,
                      "feature '%s' is not available on this host (or unknown to LLVM)", tok);
    p = e ? e + 1 : NULL;
  }
  return XIR_OK;
}

/* ---- callbacks ---- */

static LLVMErrorRef obj_transform(void *ctx, LLVMMemoryBufferRef *buf) {
  xir__jit *jit = ctx;
  if (!jit->cap_active || !buf || !*buf) return LLVMErrorSuccess;
  const char *p = LLVMGetBufferStart(*buf);
  size_t n = LLVMGetBufferSize(*buf);
  if (xir__grow((void **)&jit->cap, &jit->cap_cap, jit->cap_len + n, 1)) {
    jit->cap_oom = 1;
    return LLVMErrorSuccess;
  }
  memcpy(jit->cap + jit->cap_len, p, n);
  jit->cap_len += n;
  return LLVMErrorSuccess;
}

static void es_report(void *ctx, LLVMErrorRef e) {
  xir__jit *jit = ctx;
  char *m = LLVMGetErrorMessage(e);
  snprintf(jit->es_error, sizeof jit->es_error, "%s", m ? m : "");
  LLVMDisposeErrorMessage(m);
}

/* Process symbols a JIT'd module may use: only what codegen itself may emit calls to. Never libm:
 * xir's math is vector IR (vmath.c). */
static int allow_process_symbol(void *ctx, LLVMOrcSymbolStringPoolEntryRef sym) {
  (void)ctx;
  const char *s = LLVMOrcSymbolStringPoolEntryStr(sym);
  return s && (!strcmp(s, "memcpy") || !strcmp(s, "memmove") || !strcmp(s, "memset"));
}

/* ---- create / destroy ---- */

xir_status xir__jit_create(const xir__jit_options *opt, xir__jit **out, xir_diag *d) {
  if (!out) return xir__err(d, XIR_ERR_INVALID_ARG, "xir__jit_create: out is NULL");
  *out = NULL;
  pthread_once(&g_llvm_once, llvm_init_once);
  if (!g_llvm_ok) return xir__err(d, XIR_ERR_LLVM, "LLVM native target initialization failed");
  const char *fcpu = opt && opt->cpu && opt->cpu[0] ? opt->cpu : NULL;
  const char *ffeat = opt && opt->features && opt->features[0] ? opt->features : NULL;
  const char *pipe = opt && opt->pipeline && opt->pipeline[0] ? opt->pipeline
                                                             : XIR__JIT_DEFAULT_PIPELINE;
  int level = opt && opt->codegen_level >= 0 ? opt->codegen_level : 2;
  if (opt && opt->codegen_level > 3)
    return xir__err(d, XIR_ERR_INVALID_ARG, "codegen_level %d is not in 0..3", opt->codegen_level);

  xir__jit *jit = xir__calloc(1, sizeof *jit);
  if (!jit) return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  pthread_mutex_init(&jit->mu, NULL);
  jit->codegen_level = level;
  xir_status st = XIR_OK;
  char *hcpu_llvm = LLVMGetHostCPUName();
  char *hfeat = host_features();
  char *trip_llvm = LLVMGetDefaultTargetTriple();
  char *ntrip = LLVMNormalizeTargetTriple(trip_llvm);
  LLVMDisposeMessage(trip_llvm);
  jit->triple = xir__strdup(ntrip);
  LLVMDisposeMessage(ntrip);
  jit->pipeline = xir__strdup(pipe);
  if (!hfeat || !jit->triple || !jit->pipeline) {
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory");
    goto fail;
  }
  unsigned host_w = width_of_features(hfeat);

  /* Resolve CPU, features and the width they give. */
  if (!fcpu && !ffeat) {
    jit->cpu = xir__strdup(hcpu_llvm);
    jit->features = xir__strdup(hfeat);
    jit->max_width = host_w;
  } else {
    unsigned cpu_w = 0;
    if (fcpu && !strcmp(fcpu, hcpu_llvm)) {
      cpu_w = host_w;
    } else if (fcpu) {
      for (size_t i = 0; i < XIR_ARRAY_LEN(k_cpus); i++)
        if (!strcmp(k_cpus[i].name, fcpu)) cpu_w = k_cpus[i].width;
      if (!cpu_w) {
        st = xir__err(d, XIR_ERR_INVALID_ARG,
                      "unknown CPU name '%s' (the host is '%s'; known: x86-64, x86-64-v2, "
                      "x86-64-v3, x86-64-v4, haswell, skylake, skylake-avx512, icelake-server, "
                      "znver3, znver4, ...)",
                      fcpu, hcpu_llvm);
        goto fail;
      }
      if (cpu_w > host_w) {
        st = xir__err(d, XIR_ERR_UNSUPPORTED,
                      "CPU '%s' needs %s (W = %u) but this host (%s) has max W = %u", fcpu,
                      width_feature(cpu_w), cpu_w, hcpu_llvm, host_w);
        goto fail;
      }
    } else {
      cpu_w = 4; /* x86-64 baseline */
    }
    if (ffeat && (st = check_forced_features(ffeat, hfeat, d)) != XIR_OK) goto fail;
    jit->cpu = xir__strdup(fcpu ? fcpu : "x86-64");
    jit->features = xir__strdup(ffeat ? ffeat : "");
    unsigned fw = ffeat ? width_of_features(ffeat) : 0;
    jit->max_width = fw > cpu_w ? fw : cpu_w;
  }
  if (!jit->cpu || !jit->features) {
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory");
    goto fail;
  }

  LLVMTargetRef target;
  char *emsg = NULL;
  if (LLVMGetTargetFromTriple(jit->triple, &target, &emsg)) {
    st = xir__err(d, XIR_ERR_LLVM, "no LLVM target for '%s': %s", jit->triple, emsg ? emsg : "");
    LLVMDisposeMessage(emsg);
    goto fail;
  }
  LLVMCodeGenOptLevel cgl = (LLVMCodeGenOptLevel)level;
  /* PIC, small code model: constants are read RIP-relative (the JIT default, the large model,
   * loads each constant's 64-bit address with a movabs before every use in a loop: gelu_residual
   * 129x768 on one worker 36.9-41.2 -> 32.1-34.0 us, docs/aot.md), and the AOT objects link into
   * PIE executables. Their only relocations are R_X86_64_PC32 to the object's own constant
   * pool (the kernels call nothing outside: no undefined symbol, checked with objdump on
   * gelu_residual, softmax_mask, rope, attention and layernorm objects), which the JIT places
   * with the object's code. */
  jit->tm = LLVMCreateTargetMachine(target, jit->triple, jit->cpu, jit->features, cgl,
                                    LLVMRelocPIC, LLVMCodeModelSmall);
  LLVMTargetMachineRef tm2 = LLVMCreateTargetMachine(target, jit->triple, jit->cpu, jit->features,
                                                     cgl, LLVMRelocPIC,
                                                     LLVMCodeModelSmall);
  if (!jit->tm || !tm2) {
    if (tm2) LLVMDisposeTargetMachine(tm2);
    st = xir__err(d, XIR_ERR_LLVM, "LLVMCreateTargetMachine failed for %s / %s", jit->cpu,
                  jit->triple);
    goto fail;
  }
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(jit->tm);
  char *dl = LLVMCopyStringRepOfTargetData(td);
  jit->datalayout = xir__strdup(dl);
  LLVMDisposeMessage(dl);
  LLVMDisposeTargetData(td);

  LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
      jb, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm2)); /* owns tm2 */
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&jit->lljit, jb);                 /* owns jb */
  if (e) {
    jit->lljit = NULL;
    st = llvm_err(d, XIR_ERR_LLVM, "creating the LLJIT", e);
    goto fail;
  }
  jit->es = LLVMOrcLLJITGetExecutionSession(jit->lljit);
  LLVMOrcExecutionSessionSetErrorReporter(jit->es, es_report, jit);
  LLVMOrcObjectTransformLayerSetTransform(LLVMOrcLLJITGetObjTransformLayer(jit->lljit),
                                          obj_transform, jit);
  if (!jit->datalayout) {
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory");
    goto fail;
  }
  LLVMDisposeMessage(hcpu_llvm);
  xir__free(hfeat);
  *out = jit;
  return XIR_OK;

fail:
  LLVMDisposeMessage(hcpu_llvm);
  xir__free(hfeat);
  xir__jit_destroy(jit);
  return st;
}

void xir__jit_destroy(xir__jit *jit) {
  if (!jit) return;
  if (jit->lljit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(jit->lljit);
    if (e) LLVMConsumeError(e);
  }
  if (jit->tm) LLVMDisposeTargetMachine(jit->tm);
  for (size_t i = 0; i < jit->n_arts; i++) {
    xir__jit_artifact *a = jit->arts[i];
    xir__free((void *)a->entry_name);
    xir__free((void *)a->key);
    xir__free((void *)a->ir_text);
    xir__free((void *)a->obj);
    xir__free(a);
  }
  xir__free(jit->arts);
  xir__free(jit->cap);
  xir__free(jit->triple);
  xir__free(jit->cpu);
  xir__free(jit->features);
  xir__free(jit->pipeline);
  xir__free(jit->datalayout);
  pthread_mutex_destroy(&jit->mu);
  xir__free(jit);
}

const char *xir__jit_cpu(const xir__jit *jit) { return jit->cpu; }
const char *xir__jit_features(const xir__jit *jit) { return jit->features; }
const char *xir__jit_triple(const xir__jit *jit) { return jit->triple; }
const char *xir__jit_pipeline(const xir__jit *jit) { return jit->pipeline; }
int xir__jit_codegen_level(const xir__jit *jit) { return jit->codegen_level; }
unsigned xir__jit_max_width(const xir__jit *jit) { return jit->max_width; }

xir_status xir__jit_check_width(const xir__jit *jit, unsigned W, xir_diag *d) {
  if (W != 1 && W != 2 && W != 4 && W != 8 && W != 16)
    return xir__err(d, XIR_ERR_INVALID_ARG, "W = %u: the SIMD width must be 1, 2, 4, 8 or 16", W);
  if (W > jit->max_width)
    return xir__err(d, XIR_ERR_UNSUPPORTED,
                    "W = %u needs %s, but the JIT targets cpu '%s' with features '%s' "
                    "(max W = %u)",
                    W, width_feature(W), jit->cpu, jit->features[0] ? jit->features : "(cpu's own)",
                    jit->max_width);
  return XIR_OK;
}

/* ---- modules ---- */

xir_status xir__jit_module_create(xir__jit *jit, const char *name, xir__jit_module *m,
                                  xir_diag *d) {
  if (!jit || !m) return xir__err(d, XIR_ERR_INVALID_ARG, "xir__jit_module_create: NULL argument");
  memset(m, 0, sizeof *m);
  m->tsc = LLVMOrcCreateNewThreadSafeContext();
  if (!m->tsc) return xir__err(d, XIR_ERR_LLVM, "cannot create a ThreadSafeContext");
  m->ctx = LLVMOrcThreadSafeContextGetContext(m->tsc);
  m->mod = LLVMModuleCreateWithNameInContext(name && name[0] ? name : "xir", m->ctx);
  if (!m->mod) {
    xir__jit_module_dispose(m);
    return xir__err(d, XIR_ERR_LLVM, "cannot create a module");
  }
  LLVMSetTarget(m->mod, jit->triple);
  LLVMSetDataLayout(m->mod, jit->datalayout);
  return XIR_OK;
}

xir_status xir__jit_module_from_ir(xir__jit *jit, const char *name, const char *ir_text,
                                   xir__jit_module *m, xir_diag *d) {
  if (!jit || !m || !ir_text)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir__jit_module_from_ir: NULL argument");
  memset(m, 0, sizeof *m);
  m->tsc = LLVMOrcCreateNewThreadSafeContext();
  if (!m->tsc) return xir__err(d, XIR_ERR_LLVM, "cannot create a ThreadSafeContext");
  m->ctx = LLVMOrcThreadSafeContextGetContext(m->tsc);
  /* the buffer is taken by the parser */
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(
      ir_text, strlen(ir_text), name && name[0] ? name : "xir");
  char *msg = NULL;
  if (!buf || LLVMParseIRInContext(m->ctx, buf, &m->mod, &msg)) {
    xir_status s = xir__err(d, XIR_ERR_LLVM, "cannot parse LLVM IR: %s", msg ? msg : "(no message)");
    LLVMDisposeMessage(msg);
    m->mod = NULL;
    xir__jit_module_dispose(m);
    return s;
  }
  LLVMSetTarget(m->mod, jit->triple);
  LLVMSetDataLayout(m->mod, jit->datalayout);
  return XIR_OK;
}

void xir__jit_module_dispose(xir__jit_module *m) {
  if (!m) return;
  if (m->mod) LLVMDisposeModule(m->mod);
  if (m->tsc) LLVMOrcDisposeThreadSafeContext(m->tsc);
  memset(m, 0, sizeof *m);
}

xir_status xir__jit_module_ir_sha256(const xir__jit_module *m, char out[65], xir_diag *d) {
  char *t = LLVMPrintModuleToString(m->mod);
  if (!t) return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  xir__jit_sha256_hex(t, strlen(t), out);
  LLVMDisposeMessage(t);
  return XIR_OK;
}

/* ---- lookup (synchronous wrapper over the asynchronous session lookup) ---- */

typedef struct lookup_wait {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  LLVMErrorRef err;
  uint64_t addr;
} lookup_wait;

static void lookup_done(LLVMErrorRef err, LLVMOrcCSymbolMapPairs res, size_t n, void *ctx) {
  lookup_wait *w = ctx;
  pthread_mutex_lock(&w->mu);
  w->err = err;
  if (!err && n > 0) w->addr = res[0].Sym.Address;
  w->done = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Looks up name in jd only. Caller holds jit->mu. */
static xir_status lookup_in(xir__jit *jit, LLVMOrcJITDylibRef jd, const char *name, void **addr,
                            xir_diag *d) {
  lookup_wait w = {.done = 0, .err = NULL, .addr = 0};
  pthread_mutex_init(&w.mu, NULL);
  pthread_cond_init(&w.cv, NULL);
  LLVMOrcCJITDylibSearchOrderElement order[1] = {
      {jd, LLVMOrcJITDylibLookupFlagsMatchExportedSymbolsOnly}};
  LLVMOrcCLookupSetElement syms[1] = {
      {LLVMOrcLLJITMangleAndIntern(jit->lljit, name), LLVMOrcSymbolLookupFlagsRequiredSymbol}};
  jit->es_error[0] = 0;
  LLVMOrcExecutionSessionLookup(jit->es, LLVMOrcLookupKindStatic, order, 1, syms, 1, lookup_done,
                                &w);
  pthread_mutex_lock(&w.mu);
  while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
  pthread_mutex_unlock(&w.mu);
  pthread_mutex_destroy(&w.mu);
  pthread_cond_destroy(&w.cv);
  if (w.err) {
    char *m = LLVMGetErrorMessage(w.err);
    int missing = m && strstr(m, "Symbols not found") != NULL;
    xir_status s = xir__err(d, missing ? XIR_ERR_NOT_FOUND : XIR_ERR_LLVM,
                            "looking up '%s': %s%s%s", name, m ? m : "(no message)",
                            jit->es_error[0] ? "; " : "", jit->es_error);
    LLVMDisposeErrorMessage(m);
    return s;
  }
  if (!w.addr) return xir__err(d, XIR_ERR_NOT_FOUND, "symbol '%s' resolved to address 0", name);
  *addr = (void *)(uintptr_t)w.addr;
  return XIR_OK;
}

/* Looks up entry in jd with the object-transform layer capturing what it links (jit->cap). */
static xir_status lookup_captured(xir__jit *jit, LLVMOrcJITDylibRef jd, const char *entry,
                                  void **addr, xir_diag *d) {
  jit->cap_len = 0;
  jit->cap_oom = 0;
  jit->cap_active = 1;
  xir_status st = lookup_in(jit, jd, entry, addr, d);
  jit->cap_active = 0;
  if (st == XIR_OK && jit->cap_oom)
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory capturing the object");
  return st;
}

/* ---- cache ---- */

static xir__jit_artifact *cache_find_locked(xir__jit *jit, const char *key) {
  for (size_t i = 0; i < jit->n_arts; i++)
    if (!strcmp(jit->arts[i]->key, key)) return jit->arts[i];
  return NULL;
}

const xir__jit_artifact *xir__jit_cache_find(xir__jit *jit, const char *key) {
  if (!jit || !key) return NULL;
  pthread_mutex_lock(&jit->mu);
  const xir__jit_artifact *a = cache_find_locked(jit, key);
  pthread_mutex_unlock(&jit->mu);
  return a;
}

size_t xir__jit_cache_size(xir__jit *jit) {
  pthread_mutex_lock(&jit->mu);
  size_t n = jit->n_arts;
  pthread_mutex_unlock(&jit->mu);
  return n;
}

/* "ir:" + SHA-256 over the unoptimized IR and every option that changes the code. */
static char *compute_key(xir__jit *jit, LLVMModuleRef mod, const char *entry) {
  char *ir = LLVMPrintModuleToString(mod);
  if (!ir) return NULL;
  char lvl[16];
  snprintf(lvl, sizeof lvl, "%d", jit->codegen_level);
  const char *parts[] = {ir, jit->triple, jit->cpu, jit->features, jit->pipeline, lvl, entry};
  xir__sha256 c;
  xir__sha256_init(&c);
  for (size_t i = 0; i < XIR_ARRAY_LEN(parts); i++)
    xir__sha256_update(&c, parts[i], strlen(parts[i]) + 1); /* with the NUL */
  LLVMDisposeMessage(ir);
  char *key = xir__malloc(3 + 64 + 1);
  if (!key) return NULL;
  memcpy(key, "ir:", 3);
  xir__sha256_final_hex(&c, key + 3);
  return key;
}

/* ---- add ---- */

/* A fresh JITDylib that resolves the few process symbols codegen may call. Caller holds jit->mu.
 * On failure *jd is NULL or a JITDylib the caller clears. */
static xir_status new_dylib(xir__jit *jit, LLVMOrcJITDylibRef *jd, xir_diag *d) {
  char jdname[48];
  snprintf(jdname, sizeof jdname, "xir.m%llu", jit->next_dylib++);
  LLVMErrorRef e = LLVMOrcExecutionSessionCreateJITDylib(jit->es, jd, jdname);
  if (e) {
    *jd = NULL;
    return llvm_err(d, XIR_ERR_LLVM, "creating a JITDylib", e);
  }
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
      &gen, LLVMOrcLLJITGetGlobalPrefix(jit->lljit), allow_process_symbol, NULL);
  if (e) return llvm_err(d, XIR_ERR_LLVM, "creating the process symbol generator", e);
  LLVMOrcJITDylibAddGenerator(*jd, gen); /* owns gen */
  return XIR_OK;
}

xir_status xir__jit_add(xir__jit *jit, xir__jit_module *m, const char *entry, const char *key,
                        const xir__jit_artifact **out, int *cached, xir_diag *d) {
  if (out) *out = NULL;
  if (cached) *cached = 0;
  if (!jit || !m || !m->mod || !m->tsc || !entry || !entry[0] || !out) {
    xir__jit_module_dispose(m);
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir__jit_add: NULL module, entry or out");
  }
  double t0 = (xir__now_ns() / 1e6);
  xir_status st = XIR_OK;
  char *k = NULL, *ir = NULL;
  xir__jit_artifact *a = NULL;
  LLVMOrcJITDylibRef jd = NULL;
  pthread_mutex_lock(&jit->mu);

  k = key ? xir__strdup(key) : compute_key(jit, m->mod, entry);
  if (!k) {
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory");
    goto done;
  }
  xir__jit_artifact *hit = cache_find_locked(jit, k);
  if (hit) {
    *out = hit;
    if (cached) *cached = 1;
    goto done;
  }

  /* verify */
  double tv = (xir__now_ns() / 1e6);
  char *vmsg = NULL;
  if (LLVMVerifyModule(m->mod, LLVMReturnStatusAction, &vmsg)) {
    st = xir__err(d, XIR_ERR_LLVM, "invalid LLVM IR: %s", vmsg ? vmsg : "(no message)");
    LLVMDisposeMessage(vmsg);
    goto done;
  }
  LLVMDisposeMessage(vmsg);
  double verify_ms = (xir__now_ns() / 1e6) - tv;

  /* optimize */
  double to = (xir__now_ns() / 1e6);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(m->mod, jit->pipeline, jit->tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    st = llvm_err(d, XIR_ERR_LLVM, "optimization pipeline failed", e);
    goto done;
  }
  double opt_ms = (xir__now_ns() / 1e6) - to;

  /* capture the optimized IR */
  char *irl = LLVMPrintModuleToString(m->mod);
  ir = irl ? xir__strdup(irl) : NULL;
  LLVMDisposeMessage(irl);
  a = xir__calloc(1, sizeof *a);
  if (!ir || !a || xir__grow((void **)&jit->arts, &jit->cap_arts, jit->n_arts + 1, sizeof a)) {
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory");
    goto done;
  }

  /* hand it to LLJIT in a fresh JITDylib */
  double tc = (xir__now_ns() / 1e6);
  if ((st = new_dylib(jit, &jd, d))) goto done;
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m->mod, m->tsc);
  m->mod = NULL; /* owned by tsm */
  e = LLVMOrcLLJITAddLLVMIRModule(jit->lljit, jd, tsm); /* owns tsm */
  if (e) {
    st = llvm_err(d, XIR_ERR_LLVM, "adding the module to the JIT", e);
    goto done;
  }
  void *addr = NULL;
  if ((st = lookup_captured(jit, jd, entry, &addr, d))) goto done;
  if (jit->cap_len == 0) {
    st = xir__err(d, XIR_ERR_LLVM, "no object was emitted for entry '%s'", entry);
    goto done;
  }
  double codegen_ms = (xir__now_ns() / 1e6) - tc;

  a->obj = xir__malloc(jit->cap_len);
  a->entry_name = xir__strdup(entry);
  if (!a->obj || !a->entry_name) {
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory");
    goto done;
  }
  memcpy((void *)a->obj, jit->cap, jit->cap_len);
  a->obj_size = jit->cap_len;
  a->entry = addr;
  a->key = k;
  k = NULL;
  a->ir_text = ir;
  a->ir_len = strlen(ir);
  ir = NULL;
  xir__jit_sha256_hex(a->ir_text, a->ir_len, a->ir_sha256);
  xir__jit_sha256_hex(a->obj, a->obj_size, a->obj_sha256);
  a->verify_ms = verify_ms;
  a->opt_ms = opt_ms;
  a->codegen_ms = codegen_ms;
  a->jd = jd;
  a->total_ms = (xir__now_ns() / 1e6) - t0;
  jit->arts[jit->n_arts++] = a;
  *out = a;
  a = NULL;
  jd = NULL;

done:
  if (jd) { /* failed after the JITDylib was made: drop what it holds */
    LLVMErrorRef ce = LLVMOrcJITDylibClear(jd);
    if (ce) LLVMConsumeError(ce);
  }
  if (a) {
    xir__free((void *)a->obj);
    xir__free((void *)a->entry_name);
    xir__free(a);
  }
  pthread_mutex_unlock(&jit->mu);
  xir__free(ir);
  xir__free(k);
  xir__jit_module_dispose(m);
  return st;
}

xir_status xir__jit_lookup(xir__jit *jit, const xir__jit_artifact *a, const char *name,
                           void **addr, xir_diag *d) {
  if (!jit || !a || !name || !addr)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir__jit_lookup: NULL argument");
  *addr = NULL;
  pthread_mutex_lock(&jit->mu);
  xir_status st = lookup_in(jit, a->jd, name, addr, d);
  pthread_mutex_unlock(&jit->mu);
  return st;
}

xir_status xir__jit_add_object(xir__jit *jit, const char *key, const char *entry,
                               const char *ir_text, size_t ir_len, const char ir_sha256[65],
                               const unsigned char *obj, size_t obj_size,
                               const char obj_sha256[65], const xir__jit_artifact **out,
                               xir_diag *d) {
  if (out) *out = NULL;
  if (!jit || !key || !entry || !entry[0] || !ir_text || !ir_sha256 || !obj || !obj_size ||
      !obj_sha256 || !out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir__jit_add_object: NULL or empty argument");
  double t0 = (xir__now_ns() / 1e6);
  xir_status st = XIR_OK;
  LLVMOrcJITDylibRef jd = NULL;
  xir__jit_artifact *a = NULL;
  pthread_mutex_lock(&jit->mu);
  xir__jit_artifact *hit = cache_find_locked(jit, key);
  if (hit) {
    *out = hit;
    goto done;
  }
  a = xir__calloc(1, sizeof *a);
  if (a) {
    a->key = xir__strdup(key);
    a->entry_name = xir__strdup(entry);
    a->obj = xir__malloc(obj_size);
    char *ir = xir__malloc(ir_len + 1);
    if (ir) {
      memcpy(ir, ir_text, ir_len);
      ir[ir_len] = 0;
    }
    a->ir_text = ir;
  }
  if (!a || !a->key || !a->entry_name || !a->obj || !a->ir_text ||
      xir__grow((void **)&jit->arts, &jit->cap_arts, jit->n_arts + 1, sizeof a)) {
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory");
    goto done;
  }
  memcpy((void *)a->obj, obj, obj_size);
  if ((st = new_dylib(jit, &jd, d))) goto done;
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)obj,
                                                                      obj_size, "xir.cached");
  if (!buf) {
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory copying the object");
    goto done;
  }
  LLVMErrorRef e = LLVMOrcLLJITAddObjectFile(jit->lljit, jd, buf); /* owns buf */
  if (e) {
    st = llvm_err(d, XIR_ERR_LLVM, "adding the cached object to the JIT", e);
    goto done;
  }
  /* The object goes through the object-transform layer like a compiled one: capture it and
   * check that the bytes linked are the bytes whose hash is reported. */
  void *addr = NULL;
  if ((st = lookup_captured(jit, jd, entry, &addr, d))) goto done;
  if (jit->cap_len != obj_size || memcmp(jit->cap, obj, obj_size) != 0) {
    st = xir__err(d, XIR_ERR_LLVM, "the object linked (%zu bytes) is not the cached object "
                  "(%zu bytes)", jit->cap_len, obj_size);
    goto done;
  }
  a->obj_size = obj_size;
  a->ir_len = ir_len;
  memcpy(a->ir_sha256, ir_sha256, 64);
  a->ir_sha256[64] = 0;
  memcpy(a->obj_sha256, obj_sha256, 64);
  a->obj_sha256[64] = 0;
  a->entry = addr;
  a->jd = jd;
  a->loaded = 1;
  a->codegen_ms = (xir__now_ns() / 1e6) - t0;
  a->total_ms = a->codegen_ms;
  jit->arts[jit->n_arts++] = a;
  *out = a;
  a = NULL;
  jd = NULL;
done:
  if (jd) {
    LLVMErrorRef ce = LLVMOrcJITDylibClear(jd);
    if (ce) LLVMConsumeError(ce);
  }
  if (a) {
    xir__free((void *)a->key);
    xir__free((void *)a->entry_name);
    xir__free((void *)a->obj);
    xir__free((void *)a->ir_text);
    xir__free(a);
  }
  pthread_mutex_unlock(&jit->mu);
  return st;
}
