"""A multi-broker Apache Kafka KRaft cluster on 127.0.0.1: node 1 is broker and (sole) controller,
the others are brokers only. For tests that need partition leaders to move between brokers."""

from __future__ import annotations

from pathlib import Path

from .brokers import KraftBroker, random_cluster_id
from .processes import free_ports


class ClusterNode(KraftBroker):
    """One node of a :class:`KraftCluster` (node 1 also runs the controller quorum)."""

    def __init__(
        self, version: str, workdir: Path, node_id: int, cluster_id: str, controller: "ClusterNode | None"
    ) -> None:
        super().__init__(version, workdir)
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.controller = controller or self

    @property
    def name(self) -> str:
        return f"kafka {self.version} (kraft node {self.node_id})"

    def choose_ports(self) -> None:
        if self.controller is self:
            self.port, self.controller_port = free_ports(2)
        else:
            (self.port,) = free_ports(1)

    def mode_props(self) -> dict[str, str]:
        is_controller = self.controller is self
        listeners = [f"PLAINTEXT://{self.bootstrap}"] + (
            [f"CONTROLLER://{self.controller_bootstrap}"] if is_controller else []
        )
        return {
            "process.roles": "broker,controller" if is_controller else "broker",
            "node.id": str(self.node_id),
            "controller.quorum.voters": f"1@{self.controller.controller_bootstrap}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listeners": ",".join(listeners),
            "advertised.listeners": f"PLAINTEXT://{self.bootstrap}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
        }


class KraftCluster:
    """``size`` nodes sharing one cluster id; ``start()`` starts node 1 first (the controller)."""

    def __init__(self, version: str, workdir: Path, size: int = 3) -> None:
        cluster_id = random_cluster_id()
        first = ClusterNode(version, workdir / "node1", 1, cluster_id, None)
        self.nodes = [first] + [
            ClusterNode(version, workdir / f"node{i}", i, cluster_id, first) for i in range(2, size + 1)
        ]

    @property
    def bootstrap(self) -> str:
        return self.nodes[0].bootstrap

    def node(self, node_id: int) -> ClusterNode:
        return self.nodes[node_id - 1]

    def start(self) -> None:
        for node in self.nodes:
            node.start()

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()
