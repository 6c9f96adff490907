"""threadpoolctl sees trilu's thread pool and caps it.

trilu never imports it (tests/test_imports.py).

The controller is registered with threadpoolctl's documented ``register``:
right away when threadpoolctl is already imported when trilu is, otherwise the
moment threadpoolctl is first imported. Both orders run in fresh interpreters.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
from _cases import run_python

import trilu

threadpoolctl = pytest.importorskip("threadpoolctl")


def _trilu_entries() -> list[dict]:
    return [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "trilu"]


@pytest.fixture
def restore_threads():
    before = trilu.get_num_threads()
    yield
    trilu.set_num_threads(before)


def test_threadpool_info_lists_trilu() -> None:
    """One entry, with the four fields and the kernel's own file."""
    (entry,) = _trilu_entries()
    assert entry["internal_api"] == "trilu"
    assert entry["version"] == trilu.__version__
    assert entry["num_threads"] == trilu.get_num_threads()
    assert entry["prefix"] == "_kernel"
    assert entry["filepath"] == os.path.realpath(trilu._kernel.__file__)


@pytest.mark.usefixtures("restore_threads")
def test_info_follows_set_num_threads() -> None:
    """trilu.set_num_threads and threadpool_info agree, both ways."""
    trilu.set_num_threads(3)
    assert _trilu_entries()[0]["num_threads"] == 3
    controller = threadpoolctl.ThreadpoolController().select(user_api="trilu")
    controller.lib_controllers[0].set_num_threads(5)
    assert trilu.get_num_threads() == 5
    assert _trilu_entries()[0]["num_threads"] == 5


@pytest.mark.parametrize("before", ["default", "chosen"])
def test_a_limit_is_a_chosen_count_until_it_ends(before: str) -> None:
    """A count threadpoolctl sets is chosen for trilu (dask blocks use it); at
    the limit's end the count, and whether it was chosen, are as before: also
    for a limit equal to the count, and for nested limits."""
    proc = run_python(
        f"""
        import threadpoolctl, trilu
        if {before == "chosen"}:
            trilu.set_num_threads(3)
        def state():
            return trilu.get_num_threads(), trilu._threads.chosen
        print(state())
        with threadpoolctl.threadpool_limits(limits=2):
            print(state())
            with threadpoolctl.threadpool_limits(limits=1, user_api="trilu"):
                print(state())
            print(state())
        with threadpoolctl.threadpool_limits(limits=3):
            print(state())
        print(state())
        """,
        OMP_NUM_THREADS="3",
        TRILU_NUM_THREADS=None,
    )
    assert proc.returncode == 0, proc.stderr
    chosen = before == "chosen"
    assert proc.stdout.splitlines() == [
        f"(3, {chosen})",
        "(2, True)",
        "(1, True)",
        "(2, True)",
        f"(3, {chosen})",  # a limit of the count already in force changes nothing
        f"(3, {chosen})",
    ]


@pytest.mark.usefixtures("restore_threads")
@pytest.mark.parametrize(
    "kwargs",
    [
        {"limits": 1},
        {"limits": 1, "user_api": "trilu"},
        {"limits": {"trilu": 1}},
    ],
    ids=["all", "user_api", "dict"],
)
def test_threadpool_limits_caps_and_restores(kwargs: dict) -> None:
    trilu.set_num_threads(4)
    with threadpoolctl.threadpool_limits(**kwargs):
        assert trilu.get_num_threads() == 1
        assert _trilu_entries()[0]["num_threads"] == 1
    assert trilu.get_num_threads() == 4


@pytest.mark.usefixtures("restore_threads")
def test_limits_of_another_api_leave_trilu_alone() -> None:
    trilu.set_num_threads(4)
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        assert trilu.get_num_threads() == 4
    assert trilu.get_num_threads() == 4


@pytest.mark.usefixtures("restore_threads")
def test_threadpool_limits_as_decorator_and_controller() -> None:
    trilu.set_num_threads(2)

    @threadpoolctl.threadpool_limits.wrap(limits=1, user_api="trilu")
    def inside() -> int:
        return trilu.get_num_threads()

    assert inside() == 1
    assert trilu.get_num_threads() == 2
    with threadpoolctl.ThreadpoolController().limit(limits=3, user_api="trilu"):
        assert trilu.get_num_threads() == 3
    assert trilu.get_num_threads() == 2


REPORT = """
import json, sys
{first}
entries = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "trilu"]
with threadpoolctl.threadpool_limits(limits=1):
    capped = trilu.get_num_threads()
print(json.dumps({{"entries": entries, "capped": capped,
                  "after": trilu.get_num_threads(),
                  "hooks": sum(type(f).__name__ == "_ImportHook" for f in sys.meta_path)}}))
"""


@pytest.mark.parametrize(
    "first",
    [
        "import trilu\nimport threadpoolctl",
        "import threadpoolctl\nimport trilu",
        "import trilu\nfrom threadpoolctl import threadpool_info\nimport threadpoolctl",
    ],
    ids=["trilu-first", "threadpoolctl-first", "from-import"],
)
def test_import_order(first: str) -> None:
    """Either import order registers the controller once; the hook is gone."""
    proc = run_python(REPORT.format(first=first), TRILU_NUM_THREADS="3")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert len(report["entries"]) == 1
    assert report["entries"][0]["num_threads"] == 3
    assert report["capped"] == 1
    assert report["after"] == 3
    assert report["hooks"] == 0


def test_another_kernel_is_not_taken_for_trilu(tmp_path) -> None:
    """A loaded library named _kernel* that is not trilu's (a Cython module of
    numpy's) gets no controller; making one for it raises nothing, since
    threadpoolctl before 3.8 lets that error out of threadpool_info()."""
    if sys.platform != "linux":
        pytest.skip("copies an ELF shared object")
    proc = run_python(
        f"""
        import ctypes, os, shutil, numpy.random._common as other, trilu, threadpoolctl
        copy = shutil.copy(other.__file__, {str(tmp_path)!r} + "/_kernel_other.so")
        ctypes.CDLL(copy)
        (cls,) = [c for c in threadpoolctl._ALL_CONTROLLERS if c.user_api == "trilu"]
        foreign = cls(filepath=copy, prefix="_kernel")  # unguarded before 3.8
        print(any(hasattr(foreign.dynlib, name) for name in cls.check_symbols))
        (entry,) = [i for i in threadpoolctl.threadpool_info()
                    if i["user_api"] == "trilu"]
        print(entry["filepath"] == os.path.realpath(trilu._kernel.__file__))
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]


def test_a_copy_of_the_kernel_is_a_pool_of_its_own(tmp_path) -> None:
    """A second copy of trilu's kernel loaded in the process gets a controller
    that sets that copy's count, never trilu's."""
    if sys.platform != "linux":
        pytest.skip("copies an ELF shared object")
    proc = run_python(
        f"""
        import ctypes, os, shutil, trilu, threadpoolctl
        copy = shutil.copy(trilu._kernel.__file__, {str(tmp_path)!r} + "/_kernel_copy.so")
        ctypes.CDLL(copy)
        trilu.set_num_threads(2)
        found = {{
            os.path.basename(c.filepath): c
            for c in threadpoolctl.ThreadpoolController().lib_controllers
            if c.user_api == "trilu"
        }}
        found.pop("_kernel_copy.so").set_num_threads(5)
        (ours,) = found.values()
        print(trilu.get_num_threads(), ours.get_num_threads(),
              ctypes.CDLL(copy).trilu_get_num_threads())
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2", "2", "5"]


def test_a_failing_registration_never_breaks_the_import(tmp_path) -> None:
    """A threadpoolctl whose register() raises still imports; trilu warns."""
    (tmp_path / "threadpoolctl.py").write_text(
        "class LibController:\n    pass\n\n"
        "def register(controller):\n    raise RuntimeError('boom')\n",
        encoding="utf-8",
    )
    proc = run_python(
        """
        import warnings, trilu
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import threadpoolctl
        print(threadpoolctl.__name__, [str(w.message) for w in caught])
        """,
        PYTHONPATH=os.pathsep.join(
            filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])
        ),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("threadpoolctl [")
    assert "could not be registered with threadpoolctl" in proc.stdout
    assert "boom" in proc.stdout
