"""kazoo's client class, loaded without the modules it imports for TLS and SASL alone.

``kazoo.client`` imports ``ssl`` (for TLS connections) and ``puresasl.client`` (for SASL) as it
loads: about 7 ms of the 0.1 s a whole ZooKeeper describe takes, spent on every call of a script
that asked for neither. Each is put in ``sys.modules`` as a
stand-in that imports the real module on its first attribute access (``ssl.SSLContext`` when a
TLS connection is made, ``ssl.SSLError`` when one is caught, ``puresasl.client.SASLClient`` on a
SASL handshake), so kazoo behaves as before and only the cost moves to where it is needed.
The standard library's ``importlib.util.LazyLoader`` cannot do this on Python 3.11: the import
statement itself reads the module's ``__spec__``, which makes a lazy module load at once.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types


class _ImportedOnFirstUse(types.ModuleType):
    """Holds only ``__spec__`` (which the import statement reads) until another attribute is asked."""

    def __getattr__(self, attr: str):
        name = self.__spec__.name
        if sys.modules.get(name) is self:
            del sys.modules[name]
        real = importlib.import_module(name)
        self.__dict__.update(real.__dict__)
        return getattr(real, attr)


def _defer(name: str) -> None:
    """Stand ``name`` in until first use; a no-op if it is loaded already or not installed (its
    importer then fails or falls back as it would have)."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    stand_in = _ImportedOnFirstUse(name)
    stand_in.__spec__ = spec
    sys.modules[name] = stand_in
    parent, _, child = name.rpartition(".")
    if parent:  # ``import a.b`` finds a.b in sys.modules and would not bind it on ``a`` itself
        setattr(sys.modules[parent], child, stand_in)


_defer("ssl")
_defer("puresasl.client")

from kazoo.client import KazooClient  # noqa: E402

__all__ = ["KazooClient"]
