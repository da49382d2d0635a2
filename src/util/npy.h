/* npy.h — NumPy .npy files of little-endian float32 ('<f4'), int64 ('<i8', for i64 input
 * buffers such as positions), float16 ('<f2') and bfloat16 ('bfloat16', ml_dtypes' name; see
 * xir__npy_write_half), C order.
 *
 * Format (numpy.lib.format, NEP 1): the magic "\x93NUMPY", a major and a minor version byte, the
 * header length (uint16 LE for version 1.0, uint32 LE for 2.0 and 3.0), then the header: an ASCII
 * (3.0: UTF-8) Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (R, C), }
 * padded with spaces and ended by '\n' so that the data starts at a multiple of 64 bytes; then
 * the raw element data.
 *
 * Writing always produces version 1.0. Reading accepts 1.0, 2.0 and 3.0. The f32 functions accept
 * only '<f4' and the i64 functions only '<i8', in C order; anything else is rejected with
 * XIR_ERR_FORMAT and a message naming the file and the problem. Every function here is thread-safe (no global state besides a temp-name counter). */
#ifndef XIR_NPY_H
#define XIR_NPY_H

#include <stddef.h>
#include <stdint.h>
#include "xir_status.h"

/* The most dims a shape may have in any function here. */
#define XIR_NPY_MAX_NDIM 32
/* A buffer of this many bytes always holds the preamble xir__npy_build_header produces. */
#define XIR_NPY_HEADER_CAP 1024

/* Number of elements of a shape (1 for ndim == 0). Returns 0 and sets *overflow (if not NULL) to 1
 * when the product does not fit a size_t; otherwise *overflow is set to 0. */
size_t xir__npy_numel(const size_t *shape, int ndim, int *overflow);

/* Formats a shape the way Python prints a tuple: "(3, 7)", "(5,)", "()". Always NUL-terminates
 * (when cap > 0); truncates with "..." if buf is too small. Returns buf. */
char *xir__npy_format_shape(char *buf, size_t cap, const size_t *shape, int ndim);

/* Builds the complete version-1.0 preamble (magic, version, header length, header dict, padding,
 * '\n') for a '<f4' C-order array of the given shape into buf. The length, a multiple of 64, is
 * stored in *len. The dict is exactly "{'descr': '<f4', 'fortran_order': False, 'shape': S, }"
 * with S as xir__npy_format_shape prints it, followed by the fewest spaces (0..63) that align the
 * data. XIR_ERR_INVALID_ARG when ndim is out of [0, XIR_NPY_MAX_NDIM] or cap is too small
 * (XIR_NPY_HEADER_CAP is always enough). */
xir_status xir__npy_build_header(char *buf, size_t cap, size_t *len, const size_t *shape, int ndim,
                                 xir_diag *d);

/* Writes data (numel(shape) floats, C order) to path as a version-1.0 '<f4' .npy file.
 * Atomic: the bytes go to a fresh temporary file in the same folder ("<path>.tmp.<pid>.<n>"),
 * which is synced and then renamed over path; on any failure the temporary file is removed and
 * path is left untouched. The new file's mode is 0666 minus the umask.
 * Errors: XIR_ERR_INVALID_ARG (NULL path, NULL data with numel > 0, bad ndim, size overflow);
 * XIR_ERR_IO (folder missing or unwritable, disk full, rename failed), the message naming the path
 * and the strerror text. */
xir_status xir__npy_write_f32(const char *path, const float *data, const size_t *shape, int ndim,
                              xir_diag *d);

/* Reads a '<f4' C-order .npy file. On success *data is a new array of numel(shape) floats
 * (never NULL, even for 0 elements; release it with xir__free), shape[0..*ndim-1] holds the dims
 * and *ndim the rank (0 for a scalar). shape must have room for max_ndim entries
 * (1 <= max_ndim <= XIR_NPY_MAX_NDIM; 0 is allowed and then only 0-D files are accepted).
 * On failure *data is NULL, *ndim is 0 and:
 *   XIR_ERR_INVALID_ARG  NULL pointers or max_ndim out of range;
 *   XIR_ERR_IO           the file cannot be opened or read (message: path and strerror);
 *   XIR_ERR_FORMAT       "<path>: <problem>" for: bad magic, unsupported version, truncated header,
 *                        malformed header dict (missing/unknown/duplicate key, bad literal),
 *                        dtype other than '<f4' (the message quotes the dtype found, e.g. '<f8'),
 *                        fortran_order True, too many dims (more than max_ndim), truncated data,
 *                        data size mismatch (trailing bytes after the data);
 *   XIR_ERR_NOMEM        the data array could not be allocated. */
xir_status xir__npy_read_f32(const char *path, float **data, size_t *shape, int *ndim,
                             int max_ndim, xir_diag *d);

/* Same as xir__npy_read_f32, from the len bytes of a whole .npy file held in memory. name is used
 * in messages (NULL means "<memory>"). Suitable for fuzzing. */
xir_status xir__npy_decode_f32(const void *bytes, size_t len, const char *name, float **data,
                               size_t *shape, int *ndim, int max_ndim, xir_diag *d);

/* The same for int64 arrays: '<i8' files (version 1.0 when writing; byte-swapped on a big-endian
 * host). Reading a file of another dtype is XIR_ERR_FORMAT "unsupported dtype '<f4' (only
 * little-endian int64 '<i8' is supported)"; every other error is as for the f32 functions. */
xir_status xir__npy_write_i64(const char *path, const int64_t *data, const size_t *shape,
                              int ndim, xir_diag *d);
xir_status xir__npy_read_i64(const char *path, int64_t **data, size_t *shape, int *ndim,
                             int max_ndim, xir_diag *d);
xir_status xir__npy_decode_i64(const void *bytes, size_t len, const char *name, int64_t **data,
                               size_t *shape, int *ndim, int max_ndim, xir_diag *d);

/* The same for 16-bit floats, as raw bit patterns: bf16 = 0 is float16 ('<f2'); bf16 = 1 is
 * bfloat16, written with the descr 'bfloat16' — the name ml_dtypes registers with NumPy, so that
 * `import ml_dtypes; np.load(path)` gives a bfloat16 array — and read from 'bfloat16' or '<V2'
 * (what np.save writes for an ml_dtypes.bfloat16 array: np.load gives void elements there, and
 * `.view(ml_dtypes.bfloat16)` the values). Errors as for the f32 functions. */
xir_status xir__npy_write_half(const char *path, const uint16_t *data, const size_t *shape,
                               int ndim, int bf16, xir_diag *d);
xir_status xir__npy_read_half(const char *path, uint16_t **data, size_t *shape, int *ndim,
                              int max_ndim, int bf16, xir_diag *d);
xir_status xir__npy_decode_half(const void *bytes, size_t len, const char *name, uint16_t **data,
                                size_t *shape, int *ndim, int max_ndim, int bf16, xir_diag *d);

/* Checks a shape read from a file against the shape a kernel expects. XIR_OK when the ranks and
 * every dim agree; otherwise XIR_ERR_FORMAT with the message
 * "x.npy has shape (3, 7) but the kernel expects (129, 768)" (name is the file name to quote;
 * NULL means "the array"). */
xir_status xir__npy_check_shape(const char *name, const size_t *shape, int ndim,
                                const size_t *expect, int expect_ndim, xir_diag *d);

#endif
