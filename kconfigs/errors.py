"""The kconfigs error tree.

Every error a user can cause is a ``KconfigsError``: the two entry points (``cli.main()`` for
subcommands, ``__main__.main()`` for kafka-configs command lines) print its message as one line
on stderr and exit with ``exit_code``. Below them, only code that turns a failure into a fuller
answer catches these (a bulk alter naming what was and was not applied, a watch that keeps
serving its last snapshot, a retry of a retriable error).
"""

from __future__ import annotations


class KconfigsError(Exception):
    """Base of all user-facing errors. ``str(err)`` is the one-line message."""

    exit_code: int = 1
    retriable: bool = False

    def __init__(self, message: str):
        message = _one_line(message)
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _one_line(message: str) -> str:
    """The message with each line feed (in a name the user gave, echoed back) written as ``\\n``,
    so it is printed as one line. Everything else is kept as given: Kafka's texts echo the rest
    raw, a carriage return included."""
    return message.replace("\n", "\\n")


class UsageError(KconfigsError):
    """Bad command-line arguments (kafka-configs' IllegalArgumentException texts).

    ``show_usage``: kafka-configs prints its usage text after this message (printUsageAndDie).
    """

    def __init__(self, message: str, show_usage: bool = False):
        super().__init__(message)
        self.show_usage = show_usage


def empty_value(name: str, *, required: bool = False) -> UsageError:
    """The one message for an option or variable given as "" or blanks (an unset shell
    variable): it is never read as "not given", which would pick a default store or file."""
    return UsageError(f"{name} is empty: give a value" + ("" if required else " or leave it out"))


def nonblank(value: str | None, name: str) -> str | None:
    """``value``, unless it is given but empty or blank (:func:`empty_value`). :raises UsageError:"""
    if value is not None and not value.strip():
        raise empty_value(name)
    return value


class ValidationError(KconfigsError):
    """A config key, value or entity name is not acceptable; nothing was written."""


class StoreUnavailable(KconfigsError):
    """The store cannot be reached (ZooKeeper down, broker unreachable, auth failed)."""

    retriable = True


class CorruptData(KconfigsError):
    """Data in the store cannot be decoded (e.g. a znode that is not Kafka's JSON)."""


class VersionConflict(KconfigsError):
    """A compare-and-set lost against a concurrent writer more times than allowed."""

    retriable = True


class PartialFailure(KconfigsError):
    """A multi-entity operation applied some changes and not others; the message says which."""

    exit_code = 3
