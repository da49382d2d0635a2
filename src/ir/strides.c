/* strides.c — the element layout of a buffer argument (xir_arg.strides / row_stride), shared by
 * the interpreter and the native argument packing so that both address the same elements. */
#include "ir/program.h"

xir_status xir_arg_strides(const xir_program *p, const xir_shape *shape, int param,
                           const xir_arg *a, int64_t strides[XIR_MAX_RANK], xir_diag *d) {
  if (!p || !shape || !a || !strides || param < 0 || param >= p->nparams ||
      p->params[param].kind != XIR_PARAM_BUFFER)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_arg_strides: bad argument");
  const xir_param *q = &p->params[param];
  if (a->strides && a->row_stride)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "buffer '%s': give strides or row_stride, not both", q->name);
  if (a->row_stride && q->rank < 2)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "buffer '%s' has rank %d: a row stride needs rank 2 or more", q->name, q->rank);
  int64_t st = 1;
  for (int k = q->rank - 1; k >= 0; k--) {
    if (a->strides) {
      strides[k] = a->strides[k];
      if (strides[k] < 0)
        return xir__err(d, XIR_ERR_INVALID_ARG, "buffer '%s': stride %d is negative (%lld)",
                        q->name, k, (long long)strides[k]);
    } else if (a->row_stride && k == q->rank - 2) {
      int64_t row = shape->dims[q->dims[q->rank - 1]];
      if (a->row_stride < row)
        return xir__err(d, XIR_ERR_INVALID_ARG,
                        "buffer '%s': row stride %lld is below the row length %s = %lld",
                        q->name, (long long)a->row_stride, p->dims[q->dims[q->rank - 1]],
                        (long long)row);
      strides[k] = a->row_stride;
    } else {
      strides[k] = st;
    }
    if (strides[k] != st && shape->dims[q->dims[k]] > 1 &&
        (q->elem == XIR_BF16 || q->elem == XIR_F16))
      return xir__err(d, XIR_ERR_UNSUPPORTED,
                      "buffer '%s' is %s: strided 16-bit buffers are not supported (stride %d is "
                      "%lld, contiguous is %lld); pass it contiguous", q->name,
                      xir_elem_name(q->elem), k, (long long)strides[k], (long long)st);
    st = strides[k] * shape->dims[q->dims[k]];
  }
  return XIR_OK;
}
