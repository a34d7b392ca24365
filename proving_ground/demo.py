"""`make demo` (`python -m proving_ground.demo`): the main job on the embedded default, start to
finish, leaving nothing running.

On a fresh Apache Kafka broker started by the project:
1. the live workload starts: real producers and groups of every kind (classic consumer groups
   that keep up, fall behind until retention deletes what they never read, change their
   subscription or stop; KIP-848 groups by topic names and by regular expression; a standalone
   committer; a transactional committer; a Connect group; a share group and a streams group).
   Kafka's own group coordinator writes their records into `__consumer_offsets`. While the
   workload runs, the Dagster `ingest` job (ingest + snapshot, no Spark) runs every few seconds,
   so the lake follows the cluster as it changes;
2. one more `ingest` cycle snapshots the cluster the workload left; then more messages are
   written to the topic the changed group left, and retention deletes them: a loss between two
   snapshots that both saw the group without the topic, which the models mark abandoned;
3. then the `refresh` job runs: it ingests what is new, takes a snapshot, runs every Spark SQL
   model with its Great Expectations checks and proposes a cleanup plan;
4. it prints a summary and writes the report, then approves the plan (a person other than the
   plan's author does that in real use; the demo allows self-approval explicitly) and applies it while the live members still run, and asks the broker whether each
   deletion happened. Then it ends the live members and stops the broker.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
from pathlib import Path

from dagster import DagsterInstance

from offsets_platform.broker.embedded import BrokerStartFailed, EmbeddedBroker, PortInUse
from offsets_platform.broker.jvm import KafkaNotInstalled
from offsets_platform.lake import Lake
from offsets_platform.models.project import lake_for_models
from offsets_platform.views.report import report_path, write_report
from offsets_platform.settings import KafkaConnection, Settings
from offsets_platform.views.summary import bronze_summary, models_summary, snapshot_summary
from proving_ground.workload.live import produce_after_the_group_left, run_live_workload

SECONDS_BETWEEN_REFRESHES = 3.0
# consumer_status takes at most one observation of a partition per this many seconds. The default
# (a minute, as Burrow's min-distance) suits a cluster watched for hours; the demo's workload
# commits for about half a minute, which would give each partition one observation, too few for
# any verdict but INCOMPLETE. At one second its slow and stopped groups get a real one.
DEMO_STATUS_MIN_DISTANCE_S = 1


class _Background:
    """Runs the live workload in a thread and hands back its result or its error."""

    def __init__(self, bootstrap_servers: str, seed: int, scale: float):
        self.result = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(bootstrap_servers, seed, scale), daemon=True)
        self._thread.start()

    def _run(self, bootstrap_servers: str, seed: int, scale: float) -> None:
        try:
            self.result = run_live_workload(bootstrap_servers, seed=seed, scale=scale)
        except BaseException as error:  # re-raised in the demo's thread by finish()
            self.error = error

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def finish(self):
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.result


def run_demo(home: Path, seed: int = 7, live_scale: float = 1.0) -> Lake:
    """Run the demo under `home/demo` (recreated), print what happened, return the lake.

    Args:
        home: the folder whose `demo` subfolder holds the broker's data and the lake.
        seed: seed of the live workload (message keys, values and counts).
        live_scale: message volume of the live workload.
    """
    from offsets_platform_dagster.definitions import defs

    demo_home = home.absolute() / "demo"
    if demo_home.exists():
        print(f"removing the previous demo in {demo_home}")
        shutil.rmtree(demo_home)
    lake = lake_for_models(demo_home / "lake")
    job = defs.resolve_job_def("refresh")
    ingest_job = defs.resolve_job_def("ingest")
    print("starting Apache Kafka (the embedded broker) ...")
    with EmbeddedBroker(demo_home / "broker") as broker, _dagster_instance(demo_home / "dagster") as instance:
        print(f"Apache Kafka at {broker.bootstrap_servers}, data in {broker.data_dir}")
        run_config = {
            "resources": {"kafka": {"config": {"bootstrap_servers": broker.bootstrap_servers}},
                          "lake": {"config": {"root": str(lake.root)}},
                          "models": {"config": {"consumer_status_min_distance_seconds": DEMO_STATUS_MIN_DISTANCE_S}}},
            # Progress and results, without Dagster's step-by-step debug events.
            "loggers": {"console": {"config": {"log_level": "INFO"}}},
        }

        def refresh(label: str, which=job) -> None:
            started = time.monotonic()
            if not which.execute_in_process(run_config=run_config, instance=instance).success:
                raise SystemExit(f"the {which.name} job failed ({label})")
            print(f"{label}: {which.name} job done in {time.monotonic() - started:.1f} s")

        print("starting the live workload (real producers and groups of every kind)")
        live = _Background(broker.bootstrap_servers, seed, live_scale)
        try:
            cycle = 0
            while live.running:
                time.sleep(SECONDS_BETWEEN_REFRESHES)
                cycle += 1
                refresh(f"cycle {cycle} (ingest and snapshot while the live workload runs)", ingest_job)
        finally:
            workload = live.finish()  # waits for it; its own error, if any, is raised here
        try:
            _show_a_loss_after_leaving_a_topic(workload, lambda: refresh(
                f"cycle {cycle + 1} (snapshot of the cluster the live workload left)", ingest_job))
            refresh("final cycle (after the live workload)")
            _print_summary(lake, workload)
            _approve_and_apply(lake, broker.bootstrap_servers)
        finally:
            workload.stop()
    print(f"\ntables are in {lake.root}; the live members and the embedded broker are stopped.")
    print(f"see the runs, tables and checks in the Dagster UI: make ui OFFSETS_PLATFORM_HOME={demo_home}")
    return lake


def _show_a_loss_after_leaving_a_topic(workload, snapshot) -> None:
    """Retention deletes messages of a topic after a group left it: the models mark that loss
    abandoned (no loss of the group's) when both snapshots around it saw the group without the
    topic. The workload's own deletions may all fall before the second such snapshot on a busy
    machine, so the demo takes one now, has more messages written and deleted, and the final
    refresh takes the other."""
    snapshot()
    mode = produce_after_the_group_left(workload)
    changed = workload.changed_subscription
    print(f"{changed['left_behind_topic']}: more messages written after {changed['group']} left it, "
          f"and deleted ({mode})")


def _dagster_instance(dagster_home: Path) -> DagsterInstance:
    """A Dagster instance that keeps the demo's runs, materializations and checks in
    `dagster_home`, with the deployment's settings (assets/dagster.yaml), so that
    `make ui OFFSETS_PLATFORM_HOME=<the demo's home>` shows them."""
    dagster_home.mkdir(parents=True)
    shutil.copy(Path(__file__).resolve().parent.parent / "assets" / "dagster.yaml", dagster_home / "dagster.yaml")
    return DagsterInstance.from_config(str(dagster_home))


def _print_summary(lake: Lake, workload) -> None:
    print("\nsummary: __consumer_offsets in bronze")
    for line in bronze_summary(lake):
        print("  " + line)
    print("summary: the live cluster (admin-API snapshots)")
    for line in snapshot_summary(lake):
        print("  " + line)
    print(f"  retention: {workload.retention_note}")
    changed = workload.changed_subscription
    print(f"  {changed['group']} left committed offsets on {changed['left_behind_topic']}, "
          f"which it no longer reads")
    print("summary: the Spark SQL models (silver and gold)")
    for line in models_summary(lake):
        print("  " + line)
    # The same answers as figures, in one HTML file that opens offline: <demo home>/reports/.
    report = write_report(lake, report_path(lake))
    print(f"report: {report}")


def _approve_and_apply(lake: Lake, bootstrap_servers: str) -> None:
    """Approve the plan the refresh proposed and apply it, as an operator does after reading it
    (here the demo approves its own plan), then ask the broker whether each deletion happened.
    The live members still run: apply checks their subscriptions again before it sends anything."""
    from offsets_platform.cleanup.apply import apply_plan
    from offsets_platform.cleanup.approvals import approve
    from offsets_platform.kafka.group_calls import live_group
    from offsets_platform.kafka.admin_calls import open_admin

    latest = lake.query("select plan_id from cleanup_plans order by created_at desc limit 1", "cleanup_plans")
    if latest.num_rows == 0:
        print("summary: cleanup: the refresh proposed no plan, there is nothing to clean up")
        return
    plan_id = latest.column("plan_id")[0].as_py()
    # The demo is its own operator: four-eyes, the default, is lifted here and only here.
    approve(lake, plan_id, "demo", comment="approved by the demo; in real use a person reads the plan first",
            allow_self_approval=True)
    connection = KafkaConnection(bootstrap_servers=bootstrap_servers)
    result = apply_plan(lake, connection, plan_id, requested_by="demo", emit=lambda line: None,
                        allow_self_approval=True)
    print(f"summary: cleanup plan {plan_id}, approved and applied: {result.count('deleted')} deleted, "
          f"{result.count('skipped')} skipped, {result.count('failed')} failed")
    deleted = [row for row in result.outcomes if row["outcome"] == "deleted"]
    with open_admin(connection, 15, 15) as admin:
        remaining = {group: live_group(admin, group).committed_offsets for group in {row["group"] for row in deleted}}
    for row in deleted:
        where = f"{row['topic']}-{row['partition']}" if row["topic"] is not None else "the group"
        gone = (row["topic"], row["partition"]) not in remaining[row["group"]] if row["topic"] is not None \
            else not remaining[row["group"]]
        print(f"  {row['action']} {row['group']} {where}: deleted; the broker "
              + ("no longer has it" if gone else "STILL HAS IT"))
    for row in result.outcomes:
        if row["outcome"] in ("skipped", "failed"):
            print(f"  {row['action']} {row['group']} {row['topic'] or ''}: {row['outcome']}: {row['detail']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proving_ground.demo",
                                     description="the main job on a fresh embedded broker (Apache Kafka)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the live workload")
    parser.add_argument("--scale", type=float, default=1.0, help="message volume of the live workload")
    parser.add_argument("--home", help="folder for the demo (default: $OFFSETS_PLATFORM_HOME or .offsets_platform)")
    args = parser.parse_args(argv)
    try:
        run_demo(Path(args.home) if args.home else Settings.from_env().home, seed=args.seed, live_scale=args.scale)
    except (BrokerStartFailed, KafkaNotInstalled, PortInUse) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
