"""Where each heavy object was allocated: opt-in recording inside a checked block.

``check_leaks(record_allocations=True)`` starts an :class:`AllocationRecorder` for
the block only, and the analysis asks it for the ``file:line`` of the user's
frame that created each heavy object it reports:

- NumPy reports its data buffers to ``tracemalloc`` in its own domain, keyed by
  the data pointer. ``tracemalloc.Snapshot`` traces carry no address, so we ask
  the interpreter for the traceback of that (domain, address) directly.
  Tracing is started only when it is not already on, and stopped after the
  analysis only when we started it.
- torch CPU tensors: a ``TorchDispatchMode`` active only inside the block notes,
  for every op whose output has a new storage, the first frame outside torch
  and whyalive, keyed by the storage's data pointer (views share their base's
  storage and keep its site).
- CUDA tensors, when the process already uses CUDA (we never initialise it):
  the caching allocator's own history, ``torch.cuda.memory._record_memory_history``
  in its lightest mode (tracebacks of live blocks only, Python frames only), is
  on for the block. Right after the collection each leaked tensor's storage
  pointer is looked up (``_allocation_traceback``, or a ``_snapshot()`` on
  releases without it) and recording is switched off again, unless the user
  had it on already.

Nothing here runs, or is imported, when recording is off.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import importlib
import os
import sys
import tracemalloc
from collections.abc import Iterable, Iterator
from types import FrameType
from typing import Any

from whyalive.analysis.node_names import source_place
from whyalive.guarded import is_one_of

# numpy/_core/include/numpy/ndarraytypes.h: NPY_TRACE_DOMAIN.
NUMPY_TRACE_DOMAIN = 389047
# Enough for NumPy's Python wrappers plus a helper or two; each frame costs on every allocation.
FRAMES = 8

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _library_dir(module_name: str) -> str | None:
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if isinstance(path, str) else None


@functools.lru_cache(maxsize=4096)
def _is_internal(filename: str, skip: tuple[str, ...]) -> bool:
    path = os.path.abspath(filename)
    return path.startswith(skip) or filename.startswith("<frozen ")


def _user_site(frames: Iterable[tuple[str, int]], skip: tuple[str, ...]) -> str | None:
    """``file:line`` of the first (innermost) frame outside torch, NumPy and whyalive."""
    for filename, line in frames:
        if not _is_internal(filename, skip):
            return source_place(filename, line)
    return None


def _live_frames(frame: FrameType | None) -> Iterator[tuple[str, int]]:
    while frame is not None:
        yield frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back


def _traceback_lookup() -> Any:
    """The interpreter's (domain, address) -> traceback function, or None."""
    try:
        lookup = ctypes.pythonapi._PyTraceMalloc_GetTraceback
    except AttributeError:  # not exported by this build
        return None
    lookup.restype = ctypes.py_object
    lookup.argtypes = [ctypes.c_uint, ctypes.c_size_t]
    return lookup


class _TorchSites:
    """A dispatch mode that records the user's frame for each newly allocated storage."""

    def __init__(self, torch: Any, sites: dict[int, str], skip: tuple[str, ...]) -> None:
        dispatch: Any = importlib.import_module("torch.utils._python_dispatch")
        dispatch_mode: Any = dispatch.TorchDispatchMode
        tensor_type = torch.Tensor
        tree_leaves = torch.utils._pytree.tree_leaves

        def data_ptr(value: object) -> int | None:
            if not isinstance(value, tensor_type) or value.device.type != "cpu":
                return None
            try:
                return int(value.untyped_storage().data_ptr())
            except Exception:  # storage-less layouts (sparse, nested)
                return None

        def user_site() -> str | None:
            return _user_site(_live_frames(sys._getframe(2)), skip)

        class RecordingMode(dispatch_mode):  # type: ignore[misc]
            def __torch_dispatch__(
                self,
                func: Any,
                types: Any,
                args: tuple[object, ...] = (),
                kwargs: dict[str, object] | None = None,
            ) -> object:
                out = func(*args, **(kwargs or {}))
                inputs = {data_ptr(a) for a in tree_leaves((args, kwargs))}
                site: str | None = None
                for value in tree_leaves(out):
                    pointer = data_ptr(value)
                    # A storage no input shares is new memory: a view or an
                    # in-place op keeps the site of the storage it reuses.
                    if pointer and pointer not in inputs:
                        site = site or user_site()
                        if site is not None:
                            sites[pointer] = site
                return out

        self.mode = RecordingMode()


def _python_frames(frames: Iterable[dict[str, Any]]) -> Iterator[tuple[str, int]]:
    """(filename, line) of the allocator's Python frames, in its order (innermost first)."""
    for frame in frames:
        filename = str(frame.get("filename", ""))
        # With the user's own stacks="all" the allocator mixes in C++ frames: never a site.
        if filename.endswith(".py") or filename in ("<stdin>", "<string>"):
            yield filename, int(frame.get("line", 0))


class _CudaHistory:
    """Tracebacks of live CUDA allocations, from torch's caching allocator."""

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        self._started = False

    @staticmethod
    def in_use(torch: Any) -> bool:
        """Whether this process has initialised CUDA (asking never initialises it)."""
        try:
            return bool(torch.cuda.is_initialized())
        except Exception:
            return False

    def start(self) -> bool:
        """Make sure the allocator records; False when this torch cannot."""
        try:
            if self._torch._C._cuda_isHistoryEnabled():
                return True  # the user's recording: use it, leave it on
            self._torch.cuda.memory._record_memory_history(
                enabled="state", context="state", stacks="python"
            )
        except Exception:
            return False
        self._started = True
        return True

    def stop(self) -> None:
        """Switch recording off again if we switched it on."""
        if self._started:
            self._started = False
            with contextlib.suppress(Exception):  # nothing else to restore
                self._torch.cuda.memory._record_memory_history(enabled=None)

    def frames_by_pointer(self, pointers: set[int]) -> dict[int, list[dict[str, Any]]]:
        """Allocation frames (innermost first) of each live block in ``pointers``."""
        memory = self._torch.cuda.memory
        lookup = getattr(memory, "_allocation_traceback", None)
        if lookup is not None:
            found = {pointer: lookup(pointer) for pointer in pointers}
            return {pointer: frames for pointer, frames in found.items() if frames}
        # One snapshot covers every device; CUDA pointers are unique in a process.
        by_pointer: dict[int, list[dict[str, Any]]] = {}
        for segment in memory._snapshot().get("segments", ()):
            for block in segment.get("blocks", ()):
                if block.get("address") in pointers and block.get("frames"):
                    by_pointer[block["address"]] = block["frames"]
        return by_pointer


class AllocationRecorder:
    """Records allocation sites between :meth:`start` and :meth:`stop`; see the module doc."""

    def __init__(self) -> None:
        self._started_tracing = False
        self._tracing = False
        self._torch_sites: dict[int, str] = {}
        self._numpy_sites: dict[int, str | None] = {}
        # Keyed by (device index, storage pointer): each device has its own addresses.
        self._cuda_sites: dict[tuple[int, int], str] = {}
        self._cuda: _CudaHistory | None = None
        self._torch_mode: Any = None
        self._lookup: Any = None
        self._skip: tuple[str, ...] = (_PACKAGE_DIR,)

    def start(self) -> None:
        """Begin recording (only inside the checked block)."""
        skip = [_PACKAGE_DIR]
        for name in ("numpy", "torch"):
            found = _library_dir(name)
            if found is not None:
                skip.append(found)
        self._skip = tuple(skip)
        torch = sys.modules.get("torch")
        if torch is not None:
            self._start_torch(torch)
            if _CudaHistory.in_use(torch):
                cuda = _CudaHistory(torch)
                self._cuda = cuda if cuda.start() else None
        # Last, so that nothing above (torch's lazy imports) is traced.
        if "numpy" in sys.modules:
            self._lookup = _traceback_lookup()
            if self._lookup is not None:
                if not tracemalloc.is_tracing():
                    tracemalloc.start(FRAMES)
                    self._started_tracing = True
                self._tracing = True

    def _start_torch(self, torch: Any) -> None:
        try:
            mode = _TorchSites(torch, self._torch_sites, self._skip).mode
            mode.__enter__()
        except Exception:  # a torch without dispatch modes: tensors go unrecorded
            return
        self._torch_mode = mode
        try:
            # The first op under a dispatch mode imports torch._dynamo (seconds, once per
            # process): pay it here, before tracing starts, not inside the user's block.
            torch.empty(0)
        except Exception:
            self.stop()
        self._torch_sites.clear()

    def stop(self) -> None:
        """Stop recording new sites; keep what was recorded for :meth:`site_of`."""
        mode, self._torch_mode = self._torch_mode, None
        if mode is not None:
            mode.__exit__(None, None, None)

    def resolve(self, garbage: list[object]) -> None:
        """Look up the NumPy arrays that ``garbage`` holds, then stop tracing if we started it.

        Done once, right after the collection: the analysis that follows would
        otherwise run traced (tens of times slower) just to keep the traces.
        """
        numpy = sys.modules.get("numpy")
        ndarray = getattr(numpy, "ndarray", None)
        try:
            if self._tracing and isinstance(ndarray, type):
                self._resolve_arrays(garbage, ndarray)
            if self._cuda is not None:
                self._resolve_cuda(garbage, self._cuda)
        finally:
            self._stop_tracing()
            self._stop_cuda()

    def _resolve_cuda(self, garbage: list[object], cuda: _CudaHistory) -> None:
        torch: Any = sys.modules["torch"]
        tensor_base = torch._C.TensorBase
        keys = {
            key
            for obj in garbage
            if issubclass(type(obj), tensor_base) and (key := _cuda_key(torch, obj)) is not None
        }
        try:
            frames_of = cuda.frames_by_pointer({pointer for _, pointer in keys})
        except Exception:  # a torch whose allocator history differs: sites stay unrecorded
            return
        for key in keys:
            site = _user_site(_python_frames(frames_of.get(key[1], ())), self._skip)
            if site is not None:
                self._cuda_sites[key] = site

    def _stop_cuda(self) -> None:
        cuda, self._cuda = self._cuda, None
        if cuda is not None:
            cuda.stop()

    def _resolve_arrays(self, garbage: list[object], ndarray: type) -> None:
        seen: set[int] = set()
        # Arrays are untracked: reach them through the garbage and the untracked
        # tuples and dicts that hold them (as the graph does).
        pending = list(gc.get_referents(*garbage))
        while pending:
            obj = pending.pop()
            cls = type(obj)
            if is_one_of(cls, (tuple, dict)) and not gc.is_tracked(obj) and id(obj) not in seen:
                seen.add(id(obj))
                pending.extend(gc.get_referents(obj))
            elif issubclass(cls, ndarray):
                # Keyed by the owning array's id: the garbage keeps it alive until
                # the analysis is over, and an id is far cheaper than the pointer.
                root = _owner(obj, ndarray)
                if id(root) not in self._numpy_sites:
                    self._numpy_sites[id(root)] = self._numpy_lookup(_data_pointer(root, ndarray))

    def _numpy_lookup(self, pointer: int) -> str | None:
        frames = self._lookup(NUMPY_TRACE_DOMAIN, pointer) if self._lookup else None
        return _user_site(frames or (), self._skip)

    def _stop_tracing(self) -> None:
        self._tracing = False
        if self._started_tracing:
            self._started_tracing = False
            tracemalloc.stop()

    def close(self) -> None:
        """Forget everything and restore tracemalloc exactly as it was."""
        self.stop()
        self._stop_tracing()
        self._stop_cuda()
        self._torch_sites.clear()
        self._numpy_sites.clear()
        self._cuda_sites.clear()

    def site_of(self, obj: object) -> str | None:
        """``file:line`` of the user's frame that allocated ``obj``'s memory, else None."""
        try:
            return self._site_of(obj)
        except Exception:  # a half-dead or hostile object simply has no recorded site
            return None

    def _site_of(self, obj: object) -> str | None:
        numpy = sys.modules.get("numpy")
        ndarray = getattr(numpy, "ndarray", None)
        if isinstance(ndarray, type) and issubclass(type(obj), ndarray):
            return self._numpy_site(obj, ndarray)
        torch = sys.modules.get("torch")
        if torch is not None and issubclass(type(obj), torch._C.TensorBase):
            cuda_key = _cuda_key(torch, obj)
            if cuda_key is not None:
                return self._cuda_sites.get(cuda_key)
            with torch._C.DisableTorchFunctionSubclass():
                storage = torch._C.TensorBase.untyped_storage(obj)
                return self._torch_sites.get(int(storage.data_ptr()))
        return None

    def _numpy_site(self, obj: object, ndarray: Any) -> str | None:
        root = _owner(obj, ndarray)
        if id(root) in self._numpy_sites:
            return self._numpy_sites[id(root)]
        return self._numpy_lookup(_data_pointer(root, ndarray)) if self._tracing else None


def _cuda_key(torch: Any, obj: object) -> tuple[int, int] | None:
    """(device index, storage pointer) of a CUDA tensor, else None; never raises."""
    try:
        if not issubclass(type(obj), torch._C.TensorBase):
            return None
        with torch._C.DisableTorchFunctionSubclass():
            device = torch._C.TensorBase.device.__get__(obj)
            if device.type != "cuda":
                return None
            storage = torch._C.TensorBase.untyped_storage(obj)
            return (device.index or 0, int(storage.data_ptr()))
    except Exception:  # storage-less layouts, half-dead or hostile tensors
        return None


def _owner(obj: object, ndarray: Any) -> object:
    """The array that owns ``obj``'s memory (a view's base, followed to the end)."""
    root = obj
    base = ndarray.base.__get__(root)
    while base is not None and issubclass(type(base), ndarray):
        root = base
        base = ndarray.base.__get__(root)
    return root


def _data_pointer(root: object, ndarray: Any) -> int:
    """The address NumPy reported to tracemalloc for ``root``'s buffer."""
    return int(ndarray.__array_interface__.__get__(root)["data"][0])
