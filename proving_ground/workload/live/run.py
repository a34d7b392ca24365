"""`run_live_workload`: create the topics, run the timeline, leave the cluster in the promised state."""

from __future__ import annotations

import time

from .cluster_setup import create_topics, topic_configs
from .clients import admin_client, committed_offsets, confluent_admin, log_offsets
from .keepalive import KeepAlive, close_all
from .messages import tick_messages
from .producer import TickProducer
from .result import LiveWorkload
from .retention import RETENTION, RetentionWatch
from .scenarios import (CHANGED_GROUP, CHANGED_KEPT_TOPIC, CHANGED_LEFT_TOPIC, GROUPS, RETENTION_WAIT_S, SHARE, TICK_S, TICKS, TOPICS)
from .snapshot import describe_end_state, expected_states, verify, wait_for_states
from .timeline import TRANSACTIONAL_ID, Timeline, build_fleet, drain_and_commit, form_groups, wait_for_java_members

KEPT_COMMITTING = ("orders-active", CHANGED_GROUP, "payments-kip848", "clickstream-regex", "fx-transactional")
"""Groups whose members keep consuming and committing under keep-alive (they keep up)."""


def run_live_workload(bootstrap_servers: str, *, seed: int = 7, scale: float = 1.0, emit=print,
                      keep_alive: bool = True) -> LiveWorkload:
    """Drive a cluster the way real teams do, with real clients, and return what it left.

    Deterministic from `seed` and `scale` (topics, configs, message keys, values and counts;
    timing varies). TICKS * TICK_S = 12 s of production, plus forming the groups, catching up
    and waiting for retention: see the package docstring for the durations measured on the
    embedded Kafka. Then every client is closed, except, when `keep_alive` is true, the members
    of the groups expected Stable (Java members included), which stay until
    `LiveWorkload.stop()`. The topics must not exist yet (a fresh broker).
    """
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    keep_alive = bool(keep_alive)
    started = time.monotonic()
    say = (lambda line: emit(f"[live-workload] {line}")) if emit else (lambda line: None)
    admin = admin_client(bootstrap_servers)
    cadmin = confluent_admin(bootstrap_servers)
    fleet = keeper = None
    try:
        create_topics(admin, TOPICS)
        say(f"created {len(TOPICS)} topics on {bootstrap_servers}")
        fleet = build_fleet(bootstrap_servers, cadmin)
        form_groups(fleet)
        say(f"groups formed after {time.monotonic() - started:.1f} s; producing for {TICKS * TICK_S:.0f} s")
        watch = RetentionWatch(admin, [s for s in TOPICS.values() if s.short_retention], time.monotonic())
        timeline = Timeline(fleet, seed, scale, watch, say)
        timeline.run()
        ends = fleet.producer.ends
        for group in KEPT_COMMITTING:
            drain_and_commit(fleet.groups[group], ends)
        timeline.finish_sink()
        wait_for_java_members(admin, fleet, ends)
        # read now: the console's output goes with the JVM when it stops
        share_printed = {g: fleet.jvms.processes[g].output_lines() for g, s in GROUPS.items() if s.kind == SHARE}
        say(f"every group that keeps up caught up after {time.monotonic() - started:.1f} s; waiting for retention")
        slow = {p: o for (t, p), o in committed_offsets(admin, "billing-slow").items() if t == "invoices"}
        retention_mode = watch.wait_past(TOPICS["invoices"], slow, RETENTION_WAIT_S)
        say(f"billing-slow's committed offsets are below the invoices log start ({retention_mode})")
        # The offsets the changed group left behind lose messages only once the log start passes
        # them; waiting here (not only on invoices) keeps that loss certain on a loaded machine.
        left = {p: o for (t, p), o in committed_offsets(admin, CHANGED_GROUP).items() if t == CHANGED_LEFT_TOPIC}
        left_mode = watch.wait_past(TOPICS[CHANGED_LEFT_TOPIC], left, RETENTION_WAIT_S)
        say(f"{CHANGED_GROUP}'s {CHANGED_LEFT_TOPIC} offsets are below its log start ({left_mode})")
        if keep_alive:
            groups = fleet.groups
            keeper = KeepAlive(committing=[m for g in KEPT_COMMITTING for m in groups[g]],
                               idle=groups["billing-slow"], workers=fleet.workers, jvms=fleet.jvms).start()
            others = [m for g, members in groups.items() if not GROUPS[g].keep_alive for m in members]
            close_all([*others, fleet.producer], fleet.errors)
        else:
            fleet.close()
        expected = expected_states(keep_alive)
        wait_for_states(admin, expected)
        end_state = describe_end_state(
            admin, cadmin, expected, configs=topic_configs(admin, list(TOPICS)), producer=fleet.producer,
            watch=watch, last_subscriptions={g: members[0].topics for g, members in fleet.groups.items()},
            jvms=fleet.jvms, share_printed=share_printed, transactional_id=TRANSACTIONAL_ID)
        verify(end_state, expected)
        end_state.observations["client_errors"] = [
            *fleet.errors, *(f"{m.client_id}: {e}" for members in fleet.groups.values() for m in members
                             for e in m.errors)][:50]
    except BaseException:
        if keeper is not None:
            keeper.stop()
        if fleet is not None:
            fleet.close()
        raise
    finally:
        admin.close()
    duration = round(time.monotonic() - started, 1)
    say(f"done in {duration} s; " + ("members kept alive until stop()" if keep_alive else "all clients closed"))
    return LiveWorkload(
        bootstrap_servers=bootstrap_servers, seed=seed, scale=scale, keep_alive=keep_alive,
        topics=end_state.topics, groups=end_state.groups, retention_mode=retention_mode,
        retention_note=_retention_note(retention_mode, left_mode, watch.first_deletion_s),
        changed_subscription={"group": CHANGED_GROUP, "kept_topic": CHANGED_KEPT_TOPIC,
                              "left_behind_topic": end_state.groups[CHANGED_GROUP].left_behind_topics[0],
                              "stays_stable": keep_alive},
        broker_observations=end_state.observations,
        duration_s=duration, _keeper=keeper)


def produce_after_the_group_left(workload: LiveWorkload, wait_s: float = RETENTION_WAIT_S) -> str:
    """Write one more tick of messages to the topic the changed group left, and wait until
    retention deleted some of them (DeleteRecords after `wait_s`, as in the run). Returns the
    mode, RETENTION or DELETE_RECORDS.

    Producers go on writing to a topic a group stopped reading, and retention goes on deleting:
    that group loses nothing it meant to read. To show such a loss, the deletion has to fall
    between two snapshots that both saw the group without the topic, which the run's own timing
    cannot promise; a caller that took a snapshot since the run ended gets that by calling this,
    then taking another. The messages are those of tick TICKS, deterministic like the run's.
    """
    topic = workload.changed_subscription["left_behind_topic"]
    spec = TOPICS[topic]
    admin = admin_client(workload.bootstrap_servers)
    producer = TickProducer(workload.bootstrap_servers)
    try:
        _, ends_before = log_offsets(admin, topic, spec.partitions)
        producer.produce({topic: tick_messages(workload.seed, workload.scale, topic, TICKS)})
        written = {p: end for (t, p), end in producer.ends.items() if t == topic}
        # past the log end before these messages: some of them, not only older ones, are deleted
        return RetentionWatch(admin, [spec], time.monotonic()).wait_past(
            spec, {p: ends_before[p] for p in written}, wait_s)
    finally:
        producer.close()
        admin.close()


def _retention_note(mode: str, left_mode: str, first_deletion_s: dict[str, float | None]) -> str:
    seen = ", ".join(f"{t} after {s} s" for t, s in first_deletion_s.items() if s is not None) or "on no topic"
    if mode == RETENTION:
        note = (f"Real retention: retention.ms deleted messages during the run (log start first moved: {seen}); "
                "billing-slow's committed offsets fell below the log start without any DeleteRecords.")
    else:
        note = (f"Simulated retention: retention.ms had not passed billing-slow's committed offsets within "
                f"{RETENTION_WAIT_S} s (log start first moved: {seen}), so DeleteRecords moved the invoices "
                "log start to the log end, as retention would once every message is older than retention.ms.")
    if left_mode != RETENTION:
        note += (f" On {CHANGED_LEFT_TOPIC}, retention.ms had not passed {CHANGED_GROUP}'s offsets within "
                 f"{RETENTION_WAIT_S} s either, so DeleteRecords moved its log start to the log end.")
    return note
