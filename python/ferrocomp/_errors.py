"""The exceptions ferrocomp raises for data it cannot encode or decode."""


class ChunkError(ValueError, RuntimeError):
    """A chunk (or a whole stream) could not be processed.

    ``chunk`` is the index of the first failing chunk in the batch (``None`` when the stream as a
    whole is bad, e.g. its header), ``status`` a :class:`ferrocomp.Status` saying why (or ``None``).
    A ``ValueError`` (bad input) and a ``RuntimeError`` (as nvCOMP raises), so either catches it.
    """

    def __init__(self, message, chunk=None, status=None):
        super().__init__(message)
        self.chunk = chunk
        self.status = status


class DecodeError(ChunkError):
    """A compressed chunk is corrupt, truncated, lies about its size, or does not fit its output."""


class EncodeError(ChunkError):
    """A chunk could not be compressed (e.g. its output is too small)."""
