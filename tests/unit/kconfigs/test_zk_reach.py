"""ZooKeeper connect strings read as ZooKeeper's ConnectStringParser reads them (pure part)."""

from __future__ import annotations

import pytest

from kconfigs.errors import UsageError
from kconfigs.stores.zk_reach import assumed_port_note, zk_servers


def test_servers_ports_and_the_default_port_assumed():
    assert zk_servers("zk1:2181,zk2/kafka") == [("zk1", 2181), ("zk2", None)]
    assert zk_servers("[::1]:2182,[fe80::1]") == [("::1", 2182), ("fe80::1", None)]
    assert zk_servers("h:\u0662\u0661\u0668\u0661") == [("h", 2181)]  # Integer.parseInt takes Arabic-Indic digits
    assert assumed_port_note("zk1:2181,zk2,zk3/kafka") == " (port 2181 assumed: none given for zk2, zk3)"
    assert assumed_port_note("zk1:2181/kafka") == ""


@pytest.mark.parametrize("port", ["abc", "", "2181x", "99999", "-1", "\u00b2"])
def test_a_port_that_is_no_port_number_is_one_line(port):
    with pytest.raises(UsageError, match=rf"^ZooKeeper port '{port}' in h:{port} is not a port number \(0-65535\)$"):
        zk_servers(f"h:{port}")
