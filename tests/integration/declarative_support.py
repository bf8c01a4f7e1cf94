"""The quota file the declarative CLI tests apply to every store."""

QUOTAS = """\
[[quota]]
entity = { user = { default = true } }
consumer_byte_rate = 2000000

[[quota]]
entity = { user = { name = "<default>" } }
producer_byte_rate = 7

[[quota]]
entity = { user = "CN=alice,OU=x", client-id = { default = true } }
producer_byte_rate = 1048576
request_percentage = 200.0

[[quota]]
entity = { user = "with space", client-id = "a*b" }
controller_mutation_rate = 10.5

[[quota]]
entity = { client-id = "über" }
consumer_byte_rate = 5

[[quota]]
entity = { ip = { default = true } }
connection_creation_rate = 0

[[quota]]
entity = { ip = "10.0.0.1" }
connection_creation_rate = 20
"""
