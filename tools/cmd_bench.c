/* cmd_bench.c — `xir bench`: the measurement protocol of SPEC.md.
 *
 *   build suite ─► prepare every case (inputs, oracle, plan, compile / peer setup; untimed)
 *               ─► run each case once and check it against the oracle before any timing
 *   for round r: for case in declared order r % norders:
 *       warm-up ≈ 75 ms (doubling batches) ─► calibrate n for ≈ 20 ms ─► 7 samples of n launches
 *       ─► re-read the whole output, compare with the oracle, check sentinels
 *   ─► summarize (src/bench/records.c) ─► raw.json.gz, tables.md, ratios.svg
 * Every round is kept. The timed region is one batch of n launches plus the wait. */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench/python_side.h"
#include "bench/records.h"
#include "cli.h"
#include "util/sha256.h"
#include "util/util.h"


typedef struct bench_opts {
  const char *suite, *out, *peers_dir;
  const char *pyenv; /* --pyenv: the venv holding the xir Python package (the Python side) */
  suite_filter filter;
  int rounds;
  double warmup_ms, sample_ms;
  double settle_ms; /* idle time before each visit (peers' OpenMP threads keep spinning after
                       their calls and would steal the next case's cores) */
  int samples;
  int plot;
  int list; /* --list: print the suite's cases and comparisons, measure nothing */
  char ext_names[BENCH_MAX_PEERS][32], ext_cmds[BENCH_MAX_PEERS][4400];
  int next;
} bench_opts;

/* The peers suite's Python side (docs/bench.md, "The Python side"): one process, the peers
 * venv's python running python/bench/xir_peer.py --torch with the xir package of BUILD/pyenv,
 * answering for the external peers xir_python and torch_eager_py. */
typedef struct py_side {
  int declared; /* the peers suite: records.python_side says whether it was measured */
  int want;     /* both found: start the server */
  int via_peer; /* --peer named xir_python or torch_eager_py: the caller's own server */
  int measured; /* the names are in the run (the server answered hello, or --peer named them);
                   cleared when the suite keeps no case of them (python_side_cases) */
  char reason[1400];
  char pyenv[2048];
  char cmd[4400];
} py_side;

static void help(void) {
  printf(
      "usage: xir bench --suite NAME [options]\n\n"
      "Runs a benchmark suite with the measurement protocol of SPEC.md and writes raw records\n"
      "(gzip'd JSON), tables.md and ratios.svg into the output folder; `xir audit DIR` checks\n"
      "them. Suites: pilot, validation, fixed-grain, peers, dtype, smoke; and regret (the\n"
      "planner's regret, its own options: `xir bench --suite regret --help`).\n\n"
      "options:\n"
      "  --suite NAME          the suite (required)\n"
      "  --kernels a,b         only these kernels\n"
      "  --shapes 'S1;S2'      only these shapes (e.g. 'R=64,C=256;R=129,C=768')\n"
      "  --extra-shapes 'S;..' peers and dtype suites: these row shapes (R=N,C=N) as well as\n"
      "                        the suite's own (with the same list in --shapes: only them);\n"
      "                        RoPE gets HD = the largest even divisor of C up to 128, or\n"
      "                        R=N,C=N,HD=N[,P=N] for rope and rope_cache only;\n"
      "                        peers: attention shapes B=N,HQ=N,HKV=N,Q=N,K=N,D=N,DV=N too\n"
      "  --configs a,b         only these configurations (e.g. joint_legacy,joint_tasks);\n"
      "                        configurations: default (xir_plan_options_default),\n"
      "                        default_rule_stores (the same, stores by the rule), joint_legacy,\n"
      "                        joint_tasks, joint_tasks_1w, joint_calibrated,\n"
      "                        fixed:l=L,B=B,G=G[,H=H], peer:c_fast_omp, peer:c_fast_1t,\n"
      "                        peer:c_strict_omp, probe:stream, ext:NAME (docs/bench.md)\n"
      "  --rounds N            rounds (default: 4, fixed-grain and smoke 2)\n"
      "  --workers N           runtime workers incl. the caller (default 2)\n"
      "  --warmup-ms X         warm-up per visit (default 75)\n"
      "  --sample-ms X         target length of one sample (default 20)\n"
      "  --samples N           samples per visit (default 7)\n"
      "  --settle-ms X         idle time before each visit (default 250 for the peers suite,\n"
      "                        0 otherwise): peer thread pools stop spinning first\n"
      "  --seed N              input seed (default 1)\n"
      "  --input-offset N      every input buffer N bytes past a page boundary (0..56, a\n"
      "                        multiple of 8; default 0), the same for every configuration;\n"
      "                        malloc: where malloc puts each (16 past a page when large)\n"
      "  --peers-dir DIR       external peers set up by scripts/setup_peers.sh DIR\n"
      "  --peer NAME=COMMAND   an external peer server (repeatable; docs/peers.md)\n"
      "  --pyenv DIR           peers suite, the Python side: the venv with the xir Python\n"
      "                        package (default: $XIR_PYENV, else pyenv beside this binary,\n"
      "                        i.e. BUILD/pyenv of scripts/setup_python.sh BUILD); measured\n"
      "                        with the torch of --peers-dir's venv, in one process\n"
      "  --out DIR             output folder (default results/SUITE-YYYYmmdd-HHMMSS)\n"
      "  --no-plot             skip ratios.svg\n"
      "  --list                print the suite's cases and comparisons (variant / baseline) after\n"
      "                        the filters, and measure nothing\n");
}

static void sha_file(const char *path, char hex[65]) {
  xir__sha256 h;
  xir__sha256_init(&h);
  FILE *f = fopen(path, "rb");
  unsigned char buf[65536];
  size_t n;
  strcpy(hex, "unknown");
  if (!f) return;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) xir__sha256_update(&h, buf, n);
  fclose(f);
  xir__sha256_final_hex(&h, hex);
}

void bench_binary_sha(char hex[65]) { sha_file("/proc/self/exe", hex); }

static void read_line_of(const char *cmd, char *out, size_t cap) {
  snprintf(out, cap, "unknown");
  FILE *f = popen(cmd, "r");
  if (!f) return;
  if (fgets(out, (int)cap, f)) out[strcspn(out, "\n")] = 0;
  else snprintf(out, cap, "unknown");
  pclose(f);
}

static cJSON *provenance(int argc, char **argv, bench_env *e, const char *cpu_features) {
  cJSON *p = cJSON_CreateObject();
  char buf[1024], cmd[4096] = "";
  snprintf(buf, sizeof buf, "git -C '%s' rev-parse HEAD 2>/dev/null", XIR_SOURCE_DIR);
  read_line_of(buf, cmd, sizeof cmd);
  cJSON_AddStringToObject(p, "git_commit", cmd);
  snprintf(buf, sizeof buf, "git -C '%s' status --porcelain --untracked-files=no 2>/dev/null | wc -l", XIR_SOURCE_DIR);
  read_line_of(buf, cmd, sizeof cmd);
  cJSON_AddBoolToObject(p, "git_dirty", atoi(cmd) > 0);
  cJSON_AddStringToObject(p, "compiler", "gcc " __VERSION__);
  cJSON_AddStringToObject(p, "llvm", xir_llvm_version());
  read_line_of("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'", cmd, sizeof cmd);
  cJSON_AddStringToObject(p, "cpu_model", cmd);
  cJSON_AddStringToObject(p, "cpu", xir_compiler_cpu(e->cc));
  cJSON_AddStringToObject(p, "cpu_features", cpu_features);
  cJSON_AddNumberToObject(p, "simd_width", xir_compiler_width(e->cc));
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  cJSON_AddNumberToObject(p, "online_cpus", (double)ncpu);
  cJSON *rt = cJSON_AddObjectToObject(p, "runtime");
  xir_wait_policy wp;
  uint32_t spin;
  xir_runtime_get_wait(e->rt, &wp, &spin);
  cJSON_AddNumberToObject(rt, "workers", e->workers);
  cJSON_AddStringToObject(rt, "wait", wp == XIR_WAIT_SPIN ? "spin" : wp == XIR_WAIT_SLEEP ? "sleep" : "spin_then_sleep");
  cJSON_AddNumberToObject(rt, "spin_us", spin);
  size_t o = 0;
  for (int i = 0; i < argc; i++) o += (size_t)snprintf(cmd + o, o < sizeof cmd ? sizeof cmd - o : 0, "%s%s", i ? " " : "", argv[i]);
  cJSON_AddStringToObject(p, "command_line", cmd);
  char hex[65];
  bench_binary_sha(hex);
  cJSON_AddStringToObject(p, "binary_sha256", hex);
  time_t now = time(NULL);
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  cJSON_AddStringToObject(p, "date", buf);
  return p;
}

static cJSON *filter_json(const suite_filter *f) {
  cJSON *o = cJSON_CreateObject();
  if (f->kernels) cJSON_AddStringToObject(o, "kernels", f->kernels);
  if (f->shapes) cJSON_AddStringToObject(o, "shapes", f->shapes);
  if (f->configs) cJSON_AddStringToObject(o, "configs", f->configs);
  if (f->extra) cJSON_AddStringToObject(o, "extra_shapes", f->extra);
  return o;
}

/* One visit: warm-up, calibration, samples, check. */
static xir_status visit(bench_env *e, bcase *c, const bench_opts *o, cJSON *v, xir_diag *d) {
  double elapsed = 0, per = 0, t = 0;
  uint64_t n = 1;
  xir_status st;
  while (elapsed < o->warmup_ms * 1e6) {
    if ((st = bcase_run(e, c, n, &t, d))) return st;
    elapsed += t;
    per = t / (double)n;
    if (t < 2e6 && n < (1u << 24)) n *= 2;
  }
  if (!(per > 0)) per = 1;
  double want = o->sample_ms * 1e6 / per;
  n = want < 1 ? 1 : (uint64_t)llround(want);
  cJSON_AddNumberToObject(v, "n", (double)n);
  cJSON *arr = cJSON_AddArrayToObject(v, "samples_ns");
  for (int s = 0; s < o->samples; s++) {
    if ((st = bcase_run(e, c, n, &t, d))) return st;
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(t > 0 ? t : 1));
  }
  xir_compare cmp;
  int sent;
  if ((st = bcase_check(e, c, &cmp, &sent, d))) return st;
  cJSON *chk = cJSON_AddObjectToObject(v, "check");
  cJSON_AddBoolToObject(chk, "pass", cmp.pass && sent);
  cJSON_AddNumberToObject(chk, "max_abs", cmp.max_abs);
  cJSON_AddNumberToObject(chk, "rel_l2", cmp.rel_l2);
  cJSON_AddBoolToObject(chk, "sentinels", sent);
  cJSON_AddStringToObject(chk, "output_sha256", c->out_sha);
  if (!cmp.pass || !sent)
    return xir__err(d, XIR_ERR_RUNTIME, "%s %s %s: the output after timing does not match the "
                    "oracle (%zu bad elements, max abs %.3g, sentinels %s)", c->decl.kernel,
                    c->decl.shape, c->decl.config, cmp.bad, cmp.max_abs, sent ? "ok" : "broken");
  return XIR_OK;
}

static const char *fmt_us(double ns, char *buf, size_t cap) {
  if (isnan(ns)) snprintf(buf, cap, "-");
  else if (ns < 1e5) snprintf(buf, cap, "%.2f", ns / 1e3);
  else snprintf(buf, cap, "%.1f", ns / 1e3);
  return buf;
}

static double jnum(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Bytes a kernel case must move at least: every input read once, the output written once. */
static double case_bytes(const bcase *c) {
  double b = 0;
  for (int i = 0; c->p && i < xir_program_num_params(c->p); i++) {
    xir_param_info in;
    xir_program_param(c->p, i, &in);
    if (in.kind == XIR_PARAM_BUFFER)
      b += (double)c->cs.numel[i] * (in.elem == XIR_I64 ? sizeof(int64_t) : sizeof(float));
  }
  return b;
}

static const char *jcfg(const cJSON *cases, int i) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cases, i), "config"));
  return s ? s : "";
}

/* The peers suite's headline, from the summary (which the audit recomputes): for every case of
 * xir's default plan, the best peer (of the headline C peers c_fast_omp / c_fast_1t and the
 * external peers, the fastest by median time) and the paired ratio xir / best peer; the streaming
 * floor where the probe ran. Writes the table to f (when f) and the totals to *tot. */
typedef struct headline {
  int n, losses;
  double log_sum, worst;
  char worst_name[256];
} headline;

static void write_headline(FILE *f, const cJSON *rec, headline *tot) {
  const cJSON *cases = cJSON_GetObjectItem(rec, "cases"), *sum = cJSON_GetObjectItem(rec, "summary");
  const cJSON *cs = cJSON_GetObjectItem(sum, "cases"), *cmps = cJSON_GetObjectItem(sum, "comparisons");
  memset(tot, 0, sizeof *tot);
  tot->worst = -1;
  if (f)
    fprintf(f, "## Headline: xir's default plan vs the best peer\n\n"
               "`default` = xir_plan_options_default() with the run's workers. Best peer = the "
               "fastest (median µs) of the headline peers measured for the case: `c_fast_omp` "
               "(gcc -O3 -march=native -ffast-math -fopenmp, 2 threads), `c_fast_1t` (the same, "
               "1 thread) and any external peer. xir/best is the paired ratio (median over rounds "
               "of the same-round ratio; > 1: xir loses). Floor = the case's bytes (every input "
               "read once, the output written once) / the bandwidth of the 2-thread stream probe "
               "over the same buffers, measured in the same run (= the probe's time); xir/floor "
               "is paired the same way.\n\n"
               "| kernel | shape | best peer | peer µs | xir µs | xir/best | min–max | MB | "
               "stream GB/s | floor µs | xir/floor |\n|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|\n");
  const cJSON *c;
  int i = 0;
  cJSON_ArrayForEach(c, cases) {
    int me = i++;
    if (strcmp(jcfg(cases, me), "default") != 0) continue;
    const cJSON *best = NULL, *probe = NULL, *k;
    double best_t = INFINITY;
    cJSON_ArrayForEach(k, cmps) {
      if ((int)jnum(k, "variant") != me) continue;
      int b = (int)jnum(k, "baseline");
      const char *bc = jcfg(cases, b);
      double t = jnum(cJSON_GetArrayItem(cs, b), "median_p50_ns");
      if (!strcmp(bc, "probe:stream")) probe = k;
      else if ((!strcmp(bc, "peer:c_fast_omp") || !strcmp(bc, "peer:c_fast_1t") ||
                !strncmp(bc, "ext:", 4)) && t < best_t) {
        best_t = t;
        best = k;
      }
    }
    if (!best) continue;
    const char *kern = cJSON_GetStringValue(cJSON_GetObjectItem(c, "kernel"));
    const char *shape = cJSON_GetStringValue(cJSON_GetObjectItem(c, "shape"));
    const char *peer = jcfg(cases, (int)jnum(best, "baseline"));
    double r = jnum(best, "median_ratio");
    tot->n++;
    tot->log_sum += log(r);
    tot->losses += r > 1;
    if (r > tot->worst) {
      tot->worst = r;
      snprintf(tot->worst_name, sizeof tot->worst_name, "%s %s (vs %s)", kern, shape, peer);
    }
    if (!f) continue;
    char a[32], x[32], fl[32];
    double mine = jnum(cJSON_GetArrayItem(cs, me), "median_p50_ns"), bytes = jnum(c, "bytes");
    fprintf(f, "| %s | %s | %s | %s | %s | %.3f | %.3f–%.3f | %.2f |", kern, shape, peer,
            fmt_us(best_t, a, sizeof a), fmt_us(mine, x, sizeof x), r, jnum(best, "min_ratio"),
            jnum(best, "max_ratio"), bytes / 1e6);
    if (probe) {
      double floor_ns = jnum(cJSON_GetArrayItem(cs, (int)jnum(probe, "baseline")), "median_p50_ns");
      fprintf(f, " %.1f | %s | %.3f |\n", bytes / floor_ns, fmt_us(floor_ns, fl, sizeof fl),
              jnum(probe, "median_ratio"));
    } else {
      fprintf(f, " - | - | - |\n");
    }
  }
  if (f && tot->n)
    fprintf(f, "\nOver %d cases: geometric mean of xir/best %.3f; worst %s at %.3f; xir loses "
               "(ratio > 1) in %d of %d.\n\n", tot->n, exp(tot->log_sum / tot->n), tot->worst_name,
            tot->worst, tot->losses, tot->n);
  else if (f)
    fprintf(f, "\nNo case of xir's default plan was measured against a headline peer.\n\n");
}

/* The peers suite's attention additions (issue 10), from the summary: every configuration
 * against the streaming probe of its case (the fraction of the bandwidth floor it reaches =
 * probe time / its time, the inverse of the paired ratio); xir's causal / non-causal ratio at the
 * same shape; and what each external peer said it runs (its hello). */
static void write_floor_and_causal(FILE *f, const cJSON *rec) {
  const cJSON *cases = cJSON_GetObjectItem(rec, "cases"), *sum = cJSON_GetObjectItem(rec, "summary");
  const cJSON *cs = cJSON_GetObjectItem(sum, "cases"), *cmps = cJSON_GetObjectItem(sum, "comparisons");
  const cJSON *k;
  int n = 0;
  cJSON_ArrayForEach(k, cmps) {
    int b = (int)jnum(k, "baseline"), v = (int)jnum(k, "variant");
    if (strcmp(jcfg(cases, b), "probe:stream") != 0) continue;
    const cJSON *cb = cJSON_GetArrayItem(cases, b);
    if (!n++)
      fprintf(f, "## Bandwidth floor: the fraction each configuration reaches\n\n"
                 "Floor = the probe's time over the case's own buffers (every input read once, the "
                 "output written once; attention: K and V once per KV head, q and o once), measured "
                 "in the same run. Fraction = floor / time = 1 / the paired ratio (median over "
                 "rounds; min–max from the ratio's). The probe writes the output with plain or "
                 "non-temporal stores, whichever was faster for the case before the run (probe "
                 "writes).\n\n"
                 "| kernel | shape | config | µs | floor µs | GB/s | fraction of floor | min–max | probe writes |\n"
                 "|---|---|---|---:|---:|---:|---:|---|---|\n");
    char x[32], y[32];
    double t = jnum(cJSON_GetArrayItem(cs, v), "median_p50_ns");
    double fl = jnum(cJSON_GetArrayItem(cs, b), "median_p50_ns");
    const char *pw = cJSON_GetStringValue(cJSON_GetObjectItem(cb, "probe_stores"));
    fprintf(f, "| %s | %s | %s | %s | %s | %.1f | %.3f | %.3f–%.3f | %s |\n",
            cJSON_GetStringValue(cJSON_GetObjectItem(cb, "kernel")),
            cJSON_GetStringValue(cJSON_GetObjectItem(cb, "shape")), jcfg(cases, v),
            fmt_us(t, x, sizeof x), fmt_us(fl, y, sizeof y), jnum(cb, "bytes") / t,
            1 / jnum(k, "median_ratio"), 1 / jnum(k, "max_ratio"), 1 / jnum(k, "min_ratio"),
            pw ? pw : "-");
  }
  if (n) fprintf(f, "\n");
  n = 0;
  cJSON_ArrayForEach(k, cmps) {
    const cJSON *cb = cJSON_GetArrayItem(cases, (int)jnum(k, "baseline"));
    const cJSON *cv = cJSON_GetArrayItem(cases, (int)jnum(k, "variant"));
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cb, "kernel")), "attention") != 0 ||
        strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cv, "kernel")), "attention_causal") != 0)
      continue;
    if (!n++)
      fprintf(f, "## Causal / non-causal attention (xir's default plan)\n\n"
                 "The same shape with and without the causal mask; the mask hides (K·Q − Q(Q+1)/2)"
                 " / (K·Q) of the scores, so skipping the masked work gives a ratio near 0.5.\n\n"
                 "| shape | non-causal µs | causal µs | causal / non-causal | min–max |\n"
                 "|---|---:|---:|---:|---|\n");
    char x[32], y[32];
    fprintf(f, "| %s | %s | %s | %.3f | %.3f–%.3f |\n",
            cJSON_GetStringValue(cJSON_GetObjectItem(cb, "shape")),
            fmt_us(jnum(cJSON_GetArrayItem(cs, (int)jnum(k, "baseline")), "median_p50_ns"), x, sizeof x),
            fmt_us(jnum(cJSON_GetArrayItem(cs, (int)jnum(k, "variant")), "median_p50_ns"), y, sizeof y),
            jnum(k, "median_ratio"), jnum(k, "min_ratio"), jnum(k, "max_ratio"));
  }
  if (n) fprintf(f, "\n");
  const cJSON *ph = cJSON_GetObjectItem(rec, "peer_hello");
  if (cJSON_GetArraySize(ph)) {
    fprintf(f, "## External peers (their hello: version and what they run)\n\n");
    cJSON_ArrayForEach(k, ph)
    fprintf(f, "- %s %s\n", cJSON_GetStringValue(cJSON_GetObjectItem(k, "name")),
            cJSON_GetStringValue(cJSON_GetObjectItem(k, "hello")));
    fprintf(f, "\n");
  }
}

/* tables.md: for the peers suite the headline, then every comparison, then every case. */
static xir_status write_tables(const char *path, const cJSON *rec, xir_diag *d) {
  FILE *f = fopen(path, "w");
  if (!f) return xir__err(d, XIR_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  const cJSON *cases = cJSON_GetObjectItem(rec, "cases"), *sum = cJSON_GetObjectItem(rec, "summary");
  const cJSON *prov = cJSON_GetObjectItem(rec, "provenance");
  const cJSON *cs = cJSON_GetObjectItem(sum, "cases"), *cmps = cJSON_GetObjectItem(sum, "comparisons");
  int rounds = (int)jnum(rec, "rounds");
  fprintf(f, "# xir bench: suite %s\n\n", cJSON_GetStringValue(cJSON_GetObjectItem(rec, "suite")));
  fprintf(f, "`%s` — commit %s, %s, LLVM %s, %s (%s, W=%g), %g workers, %d rounds x %g samples.\n\n",
          cJSON_GetStringValue(cJSON_GetObjectItem(prov, "command_line")),
          cJSON_GetStringValue(cJSON_GetObjectItem(prov, "git_commit")),
          cJSON_GetStringValue(cJSON_GetObjectItem(prov, "compiler")),
          cJSON_GetStringValue(cJSON_GetObjectItem(prov, "llvm")),
          cJSON_GetStringValue(cJSON_GetObjectItem(prov, "cpu_model")),
          cJSON_GetStringValue(cJSON_GetObjectItem(prov, "cpu")), jnum(prov, "simd_width"),
          jnum(cJSON_GetObjectItem(prov, "runtime"), "workers"), rounds, jnum(rec, "samples"));
  const cJSON *io = cJSON_GetObjectItem(rec, "input_offset");
  if (cJSON_IsNumber(io) && io->valuedouble >= 0)
    fprintf(f, "Every input buffer starts %g bytes past a page boundary (`--input-offset`).\n\n",
            io->valuedouble);
  else
    fprintf(f, "Input buffers lie where malloc put them (`--input-offset malloc`, or a record from "
               "before 2026-12-05).\n\n");
  fprintf(f, "Times are host wall µs per launch (batch of n launches + wait, divided by n; "
             "`default`: n launches in a loop, as xir_session_launch makes them): the "
             "median over rounds of each round's p50. A ratio is variant / baseline, the median "
             "over rounds of the same-round ratio (< 1: the variant is faster); min–max over "
             "rounds.\n\n");
  if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(rec, "suite")), "peers")) {
    headline h;
    write_headline(f, rec, &h);
    xir__bench_python_side_table(f, rec);
  }
  write_floor_and_causal(f, rec);
  fprintf(f, "## Comparisons\n\n| kernel | shape | baseline | variant | baseline µs | variant µs "
             "| ratio | min–max | max abs err (b / v) |\n|---|---|---|---|---:|---:|---:|---|---|\n");
  const cJSON *c;
  cJSON_ArrayForEach(c, cmps) {
    int b = (int)jnum(c, "baseline"), v = (int)jnum(c, "variant");
    const cJSON *cb = cJSON_GetArrayItem(cases, b), *cv = cJSON_GetArrayItem(cases, v);
    char x[32], y[32], vl[160];
    /* a comparison of two kernels (the dtype suite: swiglu against swiglu@bf16) names the
     * variant's kernel with its configuration */
    const char *kb = cJSON_GetStringValue(cJSON_GetObjectItem(cb, "kernel"));
    const char *kv = cJSON_GetStringValue(cJSON_GetObjectItem(cv, "kernel"));
    const char *cfv = cJSON_GetStringValue(cJSON_GetObjectItem(cv, "config"));
    if (kb && kv && cfv && strcmp(kb, kv)) snprintf(vl, sizeof vl, "%s %s", kv, cfv);
    else snprintf(vl, sizeof vl, "%s", cfv ? cfv : "?");
    fprintf(f, "| %s | %s | %s | %s | %s | %s | %.3f | %.3f–%.3f | %.2g / %.2g |\n", kb,
            cJSON_GetStringValue(cJSON_GetObjectItem(cb, "shape")),
            cJSON_GetStringValue(cJSON_GetObjectItem(cb, "config")), vl,
            fmt_us(jnum(cJSON_GetArrayItem(cs, b), "median_p50_ns"), x, sizeof x),
            fmt_us(jnum(cJSON_GetArrayItem(cs, v), "median_p50_ns"), y, sizeof y),
            jnum(c, "median_ratio"), jnum(c, "min_ratio"), jnum(c, "max_ratio"),
            jnum(cb, "max_abs_err"), jnum(cv, "max_abs_err"));
  }
  fprintf(f, "\n## Cases\n\n| # | kernel | shape | config | candidate | G | impl | median µs | "
             "min–max µs | max abs err | ir / obj sha256 |\n|---|---|---|---|---|---|---|---:|---|---|---|\n");
  int i = 0;
  cJSON_ArrayForEach(c, cases) {
    const cJSON *s = cJSON_GetArrayItem(cs, i);
    char a[32], b1[32], b2[32];
    const char *ir = cJSON_GetStringValue(cJSON_GetObjectItem(c, "ir_sha256"));
    const char *ob = cJSON_GetStringValue(cJSON_GetObjectItem(c, "obj_sha256"));
    fprintf(f, "| %d | %s | %s | %s | %s | %s | %s | %s | %s–%s | %.2g | %.12s / %.12s |\n", i,
            cJSON_GetStringValue(cJSON_GetObjectItem(c, "kernel")),
            cJSON_GetStringValue(cJSON_GetObjectItem(c, "shape")),
            cJSON_GetStringValue(cJSON_GetObjectItem(c, "config")),
            cJSON_GetStringValue(cJSON_GetObjectItem(c, "candidate")),
            cJSON_GetStringValue(cJSON_GetObjectItem(c, "grain")),
            cJSON_GetStringValue(cJSON_GetObjectItem(c, "implementation")),
            fmt_us(jnum(s, "median_p50_ns"), a, sizeof a), fmt_us(jnum(s, "min_p50_ns"), b1, sizeof b1),
            fmt_us(jnum(s, "max_p50_ns"), b2, sizeof b2), jnum(c, "max_abs_err"), ir ? ir : "-",
            ob ? ob : "-");
    i++;
  }
  const cJSON *ident = cJSON_GetObjectItem(rec, "grain_identity");
  if (ident) {
    fprintf(f, "\n## Task grain changes no code and no result\n\n| kernel | shape | cases | IR | "
               "object | output |\n|---|---|---|---|---|---|\n");
    cJSON_ArrayForEach(c, ident)
    fprintf(f, "| %s | %s | %g | %s | %s | %s |\n", cJSON_GetStringValue(cJSON_GetObjectItem(c, "kernel")),
            cJSON_GetStringValue(cJSON_GetObjectItem(c, "shape")), jnum(c, "cases"),
            cJSON_IsTrue(cJSON_GetObjectItem(c, "ir_identical")) ? "identical" : "DIFFERENT",
            cJSON_IsTrue(cJSON_GetObjectItem(c, "obj_identical")) ? "identical" : "DIFFERENT",
            cJSON_IsTrue(cJSON_GetObjectItem(c, "output_identical")) ? "identical" : "DIFFERENT");
  }
  const cJSON *uns = cJSON_GetObjectItem(rec, "unsupported");
  if (cJSON_GetArraySize(uns)) {
    fprintf(f, "\n## Not measured\n\n");
    cJSON_ArrayForEach(c, uns)
    fprintf(f, "- %s %s %s: %s\n", cJSON_GetStringValue(cJSON_GetObjectItem(c, "kernel")),
            cJSON_GetStringValue(cJSON_GetObjectItem(c, "shape")),
            cJSON_GetStringValue(cJSON_GetObjectItem(c, "config")),
            cJSON_GetStringValue(cJSON_GetObjectItem(c, "reason")));
  }
  int bad = ferror(f);
  bad |= fclose(f) != 0;
  return bad ? xir__err(d, XIR_ERR_IO, "cannot write '%s'", path) : XIR_OK;
}

/* ratios.svg through gnuplot (skipped with a note when gnuplot is missing). */
static void write_plot(const char *dir, const cJSON *rec) {
  char dat[4096], gp[4096], cmd[8400];
  snprintf(dat, sizeof dat, "%s/ratios.dat", dir);
  snprintf(gp, sizeof gp, "%s/ratios.gp", dir);
  FILE *f = fopen(dat, "w");
  if (!f) return;
  const cJSON *cases = cJSON_GetObjectItem(rec, "cases");
  const cJSON *c;
  int n = 0;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "summary"), "comparisons")) {
    const cJSON *cb = cJSON_GetArrayItem(cases, (int)jnum(c, "baseline"));
    const cJSON *cv = cJSON_GetArrayItem(cases, (int)jnum(c, "variant"));
    fprintf(f, "%d \"%s %s: %s/%s\" %g %g %g\n", n++, cJSON_GetStringValue(cJSON_GetObjectItem(cb, "kernel")),
            cJSON_GetStringValue(cJSON_GetObjectItem(cb, "shape")),
            cJSON_GetStringValue(cJSON_GetObjectItem(cv, "config")),
            cJSON_GetStringValue(cJSON_GetObjectItem(cb, "config")), jnum(c, "median_ratio"),
            jnum(c, "min_ratio"), jnum(c, "max_ratio"));
  }
  fclose(f);
  f = fopen(gp, "w");
  if (!f) return;
  fprintf(f, "set terminal svg size 1100,%d dynamic noenhanced font 'sans,10'\n"
             "set output '%s/ratios.svg'\n"
             "set title 'variant/baseline, median over rounds (bars: min-max); < 1: the variant is faster'\n"
             "set logscale x 2\nset xlabel 'ratio'\nset ytics font 'sans,8'\nset yrange [-1:%d]\n"
             "set grid x\nset arrow from 1,-1 to 1,%d nohead lc rgb 'red'\nunset key\n"
             "plot '%s' using 3:1:4:5:ytic(2) with xerrorbars pt 7 ps 0.6\n",
          160 + 14 * n, dir, n, n, dat);
  fclose(f);
  snprintf(cmd, sizeof cmd, "command -v gnuplot >/dev/null 2>&1 && gnuplot '%s' 2>/dev/null", gp);
  if (system(cmd) != 0) fprintf(stderr, "xir bench: gnuplot not available, no ratios.svg\n");
}

/* For the fixed-grain suite: per kernel × shape, are IR, object and output identical across G? */
static cJSON *grain_identity(bcase *cs, int n) {
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; i < n; i++) {
    if (strncmp(cs[i].decl.config, "fixed:", 6) != 0) continue;
    int first = 1;
    for (int j = 0; j < i; j++)
      if (!strcmp(cs[j].decl.kernel, cs[i].decl.kernel) && !strcmp(cs[j].decl.shape, cs[i].decl.shape))
        first = 0;
    if (!first) continue;
    int count = 0, ir = 1, obj = 1, out = 1;
    for (int j = i; j < n; j++) {
      if (strcmp(cs[j].decl.kernel, cs[i].decl.kernel) || strcmp(cs[j].decl.shape, cs[i].decl.shape)) continue;
      count++;
      ir &= !strcmp(cs[j].ir_sha, cs[i].ir_sha);
      obj &= !strcmp(cs[j].obj_sha, cs[i].obj_sha);
      out &= !strcmp(cs[j].out_sha, cs[i].out_sha);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kernel", cs[i].decl.kernel);
    cJSON_AddStringToObject(o, "shape", cs[i].decl.shape);
    cJSON_AddNumberToObject(o, "cases", count);
    cJSON_AddBoolToObject(o, "ir_identical", ir);
    cJSON_AddBoolToObject(o, "obj_identical", obj);
    cJSON_AddBoolToObject(o, "output_identical", out);
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

/* 1 when the comma list names item (NULL: every item). */
static int list_has(const char *list, const char *item) {
  if (!list) return 1;
  size_t n = strlen(item);
  for (const char *s = list; *s;) {
    const char *e = strchr(s, ',');
    size_t l = e ? (size_t)(e - s) : strlen(s);
    if (l == n && !strncmp(s, item, n)) return 1;
    if (!e) break;
    s = e + 1;
  }
  return 0;
}

/* Appends w to the sh command out (its length *n, cap bytes), after a space: with quote as ONE
 * sh word ('...', each ' written '\'': any path, spaces and quotes included), else as it is (the
 * options written here). 0, or -1 when it does not fit. */
static int cmd_add(char *out, size_t cap, size_t *n, const char *w, int quote) {
  size_t k = *n, need = strlen(w) + 1 + (quote ? 2 : 0);
  for (const char *c = w; quote && *c; c++) need += *c == '\'' ? 3 : 0;
  if (k + need + 1 > cap) return -1;
  if (k) out[k++] = ' ';
  if (quote) out[k++] = '\'';
  for (const char *c = w; *c; c++) {
    if (quote && *c == '\'') {
      memcpy(out + k, "'\\''", 4);
      k += 4;
    } else {
      out[k++] = *c;
    }
  }
  if (quote) out[k++] = '\'';
  out[k] = 0;
  *n = k;
  return 0;
}

/* The command of a Python script of this source tree run by python: 'python' 'SCRIPT' OPTIONS
 * (OPTIONS as they are), into out; 0, or -1 when it does not fit. */
static int script_cmd(char *out, size_t cap, const char *python, const char *script, const char *opts) {
  size_t n = 0;
  out[0] = 0;
  return cmd_add(out, cap, &n, python, 1) || cmd_add(out, cap, &n, script, 1) ||
                 cmd_add(out, cap, &n, opts, 0)
             ? -1
             : 0;
}

static int is_py_side(const char *cfg) {
  return !strcmp(cfg, XIR_PY_SIDE_XIR) || !strcmp(cfg, XIR_PY_SIDE_TORCH);
}

static int is_py_side_name(const char *name) {
  return !strcmp(name, "xir_python") || !strcmp(name, "torch_eager_py");
}

/* After the suite is built (and again once the unsupported cases are dropped): the Python side
 * is measured only when a case of it is left; else not, with the reason (the one already given,
 * e.g. a --peer server that did not start, or `why`). */
static void python_side_cases(py_side *ps, const bench_suite *s, const char *why) {
  if (!ps->measured) return;
  for (int i = 0; i < s->ncases; i++)
    if (is_py_side(s->cases[i].config)) return;
  ps->measured = 0;
  if (!ps->reason[0]) snprintf(ps->reason, sizeof ps->reason, "%s", why);
}

/* Where the xir Python package is looked for: --pyenv, else $XIR_PYENV (the variable with which
 * scripts/setup_python.sh puts the venv elsewhere), else `pyenv` beside this binary (BUILD/xir ->
 * BUILD/pyenv, where scripts/setup_python.sh BUILD makes it). Absolute when it exists. */
static void find_pyenv(const char *opt, char *out, size_t cap) {
  const char *env = getenv("XIR_PYENV");
  char dir[PATH_MAX + 16] = "";
  if (opt && *opt) {
    snprintf(dir, sizeof dir, "%s", opt);
  } else if (env && *env) {
    snprintf(dir, sizeof dir, "%s", env);
  } else {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = 0;
      char *sl = strrchr(exe, '/');
      if (sl) *sl = 0;
      snprintf(dir, sizeof dir, "%s/pyenv", exe);
    }
  }
  char abs[PATH_MAX];
  snprintf(out, cap, "%.2000s", realpath(dir, abs) ? abs : dir);
}

/* What the peers suite can do about its Python side, before anything runs: the reason when it
 * cannot be measured, else the server's command (ps->want). */
static void python_side_plan(const bench_opts *o, unsigned workers, py_side *ps) {
  memset(ps, 0, sizeof *ps);
  if (strcmp(o->suite, "peers") != 0) return;
  ps->declared = 1;
  int xir_named = 0;
  for (int i = 0; i < o->next; i++) {
    ps->via_peer |= is_py_side_name(o->ext_names[i]);
    xir_named |= !strcmp(o->ext_names[i], "xir_python");
  }
  if (ps->via_peer) {
    /* the caller's own server (--peer): measured if it starts and --configs keeps a case of it
     * (python_side_cases) */
    ps->measured = 1;
    if (!xir_named)
      snprintf(ps->reason, sizeof ps->reason, "--peer names torch_eager_py without xir_python");
    return;
  }
  find_pyenv(o->pyenv, ps->pyenv, sizeof ps->pyenv);
  char venv[2048];
  snprintf(venv, sizeof venv, "%s/venv/bin/python", o->peers_dir ? o->peers_dir : "");
  char pat[2300];
  snprintf(pat, sizeof pat, "%s/lib/python3*/site-packages/xir/__init__.py", ps->pyenv);
  glob_t g;
  int found = ps->pyenv[0] && glob(pat, 0, NULL, &g) == 0;
  if (found) globfree(&g);
  if (!list_has(o->filter.configs, XIR_PY_SIDE_XIR))
    snprintf(ps->reason, sizeof ps->reason, "--configs does not name %s", XIR_PY_SIDE_XIR);
  else if (!o->peers_dir)
    snprintf(ps->reason, sizeof ps->reason, "no torch: without --peers-dir there is no peers venv "
             "(scripts/setup_peers.sh DIR, then --peers-dir DIR)");
  else if (access(venv, X_OK) != 0)
    snprintf(ps->reason, sizeof ps->reason, "no torch: %.600s is missing (scripts/setup_peers.sh %.600s)",
             venv, o->peers_dir);
  else if (!found)
    snprintf(ps->reason, sizeof ps->reason, "no xir Python package in %.1200s (lib/python3.*/"
             "site-packages/xir): make it with bash scripts/setup_python.sh BUILD, or name another "
             "with --pyenv DIR or XIR_PYENV", ps->pyenv[0] ? ps->pyenv : "(no pyenv found)");
  else if (o->next + 2 > BENCH_MAX_PEERS)
    snprintf(ps->reason, sizeof ps->reason, "%d external peers already, at most %d in all",
             o->next, BENCH_MAX_PEERS);
  else {
    /* xir_python and torch_eager_py with the run's workers, as xir's default case */
    char opts[64];
    size_t n = 0;
    snprintf(opts, sizeof opts, "--torch --threads %u --xir-pyenv", workers);
    ps->cmd[0] = 0;
    if (cmd_add(ps->cmd, sizeof ps->cmd, &n, venv, 1) ||
        cmd_add(ps->cmd, sizeof ps->cmd, &n, XIR_SOURCE_DIR "/python/bench/xir_peer.py", 1) ||
        cmd_add(ps->cmd, sizeof ps->cmd, &n, opts, 0) || cmd_add(ps->cmd, sizeof ps->cmd, &n, ps->pyenv, 1))
      snprintf(ps->reason, sizeof ps->reason, "the server's command does not fit in %zu bytes "
               "(--peers-dir and the pyenv are too long)", sizeof ps->cmd);
    else
      ps->want = 1;
  }
}

/* records.python_side: whether the Python side was measured, and if not why. */
static cJSON *python_side_json(const py_side *ps) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddBoolToObject(o, "measured", ps->measured);
  if (!ps->measured) cJSON_AddStringToObject(o, "reason", ps->reason);
  if (ps->pyenv[0]) cJSON_AddStringToObject(o, "pyenv", ps->pyenv);
  if (ps->measured) cJSON_AddStringToObject(o, "server", ps->cmd[0] ? ps->cmd : "--peer");
  return o;
}

int cmd_bench(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++) /* the regret suite has its own options */
    if (!strcmp(argv[i], "--suite") && !strcmp(argv[i + 1], "regret")) return bench_regret_main(argc, argv);
  if (cli_wants_help(argc, argv)) {
    help();
    return 0;
  }
  static const struct option opts[] = {
      {"suite", required_argument, 0, 's'},     {"kernels", required_argument, 0, 'k'},
      {"shapes", required_argument, 0, 'S'},    {"configs", required_argument, 0, 'c'},
      {"rounds", required_argument, 0, 'r'},    {"workers", required_argument, 0, 'w'},
      {"warmup-ms", required_argument, 0, 'W'}, {"sample-ms", required_argument, 0, 'm'},
      {"samples", required_argument, 0, 'n'},   {"seed", required_argument, 0, 'e'},
      {"peers-dir", required_argument, 0, 'P'}, {"peer", required_argument, 0, 'p'},
      {"out", required_argument, 0, 'o'},       {"no-plot", no_argument, 0, 'x'},
      {"settle-ms", required_argument, 0, 'T'}, {"list", no_argument, 0, 'L'},
      {"extra-shapes", required_argument, 0, 'X'}, {"input-offset", required_argument, 0, 'I'},
      {"pyenv", required_argument, 0, 'Y'},     {0, 0, 0, 0}};
  bench_opts o;
  memset(&o, 0, sizeof o);
  o.warmup_ms = 75;
  o.sample_ms = 20;
  o.samples = 7;
  o.plot = 1;
  o.settle_ms = -1;
  bench_env e;
  memset(&e, 0, sizeof e);
  e.workers = 2;
  e.seed = 1;
  e.input_offset = 0;
  uint32_t u;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
      case 's': o.suite = optarg; break;
      case 'k': o.filter.kernels = optarg; break;
      case 'S': o.filter.shapes = optarg; break;
      case 'X': o.filter.extra = optarg; break;
      case 'c': o.filter.configs = optarg; break;
      case 'o': o.out = optarg; break;
      case 'P': o.peers_dir = optarg; break;
      case 'Y': o.pyenv = optarg; break;
      case 'x': o.plot = 0; break;
      case 'L': o.list = 1; break;
      case 'I':
        if (cli_parse_input_offset(optarg, &e.input_offset))
          return cli_usage_error("bench", "--input-offset '%s': needs a multiple of 8 below 64, or malloc", optarg);
        break;
      case 'p': {
        const char *eq = strchr(optarg, '=');
        if (!eq || eq == optarg || o.next >= 4) return cli_usage_error("bench", "--peer needs NAME=COMMAND (at most 4)");
        snprintf(o.ext_names[o.next], sizeof o.ext_names[0], "%.*s", (int)(eq - optarg), optarg);
        snprintf(o.ext_cmds[o.next], sizeof o.ext_cmds[0], "%s", eq + 1);
        o.next++;
        break;
      }
      case 'W':
      case 'm':
      case 'T': {
        char *end;
        double v = strtod(optarg, &end);
        if (*end || !(v > 0 || (c == 'T' && v == 0)) || v > 60000)
          return cli_usage_error("bench", "--%s needs a positive number of ms",
                                 c == 'W' ? "warmup-ms" : c == 'm' ? "sample-ms" : "settle-ms");
        if (c == 'W') o.warmup_ms = v;
        else if (c == 'm') o.sample_ms = v;
        else o.settle_ms = v;
        break;
      }
      case 'r':
      case 'w':
      case 'n':
      case 'e':
        if (cli_parse_u32(optarg, 0, &u) || (c != 'e' && (u == 0 || u > 1000)))
          return cli_usage_error("bench", "'%s' is not a valid count", optarg);
        if (c == 'r') o.rounds = (int)u;
        else if (c == 'w') e.workers = u;
        else if (c == 'n') o.samples = u > 256 ? 256 : (int)u;
        else e.seed = u;
        break;
      default: return cli_usage_error("bench", "unknown or incomplete option '%s'", argv[optind - 1]);
    }
  }
  if (!o.suite) return cli_usage_error("bench", "needs --suite (pilot, validation, fixed-grain, peers, dtype, smoke)");
  if (optind != argc) return cli_usage_error("bench", "unexpected argument '%s'", argv[optind]);
  xir_diag d;
  int rc = 1;
  bench_suite s;
  bcase *cs = NULL;
  cJSON *rec = NULL;
  memset(&s, 0, sizeof s);
  if (o.peers_dir) {
    /* the commands run by sh -c: every path one quoted word (any character in --peers-dir) */
    char path[2048];
    const size_t cap = sizeof o.ext_cmds[0];
    size_t n = 0;
    int bad = 0;
    snprintf(path, sizeof path, "%s/venv/bin/python", o.peers_dir);
    if (access(path, X_OK) == 0 && o.next + 2 <= BENCH_MAX_PEERS) {
      const char *tp = XIR_SOURCE_DIR "/peers/ext/torch_peer.py";
      snprintf(o.ext_names[o.next], 32, "torch_eager");
      bad |= script_cmd(o.ext_cmds[o.next++], cap, path, tp, "--mode eager");
      snprintf(o.ext_names[o.next], 32, "torch_compile");
      bad |= script_cmd(o.ext_cmds[o.next++], cap, path, tp, "--mode compile");
    }
    snprintf(path, sizeof path, "%s/bin/onednn_peer", o.peers_dir);
    if (access(path, X_OK) == 0 && o.next < BENCH_MAX_PEERS) {
      snprintf(o.ext_names[o.next], 32, "onednn");
      o.ext_cmds[o.next][0] = 0;
      bad |= cmd_add(o.ext_cmds[o.next++], cap, &n, path, 1);
    }
    if (bad)
      return cli_usage_error("bench", "--peers-dir '%s': a peer's command does not fit in %zu bytes",
                             o.peers_dir, cap);
  }
  /* the Python side: one server, two names; started now (its hello decides the names), listed
   * without starting it */
  py_side ps;
  python_side_plan(&o, e.workers, &ps);
  ext_peer *py_proc = NULL;
  if (ps.want && o.list) {
    ps.measured = 1;
  } else if (ps.want) {
    fprintf(stderr, "xir bench: starting the Python side (xir_python, torch_eager_py): %s\n", ps.cmd);
    if (ext_peer_start("xir_python", ps.cmd, &py_proc, &d) == XIR_OK) {
      ps.measured = 1;
    } else {
      snprintf(ps.reason, sizeof ps.reason, "its server did not start: %.1200s", d.msg);
      fprintf(stderr, "xir bench: Python side not measured: %s\n", ps.reason);
    }
  }
  const char *names[BENCH_MAX_PEERS];
  int nnames = 0;
  for (int i = 0; i < o.next; i++) names[nnames++] = o.ext_names[i];
  if (ps.measured && ps.want) {
    names[nnames++] = "xir_python";
    names[nnames++] = "torch_eager_py";
  }
  bench_set_ext_peers(names, nnames, 1);
  if (bench_suite_build(o.suite, &o.filter, &s, &d)) {
    ext_peer_stop(py_proc);
    return cli_fail(&d);
  }
  python_side_cases(&ps, &s, "--configs keeps no case of it (ext:xir_python is measured with "
                    "default or ext:torch_eager_py beside it)");
  if (o.list) {
    if (ps.declared)
      printf("python side: %s%s\n", ps.measured ? "measured by " : "not measured: ",
             ps.measured ? (ps.cmd[0] ? ps.cmd : "--peer") : ps.reason);
    for (int i = 0; i < s.ncases; i++)
      printf("case %d: %s %s %s\n", i, s.cases[i].kernel, s.cases[i].shape, s.cases[i].config);
    for (int k = 0; k < s.ncomparisons; k++) {
      const bcase_decl *b = &s.cases[s.comparisons[k][0]], *v = &s.cases[s.comparisons[k][1]];
      printf("comparison %d: %s %s %s / %s %s %s\n", k, v->kernel, v->shape, v->config, b->kernel,
             b->shape, b->config);
    }
    bench_suite_free(&s);
    return 0;
  }
  if (o.settle_ms < 0) o.settle_ms = !strcmp(o.suite, "peers") ? 250 : 0;
  int rounds = o.rounds ? o.rounds : s.default_rounds;
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  ro.workers = e.workers;
  if (xir_runtime_create(&ro, &e.rt, &d) || xir_compiler_create(NULL, &e.cc, &d)) goto fail;
  for (int i = 0; i < o.next; i++) {
    fprintf(stderr, "xir bench: starting peer %s: %s\n", o.ext_names[i], o.ext_cmds[i]);
    if (ext_peer_start(o.ext_names[i], o.ext_cmds[i], &e.peers[e.npeers], &d) == XIR_OK)
      snprintf(e.peer_names[e.npeers++], 32, "%s", o.ext_names[i]);
    else {
      char b[1200];
      fprintf(stderr, "xir bench: peer %s unavailable: %s\n", o.ext_names[i], xir_diag_format(&d, b, sizeof b));
      if (ps.via_peer && is_py_side_name(o.ext_names[i]) && !ps.reason[0])
        snprintf(ps.reason, sizeof ps.reason, "its server (--peer %s) did not start: %.1200s",
                 o.ext_names[i], d.msg);
    }
  }
  if (py_proc) { /* one process, two names: prepare says which ("peer") */
    for (int k = 0; k < 2; k++) {
      e.peers[e.npeers] = py_proc;
      e.peer_shared[e.npeers] = 1;
      snprintf(e.peer_names[e.npeers++], 32, "%s", k ? "torch_eager_py" : "xir_python");
    }
    py_proc = NULL; /* e.peers owns it */
  }
  /* the output folder first (with its parents): a run never measures for nothing */
  char dir[2048];
  if (o.out) {
    snprintf(dir, sizeof dir, "%s", o.out);
  } else {
    char ts[32];
    time_t now = time(NULL);
    strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", gmtime(&now));
    snprintf(dir, sizeof dir, "results/%s-%s", s.name, ts);
  }
  if (cli_make_dir(dir, 1)) {
    xir__err(&d, XIR_ERR_IO, "cannot create the output folder '%s': %s", dir, strerror(errno));
    goto fail;
  }
  /* prepare every case (untimed); drop what a peer cannot run, and say so */
  cs = xir__calloc((size_t)s.ncases, sizeof *cs);
  if (!cs) goto fail;
  rec = cJSON_CreateObject();
  cJSON *uns = cJSON_CreateArray();
  char *drop = xir__calloc((size_t)s.ncases + 1, 1);
  if (!drop) goto fail;
  int kept = 0;
  for (int i = 0; i < s.ncases; i++) {
    memset(&cs[kept], 0, sizeof cs[kept]); /* the slot may hold a released unsupported case */
    cs[kept].decl = s.cases[i];
    fprintf(stderr, "\rxir bench: preparing %d/%d %-60.60s", i + 1, s.ncases, s.cases[i].config);
    if (bcase_prepare(&e, &cs[kept], &d)) {
      fprintf(stderr, "\n");
      xir__free(drop);
      goto fail;
    }
    if (!cs[kept].unsupported) {
      /* every case (peers included) is checked against the oracle before it is timed */
      double t;
      xir_compare cmp;
      int sent;
      if (bcase_run(&e, &cs[kept], 1, &t, &d) || bcase_check(&e, &cs[kept], &cmp, &sent, &d)) {
        fprintf(stderr, "\n");
        xir__free(drop);
        goto fail;
      }
      int peer = cs[kept].kind == BC_CPEER ||
                 (cs[kept].kind == BC_EXT && strcmp(s.cases[i].config, "ext:xir_python") != 0);
      if ((!cmp.pass || !sent) && peer) {
        /* a peer that is wrong here is no comparison: reported under "Not measured", the run
         * goes on (e.g. the -ffast-math C layernorm at C = 2, whose reassociated (x - mean)·inv
         * cancels); xir's own configurations stay fatal below */
        snprintf(cs[kept].why, sizeof cs[kept].why,
                 "its output does not match the fp64 oracle (%zu bad elements, max abs %.3g, "
                 "sentinels %s)", cmp.bad, cmp.max_abs, sent ? "ok" : "broken");
        cs[kept].unsupported = 1;
        fprintf(stderr, "\nxir bench: %s %s %s: %s; not measured\n", s.cases[i].kernel,
                s.cases[i].shape, s.cases[i].config, cs[kept].why);
      } else if (!cmp.pass || !sent) {
        fprintf(stderr, "\n");
        xir__free(drop);
        xir__err(&d, XIR_ERR_RUNTIME, "%s %s %s does not match the oracle before timing (%zu bad "
                 "elements, max abs %.3g, sentinels %s)", s.cases[i].kernel, s.cases[i].shape,
                 s.cases[i].config, cmp.bad, cmp.max_abs, sent ? "ok" : "broken");
        goto fail;
      }
      xir__case_reset_outputs(&cs[kept].cs);
    }
    if (cs[kept].unsupported) {
      cJSON *u1 = cJSON_CreateObject();
      cJSON_AddStringToObject(u1, "kernel", s.cases[i].kernel);
      cJSON_AddStringToObject(u1, "shape", s.cases[i].shape);
      cJSON_AddStringToObject(u1, "config", s.cases[i].config);
      cJSON_AddStringToObject(u1, "reason", cs[kept].why);
      cJSON_AddItemToArray(uns, u1);
      bcase_release(&cs[kept]);
      drop[i] = 1;
      continue;
    }
    kept++;
  }
  fprintf(stderr, "\n");
  xir_status dst = bench_suite_drop(&s, drop);
  xir__free(drop);
  if (dst || s.ncases == 0) {
    xir__err(&d, dst ? dst : XIR_ERR_INVALID_ARG, "no case of suite '%s' can run here", o.suite);
    goto fail;
  }
  python_side_cases(&ps, &s, "none of its cases could run (each is listed under \"Not measured\")");
  /* records: declaration */
  cJSON_AddStringToObject(rec, "format", XIR_BENCH_FORMAT);
  cJSON_AddItemToObject(rec, "provenance", provenance(argc + 1, argv - 1, &e, xir_compiler_features(e.cc)));
  cJSON_AddStringToObject(rec, "suite", s.name);
  cJSON_AddItemToObject(rec, "filter", filter_json(&o.filter));
  cJSON *pj = cJSON_AddArrayToObject(rec, "peers");
  for (int i = 0; i < nnames; i++) cJSON_AddItemToArray(pj, cJSON_CreateString(names[i]));
  if (ps.declared) cJSON_AddItemToObject(rec, "python_side", python_side_json(&ps));
  cJSON *ph = cJSON_AddArrayToObject(rec, "peer_hello");
  for (int i = 0; i < e.npeers; i++) {
    /* one entry per process: "xir_python + torch_eager_py" for the Python side's */
    int first = 1;
    for (int j = 0; j < i; j++) first &= e.peers[j] != e.peers[i];
    if (!first) continue;
    char nm[256] = "";
    for (int j = i; j < e.npeers; j++)
      if (e.peers[j] == e.peers[i])
        snprintf(nm + strlen(nm), sizeof nm - strlen(nm), "%s%s", j > i ? " + " : "", e.peer_names[j]);
    cJSON *h = cJSON_CreateObject();
    cJSON_AddStringToObject(h, "name", nm);
    cJSON_AddStringToObject(h, "hello", ext_peer_hello(e.peers[i]));
    cJSON_AddItemToArray(ph, h);
  }
  cJSON_AddNumberToObject(rec, "rounds", rounds);
  cJSON_AddNumberToObject(rec, "samples", o.samples);
  cJSON_AddNumberToObject(rec, "warmup_ms", o.warmup_ms);
  cJSON_AddNumberToObject(rec, "sample_ms", o.sample_ms);
  cJSON_AddNumberToObject(rec, "settle_ms", o.settle_ms);
  cJSON_AddNumberToObject(rec, "seed", (double)e.seed);
  cJSON_AddNumberToObject(rec, "input_offset", e.input_offset);
  cJSON_AddNumberToObject(rec, "workers", e.workers);
  cJSON_AddItemToObject(rec, "unsupported", uns);
  cJSON *jc = cJSON_AddArrayToObject(rec, "cases");
  for (int i = 0; i < kept; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "kernel", cs[i].decl.kernel);
    cJSON_AddStringToObject(j, "shape", cs[i].decl.shape);
    cJSON_AddStringToObject(j, "config", cs[i].decl.config);
    cJSON_AddStringToObject(j, "input_sha256", cs[i].input_sha);
    if (cs[i].kind == BC_XIR) {
      char g[24];
      if (cs[i].grain == UINT32_MAX) snprintf(g, sizeof g, "max");
      else snprintf(g, sizeof g, "%u", cs[i].grain);
      cJSON_AddStringToObject(j, "candidate", cs[i].cand);
      cJSON_AddStringToObject(j, "grain", g);
      cJSON_AddStringToObject(j, "implementation", cs[i].impl);
      cJSON_AddNumberToObject(j, "workers", cs[i].workers);
      cJSON_AddStringToObject(j, "ir_sha256", cs[i].ir_sha);
      cJSON_AddStringToObject(j, "obj_sha256", cs[i].obj_sha);
    } else {
      cJSON_AddStringToObject(j, "candidate", "-");
      cJSON_AddStringToObject(j, "grain", "-");
      cJSON_AddStringToObject(j, "implementation", cs[i].kind == BC_CPEER   ? "C peer"
                                                    : cs[i].kind == BC_PROBE ? "stream probe"
                                                                             : "external peer");
      if (cs[i].kind == BC_PROBE)
        cJSON_AddStringToObject(j, "probe_stores", cs[i].probe_nt ? "non-temporal" : "regular");
    }
    cJSON_AddNumberToObject(j, "bytes", case_bytes(&cs[i]));
    cJSON_AddItemToArray(jc, j);
  }
  cJSON *jk = cJSON_AddArrayToObject(rec, "comparisons");
  for (int k = 0; k < s.ncomparisons; k++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "baseline", s.comparisons[k][0]);
    cJSON_AddNumberToObject(j, "variant", s.comparisons[k][1]);
    cJSON_AddItemToArray(jk, j);
  }
  cJSON *jo = cJSON_AddArrayToObject(rec, "orders");
  for (int k = 0; k < s.norders; k++) cJSON_AddItemToArray(jo, cJSON_CreateIntArray(s.orders[k], s.ncases));
  /* the rounds */
  cJSON *visits = cJSON_AddArrayToObject(rec, "visits");
  double t_start = (double)time(NULL);
  for (int r = 0; r < rounds; r++) {
    const int *order = s.orders[r % s.norders];
    for (int pos = 0; pos < s.ncases; pos++) {
      int ci = order[pos];
      fprintf(stderr, "\rxir bench: round %d/%d, case %3d/%d (%s %s %s) %5.0f s ", r + 1, rounds,
              pos + 1, s.ncases, cs[ci].decl.kernel, cs[ci].decl.shape, cs[ci].decl.config,
              (double)time(NULL) - t_start);
      cJSON *v = cJSON_CreateObject();
      cJSON_AddNumberToObject(v, "round", r);
      cJSON_AddNumberToObject(v, "position", pos);
      cJSON_AddNumberToObject(v, "case", ci);
      cJSON_AddItemToArray(visits, v);
      /* only the peer being measured may run */
      for (int k = 0; k < e.npeers; k++) ext_peer_pause(e.peers[k], cs[ci].ext != e.peers[k]);
      if (o.settle_ms > 0) {
        struct timespec ts = {(time_t)(o.settle_ms / 1000), (long)(fmod(o.settle_ms, 1000) * 1e6)};
        nanosleep(&ts, NULL);
      }
      if (visit(&e, &cs[ci], &o, v, &d)) {
        fprintf(stderr, "\n");
        goto fail;
      }
    }
  }
  fprintf(stderr, "\n");
  for (int k = 0; k < e.npeers; k++) ext_peer_pause(e.peers[k], 0);
  for (int i = 0; i < kept; i++) {
    /* the worst oracle error over the visits, for the tables */
    double worst = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, visits) if ((int)jnum(v, "case") == i) {
      double m = jnum(cJSON_GetObjectItem(v, "check"), "max_abs");
      if (m > worst) worst = m;
    }
    cJSON_AddNumberToObject(cJSON_GetArrayItem(jc, i), "max_abs_err", worst);
    cJSON_AddStringToObject(cJSON_GetArrayItem(jc, i), "output_sha256", cs[i].out_sha);
  }
  if (!strcmp(s.name, "fixed-grain")) cJSON_AddItemToObject(rec, "grain_identity", grain_identity(cs, kept));
  {
    /* the coefficients the `default` configuration planned with (the service model), and the
     * run's own calibration (joint_calibrated): the audit re-plans with them */
    cJSON *prov = cJSON_GetObjectItem(rec, "provenance");
    const xir_cost_coefficients *sc = xir_service_coefficients();
    if (sc) cJSON_AddItemToObject(prov, "service_coefficients", bench_coefficients_json(sc));
    if (e.calibrated) cJSON_AddItemToObject(prov, "calibration", bench_calibration_json(&e.calibration));
  }
  if (xir__bench_summarize(rec, &d)) goto fail;
  /* outputs */
  char path[2300];
  snprintf(path, sizeof path, "%s/raw.json.gz", dir);
  if (xir__json_write_gz(path, rec, &d)) goto fail;
  snprintf(path, sizeof path, "%s/tables.md", dir);
  if (write_tables(path, rec, &d)) goto fail;
  if (o.plot) write_plot(dir, rec);
  FILE *t = fopen(path, "r");
  if (t) {
    char line[4096];
    while (fgets(line, sizeof line, t)) fputs(line, stdout);
    fclose(t);
  }
  if (!strcmp(s.name, "peers")) {
    headline h;
    write_headline(NULL, rec, &h);
    if (h.n)
      printf("\nxir default vs the best peer over %d cases: geometric mean %.3f, worst %s at "
             "%.3f, xir loses in %d of %d\n", h.n, exp(h.log_sum / h.n), h.worst_name, h.worst,
             h.losses, h.n);
    char line[1600];
    xir__bench_python_side_line(rec, line, sizeof line);
    if (line[0]) printf("%s\n", line);
  }
  printf("\nrecords: %s/raw.json.gz  (check them: xir audit %s)\n", dir, dir);
  rc = 0;
  goto out;
fail:
  rc = cli_fail(&d);
out:
  for (int i = 0; cs && i < s.ncases; i++) bcase_release(&cs[i]);
  xir__free(cs);
  cJSON_Delete(rec);
  for (int i = 0; i < e.npeers; i++) {
    int first = 1; /* a process with several names is stopped once */
    for (int j = 0; j < i; j++) first &= e.peers[j] != e.peers[i];
    if (first) ext_peer_stop(e.peers[i]);
  }
  ext_peer_stop(py_proc); /* started, but the run failed before it joined e.peers */
  bench_suite_free(&s);
  xir_compiler_destroy(e.cc);
  xir_runtime_destroy(e.rt);
  return rc;
}
