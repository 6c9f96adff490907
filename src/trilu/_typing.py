"""The types in the public functions' signatures, after numpy's own stubs for
triu, tril, tri and the index family (``numpy/lib/_twodim_base_impl.pyi``).

For type checkers only: the modules that use these import them under
``TYPE_CHECKING``, and their annotations are strings that are never
evaluated, so ``import trilu`` never loads this module (``help()`` shows the
names as written).
"""

from typing import Any, Literal, Protocol, TypeAlias, TypeVar

import numpy as np
from numpy._typing import _SupportsArrayFunc

# another library's array, which numpy's triu and tril hand to its own
SupportsArrayFunc: TypeAlias = _SupportsArrayFunc

ArrayT = TypeVar("ArrayT", bound=np.ndarray[Any, Any])
ScalarT = TypeVar("ScalarT", bound=np.generic)

Order: TypeAlias = Literal["K", "A", "C", "F"] | None
Mirror: TypeAlias = bool | np.bool_ | Literal["conj"]  # unpack's mirror=
Array2D: TypeAlias = np.ndarray[tuple[int, int], np.dtype[ScalarT]]
# numpy's _Indices2D: two 1-D intp arrays
Indices: TypeAlias = tuple[
    np.ndarray[tuple[int], np.dtype[np.intp]], np.ndarray[tuple[int], np.dtype[np.intp]]
]


class HasShapeAndNDim(Protocol):
    """What the ``_from`` functions read of their array (numpy's own type)."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def ndim(self) -> int: ...


# Other libraries' arrays come back as their own kind: for each, a protocol
# its arrays meet and numpy's do not (written here, so that checking a user's
# code needs neither that library nor its types) and, in each function that
# takes them, a first overload from it to itself.


class DaskArray(Protocol):
    """A dask array, ``dask.array.Array`` or the collection of dask's array
    expressions: a dask collection with chunks."""

    def __dask_graph__(self) -> object: ...
    @property
    def chunks(self) -> object: ...


DaskArrayT = TypeVar("DaskArrayT", bound=DaskArray)


class Tensor(Protocol):
    """A PyTorch tensor (``torch.Tensor``)."""

    def data_ptr(self) -> int: ...


class JaxArray(Protocol):
    """A JAX array (``jax.Array``)."""

    def unsafe_buffer_pointer(self) -> int: ...


# PyTorch's and JAX's arrays, each given back as itself (out= too: JAX's are
# refused there when the call runs, as immutable)
Foreign: TypeAlias = Tensor | JaxArray
ForeignT = TypeVar("ForeignT", bound=Foreign)


class SupportsDLPack(Protocol):
    """Another library's array that speaks DLPack (a PyTorch tensor, a JAX
    array): trilu's functions give an array of its own library."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> object: ...


# what a public function gives for any input: numpy's array or the input's kind
AnyArray: TypeAlias = (
    np.ndarray[Any, Any] | DaskArray | SupportsArrayFunc | SupportsDLPack | Foreign
)
