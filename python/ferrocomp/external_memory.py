"""``ExternalMemory``, as nvCOMP has it: what an allocator returns when freeing its memory needs the
stream it was allocated on, so the stream outlives the memory."""


class ExternalMemory:
    """Wraps a memory object (with an integer ``ptr``) and the ``CudaStream`` it was allocated on."""

    def __init__(self, mem_handle, stream_handle=None):
        self._mem_handle = mem_handle
        self._stream_handle = stream_handle

    @property
    def ptr(self):
        """The address of the memory."""
        return self._mem_handle.ptr

    def __del__(self):
        # The memory goes first, while its stream is still alive.
        del self._mem_handle
        del self._stream_handle
