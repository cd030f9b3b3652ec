"""One-time warnings, keyed so that a message is shown once per process."""

import threading
import warnings

_seen: set[str] = set()
_lock = threading.Lock()


def warn_once(key: str, message: str, category: type[Warning] = UserWarning) -> None:
    """Emit ``message`` through :func:`warnings.warn` the first time ``key`` is seen in this process.

    Later calls with the same ``key`` do nothing, whatever their message.
    """
    with _lock:
        if key in _seen:
            return
        _seen.add(key)
    warnings.warn(message, category, stacklevel=3)


def _reset_for_tests() -> None:
    """Forget every key seen so far (tests only)."""
    with _lock:
        _seen.clear()
