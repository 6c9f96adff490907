"""trilu's thread pool as a threadpoolctl library controller.

threadpoolctl finds the native libraries loaded in the process and matches each
file name against the ``filename_prefixes`` of its controllers; a library with
its own pool adds a controller with ``threadpoolctl.register`` (its documented
way, threadpoolctl 3.5+). trilu's pool lives in its extension module, whose
file name starts with ``_kernel``, and which exports ``trilu_get_num_threads``
and ``trilu_set_num_threads`` (``_threads.h``) as OpenBLAS exports
``openblas_get_num_threads``: threadpoolctl drops a matching file without
these ``check_symbols`` (another package's ``_kernel``), and the controller
calls them in the library it was made for.

threadpoolctl is optional and loads ctypes and more on import, so ``import
trilu`` never imports it. Instead:

- if threadpoolctl is already imported, the controller is registered at once;
- otherwise a finder is put at the front of ``sys.meta_path`` that does
  nothing for any other import and, when threadpoolctl is first imported,
  runs its module as usual and then registers the controller, and leaves.

A count threadpoolctl sets is one chosen for trilu (``_threads.chosen``: dask
blocks use it), except that a limit's end, which sets back the count read at
its start, leaves it chosen only if it was.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import Any

_NAME = "threadpoolctl"
_registered = False


def _register(threadpoolctl: Any) -> None:
    """Define trilu's controller on threadpoolctl's base class and register it."""
    global _registered  # noqa: PLW0603  (once per process)
    base = getattr(threadpoolctl, "LibController", None)
    register = getattr(threadpoolctl, "register", None)
    if _registered or base is None or register is None:  # threadpoolctl < 3.5
        return

    from . import _kernel, _threads  # noqa: PLC0415
    from ._version import __version__  # noqa: PLC0415

    kernel = os.path.realpath(_kernel.__file__)

    class TriluController(base):  # type: ignore[misc,valid-type]
        """trilu's thread pool: ``trilu.get_num_threads``/``set_num_threads``."""

        user_api = "trilu"
        internal_api = "trilu"
        filename_prefixes = ("_kernel",)
        # Not raising for a foreign _kernel: threadpoolctl before 3.8 lets a
        # controller's exception out of threadpool_info().
        check_symbols = ("trilu_get_num_threads", "trilu_set_num_threads")

        def get_version(self) -> str:
            return __version__

        def _ours(self) -> bool:
            """This controller is trilu's own kernel, not a loaded copy's."""
            if "_is_ours" not in self.__dict__:
                self._is_ours = os.path.realpath(self.filepath) == kernel
            return bool(self._is_ours)

        def get_num_threads(self) -> int:
            count = int(self.dynlib.trilu_get_num_threads())
            if self._ours():
                # the count read, and whether it was chosen (_threads.chosen):
                # a limit's end, which sets the count read at its start back,
                # leaves it chosen only if it was
                self._read = count, _threads.chosen
            return count

        def set_num_threads(self, num_threads: int) -> None:
            # the C function clamps to 1..64; a C int must hold the value
            count = max(1, min(int(num_threads), 64))
            self.dynlib.trilu_set_num_threads(count)
            if self._ours():
                read = self.__dict__.get("_read")
                _threads.chosen = read[1] if read and read[0] == count else True

    register(TriluController)
    _registered = True


class _ImportHook:
    """A ``sys.meta_path`` finder that registers the controller right after
    threadpoolctl's module has run, then removes itself."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != _NAME:
            return None
        _unhook()
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            spec = None if find_spec is None else find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_and_register(module: Any) -> None:
            # once: a loader may serve other modules too (a zipimporter)
            vars(loader).pop("exec_module", None)
            exec_module(module)
            try:
                _register(module)
            except Exception as exc:  # noqa: BLE001  (never break the import)
                warnings.warn(
                    f"trilu's pool could not be registered with threadpoolctl: {exc!r}",
                    RuntimeWarning,
                    stacklevel=2,
                )

        try:
            loader.exec_module = exec_and_register
        except AttributeError:  # a loader without instance attributes
            return spec
        return spec


_hook = _ImportHook()


def _unhook() -> None:
    with contextlib.suppress(ValueError):  # already removed (by another thread)
        sys.meta_path.remove(_hook)


def install() -> None:
    """Register now if threadpoolctl is imported, else when it is."""
    module = sys.modules.get(_NAME)
    if module is not None:
        _register(module)
    elif _hook not in sys.meta_path:
        sys.meta_path.insert(0, _hook)
