/* npy.c — NumPy .npy reading and atomic writing of '<f4' and '<i8' arrays (see npy.h). */
#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "util.h"

static const unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
#define NPY_ALIGN 64
/* A header longer than this is not something we wrote or numpy would write: refuse it rather than
 * allocating whatever a corrupt length field claims. */
#define NPY_MAX_HEADER_LEN ((size_t)1 << 20)

/* ---------------------------------------------------------------------------------------------- */
/* Small helpers                                                                                   */

static int host_is_le(void) {
  const uint32_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

static uint32_t bswap32(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

/* The element types of the files: '<f4' (float32), '<i8' (int64, for i64 input buffers), '<f2'
 * (float16) and bfloat16 (written with ml_dtypes' registered name 'bfloat16'; read from that or
 * from '<V2', which is what np.save writes for an ml_dtypes.bfloat16 array). */
typedef struct {
  const char *descr; /* "<f4" */
  const char *what;  /* "float32", in messages */
  size_t size;       /* bytes per element */
  const char *alt;   /* another descr accepted when reading, or NULL */
} npy_dtype;
static const npy_dtype kF32 = {"<f4", "float32", 4, NULL};
static const npy_dtype kI64 = {"<i8", "int64", 8, NULL};
static const npy_dtype kF16 = {"<f2", "float16", 2, NULL};
static const npy_dtype kBF16 = {"bfloat16", "bfloat16 (ml_dtypes)", 2, "<V2"};

/* In-place conversion between little-endian file order and host order (its own inverse), for
 * n elements of esize (4 or 8) bytes. */
static void le_inplace(void *p, size_t n, size_t esize) {
  if (host_is_le()) return;
  unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    if (esize == 2) {
      unsigned char t = b[2 * i];
      b[2 * i] = b[2 * i + 1];
      b[2 * i + 1] = t;
    } else if (esize == 4) {
      uint32_t u;
      memcpy(&u, b + 4 * i, 4);
      u = bswap32(u);
      memcpy(b + 4 * i, &u, 4);
    } else {
      uint32_t lo, hi;
      memcpy(&lo, b + 8 * i, 4);
      memcpy(&hi, b + 8 * i + 4, 4);
      lo = bswap32(lo);
      hi = bswap32(hi);
      memcpy(b + 8 * i, &hi, 4);
      memcpy(b + 8 * i + 4, &lo, 4);
    }
  }
}

static const char *errstr(int e, char *buf, size_t cap) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  return strerror_r(e, buf, cap); /* GNU variant: returns the string */
#else
  if (strerror_r(e, buf, cap) != 0) snprintf(buf, cap, "error %d", e);
  return buf;
#endif
}

size_t xir__npy_numel(const size_t *shape, int ndim, int *overflow) {
  size_t n = 1;
  if (overflow) *overflow = 0;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] && n > SIZE_MAX / shape[i]) {
      if (overflow) *overflow = 1;
      return 0;
    }
    n *= shape[i];
  }
  return n;
}

char *xir__npy_format_shape(char *buf, size_t cap, const size_t *shape, int ndim) {
  if (!cap) return buf;
  size_t pos = 0;
  int trunc = 0;
#define PUT(...)                                                       \
  do {                                                                 \
    int k_ = snprintf(buf + pos, cap - pos, __VA_ARGS__);              \
    if (k_ < 0 || (size_t)k_ >= cap - pos) { trunc = 1; goto done; }   \
    pos += (size_t)k_;                                                 \
  } while (0)
  PUT("(");
  for (int i = 0; i < ndim; i++) PUT(i ? ", %zu" : "%zu", shape[i]);
  PUT(ndim == 1 ? ",)" : ")");
#undef PUT
done:
  if (trunc) {
    /* Mark the truncation when there is room for it. */
    if (cap >= 4) memcpy(buf + cap - 4, "...", 4);
    else buf[cap - 1] = '\0';
  }
  return buf;
}

/* ---------------------------------------------------------------------------------------------- */
/* Writing                                                                                         */

static xir_status build_header(char *buf, size_t cap, size_t *len, const size_t *shape, int ndim,
                               const npy_dtype *dt, xir_diag *d) {
  if (!buf || !len || ndim < 0 || ndim > XIR_NPY_MAX_NDIM || (ndim > 0 && !shape))
    return xir__err(d, XIR_ERR_INVALID_ARG, "npy header: invalid arguments (ndim %d)", ndim);
  char sh[XIR_NPY_MAX_NDIM * 22 + 8];
  xir__npy_format_shape(sh, sizeof sh, shape, ndim);
  char dict[sizeof sh + 64];
  int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                    dt->descr, sh);
  if (dl < 0 || (size_t)dl >= sizeof dict)
    return xir__err(d, XIR_ERR_INVALID_ARG, "npy header: shape %s too long", sh);
  size_t unpadded = sizeof kMagic + 2 + 2 + (size_t)dl + 1; /* + '\n' */
  size_t pad = (NPY_ALIGN - unpadded % NPY_ALIGN) % NPY_ALIGN;
  size_t total = unpadded + pad;
  size_t hlen = (size_t)dl + pad + 1;
  if (hlen > 0xffff)
    return xir__err(d, XIR_ERR_INVALID_ARG, "npy header: shape %s too long for version 1.0", sh);
  if (cap < total)
    return xir__err(d, XIR_ERR_INVALID_ARG, "npy header: buffer of %zu bytes too small (need %zu)",
                    cap, total);
  unsigned char *p = (unsigned char *)buf;
  memcpy(p, kMagic, sizeof kMagic);
  p[6] = 1;
  p[7] = 0;
  p[8] = (unsigned char)(hlen & 0xff);
  p[9] = (unsigned char)(hlen >> 8);
  memcpy(p + 10, dict, (size_t)dl);
  memset(p + 10 + dl, ' ', pad);
  p[total - 1] = '\n';
  *len = total;
  return XIR_OK;
}

xir_status xir__npy_build_header(char *buf, size_t cap, size_t *len, const size_t *shape, int ndim,
                                 xir_diag *d) {
  return build_header(buf, cap, len, shape, ndim, &kF32, d);
}

static int write_all(int fd, const void *buf, size_t n) {
  const unsigned char *p = buf;
  while (n) {
    size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
    ssize_t k = write(fd, p, chunk);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (k == 0) {
      errno = EIO;
      return -1;
    }
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int write_data(int fd, const void *data, size_t n, size_t esize) {
  if (host_is_le()) return write_all(fd, data, n * esize);
  uint64_t tmp[1024];
  const unsigned char *src = data;
  size_t per = sizeof tmp / esize;
  while (n) {
    size_t k = n < per ? n : per;
    memcpy(tmp, src, k * esize);
    le_inplace(tmp, k, esize);
    if (write_all(fd, tmp, k * esize)) return -1;
    src += k * esize;
    n -= k;
  }
  return 0;
}

static atomic_uint g_tmp_counter;

static xir_status write_npy(const char *path, const void *data, const size_t *shape, int ndim,
                            const npy_dtype *dt, xir_diag *d) {
  if (!path || !*path)
    return xir__err(d, XIR_ERR_INVALID_ARG, "npy write: no output path given");
  if (ndim < 0 || ndim > XIR_NPY_MAX_NDIM || (ndim > 0 && !shape))
    return xir__err(d, XIR_ERR_INVALID_ARG, "npy write '%s': invalid rank %d (0..%d)", path, ndim,
                    XIR_NPY_MAX_NDIM);
  int ovf = 0;
  size_t n = xir__npy_numel(shape, ndim, &ovf);
  if (ovf || n > SIZE_MAX / dt->size)
    return xir__err(d, XIR_ERR_INVALID_ARG, "npy write '%s': shape too large", path);
  if (n && !data) return xir__err(d, XIR_ERR_INVALID_ARG, "npy write '%s': no data", path);

  char hdr[XIR_NPY_HEADER_CAP];
  size_t hl = 0;
  xir_status st = build_header(hdr, sizeof hdr, &hl, shape, ndim, dt, d);
  if (st) return st;

  size_t plen = strlen(path);
  size_t tcap = plen + 64;
  char *tmp = xir__malloc(tcap);
  if (!tmp) return xir__err(d, XIR_ERR_NOMEM, "npy write '%s': out of memory", path);

  char eb[256];
  int fd = -1;
  for (int attempt = 0; attempt < 100; attempt++) {
    unsigned c = atomic_fetch_add(&g_tmp_counter, 1u);
    snprintf(tmp, tcap, "%s.tmp.%ld.%u", path, (long)getpid(), c);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) break;
  }
  if (fd < 0) {
    int e = errno;
    st = xir__err(d, XIR_ERR_IO, "cannot write '%s': cannot create temporary file '%s': %s", path,
                  tmp, errstr(e, eb, sizeof eb));
    xir__free(tmp);
    return st;
  }

  const char *what = NULL;
  if (write_all(fd, hdr, hl) || write_data(fd, data, n, dt->size)) what = "write";
  else if (fsync(fd) && errno != EINVAL && errno != EROFS) what = "fsync";
  int e = what ? errno : 0;
  if (close(fd) && !what) {
    what = "close";
    e = errno;
  }
  if (!what && rename(tmp, path)) {
    what = "rename";
    e = errno;
  }
  if (what) {
    unlink(tmp);
    st = xir__err(d, XIR_ERR_IO, "cannot write '%s' (%s of '%s' failed): %s", path, what, tmp,
                  errstr(e, eb, sizeof eb));
  }
  xir__free(tmp);
  return st;
}

xir_status xir__npy_write_f32(const char *path, const float *data, const size_t *shape, int ndim,
                              xir_diag *d) {
  return write_npy(path, data, shape, ndim, &kF32, d);
}

xir_status xir__npy_write_i64(const char *path, const int64_t *data, const size_t *shape,
                              int ndim, xir_diag *d) {
  return write_npy(path, data, shape, ndim, &kI64, d);
}

/* ---------------------------------------------------------------------------------------------- */
/* Header dict parsing                                                                             */

typedef struct {
  const char *s;
  size_t n, i;
  const char *name; /* file name for messages */
  xir_diag *d;
} hcur;

static void h_ws(hcur *c) {
  while (c->i < c->n) {
    char ch = c->s[c->i];
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v') c->i++;
    else break;
  }
}

static int h_peek(hcur *c) { return c->i < c->n ? (unsigned char)c->s[c->i] : -1; }

/* Describes the character at the cursor for messages. */
static const char *h_what(hcur *c, char *buf, size_t cap) {
  int ch = h_peek(c);
  if (ch < 0) snprintf(buf, cap, "end of header");
  else if (ch >= 0x20 && ch < 0x7f) snprintf(buf, cap, "'%c'", ch);
  else snprintf(buf, cap, "byte 0x%02x", ch);
  return buf;
}

static xir_status h_bad(hcur *c, const char *expected) {
  char w[32];
  return xir__err(c->d, XIR_ERR_FORMAT,
                  "%s: malformed header dict: expected %s at offset %zu of the header, found %s",
                  c->name, expected, c->i, h_what(c, w, sizeof w));
}

/* A quoted Python string; the contents (truncated to cap-1) go to out. */
static xir_status h_string(hcur *c, char *out, size_t cap) {
  int q = h_peek(c);
  if (q != '\'' && q != '"') return h_bad(c, "a quoted string");
  c->i++;
  size_t k = 0;
  for (;;) {
    int ch = h_peek(c);
    if (ch < 0 || ch == '\n') return h_bad(c, "the end of the string");
    c->i++;
    if (ch == q) break;
    if (ch == '\\') {
      ch = h_peek(c);
      if (ch < 0) return h_bad(c, "an escaped character");
      c->i++;
    }
    if (k + 1 < cap) out[k++] = (char)ch;
  }
  if (cap) out[k] = '\0';
  return XIR_OK;
}

static int is_ident(int ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_';
}

static xir_status h_bool(hcur *c, int *v) {
  size_t st = c->i;
  while (c->i < c->n && is_ident((unsigned char)c->s[c->i])) c->i++;
  size_t len = c->i - st;
  if (len == 4 && !memcmp(c->s + st, "True", 4)) *v = 1;
  else if (len == 5 && !memcmp(c->s + st, "False", 5)) *v = 0;
  else {
    c->i = st;
    return h_bad(c, "True or False");
  }
  return XIR_OK;
}

/* A tuple of non-negative ints: "()", "(5,)", "(2, 3)", "(2, 3,)"; Python 2's "5L" is accepted.
 * Stores up to XIR_NPY_MAX_NDIM dims in dims and the full count in *count. */
static xir_status h_tuple(hcur *c, size_t *dims, int *count) {
  *count = 0;
  if (h_peek(c) != '(') return h_bad(c, "a shape tuple '('");
  c->i++;
  h_ws(c);
  if (h_peek(c) == ')') {
    c->i++;
    return XIR_OK;
  }
  for (;;) {
    int ch = h_peek(c);
    if (ch < '0' || ch > '9') return h_bad(c, "a non-negative integer dim");
    uint64_t v = 0;
    size_t st = c->i;
    while ((ch = h_peek(c)) >= '0' && ch <= '9') {
      unsigned dg = (unsigned)(ch - '0');
      if (v > (UINT64_MAX - dg) / 10 || v * 10 + dg > SIZE_MAX) {
        return xir__err(c->d, XIR_ERR_FORMAT,
                        "%s: malformed header dict: shape dim at offset %zu is too large", c->name,
                        st);
      }
      v = v * 10 + dg;
      c->i++;
    }
    if (h_peek(c) == 'L' || h_peek(c) == 'l') c->i++;
    if (*count < XIR_NPY_MAX_NDIM) dims[*count] = (size_t)v;
    if (*count < 1000000) (*count)++;
    h_ws(c);
    ch = h_peek(c);
    if (ch == ',') {
      c->i++;
      h_ws(c);
      if (h_peek(c) == ')') {
        c->i++;
        return XIR_OK;
      }
      continue;
    }
    if (ch == ')') {
      if (*count == 1)
        return xir__err(c->d, XIR_ERR_FORMAT,
                        "%s: malformed header dict: shape (%zu) is not a tuple (a 1-D shape is "
                        "written (%zu,))",
                        c->name, dims[0], dims[0]);
      c->i++;
      return XIR_OK;
    }
    return h_bad(c, "',' or ')' in the shape tuple");
  }
}

static xir_status parse_header(const char *name, const char *hdr, size_t hlen, size_t *shape,
                               int *ndim, int max_ndim, const npy_dtype *dt, xir_diag *d) {
  hcur c = {hdr, hlen, 0, name, d};
  xir_status st;
  char descr[64] = "";
  int have_descr = 0, have_fortran = 0, have_shape = 0, fortran = 0, count = 0;
  size_t dims[XIR_NPY_MAX_NDIM];

  h_ws(&c);
  if (h_peek(&c) != '{') return h_bad(&c, "'{' opening the header dict");
  c.i++;
  h_ws(&c);
  while (h_peek(&c) != '}') {
    char key[64];
    size_t kpos = c.i;
    if ((st = h_string(&c, key, sizeof key))) return st;
    h_ws(&c);
    if (h_peek(&c) != ':') return h_bad(&c, "':' after a key");
    c.i++;
    h_ws(&c);
    int *seen = NULL;
    if (!strcmp(key, "descr")) {
      seen = &have_descr;
      if (h_peek(&c) == '[' || h_peek(&c) == '{')
        return xir__err(d, XIR_ERR_FORMAT,
                        "%s: unsupported dtype: a structured dtype (only little-endian %s "
                        "'%s' is supported)",
                        name, dt->what, dt->descr);
      if ((st = h_string(&c, descr, sizeof descr))) return st;
    } else if (!strcmp(key, "fortran_order")) {
      seen = &have_fortran;
      if ((st = h_bool(&c, &fortran))) return st;
    } else if (!strcmp(key, "shape")) {
      seen = &have_shape;
      if ((st = h_tuple(&c, dims, &count))) return st;
    } else {
      return xir__err(d, XIR_ERR_FORMAT,
                      "%s: malformed header dict: unknown key '%s' at offset %zu (expected "
                      "'descr', 'fortran_order' and 'shape')",
                      name, key, kpos);
    }
    if (*seen)
      return xir__err(d, XIR_ERR_FORMAT, "%s: malformed header dict: duplicate key '%s'", name,
                      key);
    *seen = 1;
    h_ws(&c);
    if (h_peek(&c) == ',') {
      c.i++;
      h_ws(&c);
    } else if (h_peek(&c) != '}') {
      return h_bad(&c, "',' or '}' after a value");
    }
  }
  c.i++; /* '}' */
  h_ws(&c);
  if (c.i != c.n) return h_bad(&c, "only spaces and '\\n' after the header dict");
  if (!have_descr || !have_fortran || !have_shape)
    return xir__err(d, XIR_ERR_FORMAT, "%s: malformed header dict: missing key '%s'", name,
                    !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
  if (strcmp(descr, dt->descr) && (!dt->alt || strcmp(descr, dt->alt)))
    return xir__err(d, XIR_ERR_FORMAT,
                    "%s: unsupported dtype '%s' (only little-endian %s '%s'%s%s%s is supported)",
                    name, descr, dt->what, dt->descr, dt->alt ? " or '" : "",
                    dt->alt ? dt->alt : "", dt->alt ? "'" : "");
  if (fortran)
    return xir__err(d, XIR_ERR_FORMAT,
                    "%s: fortran_order is True (only C-order arrays are supported)", name);
  if (count > max_ndim)
    return xir__err(d, XIR_ERR_FORMAT, "%s: too many dims: the array has %d, at most %d allowed",
                    name, count, max_ndim);
  for (int i = 0; i < count; i++) shape[i] = dims[i];
  *ndim = count;
  return XIR_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Reading: one decoder over a memory buffer or a file descriptor                                  */

typedef struct {
  const unsigned char *mem; /* memory source, or NULL for fd */
  size_t len, pos;
  int fd;
  long long size; /* total bytes when known, else -1 */
  const char *name;
} src_t;

/* Reads up to n bytes; *got receives the count (< n only at end of input). -1 on an I/O error. */
static int src_read(src_t *s, void *buf, size_t n, size_t *got) {
  *got = 0;
  if (s->mem) {
    size_t k = s->len - s->pos < n ? s->len - s->pos : n;
    memcpy(buf, s->mem + s->pos, k);
    s->pos += k;
    *got = k;
    return 0;
  }
  unsigned char *p = buf;
  while (*got < n) {
    size_t chunk = n - *got > ((size_t)1 << 30) ? ((size_t)1 << 30) : n - *got;
    ssize_t k = read(s->fd, p + *got, chunk);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (k == 0) break;
    *got += (size_t)k;
  }
  s->pos += *got;
  return 0;
}

static xir_status src_ioerr(src_t *s, xir_diag *d) {
  char eb[256];
  return xir__err(d, XIR_ERR_IO, "cannot read '%s': %s", s->name, errstr(errno, eb, sizeof eb));
}

static xir_status decode(src_t *s, void **data, size_t *shape, int *ndim, int max_ndim,
                         const npy_dtype *dt, xir_diag *d) {
  const char *name = s->name;
  unsigned char pre[12];
  size_t got = 0;
  if (src_read(s, pre, 10, &got)) return src_ioerr(s, d);
  size_t cmp = got < sizeof kMagic ? got : sizeof kMagic;
  if (memcmp(pre, kMagic, cmp) != 0)
    return xir__err(d, XIR_ERR_FORMAT, "%s: bad magic: not a .npy file (it must start with "
                    "\"\\x93NUMPY\")", name);
  if (got < 8)
    return xir__err(d, XIR_ERR_FORMAT, "%s: truncated header: the file ends after %zu bytes",
                    name, got);
  unsigned major = pre[6], minor = pre[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return xir__err(d, XIR_ERR_FORMAT,
                    "%s: unsupported .npy format version %u.%u (1.0, 2.0 and 3.0 are supported)",
                    name, major, minor);
  size_t prefix = major == 1 ? 10 : 12;
  if (got == 10 && prefix == 12) {
    size_t g2 = 0;
    if (src_read(s, pre + 10, 2, &g2)) return src_ioerr(s, d);
    got += g2;
  }
  if (got < prefix)
    return xir__err(d, XIR_ERR_FORMAT, "%s: truncated header: the file ends after %zu bytes",
                    name, got);
  size_t hlen = major == 1 ? (size_t)pre[8] | (size_t)pre[9] << 8
                           : (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
                                 (size_t)pre[11] << 24;
  if (s->size >= 0 && (unsigned long long)s->size < prefix + hlen)
    return xir__err(d, XIR_ERR_FORMAT,
                    "%s: truncated header: it claims %zu bytes but the file has only %lld after "
                    "the %zu-byte preamble",
                    name, hlen, s->size - (long long)prefix, prefix);
  if (hlen > NPY_MAX_HEADER_LEN)
    return xir__err(d, XIR_ERR_FORMAT, "%s: malformed header: header length %zu is implausible",
                    name, hlen);
  char *hdr = xir__malloc(hlen + 1);
  if (!hdr) return xir__err(d, XIR_ERR_NOMEM, "%s: out of memory reading the header", name);
  if (src_read(s, hdr, hlen, &got)) {
    xir__free(hdr);
    return src_ioerr(s, d);
  }
  if (got < hlen) {
    xir__free(hdr);
    return xir__err(d, XIR_ERR_FORMAT,
                    "%s: truncated header: it claims %zu bytes but only %zu are present", name,
                    hlen, got);
  }
  hdr[hlen] = '\0';
  size_t lshape[XIR_NPY_MAX_NDIM] = {0};
  int nd = 0;
  xir_status st = parse_header(name, hdr, hlen, lshape, &nd, max_ndim, dt, d);
  xir__free(hdr);
  if (st) return st;

  char shs[XIR_NPY_MAX_NDIM * 22 + 8];
  xir__npy_format_shape(shs, sizeof shs, lshape, nd);
  int ovf = 0;
  size_t n = xir__npy_numel(lshape, nd, &ovf);
  if (ovf || n > SIZE_MAX / dt->size)
    return xir__err(d, XIR_ERR_FORMAT, "%s: shape %s is too large", name, shs);
  size_t nbytes = n * dt->size;
  size_t start = prefix + hlen;
  if (s->size >= 0 && (unsigned long long)s->size - start < nbytes)
    return xir__err(d, XIR_ERR_FORMAT,
                    "%s: truncated data: shape %s needs %zu bytes of %s data but only %lld "
                    "follow the header",
                    name, shs, nbytes, dt->what, s->size - (long long)start);

  void *buf = xir__malloc(nbytes);
  if (!buf) return xir__err(d, XIR_ERR_NOMEM, "%s: out of memory for %zu bytes of data", name,
                            nbytes);
  if (src_read(s, buf, nbytes, &got)) {
    xir__free(buf);
    return src_ioerr(s, d);
  }
  if (got < nbytes) {
    xir__free(buf);
    return xir__err(d, XIR_ERR_FORMAT,
                    "%s: truncated data: shape %s needs %zu bytes of %s data but only %zu "
                    "follow the header",
                    name, shs, nbytes, dt->what, got);
  }
  unsigned char extra;
  size_t g1 = 0;
  if (src_read(s, &extra, 1, &g1)) {
    xir__free(buf);
    return src_ioerr(s, d);
  }
  if (g1) {
    xir__free(buf);
    if (s->size >= 0)
      return xir__err(d, XIR_ERR_FORMAT,
                      "%s: data size mismatch: shape %s needs %zu bytes of data but %lld follow "
                      "the header",
                      name, shs, nbytes, s->size - (long long)start);
    return xir__err(d, XIR_ERR_FORMAT,
                    "%s: data size mismatch: shape %s needs %zu bytes of data but more follow the "
                    "header",
                    name, shs, nbytes);
  }
  le_inplace(buf, n, dt->size);
  *data = buf;
  for (int i = 0; i < nd; i++) shape[i] = lshape[i];
  *ndim = nd;
  return XIR_OK;
}

static xir_status check_read_args(void **data, size_t *shape, int *ndim, int max_ndim,
                                  const char *name, xir_diag *d) {
  if (!data || !ndim || max_ndim < 0 || max_ndim > XIR_NPY_MAX_NDIM || (max_ndim > 0 && !shape))
    return xir__err(d, XIR_ERR_INVALID_ARG, "npy read '%s': invalid arguments (max_ndim %d)",
                    name ? name : "(null)", max_ndim);
  *data = NULL;
  *ndim = 0;
  return XIR_OK;
}

static xir_status decode_npy(const void *bytes, size_t len, const char *name, void **data,
                             size_t *shape, int *ndim, int max_ndim, const npy_dtype *dt,
                             xir_diag *d) {
  if (!name) name = "<memory>";
  xir_status st = check_read_args(data, shape, ndim, max_ndim, name, d);
  if (st) return st;
  if (!bytes && len) return xir__err(d, XIR_ERR_INVALID_ARG, "npy decode: NULL bytes");
  static const unsigned char empty[1];
  src_t s = {bytes ? bytes : empty, len, 0, -1, (long long)len, name};
  return decode(&s, data, shape, ndim, max_ndim, dt, d);
}

static xir_status read_npy(const char *path, void **data, size_t *shape, int *ndim, int max_ndim,
                           const npy_dtype *dt, xir_diag *d) {
  if (!path) return xir__err(d, XIR_ERR_INVALID_ARG, "npy read: no path given");
  xir_status st = check_read_args(data, shape, ndim, max_ndim, path, d);
  if (st) return st;
  int fd;
  do fd = open(path, O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    char eb[256];
    return xir__err(d, XIR_ERR_IO, "cannot open '%s': %s", path, errstr(errno, eb, sizeof eb));
  }
  struct stat sb;
  long long size = -1;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) size = (long long)sb.st_size;
  src_t s = {NULL, 0, 0, fd, size, path};
  st = decode(&s, data, shape, ndim, max_ndim, dt, d);
  close(fd);
  return st;
}

/* The typed entry points: *data is written only through a void * (set on success). */
xir_status xir__npy_decode_f32(const void *bytes, size_t len, const char *name, float **data,
                               size_t *shape, int *ndim, int max_ndim, xir_diag *d) {
  void *v = NULL;
  xir_status st = decode_npy(bytes, len, name, data ? &v : NULL, shape, ndim, max_ndim, &kF32, d);
  if (data) *data = v;
  return st;
}

xir_status xir__npy_read_f32(const char *path, float **data, size_t *shape, int *ndim,
                             int max_ndim, xir_diag *d) {
  void *v = NULL;
  xir_status st = read_npy(path, data ? &v : NULL, shape, ndim, max_ndim, &kF32, d);
  if (data) *data = v;
  return st;
}

xir_status xir__npy_decode_i64(const void *bytes, size_t len, const char *name, int64_t **data,
                               size_t *shape, int *ndim, int max_ndim, xir_diag *d) {
  void *v = NULL;
  xir_status st = decode_npy(bytes, len, name, data ? &v : NULL, shape, ndim, max_ndim, &kI64, d);
  if (data) *data = v;
  return st;
}

xir_status xir__npy_read_i64(const char *path, int64_t **data, size_t *shape, int *ndim,
                             int max_ndim, xir_diag *d) {
  void *v = NULL;
  xir_status st = read_npy(path, data ? &v : NULL, shape, ndim, max_ndim, &kI64, d);
  if (data) *data = v;
  return st;
}

xir_status xir__npy_write_half(const char *path, const uint16_t *data, const size_t *shape,
                               int ndim, int bf16, xir_diag *d) {
  return write_npy(path, data, shape, ndim, bf16 ? &kBF16 : &kF16, d);
}

xir_status xir__npy_decode_half(const void *bytes, size_t len, const char *name, uint16_t **data,
                                size_t *shape, int *ndim, int max_ndim, int bf16, xir_diag *d) {
  void *v = NULL;
  xir_status st = decode_npy(bytes, len, name, data ? &v : NULL, shape, ndim, max_ndim,
                             bf16 ? &kBF16 : &kF16, d);
  if (data) *data = v;
  return st;
}

xir_status xir__npy_read_half(const char *path, uint16_t **data, size_t *shape, int *ndim,
                              int max_ndim, int bf16, xir_diag *d) {
  void *v = NULL;
  xir_status st = read_npy(path, data ? &v : NULL, shape, ndim, max_ndim, bf16 ? &kBF16 : &kF16, d);
  if (data) *data = v;
  return st;
}

xir_status xir__npy_check_shape(const char *name, const size_t *shape, int ndim,
                                const size_t *expect, int expect_ndim, xir_diag *d) {
  int same = ndim == expect_ndim;
  for (int i = 0; same && i < ndim; i++) same = shape[i] == expect[i];
  if (same) return XIR_OK;
  char a[XIR_NPY_MAX_NDIM * 22 + 8], b[XIR_NPY_MAX_NDIM * 22 + 8];
  int na = ndim < 0 ? 0 : ndim > XIR_NPY_MAX_NDIM ? XIR_NPY_MAX_NDIM : ndim;
  int nb = expect_ndim < 0 ? 0 : expect_ndim > XIR_NPY_MAX_NDIM ? XIR_NPY_MAX_NDIM : expect_ndim;
  return xir__err(d, XIR_ERR_FORMAT, "%s has shape %s but the kernel expects %s",
                  name ? name : "the array", xir__npy_format_shape(a, sizeof a, shape, na),
                  xir__npy_format_shape(b, sizeof b, expect, nb));
}
