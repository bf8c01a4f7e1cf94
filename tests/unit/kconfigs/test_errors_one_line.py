"""Every user-facing error is printed as one line, whatever the name it echoes back."""

from kconfigs.errors import KconfigsError, UsageError


def test_a_line_feed_in_an_echoed_name_is_escaped_not_printed():
    err = UsageError("The entity name for ips must be a valid IP or resolvable host, but it is: a\nb")
    assert str(err) == "The entity name for ips must be a valid IP or resolvable host, but it is: a\\nb"


def test_everything_else_is_kept_as_given():
    assert str(KconfigsError("client 'été'\tx\ry not found")) == "client 'été'\tx\ry not found"
