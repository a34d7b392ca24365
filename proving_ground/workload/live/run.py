"""`run_live_workload`: create the topics, run the timeline, leave the cluster in the promised state."""

from __future__ import annotations

import time

from .cluster_setup import create_topics, topic_configs
from .clients import admin_client, committed_offsets, confluent_admin
from .keepalive import KeepAlive, close_all
from .result import LiveWorkload
from .retention import RetentionWatch
from .scenarios import (CHANGED_GROUP, CHANGED_KEPT_TOPIC, GROUPS, RETENTION_WAIT_S, SHARE, TICK_S, TICKS, TOPICS)
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
        retention_note=_retention_note(retention_mode, watch.first_deletion_s),
        changed_subscription={"group": CHANGED_GROUP, "kept_topic": CHANGED_KEPT_TOPIC,
                              "left_behind_topic": end_state.groups[CHANGED_GROUP].left_behind_topics[0],
                              "stays_stable": keep_alive},
        broker_observations=end_state.observations,
        duration_s=duration, _keeper=keeper)


def _retention_note(mode: str, first_deletion_s: dict[str, float | None]) -> str:
    seen = ", ".join(f"{t} after {s} s" for t, s in first_deletion_s.items() if s is not None) or "on no topic"
    if mode == "retention.ms":
        return (f"Real retention: retention.ms deleted messages during the run (log start first moved: {seen}); "
                "billing-slow's committed offsets fell below the log start without any DeleteRecords.")
    return (f"Simulated retention: retention.ms had not passed billing-slow's committed offsets within "
            f"{RETENTION_WAIT_S} s (log start first moved: {seen}), so DeleteRecords moved the invoices "
            "log start to the log end, as retention would once every message is older than retention.ms.")
