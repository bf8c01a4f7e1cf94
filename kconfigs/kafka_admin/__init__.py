"""Talking to Kafka's admin API for client quotas (DescribeClientQuotas / AlterClientQuotas).

Small modules: ``jaas`` and ``security`` (--command-config),
``tls`` (SSLContext from PEM), ``versions`` (ApiVersions negotiation), ``messages`` (model <->
kafka-python protocol classes), ``error_codes`` (Kafka error codes -> kconfigs errors),
``client`` (connections over kafka-python's net layer).
"""
