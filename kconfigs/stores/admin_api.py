"""AdminApiStore: client quotas through a Kafka cluster's admin API (KIP-546).

``describe`` is DescribeClientQuotas (key 48) with the filter as kafka-configs builds it;
``alter`` is a strict exact describe of the entity, the caller's pure ``update``, then
AlterClientQuotas (key 49) with one op per changed or removed key (a removal is sent as
``remove=true``, i.e. ``Op(key, null)``). ``validate_only`` (``--dry-run``) asks the cluster to
validate without applying.

Concurrency: a KRaft controller applies each AlterClientQuotas atomically and serialises all
writes, and ops name only the keys this alter changes, so concurrent alters of *different* keys
do not lose each other. The describe -> alter pair is **not** a compare-and-set (the API has
no version to check): a concurrent write to the *same* key between our describe and our alter
is overwritten (last writer wins), exactly as with kafka-configs.

Values: the wire carries doubles; records hold kconfigs' raw strings in the form a ZooKeeper
backed Kafka stores them (``"1024"`` for LONG/INT keys, ``"200.0"`` for DOUBLE keys).
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Callable, Iterable, Mapping

from kconfigs.errors import KconfigsError, StoreUnavailable
from kconfigs.kafka_admin.error_codes import NOT_CONTROLLER
from kconfigs.kafka_admin.messages import (
    QuotaOp,
    build_alter_request,
    build_describe_request,
    read_alter_response,
    read_describe_response,
)
from kconfigs.kafka_admin.quota_values import format_stored_value, parse_quota_value
from kconfigs.kafka_admin.retry import retry_until_deadline
from kconfigs.model import DEFAULT, MATCH_ALL, EntityFilter, FilterComponent, Match, QuotaEntity, QuotaRecord
from kconfigs.stores.base import ConfigUpdate, StoreChange

try:  # the shared multi-entity failure type (kconfigs.stores.base, being added by the lead)
    from kconfigs.stores.base import AlterManyFailed
except ImportError:  # pragma: no cover - older base.py: same information as a plain PartialFailure
    from kconfigs.errors import PartialFailure

    class AlterManyFailed(PartialFailure):
        def __init__(self, applied, failed=(), unknown=(), not_attempted=()):
            self.applied, self.failed = tuple(applied), tuple(failed)
            self.unknown, self.not_attempted = tuple(unknown), tuple(not_attempted)
            names = "; ".join(f"{e.path}: {err}" for e, err in self.failed)
            super().__init__(
                f"Applied {len(self.applied)} changes; failed: {names or 'none'}; "
                f"outcome unknown: {', '.join(e.path for e in self.unknown) or 'none'}"
            )


DEFAULT_TIMEOUT_MS = 30000  # kafka-configs waits 30 s for a describe (60 s for an alter)
WATCH_INTERVAL_MS = 5000  # the admin API has no change notifications: watch() polls this often


def exact_filter(entity: QuotaEntity) -> EntityFilter:
    """Strict filter matching exactly ``entity`` (ofEntity / ofDefaultEntity per component)."""
    components = tuple(
        FilterComponent(t, Match.DEFAULT) if name is DEFAULT else FilterComponent(t, Match.EXACT, name)
        for t, name in entity.components().items()
    )
    return EntityFilter(components=components, strict=True)


def plan_ops(current: Mapping[str, str], new: Mapping[str, str]) -> list[QuotaOp]:
    """Ops turning ``current`` into ``new``: a set per added/changed value, a remove per dropped key.

    :raises ValidationError: a new value that is not a Java double.
    """
    ops = []
    for key, raw in new.items():
        value = parse_quota_value(key, raw)
        if key not in current or parse_quota_value(key, current[key]) != value:
            ops.append(QuotaOp(key, value))
    ops.extend(QuotaOp(key, None) for key in current if key not in new)
    return ops


def canonical_configs(configs: Mapping[str, str]) -> dict[str, str]:
    """What the store holds after writing ``configs`` (``"1024.0"`` -> ``"1024"`` for LONG keys)."""
    return {key: format_stored_value(key, parse_quota_value(key, raw)) for key, raw in configs.items()}


class AdminApiStore:
    """The Store protocol over DescribeClientQuotas / AlterClientQuotas. See the module doc."""

    kind = "admin-api"

    def __init__(self, client, *, timeout_ms: int = DEFAULT_TIMEOUT_MS, watch_interval_ms: int = WATCH_INTERVAL_MS):
        self._client = client
        self._timeout_ms = timeout_ms
        self._watch_interval_ms = watch_interval_ms
        self._lock = threading.Lock()  # one request at a time (watch thread + caller)

    # -- reads ---------------------------------------------------------------------------
    def describe(self, entity_filter: EntityFilter) -> list[QuotaRecord]:
        """Entities with quotas matching ``entity_filter``. :raises StoreUnavailable, CorruptData:"""
        build = partial(build_describe_request, entity_filter)
        return self._retrying(lambda: read_describe_response(self._send(48, build)))

    # -- writes --------------------------------------------------------------------------
    def alter(self, entity: QuotaEntity, update: ConfigUpdate, *, validate_only: bool = False) -> QuotaRecord:
        """Describe ``entity``, apply ``update``, send the differing ops. Not a CAS (module doc).

        :raises StoreUnavailable, ValidationError (broker rejections), whatever ``update`` raises:
        """
        record, ops = self._prepare(entity, update)
        if ops:
            outcome = self._alter_entries([(entity, ops)], validate_only)
            error = outcome[entity]
            if error is not None:
                raise error
        return record

    def alter_many(
        self, changes: Iterable[tuple[QuotaEntity, ConfigUpdate]], *, validate_only: bool = False
    ) -> list[QuotaRecord]:
        """Prepare every entity first (an ``update`` error aborts with nothing sent), then send
        one AlterClientQuotas for all. The cluster applies each entity on its own, so a failure
        of some raises AlterManyFailed naming applied / failed / unknown (connection lost)."""
        prepared = [(entity, *self._prepare(entity, update)) for entity, update in changes]
        to_send = [(entity, ops) for entity, _, ops in prepared if ops]
        unchanged = [record for _, record, ops in prepared if not ops]
        try:
            outcome = self._alter_entries(to_send, validate_only) if to_send else {}
        except StoreUnavailable:
            if not unchanged:
                raise
            raise AlterManyFailed(unchanged, unknown=[entity for entity, _ in to_send]) from None
        failed = [(entity, err) for entity, err in outcome.items() if err is not None]
        applied = [record for entity, record, _ in prepared if outcome.get(entity) is None]
        if failed and len(failed) == len(prepared):
            raise failed[0][1]
        if failed:
            raise AlterManyFailed(applied, failed)
        return [record for _, record, _ in prepared]

    def _prepare(self, entity: QuotaEntity, update: ConfigUpdate) -> tuple[QuotaRecord, list[QuotaOp]]:
        matches = [r for r in self.describe(exact_filter(entity)) if r.entity == entity]
        current = dict(matches[0].configs) if matches else {}
        new = dict(update(dict(current)))
        ops = plan_ops(current, new)
        return QuotaRecord(entity=entity, configs=canonical_configs(new)), ops

    def _alter_entries(self, entries, validate_only: bool) -> dict[QuotaEntity, KconfigsError | None]:
        """Send, retrying only the entries that failed retriably (NOT_CONTROLLER, timeouts)."""
        pending = dict(entries)
        outcome: dict[QuotaEntity, KconfigsError | None] = {}

        def attempt() -> None:
            build = partial(build_alter_request, list(pending.items()), validate_only)
            for entity, error in read_alter_response(self._send(49, build)):
                outcome[entity] = error
                if error is None or not error.retriable:
                    pending.pop(entity, None)
            retriable = [outcome[e] for e in pending]
            if retriable:
                if any(getattr(err, "kafka_error_code", None) == NOT_CONTROLLER for err in retriable):
                    self._client.rotate_controller()
                raise retriable[0]

        self._retrying(attempt)
        return outcome

    # -- plumbing ------------------------------------------------------------------------
    def _send(self, api_key: int, build: Callable[[int], object]):
        with self._lock:
            return self._client.send(api_key, build)

    def _retrying(self, attempt):
        import time

        deadline_ms = time.monotonic() * 1000 + self._timeout_ms
        return retry_until_deadline(attempt, deadline_ms)

    def watch(
        self, on_change: Callable[[StoreChange], None], on_state: Callable[[str], None] | None = None
    ) -> "PollingWatch":
        """Poll ``describe(all)`` every ``watch_interval_ms`` (5 s by default): a full snapshot
        first and after every recovery, then only the entities that changed."""
        return PollingWatch(self, on_change, on_state, self._watch_interval_ms)

    def close(self) -> None:
        self._client.close()


def snapshot_diff(
    previous: Mapping[QuotaEntity, Mapping[str, str]], current: Mapping[QuotaEntity, Mapping[str, str]]
) -> list[QuotaRecord]:
    """Entities whose configs differ; a vanished entity is reported with empty configs."""
    changed = [QuotaRecord(e, dict(c)) for e, c in current.items() if previous.get(e) != c]
    changed.extend(QuotaRecord(e, {}) for e in previous if e not in current)
    return changed


class PollingWatch:
    """A daemon thread polling the store; ``close()`` stops it (within one interval)."""

    def __init__(self, store: AdminApiStore, on_change, on_state, interval_ms: int):
        self._store, self._on_change, self._on_state = store, on_change, on_state or (lambda state: None)
        self._interval_s = interval_ms / 1000
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kconfigs-admin-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        previous: dict | None = None
        ever_connected = lost = False
        while not self._stop.is_set():
            try:
                current = {r.entity: dict(r.configs) for r in self._store.describe(MATCH_ALL)}
            except StoreUnavailable:
                if ever_connected and not lost:
                    self._on_state("lost")  # the caller keeps its last snapshot meanwhile
                lost = True
                self._stop.wait(self._interval_s)
                continue
            if previous is None or lost:
                self._on_state("resynced" if ever_connected else "connected")
                records = tuple(QuotaRecord(e, c) for e, c in current.items())
                self._on_change(StoreChange(records=records, full_snapshot=True))
            else:
                changed = snapshot_diff(previous, current)
                if changed:
                    self._on_change(StoreChange(records=tuple(changed)))
            previous, ever_connected, lost = current, True, False
            self._stop.wait(self._interval_s)

    def close(self) -> None:
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join()


def open_admin_store(
    bootstrap: str, command_config: str | None, controller: bool = False, timeout_ms: int | None = None
) -> AdminApiStore:
    """Build the store for ``--bootstrap-server``/``--bootstrap-controller`` [+ ``--command-config``].

    Parses the properties now (bad settings fail before any connection); connects lazily.
    :raises ValidationError: unreadable or unsupported --command-config.
    """
    from kconfigs.kafka_admin.client import AdminClient
    from kconfigs.kafka_admin.properties import load_properties_file
    from kconfigs.kafka_admin.security import ClientSecurity, security_from_properties

    security = ClientSecurity()
    if command_config:
        props = load_properties_file(command_config)
        security = security_from_properties(props, read_file=_read_text)
    effective_timeout_ms = timeout_ms or security.request_timeout_ms or DEFAULT_TIMEOUT_MS
    client = AdminClient(bootstrap, security, controller=controller, request_timeout_ms=effective_timeout_ms)
    return AdminApiStore(client, timeout_ms=effective_timeout_ms)


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()
