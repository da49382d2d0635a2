/* bench_ext.c — external peers: a child process spoken to in line-JSON over two pipes
 * (protocol: docs/peers.md). A peer that dies or answers garbage is an error, never a hang:
 * every read waits at most 600 s. While other cases are measured a peer's process group (the
 * shell, the peer and whatever it forked) is stopped (SIGSTOP), so that its thread pool cannot
 * spin on the cores the measured case uses. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "util/util.h"

struct ext_peer {
  char name[32];
  pid_t pid;
  int to, from;
  char buf[1 << 16];
  size_t len;
  int paused;
  char hello[1200]; /* "VERSION: DETAIL" from the peer's hello answer */
};

xir_status ext_peer_start(const char *name, const char *command, ext_peer **out, xir_diag *d) {
  *out = NULL;
  int in[2], outp[2];
  if (pipe(in) || pipe(outp)) return xir__err(d, XIR_ERR_RUNTIME, "pipe: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0) return xir__err(d, XIR_ERR_RUNTIME, "fork: %s", strerror(errno));
  if (pid == 0) {
    /* its own process group: pausing signals the group, so the peer (a child of the shell,
     * dash does not exec the last command) and any workers it forks are stopped with it */
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(outp[1], 1);
    close(in[0]);
    close(in[1]);
    close(outp[0]);
    close(outp[1]);
    execl("/bin/sh", "sh", "-c", command, (char *)NULL);
    _exit(127);
  }
  setpgid(pid, pid); /* also here: whichever of parent and child runs first */
  close(in[0]);
  close(outp[1]);
  ext_peer *p = xir__calloc(1, sizeof *p);
  if (!p) return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  snprintf(p->name, sizeof p->name, "%s", name);
  p->pid = pid;
  p->to = in[1];
  p->from = outp[0];
  signal(SIGPIPE, SIG_IGN);
  cJSON *ans;
  xir_status st = ext_peer_request(p, "{\"op\":\"hello\"}", &ans, d);
  if (st) {
    char why[sizeof d->msg]; /* d->msg is written below: not its own argument */
    snprintf(why, sizeof why, "%s", d ? d->msg : "");
    ext_peer_stop(p);
    return xir__err(d, XIR_ERR_RUNTIME, "peer '%s' (%s) did not answer hello: %s", name, command, why);
  }
  if (cJSON_IsFalse(cJSON_GetObjectItem(ans, "ok"))) { /* it runs, but cannot serve (its reason) */
    const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "error"));
    xir__err(d, XIR_ERR_RUNTIME, "peer '%s' cannot serve: %s", name, why ? why : "hello answered ok false");
    cJSON_Delete(ans);
    ext_peer_stop(p);
    return XIR_ERR_RUNTIME;
  }
  const char *ver = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "version"));
  const char *det = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "detail"));
  snprintf(p->hello, sizeof p->hello, "%s: %s", ver ? ver : "?", det ? det : "-");
  cJSON_Delete(ans);
  *out = p;
  return XIR_OK;
}

const char *ext_peer_hello(const ext_peer *p) { return p ? p->hello : ""; }

xir_status ext_peer_request(ext_peer *p, const char *line, cJSON **answer, xir_diag *d) {
  *answer = NULL;
  size_t n = strlen(line);
  if (write(p->to, line, n) != (ssize_t)n || write(p->to, "\n", 1) != 1)
    return xir__err(d, XIR_ERR_RUNTIME, "peer '%s' is gone (write failed)", p->name);
  for (;;) {
    char *nl = memchr(p->buf, '\n', p->len);
    if (nl) {
      *nl = 0;
      *answer = cJSON_Parse(p->buf);
      size_t used = (size_t)(nl - p->buf) + 1;
      memmove(p->buf, p->buf + used, p->len - used);
      p->len -= used;
      if (!*answer) return xir__err(d, XIR_ERR_RUNTIME, "peer '%s' answered something that is not JSON", p->name);
      return XIR_OK;
    }
    if (p->len >= sizeof p->buf - 1)
      return xir__err(d, XIR_ERR_RUNTIME, "peer '%s' answered a line longer than 64 KiB", p->name);
    struct pollfd pf = {.fd = p->from, .events = POLLIN};
    int r = poll(&pf, 1, 600000);
    if (r <= 0) return xir__err(d, XIR_ERR_RUNTIME, "peer '%s' did not answer within 600 s", p->name);
    ssize_t k = read(p->from, p->buf + p->len, sizeof p->buf - 1 - p->len);
    if (k <= 0) return xir__err(d, XIR_ERR_RUNTIME, "peer '%s' exited", p->name);
    p->len += (size_t)k;
  }
}

void ext_peer_pause(ext_peer *p, int paused) {
  if (p && p->paused != paused) {
    kill(-p->pid, paused ? SIGSTOP : SIGCONT); /* the whole process group (ext_peer_start) */
    p->paused = paused;
  }
}

void ext_peer_stop(ext_peer *p) {
  if (!p) return;
  ext_peer_pause(p, 0);
  if (write(p->to, "{\"op\":\"quit\"}\n", 14) < 0) { /* it may be gone already */
  }
  close(p->to);
  close(p->from);
  int status;
  for (int i = 0; i < 50; i++) {
    if (waitpid(p->pid, &status, WNOHANG) == p->pid) goto done;
    usleep(100000);
  }
  kill(-p->pid, SIGKILL);
  waitpid(p->pid, &status, 0);
done:
  xir__free(p);
}
