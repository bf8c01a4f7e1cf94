"""Whether the native data plane was built: its own module so that ``config`` can refuse
``data_plane = "native"`` in one line without importing the bridge (which imports ``config``)."""

from __future__ import annotations

try:
    from kconfigs_enforcement._native import DataPlane
except ImportError:  # built without cargo
    DataPlane = None

#: why ``data_plane = "native"`` cannot run here (None: it can)
UNAVAILABLE = (
    None
    if DataPlane is not None
    else (
        'data_plane = "native" needs the native extension, which was not built: reinstall kconfigs with '
        'cargo (Rust) on PATH, or use data_plane = "asyncio" (the default)'
    )
)
