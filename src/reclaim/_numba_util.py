"""Helpers shared by the numba kernels: arrays passed down without reference counting."""

from __future__ import annotations

import numba
from numba.core import types
from numba.extending import intrinsic


@intrinsic
def _pointer(typingctx, address, like):
    """The integer ``address`` as a pointer to the dtype of the array ``like`` (for :func:`borrow`)."""
    sig = types.CPointer(like.dtype)(types.uintp, like)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

    return sig, codegen


@numba.njit(cache=True, inline="always")
def borrow(a):
    """A view of the contiguous array ``a`` that does not own its memory.

    Why: passing an owned array to a function that is not inlined costs an atomic increment and
    decrement of its reference count; in kernels that call small functions millions of times with
    a dozen arrays each, those atomics took 60 % of the time (the ARIMA objective,
    ``_arima_kernels``; the CORP HMM, ``_corp_kernels``). A borrowed view skips them. The caller
    keeps the owner alive for as long as the view is used: numba frees an array after its last
    use, so the owner must be used after the views' last use."""
    return numba.carray(_pointer(a.ctypes.data, a), a.shape)
