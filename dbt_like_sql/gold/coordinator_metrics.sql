-- KIP-496 coordinator metrics per time bucket, rebuilt from the log as Kafka 4.3's group
-- coordinator meters them (GroupCoordinatorMetrics), except where gold.yml says how they differ:
--  * offset commits: one per commit record, by commit time (counted per minute in
--    offset_commit_counts), as OffsetMetadataManager.commitOffset and commitTransactionalOffset
--    meter every record they write;
--  * offset expirations: one per offset the expiration removed. Kafka's meter
--    (OffsetMetadataManager.cleanupExpiredOffsets) adds, for every group a cleanup cycle visits,
--    the size of the record list the whole cycle shares (KAFKA-18980): it depends on the order in
--    which the cycle visits the groups of a __consumer_offsets partition and on groups that
--    expired nothing, which the log does not show, so the model counts the offsets;
--  * offset deletions: one per tombstone of an OffsetDelete (OffsetMetadataManager.deleteOffsets);
--  * completed rebalances of classic groups (GroupMetadataManager.classicGroupSyncToClassicGroup).
-- Kafka writes expirations, OffsetDeletes, DeleteGroups and deleted topics alike as tombstones,
-- so each tombstone that removed an offset is classified by the rules: an expiration when the
-- offset was a candidate for expiration (offset_removals.base_at, from the group's state in the
-- log at that moment) and had expired by the tombstone's time with the retention in force;
-- otherwise a deletion. What the project deleted itself is known exactly from cleanup_audit: a
-- tombstone within 10 minutes of one of its OffsetDeletes is a deletion, one of its DeleteGroups
-- counts in neither meter (GroupCoordinatorShard.deleteGroups meters nothing), and an audited
-- OffsetDelete whose tombstone is not in the log (a cluster seen only through the admin API)
-- still counts, at the time it was sent, if the partition had an offset then (a prune of the
-- committed offset snapshots keeps that row: offsets_platform.models.committed_snapshot_pruning).
{% set bucket_seconds = var('metrics_bucket_minutes') * 60 %}
with removals as (
    select * from {{ ref('offset_removals') }}
),

project_deletions as (
    select
        audit_id,
        group_id,
        topic,
        partition_id,
        action,
        recorded_at
    from {{ ref('stg_cleanup__audit') }}
    where outcome = 'deleted'
),

tombstones_by_project as (
    -- an OffsetDelete writes its partition's tombstone, a DeleteGroups one for every offset of the
    -- group; the broker's clock and this one may differ, hence the 10 minutes. A tombstone either
    -- could have written is the OffsetDelete's. `describe` names the deletion of a removed offset
    -- by the same rule (offsets_platform/views/from_lake.py, PROJECT_DELETION_WITHIN_S).
    select
        t.source_partition,
        t.source_offset,
        bool_or(d.action = 'OffsetDelete') as is_offset_delete
    from removals as t
    inner join project_deletions as d
        on
            t.group_id = d.group_id
            and (d.action = 'DeleteGroups' or (t.topic = d.topic and t.partition_id = d.partition_id))
            and abs(unix_seconds(d.recorded_at) - unix_seconds(t.removed_at)) <= 600
    group by t.source_partition, t.source_offset
),

offset_deletes_without_tombstone as (
    select d.*
    from project_deletions as d
    left anti join removals as t
        on
            d.group_id = t.group_id and d.topic = t.topic and d.partition_id = t.partition_id
            and abs(unix_seconds(d.recorded_at) - unix_seconds(t.removed_at)) <= 600
    where d.action = 'OffsetDelete'
),

log_state_of_deletes as (
    -- the latest record of each such partition in the log
    select /*+ broadcast(d) */
        d.audit_id,
        s.is_removed,
        s.appended_at
    from {{ ref('log_offset_state') }} as s
    inner join offset_deletes_without_tombstone as d
        on s.group_id = d.group_id and s.topic = d.topic and s.partition_id = d.partition_id
),

snapshot_before_deletes as (
    -- the latest complete snapshot before each such request
    select
        d.audit_id,
        d.group_id,
        d.topic,
        d.partition_id,
        max_by(s.snapshot_id, s.snapshot_at) as snapshot_id
    from offset_deletes_without_tombstone as d
    inner join {{ ref('stg_snapshots__complete_snapshots') }} as s on d.recorded_at >= s.snapshot_at
    group by d.audit_id, d.group_id, d.topic, d.partition_id
),

deletes_held_by_snapshot as (
    select /*+ broadcast(b) */ b.audit_id
    from {{ ref('stg_snapshots__committed_offsets') }} as o
    inner join snapshot_before_deletes as b
        on
            o.snapshot_id = b.snapshot_id and o.group_id = b.group_id and o.topic = b.topic
            and o.partition_id = b.partition_id
),

offset_deletes_of_an_offset as (
    -- OffsetMetadataManager.deleteOffsets writes, and meters, a tombstone only where the group had
    -- an offset: the partition's latest record in the log is a commit written before the request
    -- (a later record means the log was read past the request, and it shows no tombstone), or,
    -- where the log has no record of the partition, the latest snapshot before it held one
    select d.recorded_at
    from offset_deletes_without_tombstone as d
    left join log_state_of_deletes as l on d.audit_id = l.audit_id
    left join deletes_held_by_snapshot as h on d.audit_id = h.audit_id
    where
        (l.audit_id is not null and not l.is_removed and l.appended_at <= d.recorded_at)
        or (l.audit_id is null and h.audit_id is not null)
),

retention as (
    select minutes from {{ ref('offsets_retention') }}
),

removal_events as (
    select
        r.removed_at as at,
        case
            -- deleteOffsets meters every tombstone it writes (of an offset, or of a pending
            -- transactional one)
            when p.is_offset_delete then 'deletion'
            when p.source_offset is not null then null
            -- a tombstone of an offset already removed
            when not r.is_offset_removed then null
            -- isOffsetExpired at the tombstone's time, in Kafka's milliseconds and Java's
            -- long arithmetic (try_subtract is null where it overflows: not expired)
            when
                r.base_at_ms is not null and (
                    (r.legacy_expires_at_ms is not null and unix_millis(r.removed_at) >= r.legacy_expires_at_ms)
                    or (
                        r.legacy_expires_at_ms is null
                        and try_subtract(unix_millis(r.removed_at), r.base_at_ms)
                        >= (select minutes from retention) * 60000
                    )
                )
                then 'expiration'
            else 'deletion'
        end as event
    from removals as r
    left join
        tombstones_by_project as p
        on r.source_partition = p.source_partition and r.source_offset = p.source_offset
),

group_records as (
    -- the records that say which kind of group a group is: its classic group records and the
    -- group metadata records of KIP-848, share and streams groups, tombstones included
    select
        group_id,
        source_partition,
        source_offset,
        appended_at,
        false as is_modern,
        is_tombstone,
        count_members,
        generation
    from {{ ref('stg_kafka__group_metadata') }}
    union all
    select
        group_id,
        source_partition,
        source_offset,
        appended_at,
        true,
        is_tombstone,
        null,
        null
    from {{ ref('stg_kafka__consumer_groups') }}
    where record_type in ('consumer_group_metadata', 'share_group_metadata', 'streams_group_metadata')
),

group_records_in_order as (
    select
        *,
        lag(named_struct(
            'is_modern', is_modern, 'is_tombstone', is_tombstone, 'generation', generation,
            'source_partition', source_partition, 'source_offset', source_offset, 'appended_at', appended_at
        )) over (partition by group_id order by source_offset) as previous
    from group_records
),

completed_rebalances as (
    -- the group record a leader's SyncGroup writes completes a rebalance (the sensor is recorded
    -- once it is appended): members, in a generation the group's previous record did not have.
    -- Not one: a static member rejoining (a record in the same generation), a group going Empty
    -- (no members), and the record GroupMetadataManager.convertToClassicGroup writes when a
    -- KIP-848 group goes back to classic, in the same write as that group's tombstones (right
    -- after its group metadata tombstone, at the same time). A classic group that follows a
    -- deleted group of any kind starts again at generation 1.
    select appended_at
    from group_records_in_order
    where
        not is_modern and not is_tombstone and count_members > 0
        and (previous is null or previous.is_tombstone or previous.is_modern or generation > previous.generation)
        and not coalesce(
            previous.is_modern and previous.is_tombstone and previous.source_partition = source_partition
            and previous.source_offset = source_offset - 1 and previous.appended_at = appended_at,
            false
        )
),

events as (
    select
        minute_start_at as at,
        'commit' as event,
        count_offset_commits as n
    from {{ ref('offset_commit_counts') }}
    union all
    select
        at,
        event,
        1
    from removal_events
    where event is not null
    union all
    select
        recorded_at,
        'deletion',
        1
    from offset_deletes_of_an_offset
    union all
    select
        appended_at,
        'rebalance',
        1
    from completed_rebalances
)

select
    timestamp_seconds(floor(unix_seconds(at) / {{ bucket_seconds }}) * {{ bucket_seconds }}) as bucket_start_at,
    {{ var('metrics_bucket_minutes') }} as bucket_minutes,
    sum(if(event = 'commit', n, 0)) as count_offset_commits,
    sum(if(event = 'expiration', n, 0)) as count_offset_expirations,
    sum(if(event = 'deletion', n, 0)) as count_offset_deletions,
    sum(if(event = 'rebalance', n, 0)) as count_group_completed_rebalances
from events
where at is not null
group by bucket_start_at
