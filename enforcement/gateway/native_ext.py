"""Whether the native extension (and so the gateway's data plane) was built. Its own module so
that ``kconfigs serve`` can say so in one line before importing anything that needs it; every
other command runs without it (enforcement falls back to the pure-Python rate core)."""

from __future__ import annotations

try:
    from kconfigs_enforcement._native import DataPlane, ManualClock
except ImportError:  # built without cargo
    DataPlane = ManualClock = None

#: why ``kconfigs serve`` cannot run here (None: it can)
UNAVAILABLE = (
    None
    if DataPlane is not None
    else (
        "kconfigs serve needs the native extension (the gateway's Rust data plane), which was not built: "
        "reinstall kconfigs with cargo (Rust) on PATH"
    )
)
