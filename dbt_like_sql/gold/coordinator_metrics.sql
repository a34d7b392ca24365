-- KIP-496 coordinator metrics per time bucket, from the log: offset commits (one per commit
-- record, by commit time, counted per minute in offset_commit_counts), offset expirations and
-- offset deletions (tombstones, by the time they were written) and completed rebalances of
-- classic groups: Kafka records one when a SyncGroup completes a generation
-- (GroupMetadataManager, CompletedRebalances sensor), which writes a group record with members in
-- a new generation; a static member rejoining writes one in the same generation and is not one.
-- Kafka writes expirations and deletions alike as tombstones, so each
-- tombstone that removed an offset is classified by the rules: an expiration when the offset was
-- a candidate for expiration (offset_removals.base_at, from the group's state in the log at
-- that moment) and had expired by the tombstone's time with the retention in force; otherwise a
-- deletion. Deletions the project performed itself are known exactly from cleanup_audit: a
-- tombstone within 10 minutes of one of them is a deletion, and an audited OffsetDelete whose
-- tombstone is not in the log (a cluster seen only through the admin API) still counts, at the
-- time it was sent.
{% set bucket_seconds = var('metrics_bucket_minutes') * 60 %}
with removals as (
    select * from {{ ref('offset_removals') }}
),

project_deletions as (
    select
        group_id,
        topic,
        partition_id,
        action,
        recorded_at
    from {{ ref('stg_cleanup__audit') }}
    where outcome = 'deleted'
),

tombstones_by_project as (
    -- a DeleteGroups (topic null) removes every offset of the group
    select distinct
        t.source_partition,
        t.source_offset
    from removals as t
    inner join project_deletions as d
        on
            t.group_id = d.group_id and (d.topic is null or (t.topic = d.topic and t.partition_id = d.partition_id))
            and abs(unix_seconds(d.recorded_at) - unix_seconds(t.removed_at)) <= 600
),

retention as (
    select minutes from {{ ref('offsets_retention') }}
),

events as (
    select
        minute_start_at as at,
        'commit' as event,
        count_offset_commits as n
    from {{ ref('offset_commit_counts') }}
    union all
    select
        r.removed_at,
        case
            when p.source_offset is not null then 'deletion'
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
        end,
        1
    from removals as r
    left join
        tombstones_by_project as p
        on r.source_partition = p.source_partition and r.source_offset = p.source_offset
    where r.is_offset_removed
    union all
    select
        d.recorded_at,
        'deletion',
        1
    from project_deletions as d
    left anti join removals as t
        on
            d.group_id = t.group_id and d.topic = t.topic and d.partition_id = t.partition_id
            and abs(unix_seconds(d.recorded_at) - unix_seconds(t.removed_at)) <= 600
    where d.action = 'OffsetDelete'
    union all
    select
        appended_at,
        'rebalance',
        1
    from (
        select
            appended_at,
            is_tombstone,
            count_members,
            generation,
            lag(generation) over (partition by group_id order by source_offset) as previous_generation
        from {{ ref('stg_kafka__group_metadata') }}
    )
    where not is_tombstone and count_members > 0 and (previous_generation is null or generation > previous_generation)
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
group by 1
