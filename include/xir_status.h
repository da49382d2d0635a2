/* xir_status.h — status codes and diagnostics shared by every xir module.
 *
 * Every fallible xir function returns an xir_status. When the caller passes an xir_diag, the
 * function also fills it with a readable message and, for text input, the file, line and column
 * of the problem. Library code never exits or aborts on bad input; it returns one of these.
 *
 * NULL arguments: a NULL object, input or out-pointer that a call needs gives XIR_ERR_INVALID_ARG
 * (an out-pointer that is not NULL is cleared first); the diag itself may always be NULL. Getters
 * given a NULL object return a neutral value: 0 for counts and sizes, -1 for indices, NULL for
 * names and objects ("" for xir_compiler_cpu/_features); void functions given NULL do nothing. */
#ifndef XIR_STATUS_H
#define XIR_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xir_status {
  XIR_OK = 0,
  XIR_ERR_NOMEM,        /* an allocation failed */
  XIR_ERR_INVALID_ARG,  /* an argument is out of its documented range */
  XIR_ERR_PARSE,        /* malformed XIR text */
  XIR_ERR_VERIFY,       /* a well-formed program breaks a typing or domain rule */
  XIR_ERR_IO,           /* a file could not be read or written */
  XIR_ERR_FORMAT,       /* a file has the wrong format or shape (e.g. a .npy file) */
  XIR_ERR_NOT_FOUND,    /* an unknown kernel, dim, parameter or candidate */
  XIR_ERR_UNSUPPORTED,  /* legal input this build or CPU cannot handle */
  XIR_ERR_LLVM,         /* LLVM reported a failure */
  XIR_ERR_RUNTIME,      /* the runtime or a launch failed */
  XIR_ERR_BUDGET,       /* the search has more candidates than its budget */
  XIR_ERR_COST,         /* a cost policy produced a non-finite or negative value */
  XIR_ERR_BUSY          /* the object is in use by another thread */
} xir_status;

/* Where a diagnostic points. line/col are 1-based; 0 means "no position". */
typedef struct xir_diag {
  xir_status status;
  char file[256];
  int line;
  int col;
  char msg[1024];
} xir_diag;

/* A stable lowercase name for a status ("ok", "parse error", ...). Never NULL. */
const char *xir_status_name(xir_status s);

/* Clears a diagnostic (status XIR_OK, empty message). d may be NULL. */
void xir_diag_clear(xir_diag *d);

/* Formats "file:line:col: error: msg" (or just "error: msg" without a position) into buf.
 * Returns buf. */
char *xir_diag_format(const xir_diag *d, char *buf, size_t cap);

/* The allocator every xir allocation goes through. The defaults are malloc/realloc/free.
 * Tests replace it to inject failures. Not thread-safe: set it before any other xir call. */
typedef struct xir_allocator {
  void *(*alloc)(void *ud, size_t size);
  void *(*realloc)(void *ud, void *ptr, size_t size);
  void (*free)(void *ud, void *ptr);
  void *ud;
} xir_allocator;

/* Installs a (copied) allocator; NULL, or an allocator with a NULL hook, restores the default. */
void xir_set_allocator(const xir_allocator *a);

#ifdef __cplusplus
}
#endif
#endif
