/* _xir.c — the CPython extension under the `xir` package: Session, Program and Plan objects over
 * the one-call C API (xir_session.h) of libxir. C11, the stable parts of the CPython C API.
 *
 * Arrays come in through the buffer protocol (NumPy arrays, memoryviews, ...), DLPack (torch CPU
 * tensors: read from the DLPack tensor itself) or the array interface (numpy.asarray), sharing
 * the memory (no copy). Inputs that are not C-contiguous are copied (numpy.ascontiguousarray, or
 * a strided copy of the DLPack tensor); outputs must be C-contiguous and writable. Results are
 * NumPy arrays, or torch tensors when the activations (the first floating-point input) are a
 * torch tensor; torch is never imported here, only used once the caller has. Shapes bind the
 * program's dims (each buffer's axes name them) and are checked against each other; a dim no
 * buffer names comes from the `dims` mapping. The GIL is released while a kernel is prepared
 * (planned + compiled on a miss) and while it runs. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "xir_session.h"

static PyObject *g_error;        /* xir.Error */
static PyObject *g_parse_error;  /* xir.ParseError(Error, SyntaxError-like ValueError) */
static PyObject *g_arg_error;    /* xir.ArgumentError(Error, ValueError) */
static PyObject *g_lookup_error; /* xir.NotFoundError(Error, LookupError) */
static PyObject *g_np_empty, *g_np_asc, *g_np_asarray, *g_np_from_dlpack, *g_np_f32, *g_np_f16,
    *g_np_u16, *g_np_u8, *g_np_i64, *g_np_bf16;
static PyObject *g_str_dlpack, *g_str_array_interface, *g_str_array, *g_str_dtype;

/* Raises the exception matching d's status, with the library's message; for text errors the
 * exception carries .file, .line and .col as well. */
static PyObject *raise_diag(const xir_diag *d, xir_status st) {
  char buf[1400];
  xir_diag_format(d, buf, sizeof buf);
  PyObject *type = g_error;
  if (st == XIR_ERR_PARSE || st == XIR_ERR_VERIFY) type = g_parse_error;
  else if (st == XIR_ERR_INVALID_ARG) type = g_arg_error;
  else if (st == XIR_ERR_NOT_FOUND) type = g_lookup_error;
  else if (st == XIR_ERR_NOMEM) return PyErr_NoMemory();
  PyObject *exc = PyObject_CallFunction(type, "s", buf);
  if (!exc) return NULL;
  PyObject *status = PyUnicode_FromString(xir_status_name(st));
  PyObject *line = PyLong_FromLong(d->line), *col = PyLong_FromLong(d->col);
  PyObject *file = PyUnicode_FromString(d->file);
  if (status && line && col && file) {
    PyObject_SetAttrString(exc, "status", status);
    PyObject_SetAttrString(exc, "line", line);
    PyObject_SetAttrString(exc, "col", col);
    PyObject_SetAttrString(exc, "file", file);
  }
  Py_XDECREF(status);
  Py_XDECREF(line);
  Py_XDECREF(col);
  Py_XDECREF(file);
  PyErr_SetObject(type, exc);
  Py_DECREF(exc);
  return NULL;
}

/* ---- Session ---- */

typedef struct {
  PyObject_HEAD
  xir_session *s;
} SessionObject;

typedef struct {
  PyObject_HEAD
  SessionObject *session;
  const xir_program *p;
  int nparams, ndims;
  xir_param_info info[XIR_MAX_PARAMS];
  PyObject *variants; /* list of ProgramObject: this program retyped for 16-bit arrays */
} ProgramObject;

typedef struct {
  PyObject_HEAD
  ProgramObject *program;
  const xir_prepared *k;
} PlanObject;

static PyTypeObject SessionType, ProgramType, PlanType;

static int Session_init(SessionObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"workers", NULL};
  unsigned int workers = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|I", kwlist, &workers)) return -1;
  if (self->s) {
    PyErr_SetString(PyExc_RuntimeError, "Session is already initialized");
    return -1;
  }
  xir_session_options o = {.workers = workers};
  xir_diag d = {0};
  xir_status st;
  Py_BEGIN_ALLOW_THREADS
  st = xir_session_create(&o, &self->s, &d);
  Py_END_ALLOW_THREADS
  if (st) {
    raise_diag(&d, st);
    return -1;
  }
  return 0;
}

static void Session_dealloc(SessionObject *self) {
  xir_session_destroy(self->s);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *make_program(SessionObject *s, const xir_program *p) {
  ProgramObject *po = PyObject_New(ProgramObject, &ProgramType);
  if (!po) return NULL;
  Py_INCREF(s);
  po->session = s;
  po->p = p;
  po->variants = NULL;
  po->nparams = xir_program_num_params(p);
  po->ndims = xir_program_num_dims(p);
  for (int i = 0; i < po->nparams; i++) xir_program_param(p, i, &po->info[i]);
  return (PyObject *)po;
}

static PyObject *Session_program(SessionObject *self, PyObject *arg) {
  const char *name = PyUnicode_AsUTF8(arg);
  if (!name) return NULL;
  const xir_program *p;
  xir_diag d = {0};
  xir_status st = xir_session_program(self->s, name, &p, &d);
  if (st) return raise_diag(&d, st);
  return make_program(self, p);
}

static PyObject *Session_parse(SessionObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"text", "filename", NULL};
  const char *text, *filename = "<string>";
  Py_ssize_t len;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s#|s", kwlist, &text, &len, &filename)) return NULL;
  const xir_program *p;
  xir_diag d = {0};
  xir_status st = xir_session_parse(self->s, text, (size_t)len, filename, &p, &d);
  if (st) return raise_diag(&d, st);
  return make_program(self, p);
}

static PyObject *Session_stats(SessionObject *self, PyObject *unused) {
  xir_session_stats st;
  xir_session_get_stats(self->s, &st);
  return Py_BuildValue("{sKsKsKsKsKsKsKsI}", "launches", (unsigned long long)st.launches, "hits",
                       (unsigned long long)st.hits, "misses", (unsigned long long)st.misses,
                       "plans", (unsigned long long)st.plans, "compiles",
                       (unsigned long long)st.compiles, "programs",
                       (unsigned long long)st.programs, "prepared",
                       (unsigned long long)st.prepared, "workers", st.workers);
}

static PyObject *Session_workers(SessionObject *self, void *closure) {
  return PyLong_FromUnsignedLong(xir_session_workers(self->s));
}

static PyMethodDef Session_methods[] = {
    {"program", (PyCFunction)Session_program, METH_O,
     "program(name) -> Program: the session's copy of a built-in kernel."},
    {"parse", (PyCFunction)(void (*)(void))Session_parse, METH_VARARGS | METH_KEYWORDS,
     "parse(text, filename='<string>') -> Program: custom XIR (ParseError with line and col)."},
    {"stats", (PyCFunction)Session_stats, METH_NOARGS,
     "stats() -> dict: launches, cache hits and misses, plans, compiles, programs, prepared."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Session_getset[] = {
    {"workers", (getter)Session_workers, NULL, "the runtime's worker count (incl. the caller)",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ---- binding arrays ---- */

/* One array argument as the kernel sees it. */
typedef struct arr {
  void *buf;
  Py_ssize_t len; /* bytes */
  int ndim;
  Py_ssize_t shape[XIR_MAX_RANK];
  xir_elem elem; /* XIR_ELEM_NONE: a dtype xir has no buffers of */
} arr;

typedef struct binding {
  Py_buffer view[XIR_MAX_PARAMS];
  int have_view[XIR_MAX_PARAMS];
  PyObject *hold[XIR_MAX_PARAMS];  /* converted inputs, allocated outputs (new references) */
  PyObject *hold2[XIR_MAX_PARAMS]; /* a bf16 array's uint16 view, a DLPack capsule */
  arr a[XIR_MAX_PARAMS];
  int given[XIR_MAX_PARAMS];       /* buffers: an array was passed (else: an output to allocate) */
  xir_arg args[XIR_MAX_PARAMS];
  xir_shape shape;
  int bound_by[XIR_MAX_DIMS]; /* the parameter that bound each dim, -1 = dims mapping, -2 none */
  int act; /* the activations: the first floating-point input given (x, a, q), or -1 */
} binding;

static void binding_release(binding *b, int n) {
  for (int i = 0; i < n; i++) {
    if (b->have_view[i]) PyBuffer_Release(&b->view[i]);
    Py_XDECREF(b->hold[i]);
    Py_XDECREF(b->hold2[i]);
  }
}

static const char *elem_dtype(xir_elem e) {
  switch (e) {
    case XIR_F32: return "float32";
    case XIR_F16: return "float16";
    case XIR_BF16: return "bfloat16";
    case XIR_I64: return "int64";
    default: return "?";
  }
}

static int is_float(xir_elem e) { return e == XIR_F32 || e == XIR_F16 || e == XIR_BF16; }

static const char *dtype_text(PyObject *obj, const char *format, char *buf, size_t cap) {
  PyObject *dt = obj ? PyObject_GetAttr(obj, g_str_dtype) : NULL;
  if (dt) {
    PyObject *s = PyObject_Str(dt);
    Py_DECREF(dt);
    const char *u = s ? PyUnicode_AsUTF8(s) : NULL;
    if (u) snprintf(buf, cap, "%s", u);
    Py_XDECREF(s);
    if (u) return buf;
  }
  PyErr_Clear();
  snprintf(buf, cap, "buffer format '%s'", format ? format : "B");
  return buf;
}

/* The element type of a buffer format: 'f' f32, 'e' f16, 'q'/'l' (8 bytes) i64; else NONE. */
static xir_elem format_elem(const Py_buffer *v) {
  const char *f = v->format ? v->format : "B";
  if (*f == '<' || *f == '=' || *f == '@') f++;
  if (f[0] == 0 || f[1] != 0) return XIR_ELEM_NONE;
  if (f[0] == 'f' && v->itemsize == 4) return XIR_F32;
  if (f[0] == 'e' && v->itemsize == 2) return XIR_F16;
  if ((f[0] == 'q' || f[0] == 'l') && v->itemsize == 8) return XIR_I64;
  return XIR_ELEM_NONE;
}

/* 1 when obj's dtype prints as "bfloat16" (ml_dtypes' NumPy dtype). */
static int is_bf16_array(PyObject *obj) {
  PyObject *dt = PyObject_GetAttr(obj, g_str_dtype);
  if (!dt) {
    PyErr_Clear();
    return 0;
  }
  PyObject *s = PyObject_Str(dt);
  Py_DECREF(dt);
  const char *u = s ? PyUnicode_AsUTF8(s) : NULL;
  int yes = u && strcmp(u, "bfloat16") == 0;
  Py_XDECREF(s);
  PyErr_Clear();
  return yes;
}

/* np.dtype(ml_dtypes.bfloat16) once ml_dtypes is loaded (by the caller: xir never imports it to
 * read arrays), else NULL. A NumPy dtype is a singleton, so `a.dtype is` this is the test. */
static PyObject *g_bf16_descr;
static PyObject *bf16_descr(void) {
  if (g_bf16_descr) return g_bf16_descr;
  PyObject *name = PyUnicode_InternFromString("ml_dtypes");
  PyObject *ml = name ? PyImport_GetModule(name) : NULL;
  Py_XDECREF(name);
  if (ml) {
    PyObject *t = PyObject_GetAttrString(ml, "bfloat16");
    PyObject *np = t ? PyImport_ImportModule("numpy") : NULL;
    if (np) g_bf16_descr = PyObject_CallMethod(np, "dtype", "O", t);
    Py_XDECREF(np);
    Py_XDECREF(t);
    Py_DECREF(ml);
  }
  PyErr_Clear();
  return g_bf16_descr;
}

/* ---- DLPack (the ABI of dlpack.h v0.8, the legacy "dltensor" capsule) ---- */
typedef struct { int32_t device_type, device_id; } DLDevice_;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType_;
typedef struct {
  void *data;
  DLDevice_ device;
  int32_t ndim;
  DLDataType_ dtype;
  int64_t *shape, *strides;
  uint64_t byte_offset;
} DLTensor_;
typedef struct DLManagedTensor_ {
  DLTensor_ dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor_ *self);
} DLManagedTensor_;

/* ---- torch: never imported by xir; used only when the caller has imported it ---- */
static struct {
  int ready;
  PyObject *tensor;       /* torch.Tensor (a type; nn.Parameter is a subclass) */
  PyObject *to_dlpack;    /* torch.utils.dlpack.to_dlpack: ≈ 0.2 µs, against ≈ 2 µs for
                           * Tensor.__dlpack__ (Python code), the same "dltensor" capsule */
  PyObject *empty;        /* torch.empty */
  PyObject *grad_enabled; /* torch.is_grad_enabled */
  PyObject *f32, *f16, *bf16, *i64;
} g_torch;
static PyObject *g_kw_dtype; /* ("dtype",): the keyword names of torch.empty(shape, dtype=...) */

/* 1 when torch is loaded (sys.modules["torch"]) and its parts are looked up (once). The import
 * and the lookups can run Python code, which may hand the GIL to another thread that gets here
 * too: the parts are looked up into locals and published only if no other thread published its
 * own meanwhile (else ours are dropped), so none is overwritten and leaked. */
static int torch_ready(void) {
  if (g_torch.ready) return 1;
  PyObject *mods = PyImport_GetModuleDict();                         /* borrowed */
  PyObject *torch = mods ? PyDict_GetItemString(mods, "torch") : NULL; /* borrowed */
  if (!torch) return 0;
  Py_INCREF(torch); /* sys.modules may drop it while the GIL is elsewhere */
  enum { N = 8 };
  static const char *const names[N - 1] = {"Tensor",  "empty",   "is_grad_enabled", "float32",
                                           "float16", "bfloat16", "int64"};
  PyObject *p[N] = {NULL}; /* to_dlpack, then names[] */
  PyObject *dl = PyImport_ImportModule("torch.utils.dlpack"); /* loaded with torch already */
  if (dl) {
    p[0] = PyObject_GetAttrString(dl, "to_dlpack");
    Py_DECREF(dl);
  }
  for (int i = 1; i < N; i++) p[i] = PyObject_GetAttrString(torch, names[i - 1]);
  Py_DECREF(torch);
  PyErr_Clear();
  int ok = p[1] && PyType_Check(p[1]);
  for (int i = 0; i < N; i++) ok &= p[i] != NULL;
  if (!ok || g_torch.ready) {
    /* torch half-imported, or not the torch we know: try again on a later call; or another
     * thread published its parts while ours were looked up */
    for (int i = 0; i < N; i++) Py_XDECREF(p[i]);
    return g_torch.ready;
  }
  g_torch.to_dlpack = p[0];
  g_torch.tensor = p[1];
  g_torch.empty = p[2];
  g_torch.grad_enabled = p[3];
  g_torch.f32 = p[4];
  g_torch.f16 = p[5];
  g_torch.bf16 = p[6];
  g_torch.i64 = p[7];
  g_torch.ready = 1;
  return 1;
}

static int is_torch_tensor(PyObject *obj) {
  return !PyObject_CheckBuffer(obj) && torch_ready() &&
         PyObject_TypeCheck(obj, (PyTypeObject *)g_torch.tensor);
}

static PyObject *torch_dtype(xir_elem e) {
  switch (e) {
    case XIR_F16: return g_torch.f16;
    case XIR_BF16: return g_torch.bf16;
    case XIR_I64: return g_torch.i64;
    default: return g_torch.f32;
  }
}

/* Replaces the pending exception by ArgumentError "K: NAME (TYPE) could not be read as an array:
 * <the original message>". Returns -1. */
static int unreadable(const char *kname, const char *pname, PyObject *obj) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject *msg = value ? PyObject_Str(value) : NULL;
  const char *m = msg ? PyUnicode_AsUTF8(msg) : NULL;
  if (!m) {
    PyErr_Clear();
    m = "unknown error";
  }
  PyErr_Format(g_arg_error, "%s: %s (%.80s) could not be read as an array: %s", kname, pname,
               Py_TYPE(obj)->tp_name, m);
  Py_XDECREF(msg);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return -1;
}

/* str(obj.<attr>) into buf when obj has it (torch: "torch.float64", "cuda:0"); else buf is left
 * as the caller filled it. */
static const char *attr_text(PyObject *obj, const char *attr, char *buf, size_t cap) {
  PyObject *v = PyObject_GetAttrString(obj, attr);
  PyObject *s = v ? PyObject_Str(v) : NULL;
  const char *u = s ? PyUnicode_AsUTF8(s) : NULL;
  if (u) snprintf(buf, cap, "%s", u);
  Py_XDECREF(v);
  Py_XDECREF(s);
  PyErr_Clear();
  return buf;
}

/* Copies a strided tensor of n-byte elements (strides in elements, any sign, 0 included) into
 * the C-contiguous dst. */
static void copy_strided(char *dst, const char *src, int ndim, const int64_t *shape,
                         const int64_t *strides, size_t es) {
  int64_t idx[XIR_MAX_RANK] = {0};
  int64_t inner = ndim ? shape[ndim - 1] : 1, step = ndim ? strides[ndim - 1] * (int64_t)es : 0;
  int64_t outer = 1;
  for (int k = 0; k < ndim - 1; k++) outer *= shape[k];
  if (inner <= 0 || outer <= 0) return;
  for (int64_t o = 0; o < outer; o++) {
    const char *p = src;
    for (int k = 0; k < ndim - 1; k++) p += idx[k] * strides[k] * (int64_t)es;
    switch (es) {
      case 2:
        for (int64_t j = 0; j < inner; j++, dst += 2, p += step) memcpy(dst, p, 2);
        break;
      case 4:
        for (int64_t j = 0; j < inner; j++, dst += 4, p += step) memcpy(dst, p, 4);
        break;
      default:
        for (int64_t j = 0; j < inner; j++, dst += es, p += step) memcpy(dst, p, es);
    }
    for (int k = ndim - 2; k >= 0; k--) { /* the next row: odometer over the outer axes */
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
}

/* Reads argument i through DLPack into b->a[i]. A torch tensor goes through
 * torch.utils.dlpack.to_dlpack (fast; it also exports tensors that require grad, which xir
 * accepts only when torch's grad mode is off: it does not record autograd), anything else
 * through obj.__dlpack__(). The capsule is kept in b->hold2[i], never consumed: its own
 * destructor calls the deleter when the binding releases it. A CPU tensor of a dtype xir has is
 * used in place when it is C-contiguous; an input that is not (a transpose, a strided slice, an
 * expanded tensor) is copied into a new contiguous array (b->hold[i]); an output must be
 * C-contiguous. Returns 1 when read, 0 when the capsule is of another kind (the caller then
 * tries numpy.from_dlpack), -1 with an exception set. */
static int from_dlpack(ProgramObject *po, int i, PyObject *obj, binding *b) {
  const xir_param_info *pi = &po->info[i];
  const char *kname = xir_program_name(po->p);
  arr *a = &b->a[i];
  char text[128];
  PyObject *cap;
  if (is_torch_tensor(obj)) {
    PyObject *rg = PyObject_GetAttrString(obj, "requires_grad");
    if (!rg) return -1;
    int grad = rg == Py_True;
    Py_DECREF(rg);
    if (grad) {
      PyObject *on = PyObject_CallNoArgs(g_torch.grad_enabled);
      if (!on) return -1;
      int enabled = on == Py_True;
      Py_DECREF(on);
      if (enabled) {
        PyErr_Format(g_arg_error, "%s: %s requires grad, and xir does not record autograd: pass "
                     "%s.detach(), or call under torch.no_grad() or torch.inference_mode()",
                     kname, pi->name, pi->name);
        return -1;
      }
    }
    cap = PyObject_CallOneArg(g_torch.to_dlpack, obj);
  } else {
    cap = PyObject_CallMethodNoArgs(obj, g_str_dlpack);
  }
  if (!cap) return unreadable(kname, pi->name, obj);
  DLManagedTensor_ *m = PyCapsule_IsValid(cap, "dltensor") ? PyCapsule_GetPointer(cap, "dltensor") : NULL;
  if (!m) {
    Py_DECREF(cap);
    PyErr_Clear();
    return 0;
  }
  b->hold2[i] = cap;
  const DLTensor_ *t = &m->dl_tensor;
  if (t->device.device_type != 1 /* kDLCPU */) {
    char dev[96] = "";
    attr_text(obj, "device", dev, sizeof dev); /* torch: "cuda:0" */
    if (dev[0]) snprintf(text, sizeof text, "device %s", dev);
    else snprintf(text, sizeof text, "DLPack device type %d", (int)t->device.device_type);
    PyErr_Format(g_arg_error, "%s: %s is on %s, not the CPU: xir reads CPU memory (pass %s.cpu())",
                 kname, pi->name, text, pi->name);
    return -1;
  }
  xir_elem e = XIR_ELEM_NONE;
  if (t->dtype.lanes == 1) {
    if (t->dtype.code == 2 && t->dtype.bits == 32) e = XIR_F32;
    else if (t->dtype.code == 2 && t->dtype.bits == 16) e = XIR_F16;
    else if (t->dtype.code == 4 && t->dtype.bits == 16) e = XIR_BF16;
    else if (t->dtype.code == 0 && t->dtype.bits == 64) e = XIR_I64;
  }
  if (e == XIR_ELEM_NONE) {
    static const char *const codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
    if (t->dtype.code < 7)
      snprintf(text, sizeof text, "%s%d%s", codes[t->dtype.code], (int)t->dtype.bits,
               t->dtype.lanes == 1 ? "" : " vector");
    else
      snprintf(text, sizeof text, "DLPack type code %d, %d bits", (int)t->dtype.code, (int)t->dtype.bits);
    PyErr_Format(g_arg_error, "%s: %s must be %s, got %s", kname, pi->name,
                 pi->elem == XIR_I64 ? "int64" : "float32, float16 or bfloat16",
                 attr_text(obj, "dtype", text, sizeof text));
    return -1;
  }
  if (t->ndim < 0 || t->ndim > XIR_MAX_RANK) {
    PyErr_Format(g_arg_error, "%s: %s has %d dimensions (at most %d)", kname, pi->name,
                 (int)t->ndim, XIR_MAX_RANK);
    return -1;
  }
  int compact = 1;
  int64_t want = 1;
  Py_ssize_t n = 1;
  for (int k = t->ndim - 1; k >= 0; k--) {
    if (t->strides && t->shape[k] != 1 && t->strides[k] != want) compact = 0;
    want *= t->shape[k];
    n *= (Py_ssize_t)t->shape[k];
  }
  const char *data = (const char *)t->data + t->byte_offset;
  size_t es = xir_elem_size(e);
  a->elem = e;
  a->ndim = t->ndim;
  for (int k = 0; k < t->ndim; k++) a->shape[k] = (Py_ssize_t)t->shape[k];
  a->len = n * (Py_ssize_t)es;
  if (compact || n == 0) {
    a->buf = (void *)data;
    return 1;
  }
  if (pi->is_output) {
    PyErr_Format(g_arg_error, "%s: out (%s) must be C-contiguous", kname, pi->name);
    return -1;
  }
  /* documented: inputs that are not C-contiguous are copied (bf16 as uint16: NumPy has no bf16) */
  PyObject *shape = PyTuple_New(t->ndim);
  if (!shape) return -1;
  for (int k = 0; k < t->ndim; k++) {
    PyObject *v = PyLong_FromLongLong(t->shape[k]);
    if (!v) {
      Py_DECREF(shape);
      return -1;
    }
    PyTuple_SET_ITEM(shape, k, v);
  }
  PyObject *dt = e == XIR_F32 ? g_np_f32 : e == XIR_I64 ? g_np_i64 : e == XIR_F16 ? g_np_f16 : g_np_u16;
  PyObject *copy = PyObject_CallFunctionObjArgs(g_np_empty, shape, dt, NULL);
  Py_DECREF(shape);
  if (!copy) return -1;
  b->hold[i] = copy;
  if (PyObject_GetBuffer(copy, &b->view[i], PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return -1;
  b->have_view[i] = 1;
  copy_strided(b->view[i].buf, data, t->ndim, t->shape, t->strides, es);
  a->buf = b->view[i].buf;
  Py_CLEAR(b->hold2[i]); /* the copy is all that is read */
  return 1;
}

static void arr_from_view(arr *a, const Py_buffer *v, xir_elem e) {
  a->buf = v->buf;
  a->len = v->len;
  a->ndim = v->ndim;
  for (int k = 0; k < v->ndim && k < XIR_MAX_RANK; k++) a->shape[k] = v->shape[k];
  a->elem = e;
}

/* Reads argument i (an array) into b->a[i]: the buffer protocol (NumPy float32, float16, int64),
 * a bf16 NumPy array through a uint16 view, DLPack (torch), or numpy.asarray for objects with the
 * array interface. Inputs that are not C-contiguous are copied; outputs must be C-contiguous and
 * writable. Returns 0, or -1 with an exception set. */
static int get_array(ProgramObject *po, int i, PyObject *obj, binding *b) {
  const xir_param_info *pi = &po->info[i];
  const char *kname = xir_program_name(po->p);
  int out = pi->is_output;
  int flags = out ? (PyBUF_STRIDES | PyBUF_FORMAT | PyBUF_WRITABLE) : (PyBUF_STRIDES | PyBUF_FORMAT);
  PyObject *src = obj;
  if (!PyObject_CheckBuffer(src)) {
    int dl = PyObject_HasAttr(src, g_str_dlpack);
    if (dl) {
      int r = from_dlpack(po, i, src, b);
      if (r != 0) return r < 0 ? -1 : 0;
    }
    PyObject *conv = NULL;
    if (dl) conv = PyObject_CallOneArg(g_np_from_dlpack, src);
    else if (PyObject_HasAttr(src, g_str_array_interface) || PyObject_HasAttr(src, g_str_array))
      conv = PyObject_CallOneArg(g_np_asarray, src);
    else {
      PyErr_Format(PyExc_TypeError,
                   "%s: %s must be an array (buffer protocol, DLPack or __array_interface__), "
                   "not %.80s", kname, pi->name, Py_TYPE(src)->tp_name);
      return -1;
    }
    if (!conv) return unreadable(kname, pi->name, src);
    b->hold[i] = conv;
    src = conv;
  }
  xir_elem e = XIR_ELEM_NONE;
  int bf16 = 0;
  PyObject *bd = bf16_descr();
  if (bd) { /* a bf16 NumPy array cannot export a buffer: see it first, not by the failure */
    PyObject *dt = PyObject_GetAttr(src, g_str_dtype);
    bf16 = dt == bd;
    Py_XDECREF(dt);
    PyErr_Clear();
  }
  if (bf16 || PyObject_GetBuffer(src, &b->view[i], flags) < 0) {
    if (!bf16) {
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      bf16 = is_bf16_array(src);
      PyErr_Restore(type, value, tb);
    }
    if (!bf16) {
      if (out && (PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_ValueError))) {
        PyErr_Clear();
        PyErr_Format(g_arg_error, "%s: out (%s) must be a writable array", kname, pi->name);
      }
      return -1;
    }
    PyErr_Clear(); /* read the bf16 array's bits through a uint16 view */
    PyObject *u16 = PyObject_CallMethod(src, "view", "O", g_np_u16);
    if (!u16) return -1;
    b->hold2[i] = u16;
    if (PyObject_GetBuffer(u16, &b->view[i], flags) < 0) {
      if (out) {
        PyErr_Clear();
        PyErr_Format(g_arg_error, "%s: out (%s) must be a writable array", kname, pi->name);
      }
      return -1;
    }
    e = XIR_BF16;
  } else {
    e = format_elem(&b->view[i]);
  }
  b->have_view[i] = 1;
  if (!PyBuffer_IsContiguous(&b->view[i], 'C')) {
    if (out) {
      PyErr_Format(g_arg_error, "%s: out (%s) must be C-contiguous", kname, pi->name);
      return -1;
    }
    PyObject *from = b->hold2[i] ? b->hold2[i] : src; /* a bf16 array: its uint16 view */
    PyObject *copy = PyObject_CallOneArg(g_np_asc, from); /* documented: inputs are copied */
    if (!copy) return -1;
    PyBuffer_Release(&b->view[i]);
    b->have_view[i] = 0;
    Py_XSETREF(b->hold2[i], copy);
    if (PyObject_GetBuffer(copy, &b->view[i], flags) < 0) return -1;
    b->have_view[i] = 1;
  }
  if (b->view[i].ndim > XIR_MAX_RANK) {
    PyErr_Format(g_arg_error, "%s: %s has %d dimensions (at most %d)", kname, pi->name,
                 b->view[i].ndim, XIR_MAX_RANK);
    return -1;
  }
  arr_from_view(&b->a[i], &b->view[i], e);
  if (e == XIR_ELEM_NONE) {
    char dt[128];
    PyErr_Format(g_arg_error, "%s: %s must be %s, got %s", kname, pi->name,
                 pi->elem == XIR_I64 ? "int64" : "float32, float16 or bfloat16",
                 dtype_text(src, b->view[i].format, dt, sizeof dt));
    return -1;
  }
  return 0;
}

/* Checks the element type of argument i: int64 for an i64 buffer; for a floating-point buffer
 * any of f32/f16/bf16, or exactly the program's type when `exact` (a plan). */
static int check_elem(ProgramObject *po, int i, const binding *b, int exact) {
  const xir_param_info *pi = &po->info[i];
  xir_elem e = b->a[i].elem;
  int ok = pi->elem == XIR_I64 ? e == XIR_I64 : exact ? e == pi->elem : is_float(e);
  if (ok) return 0;
  PyErr_Format(g_arg_error, "%s: %s must be %s, got %s%s", xir_program_name(po->p), pi->name,
               pi->elem == XIR_I64 ? "int64" : exact ? elem_dtype(pi->elem) : "float32, float16 or bfloat16",
               elem_dtype(e), exact && pi->elem != XIR_I64 ? " (the plan's type)" : "");
  return -1;
}

/* "(R=64, C=4096)" — the expected shape of parameter i under the dims bound so far. */
static void expected_shape(ProgramObject *po, int i, const binding *b, char *buf, size_t cap) {
  size_t len = 0;
  len += (size_t)snprintf(buf + len, cap - len, "(");
  for (int a = 0; a < po->info[i].rank && len < cap; a++) {
    int di = po->info[i].dims[a];
    const char *dn = xir_program_dim_name(po->p, di);
    if (b->bound_by[di] != -2)
      len += (size_t)snprintf(buf + len, cap - len, "%s%s=%lld", a ? ", " : "", dn,
                              (long long)b->shape.dims[di]);
    else
      len += (size_t)snprintf(buf + len, cap - len, "%s%s", a ? ", " : "", dn);
  }
  if (len < cap) snprintf(buf + len, cap - len, "%s)", po->info[i].rank == 1 ? "," : "");
}

static void shape_text(const arr *v, char *buf, size_t cap) {
  size_t len = (size_t)snprintf(buf, cap, "(");
  for (int a = 0; a < v->ndim && len < cap; a++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%zd", a ? ", " : "", v->shape[a]);
  if (len < cap) snprintf(buf + len, cap - len, "%s)", v->ndim == 1 ? "," : "");
}

/* Binds dim di to value from parameter `who` (-1: the dims mapping). */
static int bind_dim(ProgramObject *po, binding *b, int di, int64_t value, int who) {
  if (b->bound_by[di] == -2) {
    b->shape.dims[di] = value;
    b->bound_by[di] = who;
    return 0;
  }
  if (b->shape.dims[di] == value) return 0;
  int first = b->bound_by[di];
  PyErr_Format(g_arg_error, "%s: dim %s is %lld from %s but %lld from %s",
               xir_program_name(po->p), xir_program_dim_name(po->p, di),
               (long long)b->shape.dims[di], first >= 0 ? po->info[first].name : "dims",
               (long long)value, who >= 0 ? po->info[who].name : "dims");
  return -1;
}

static int overlaps(const arr *a, const arr *b) {
  const char *pa = a->buf, *pb = b->buf;
  return a->len > 0 && b->len > 0 && pa < pb + b->len && pb < pa + a->len;
}

/* Binds args (one object per parameter; None = allocate the output / take the scalar's default)
 * and an optional dims mapping, or checks them against `fixed` (a plan's shape and types).
 * Returns 0, or -1 with an exception set; either way binding_release(b, nparams) releases what
 * it holds. */
static int bind_args(ProgramObject *po, PyObject *const *objs, Py_ssize_t nobjs, PyObject *dims,
                     const xir_shape *fixed, binding *b) {
  const char *kname = xir_program_name(po->p);
  memset(b->have_view, 0, sizeof b->have_view);
  memset(b->hold, 0, sizeof b->hold);
  memset(b->hold2, 0, sizeof b->hold2);
  memset(b->given, 0, sizeof b->given);
  memset(b->args, 0, sizeof b->args);
  b->act = -1;
  if (nobjs != po->nparams) {
    PyErr_Format(PyExc_TypeError, "%s takes %d arguments (one per parameter), got %zd", kname,
                 po->nparams, nobjs);
    return -1;
  }
  b->shape.ndims = po->ndims;
  for (int di = 0; di < po->ndims; di++) b->bound_by[di] = -2;
  /* inputs first, then given outputs: every buffer's axes bind or check dims */
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < po->nparams; i++) {
      const xir_param_info *pi = &po->info[i];
      if (pi->kind != XIR_PARAM_BUFFER || pi->is_output != pass || objs[i] == Py_None) continue;
      if (get_array(po, i, objs[i], b) || check_elem(po, i, b, fixed != NULL)) return -1;
      b->given[i] = 1;
      const arr *v = &b->a[i];
      if (v->ndim != pi->rank) {
        char want[256], got[256];
        expected_shape(po, i, b, want, sizeof want);
        shape_text(v, got, sizeof got);
        PyErr_Format(g_arg_error, "%s: %s must have %d dimension%s %s, got shape %s", kname,
                     pi->name, pi->rank, pi->rank == 1 ? "" : "s", want, got);
        return -1;
      }
      for (int a = 0; a < pi->rank; a++) {
        int di = pi->dims[a];
        if (fixed && b->bound_by[di] == -2) {
          b->shape.dims[di] = fixed->dims[di];
          b->bound_by[di] = -1;
        }
        if (b->bound_by[di] != -2 && b->shape.dims[di] != v->shape[a]) {
          char want[256], got[256];
          expected_shape(po, i, b, want, sizeof want);
          shape_text(v, got, sizeof got);
          PyErr_Format(g_arg_error, "%s: %s has shape %s, expected %s", kname, pi->name, got,
                       want);
          return -1;
        }
        if (bind_dim(po, b, di, v->shape[a], i)) return -1;
      }
      if (pi->is_output) b->args[i].out = v->buf;
      else b->args[i].in = v->buf;
    }
  }
  if (fixed) {
    for (int di = 0; di < po->ndims; di++) b->shape.dims[di] = fixed->dims[di];
  } else if (dims && dims != Py_None) {
    if (!PyDict_Check(dims)) {
      PyErr_SetString(PyExc_TypeError, "dims must be a dict of dim name -> int");
      return -1;
    }
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dims, &pos, &key, &val)) {
      const char *dn = PyUnicode_AsUTF8(key);
      if (!dn) return -1;
      int di = xir_program_find_dim(po->p, dn);
      if (di < 0) {
        PyErr_Format(g_arg_error, "%s has no dim '%s'", kname, dn);
        return -1;
      }
      long long v = PyLong_AsLongLong(val);
      if (v == -1 && PyErr_Occurred()) return -1;
      if (bind_dim(po, b, di, v, -1)) return -1;
    }
  }
  if (!fixed) {
    for (int di = 0; di < po->ndims; di++) {
      if (b->bound_by[di] == -2) {
        PyErr_Format(g_arg_error, "%s: dim %s is not named by any array given; pass it in dims",
                     kname, xir_program_dim_name(po->p, di));
        return -1;
      }
    }
  }
  /* outputs to allocate take the type of the first floating-point input (the activations: x, a,
   * q), or the plan's */
  xir_elem act = XIR_F32;
  for (int i = 0; i < po->nparams; i++) {
    if (po->info[i].kind == XIR_PARAM_BUFFER && !po->info[i].is_output && b->given[i] &&
        is_float(b->a[i].elem)) {
      act = b->a[i].elem;
      b->act = i;
      break;
    }
  }
  for (int i = 0; i < po->nparams; i++) {
    if (po->info[i].kind == XIR_PARAM_BUFFER && !b->given[i]) b->a[i].elem = fixed ? po->info[i].elem : act;
  }
  /* scalars */
  for (int i = 0; i < po->nparams; i++) {
    const xir_param_info *pi = &po->info[i];
    if (pi->kind != XIR_PARAM_SCALAR) continue;
    if (objs[i] == Py_None) {
      if (!pi->has_default) {
        PyErr_Format(PyExc_TypeError, "%s: scalar %s has no default", kname, pi->name);
        return -1;
      }
      b->args[i].use_default = 1;
    } else {
      double v = PyFloat_AsDouble(objs[i]);
      if (v == -1.0 && PyErr_Occurred()) return -1;
      b->args[i].scalar = v;
    }
  }
  return 0;
}

/* The NumPy dtype object of an element type (bfloat16: ml_dtypes, imported on first use). */
static PyObject *np_dtype(xir_elem e) {
  if (e == XIR_F16) return g_np_f16;
  if (e != XIR_BF16) return g_np_f32;
  if (!g_np_bf16) {
    PyObject *ml = PyImport_ImportModule("ml_dtypes");
    if (!ml) {
      PyErr_Clear();
      PyErr_SetString(g_arg_error, "a bfloat16 result needs the ml_dtypes package (pip install "
                                   "ml_dtypes), or pass out=");
      return NULL;
    }
    g_np_bf16 = PyObject_GetAttrString(ml, "bfloat16");
    Py_DECREF(ml);
  }
  return g_np_bf16;
}

/* Results of at least XIR_PY_ALIGN_MIN bytes start on a 64-byte line: numpy.empty of a large
 * array gets its memory from mmap through malloc, 16 bytes past a page, and rows that start inside
 * a line cost the row kernels split loads and stores and the streaming (non-temporal) store path
 * (docs/python.md, "Where results lie"). A uint8 array 64 bytes longer, sliced at the first line
 * boundary, viewed as dt and reshaped: the result's .base is that buffer. Smaller results come
 * from numpy.empty as they are. New reference, or NULL with an exception. */
#define XIR_PY_ALIGN_MIN (64 * 1024)
static PyObject *new_result(PyObject *shape, PyObject *dt, xir_elem e) {
  Py_ssize_t n = 1;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(shape); k++) {
    Py_ssize_t d = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k));
    if (d < 0) return PyErr_Occurred() ? NULL : PyObject_CallFunctionObjArgs(g_np_empty, shape, dt, NULL);
    if (d && n > PY_SSIZE_T_MAX / 2 / d) return PyObject_CallFunctionObjArgs(g_np_empty, shape, dt, NULL);
    n *= d;
  }
  Py_ssize_t bytes = n * (Py_ssize_t)xir_elem_size(e);
  if (bytes < XIR_PY_ALIGN_MIN) return PyObject_CallFunctionObjArgs(g_np_empty, shape, dt, NULL);
  PyObject *len = PyLong_FromSsize_t(bytes + 64);
  PyObject *raw = len ? PyObject_CallFunctionObjArgs(g_np_empty, len, g_np_u8, NULL) : NULL;
  Py_XDECREF(len);
  if (!raw) return NULL;
  Py_buffer v;
  if (PyObject_GetBuffer(raw, &v, PyBUF_SIMPLE) < 0) {
    Py_DECREF(raw);
    return NULL;
  }
  Py_ssize_t off = (Py_ssize_t)((64 - ((uintptr_t)v.buf & 63)) & 63);
  PyBuffer_Release(&v);
  PyObject *part = PySequence_GetSlice(raw, off, off + bytes);
  Py_DECREF(raw);
  if (!part) return NULL;
  PyObject *typed = PyObject_CallMethod(part, "view", "O", dt);
  Py_DECREF(part);
  if (!typed) return NULL;
  PyObject *r = PyObject_CallMethod(typed, "reshape", "O", shape);
  Py_DECREF(typed);
  return r;
}

/* Allocates every output left as None (its shape from the dims, its type b->a[i].elem): a torch
 * tensor (torch.empty, read back through DLPack as an out= tensor is) when the activations are a
 * torch tensor, else a NumPy array. */
static int alloc_outputs(ProgramObject *po, PyObject *const *objs, binding *b) {
  int torch = b->act >= 0 && is_torch_tensor(objs[b->act]);
  for (int i = 0; i < po->nparams; i++) {
    const xir_param_info *pi = &po->info[i];
    if (pi->kind != XIR_PARAM_BUFFER || !pi->is_output || objs[i] != Py_None) continue;
    PyObject *dt = torch ? torch_dtype(b->a[i].elem) : np_dtype(b->a[i].elem);
    if (!dt) return -1;
    PyObject *shape = PyTuple_New(pi->rank);
    if (!shape) return -1;
    for (int a = 0; a < pi->rank; a++) {
      PyObject *v = PyLong_FromLongLong(b->shape.dims[pi->dims[a]]);
      if (!v) {
        Py_DECREF(shape);
        return -1;
      }
      PyTuple_SET_ITEM(shape, a, v);
    }
    if (torch) {
      PyObject *targs[2] = {shape, dt};
      PyObject *t = PyObject_Vectorcall(g_torch.empty, targs, 1, g_kw_dtype);
      Py_DECREF(shape);
      if (!t) return -1;
      b->hold[i] = t;
      int r = from_dlpack(po, i, t, b);
      if (r == 0)
        PyErr_Format(g_arg_error, "%s: the torch result %s could not be read through DLPack",
                     xir_program_name(po->p), pi->name);
      if (r <= 0) return -1;
      b->args[i].out = b->a[i].buf;
      continue;
    }
    PyObject *arr_ = new_result(shape, dt, b->a[i].elem);
    Py_DECREF(shape);
    if (!arr_) return -1;
    b->hold[i] = arr_;
    PyObject *src = arr_;
    if (b->a[i].elem == XIR_BF16) {
      if (!(b->hold2[i] = PyObject_CallMethod(arr_, "view", "O", g_np_u16))) return -1;
      src = b->hold2[i];
    }
    if (PyObject_GetBuffer(src, &b->view[i], PyBUF_STRIDES | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
      return -1;
    b->have_view[i] = 1;
    xir_elem e = b->a[i].elem;
    arr_from_view(&b->a[i], &b->view[i], e);
    b->args[i].out = b->view[i].buf;
  }
  return 0;
}

static int check_aliasing(ProgramObject *po, binding *b) {
  for (int i = 0; i < po->nparams; i++) {
    if (po->info[i].kind != XIR_PARAM_BUFFER || !po->info[i].is_output) continue;
    for (int j = 0; j < po->nparams; j++) {
      if (j == i || po->info[j].kind != XIR_PARAM_BUFFER) continue;
      if (overlaps(&b->a[i], &b->a[j])) {
        PyErr_Format(g_arg_error, "%s: out (%s) overlaps %s (in-place use is not supported; "
                     "docs/api.md)", xir_program_name(po->p), po->info[i].name, po->info[j].name);
        return -1;
      }
    }
  }
  return 0;
}

static PyObject *outputs_result(ProgramObject *po, PyObject *const *objs, binding *b) {
  PyObject *res = NULL;
  int nout = 0;
  for (int i = 0; i < po->nparams; i++) nout += po->info[i].kind == XIR_PARAM_BUFFER && po->info[i].is_output;
  if (nout != 1 && !(res = PyTuple_New(nout))) return NULL;
  int k = 0;
  for (int i = 0; i < po->nparams; i++) {
    if (po->info[i].kind != XIR_PARAM_BUFFER || !po->info[i].is_output) continue;
    PyObject *o = objs[i] != Py_None ? objs[i] : b->hold[i];
    Py_INCREF(o);
    if (nout == 1) return o;
    PyTuple_SET_ITEM(res, k++, o);
  }
  return res;
}

/* The program of po with its floating-point buffers of the types in elem[] (po itself when they
 * are its own): retyped once through the session (xir_session_retype) and kept in po->variants. */
static ProgramObject *variant(ProgramObject *po, const binding *b) {
  int same = 1;
  for (int i = 0; i < po->nparams; i++)
    if (po->info[i].kind == XIR_PARAM_BUFFER && is_float(po->info[i].elem) && b->a[i].elem != po->info[i].elem) same = 0;
  if (same) return po;
  Py_ssize_t n = po->variants ? PyList_GET_SIZE(po->variants) : 0;
  for (Py_ssize_t v = 0; v < n; v++) {
    ProgramObject *q = (ProgramObject *)PyList_GET_ITEM(po->variants, v);
    int match = 1;
    for (int i = 0; i < po->nparams && match; i++)
      if (q->info[i].kind == XIR_PARAM_BUFFER && is_float(q->info[i].elem) && q->info[i].elem != b->a[i].elem) match = 0;
    if (match) return q;
  }
  char spec[1024];
  size_t len = 0;
  spec[0] = 0;
  for (int i = 0; i < po->nparams && len < sizeof spec; i++) {
    if (po->info[i].kind != XIR_PARAM_BUFFER || !is_float(po->info[i].elem)) continue;
    len += (size_t)snprintf(spec + len, sizeof spec - len, "%s%s=%s", len ? "," : "",
                            po->info[i].name, xir_elem_name(b->a[i].elem));
  }
  const xir_program *p;
  xir_diag d;
  xir_status st = xir_session_retype(po->session->s, po->p, spec, &p, &d);
  if (st) {
    raise_diag(&d, st);
    return NULL;
  }
  if (!po->variants && !(po->variants = PyList_New(0))) return NULL;
  PyObject *q = make_program(po->session, p);
  if (!q || PyList_Append(po->variants, q) < 0) {
    Py_XDECREF(q);
    return NULL;
  }
  Py_DECREF(q); /* the list holds it */
  return (ProgramObject *)q;
}

/* The shared call path: bind, pick the program for the arrays' types, prepare (unless given),
 * allocate, launch. */
static PyObject *call_program(ProgramObject *po, const xir_prepared *k, PyObject *const *objs,
                              Py_ssize_t nobjs, PyObject *dims) {
  binding b;
  PyObject *res = NULL;
  if (bind_args(po, objs, nobjs, dims, k ? xir_prepared_shape(k) : NULL, &b)) goto done;
  xir_diag d;
  xir_status st = XIR_OK;
  ProgramObject *run = po;
  if (!k && !(run = variant(po, &b))) goto done;
  if (alloc_outputs(po, objs, &b) || check_aliasing(po, &b)) goto done;
  /* prepare (a cache lookup after the first call) and launch in one release of the GIL */
  Py_BEGIN_ALLOW_THREADS
  if (!k) st = xir_session_prepare(run->session->s, run->p, &b.shape, &k, &d);
  if (!st) st = xir_session_launch(run->session->s, k, b.args, run->nparams, &d);
  Py_END_ALLOW_THREADS
  if (st) {
    raise_diag(&d, st);
    goto done;
  }
  res = outputs_result(po, objs, &b);
done:
  binding_release(&b, po->nparams);
  return res;
}

/* ---- Program ---- */

static void Program_dealloc(ProgramObject *self) {
  Py_XDECREF(self->variants);
  Py_XDECREF(self->session);
  PyObject_Free(self);
}

/* run(args: tuple | list, dims: dict | None = None) */
static PyObject *Program_run(ProgramObject *self, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 2) {
    PyErr_SetString(PyExc_TypeError, "run(args, dims=None)");
    return NULL;
  }
  PyObject *seq = args[0];
  if (!PyTuple_Check(seq) && !PyList_Check(seq)) {
    PyErr_SetString(PyExc_TypeError, "run: args must be a tuple or a list");
    return NULL;
  }
  /* a list is copied into a tuple: another thread could resize it while the GIL is released */
  PyObject *tuple = PyTuple_Check(seq) ? (Py_INCREF(seq), seq) : PyList_AsTuple(seq);
  if (!tuple) return NULL;
  PyObject *res = call_program(self, NULL, &PyTuple_GET_ITEM(tuple, 0), PyTuple_GET_SIZE(tuple),
                               nargs > 1 ? args[1] : NULL);
  Py_DECREF(tuple);
  return res;
}

/* prepare(dims: dict, dtype: str | None = None) -> Plan */
static PyObject *Program_prepare(ProgramObject *self, PyObject *args) {
  PyObject *dims;
  const char *spec = NULL;
  if (!PyArg_ParseTuple(args, "O|z", &dims, &spec)) return NULL;
  PyObject *retyped = NULL;
  if (spec && *spec) { /* a plan for retyped buffers: "bf16", "x=bf16,w=f32" */
    const xir_program *p;
    xir_diag d;
    xir_status st = xir_session_retype(self->session->s, self->p, spec, &p, &d);
    if (st) return raise_diag(&d, st);
    if (!(retyped = make_program(self->session, p))) return NULL;
    self = (ProgramObject *)retyped;
  }
  PyObject *res = NULL;
  if (!PyDict_Check(dims)) {
    PyErr_SetString(PyExc_TypeError, "prepare: dims must be a dict of dim name -> int");
    goto done;
  }
  xir_shape sh = {.ndims = self->ndims};
  int set[XIR_MAX_DIMS] = {0};
  PyObject *key, *val;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dims, &pos, &key, &val)) {
    const char *dn = PyUnicode_AsUTF8(key);
    if (!dn) goto done;
    int di = xir_program_find_dim(self->p, dn);
    if (di < 0) {
      PyErr_Format(g_arg_error, "%s has no dim '%s'", xir_program_name(self->p), dn);
      goto done;
    }
    long long v = PyLong_AsLongLong(val);
    if (v == -1 && PyErr_Occurred()) goto done;
    sh.dims[di] = v;
    set[di] = 1;
  }
  for (int di = 0; di < self->ndims; di++) {
    if (!set[di]) {
      PyErr_Format(g_arg_error, "%s: the shape needs dim %s", xir_program_name(self->p),
                   xir_program_dim_name(self->p, di));
      goto done;
    }
  }
  const xir_prepared *k;
  xir_diag d;
  xir_status st;
  Py_BEGIN_ALLOW_THREADS
  st = xir_session_prepare(self->session->s, self->p, &sh, &k, &d);
  Py_END_ALLOW_THREADS
  if (st) {
    raise_diag(&d, st);
    goto done;
  }
  PlanObject *pl = PyObject_New(PlanObject, &PlanType);
  if (!pl) goto done;
  Py_INCREF(self);
  pl->program = self;
  pl->k = k;
  res = (PyObject *)pl;
done:
  Py_XDECREF(retyped);
  return res;
}

static PyObject *Program_name(ProgramObject *self, void *c) {
  return PyUnicode_FromString(xir_program_name(self->p));
}

static PyObject *Program_dims(ProgramObject *self, void *c) {
  PyObject *t = PyTuple_New(self->ndims);
  for (int i = 0; t && i < self->ndims; i++)
    PyTuple_SET_ITEM(t, i, PyUnicode_FromString(xir_program_dim_name(self->p, i)));
  return t;
}

/* params: tuple of (name, kind, elem, is_output, dims, default) */
static PyObject *Program_params(ProgramObject *self, void *c) {
  PyObject *t = PyTuple_New(self->nparams);
  for (int i = 0; t && i < self->nparams; i++) {
    const xir_param_info *pi = &self->info[i];
    PyObject *dl = PyTuple_New(pi->kind == XIR_PARAM_BUFFER ? pi->rank : 0);
    for (int a = 0; dl && pi->kind == XIR_PARAM_BUFFER && a < pi->rank; a++)
      PyTuple_SET_ITEM(dl, a, PyUnicode_FromString(xir_program_dim_name(self->p, pi->dims[a])));
    PyObject *def = pi->kind == XIR_PARAM_SCALAR && pi->has_default
                        ? PyFloat_FromDouble(pi->default_value)
                        : (Py_INCREF(Py_None), Py_None);
    PyObject *e = Py_BuildValue("(sssOOO)", pi->name,
                                pi->kind == XIR_PARAM_BUFFER ? "buffer" : "scalar",
                                pi->elem == XIR_I64 ? "i64" : "f32",
                                pi->is_output ? Py_True : Py_False, dl ? dl : Py_None, def);
    Py_XDECREF(dl);
    Py_XDECREF(def);
    if (!e) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SET_ITEM(t, i, e);
  }
  return t;
}

static PyObject *Program_text(ProgramObject *self, void *c) {
  char *text;
  xir_diag d;
  xir_status st = xir_program_print(self->p, &text, &d);
  if (st) return raise_diag(&d, st);
  PyObject *s = PyUnicode_FromString(text);
  xir_free(text);
  return s;
}

static PyMethodDef Program_methods[] = {
    {"run", (PyCFunction)(void (*)(void))Program_run, METH_FASTCALL,
     "run(args, dims=None): one object per parameter (None: allocate the output / the scalar's "
     "default); dims names the dims no array gives. Returns the output (a tuple if several)."},
    {"prepare", (PyCFunction)Program_prepare, METH_VARARGS,
     "prepare(dims: dict, dtype=None) -> Plan: planned and compiled for this shape (cached); "
     "dtype retypes buffers first ('bf16', 'x=bf16,w=f32')."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Program_getset[] = {
    {"name", (getter)Program_name, NULL, "the kernel's name", NULL},
    {"dims", (getter)Program_dims, NULL, "the dims' names, in order", NULL},
    {"params", (getter)Program_params, NULL,
     "(name, 'buffer'|'scalar', 'f32'|'i64', is_output, dims, default) per parameter", NULL},
    {"text", (getter)Program_text, NULL, "the canonical XIR text", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ---- Plan ---- */

static void Plan_dealloc(PlanObject *self) {
  Py_XDECREF(self->program);
  PyObject_Free(self);
}

static PyObject *Plan_call(PlanObject *self, PyObject *args, PyObject *kw) {
  if (kw && PyDict_Size(kw)) {
    PyErr_SetString(PyExc_TypeError, "a Plan takes its arguments by position");
    return NULL;
  }
  return call_program(self->program, self->k, &PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args),
                      NULL);
}

static PyObject *grain_obj(uint32_t g) {
  if (g == UINT32_MAX) return PyUnicode_FromString("max");
  return PyLong_FromUnsignedLong(g);
}

static PyObject *Plan_explain(PlanObject *self, PyObject *unused) {
  const xir_plan *pl = xir_prepared_plan(self->k);
  const xir_program *p = self->program->p;
  PyObject *list = PyList_New((Py_ssize_t)pl->count);
  for (size_t i = 0; list && i < pl->count; i++) {
    const xir_plan_entry *e = &pl->entries[i];
    char name[160];
    xir_candidate_name(p, &e->cand, name, sizeof name);
    PyObject *g = grain_obj(e->work.grain);
    PyObject *dct = Py_BuildValue(
        "{sKsssNsssKsKsKsIsKsdsd}", "rank", (unsigned long long)(i + 1), "candidate", name,
        "grain", g, "impl", xir_impl_kind_name(e->work.kind), "Q",
        (unsigned long long)e->work.packets, "L", (unsigned long long)e->work.blocks, "C",
        (unsigned long long)e->work.tasks, "h", e->work.active, "critical_packets",
        (unsigned long long)e->work.critical_packets, "arith_per_packet",
        e->work.arith_per_packet, "memory_per_packet", e->work.memory_per_packet);
    if (!dct) {
      Py_DECREF(list);
      return NULL;
    }
    for (int t = 0; t < XIR_TERM_COUNT; t++) {
      PyObject *v = PyFloat_FromDouble(e->cost.term[t]);
      PyDict_SetItemString(dct, xir_cost_term_name((xir_cost_term)t), v);
      Py_XDECREF(v);
    }
    PyObject *tot = PyFloat_FromDouble(e->cost.total);
    PyDict_SetItemString(dct, "total", tot);
    Py_XDECREF(tot);
    PyList_SET_ITEM(list, (Py_ssize_t)i, dct);
  }
  return list;
}

static PyObject *Plan_explain_text(PlanObject *self, PyObject *unused) {
  char *text;
  xir_diag d;
  xir_status st = xir_prepared_explain(self->k, &text, &d);
  if (st) return raise_diag(&d, st);
  PyObject *s = PyUnicode_FromString(text);
  xir_free(text);
  return s;
}

/* _time_launch(args: tuple, n: int, cpu: bool = False) -> float: ns per xir_session_launch,
 * measured in C over n launches of the bound arguments (no Python in the loop): the reference
 * for the per-call overhead of the Python path. cpu: the calling thread's CPU time instead of
 * the wall clock (robust on a loaded machine; exact for caller-path launches only). */
static PyObject *Plan_time_launch(PlanObject *self, PyObject *args) {
  PyObject *tuple;
  long n;
  int cpu = 0;
  if (!PyArg_ParseTuple(args, "O!l|p", &PyTuple_Type, &tuple, &n, &cpu)) return NULL;
  if (n < 1) {
    PyErr_SetString(PyExc_ValueError, "_time_launch: n must be >= 1");
    return NULL;
  }
  clockid_t clk = cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
  ProgramObject *po = self->program;
  binding b;
  PyObject *res = NULL;
  if (bind_args(po, &PyTuple_GET_ITEM(tuple, 0), PyTuple_GET_SIZE(tuple), NULL,
                xir_prepared_shape(self->k), &b) == 0 &&
      alloc_outputs(po, &PyTuple_GET_ITEM(tuple, 0), &b) == 0) {
    xir_diag d;
    xir_status st = XIR_OK;
    struct timespec t0, t1;
    Py_BEGIN_ALLOW_THREADS
    clock_gettime(clk, &t0);
    for (long i = 0; i < n && !st; i++) st = xir_session_launch(po->session->s, self->k, b.args, po->nparams, &d);
    clock_gettime(clk, &t1);
    Py_END_ALLOW_THREADS
    if (st) raise_diag(&d, st);
    else res = PyFloat_FromDouble(((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n);
  }
  binding_release(&b, po->nparams);
  return res;
}

static PyObject *Plan_candidate(PlanObject *self, void *c) {
  char name[160];
  xir_candidate_name(self->program->p, &xir_prepared_plan(self->k)->entries[0].cand, name,
                     sizeof name);
  return PyUnicode_FromString(name);
}
static PyObject *Plan_grain(PlanObject *self, void *c) { return grain_obj(xir_prepared_grain(self->k)); }
static PyObject *Plan_workers(PlanObject *self, void *c) {
  return PyLong_FromUnsignedLong(xir_prepared_workers(self->k));
}
static PyObject *Plan_shape(PlanObject *self, void *c) {
  const xir_shape *sh = xir_prepared_shape(self->k);
  PyObject *dct = PyDict_New();
  for (int i = 0; dct && i < sh->ndims; i++) {
    PyObject *v = PyLong_FromLongLong(sh->dims[i]);
    PyDict_SetItemString(dct, xir_program_dim_name(self->program->p, i), v);
    Py_XDECREF(v);
  }
  return dct;
}

static PyMethodDef Plan_methods[] = {
    {"explain", (PyCFunction)Plan_explain, METH_NOARGS,
     "explain() -> list[dict]: every candidate x grain ranked by total cost (rank 1 is the "
     "choice), with its counts and each cost term."},
    {"explain_text", (PyCFunction)Plan_explain_text, METH_NOARGS,
     "explain_text() -> str: the same as a table (xir_prepared_explain)."},
    {"_time_launch", (PyCFunction)Plan_time_launch, METH_VARARGS,
     "_time_launch(args, n, cpu=False) -> ns per C launch (no Python in the loop)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Plan_getset[] = {
    {"candidate", (getter)Plan_candidate, NULL, "the chosen candidate's name", NULL},
    {"grain", (getter)Plan_grain, NULL, "the chosen task grain (blocks per task, or 'max')", NULL},
    {"workers", (getter)Plan_workers, NULL, "workers the launch asks for", NULL},
    {"shape", (getter)Plan_shape, NULL, "the dims this plan is for", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ---- module ---- */

static PyTypeObject SessionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "xir._xir.Session",
    .tp_basicsize = sizeof(SessionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Session(workers=0): a compiler, a thread pool (workers incl. the caller; 0 = the "
              "online CPUs) and a cache of planned + compiled kernels per (kernel, shape).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Session_init,
    .tp_dealloc = (destructor)Session_dealloc,
    .tp_methods = Session_methods,
    .tp_getset = Session_getset,
};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "xir._xir.Program",
    .tp_basicsize = sizeof(ProgramObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A program held by a session (Session.program / Session.parse).",
    .tp_dealloc = (destructor)Program_dealloc,
    .tp_methods = Program_methods,
    .tp_getset = Program_getset,
};

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "xir._xir.Plan",
    .tp_basicsize = sizeof(PlanObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A program planned and compiled for one shape; call it with one array per "
              "parameter (None: allocate the output / the scalar's default).",
    .tp_dealloc = (destructor)Plan_dealloc,
    .tp_call = (ternaryfunc)Plan_call,
    .tp_methods = Plan_methods,
    .tp_getset = Plan_getset,
};

static PyObject *mod_version(PyObject *m, PyObject *unused) {
  return PyUnicode_FromString(xir_version());
}

static PyMethodDef module_methods[] = {
    {"version", mod_version, METH_NOARGS, "the libxir version"}, {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_xir",
                                        "The C extension of the xir package (see xir).", -1,
                                        module_methods, NULL, NULL, NULL, NULL};

static PyObject *new_exc(PyObject *m, const char *name, PyObject *bases, const char *doc) {
  PyObject *e = PyErr_NewExceptionWithDoc(name, doc, bases, NULL);
  if (e && PyModule_AddObjectRef(m, strrchr(name, '.') + 1, e) < 0) Py_CLEAR(e);
  return e;
}

PyMODINIT_FUNC PyInit__xir(void) {
  if (PyType_Ready(&SessionType) < 0 || PyType_Ready(&ProgramType) < 0 ||
      PyType_Ready(&PlanType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  PyObject *np = PyImport_ImportModule("numpy");
  if (!np) goto fail;
  g_np_empty = PyObject_GetAttrString(np, "empty");
  g_np_asc = PyObject_GetAttrString(np, "ascontiguousarray");
  g_np_asarray = PyObject_GetAttrString(np, "asarray");
  g_np_from_dlpack = PyObject_GetAttrString(np, "from_dlpack");
  g_np_f32 = PyObject_GetAttrString(np, "float32");
  g_np_f16 = PyObject_GetAttrString(np, "float16");
  g_np_u16 = PyObject_GetAttrString(np, "uint16");
  g_np_u8 = PyObject_GetAttrString(np, "uint8");
  g_np_i64 = PyObject_GetAttrString(np, "int64");
  Py_DECREF(np);
  if (!g_np_empty || !g_np_asc || !g_np_asarray || !g_np_from_dlpack || !g_np_f32 || !g_np_f16 ||
      !g_np_u16 || !g_np_u8 || !g_np_i64)
    goto fail;
  g_kw_dtype = Py_BuildValue("(s)", "dtype");
  if (!g_kw_dtype) goto fail;
  g_str_dlpack = PyUnicode_InternFromString("__dlpack__");
  g_str_array_interface = PyUnicode_InternFromString("__array_interface__");
  g_str_array = PyUnicode_InternFromString("__array__");
  g_str_dtype = PyUnicode_InternFromString("dtype");
  g_error = new_exc(m, "xir.Error", NULL,
                    "An error reported by libxir; .status names it, .file/.line/.col locate it "
                    "in XIR text (0 when not applicable).");
  if (!g_error) goto fail;
  PyObject *b1 = PyTuple_Pack(2, g_error, PyExc_ValueError);
  PyObject *b2 = PyTuple_Pack(2, g_error, PyExc_LookupError);
  g_parse_error = b1 ? new_exc(m, "xir.ParseError", b1, "Malformed or ill-typed XIR text "
                                                        "(.line and .col say where).") : NULL;
  g_arg_error = b1 ? new_exc(m, "xir.ArgumentError", b1, "A bad argument: a shape, a dtype, a "
                                                         "dim, an argument count.") : NULL;
  g_lookup_error = b2 ? new_exc(m, "xir.NotFoundError", b2, "An unknown kernel, dim or "
                                                            "parameter.") : NULL;
  Py_XDECREF(b1);
  Py_XDECREF(b2);
  if (!g_parse_error || !g_arg_error || !g_lookup_error) goto fail;
  if (PyModule_AddObjectRef(m, "Session", (PyObject *)&SessionType) < 0 ||
      PyModule_AddObjectRef(m, "Program", (PyObject *)&ProgramType) < 0 ||
      PyModule_AddObjectRef(m, "Plan", (PyObject *)&PlanType) < 0)
    goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
