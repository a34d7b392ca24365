-- The committed offset of every group, topic and partition now, from both sources: the log
-- (exact commit times, tombstones applied) and the latest admin-API snapshot. Where both know a
-- partition, the newer observation wins: a log record newer than the snapshot, or a snapshot
-- newer than the log record. A snapshot that covered the group but no longer lists a partition
-- means the offset was removed after the log record. A snapshot covers a group when its OffsetFetch
-- of the group succeeded: the group was listed, or asked about by name and found in no describe
-- API (gone: OffsetFetch answers nothing for it). A failed OffsetFetch (a coordinator moving or
-- loading, an ACL) says nothing about the group's offsets: the log's stand.
with log_offsets as (
    select * from {{ ref('log_offset_state') }}
),

snap as (
    select * from {{ ref('snapshot_offsets') }}
),

latest_snapshot as (
    select
        snapshot_id,
        snapshot_at
    from {{ ref('stg_snapshots__complete_snapshots') }}
    where is_latest
),

latest_errors as (
    select
        e.subject as group_id,
        e.operation,
        e.error_name
    from {{ ref('stg_snapshots__errors') }} as e
    inner join latest_snapshot as l on e.snapshot_id = l.snapshot_id
    where e.scope = 'group'
),

asked_groups as (
    -- every group the latest snapshot sent OffsetFetch for
    select g.group_id
    from {{ ref('stg_snapshots__groups') }} as g
    inner join latest_snapshot as l on g.snapshot_id = l.snapshot_id
    union
    select group_id
    from latest_errors
    where operation = 'DescribeGroups' and error_name = 'GROUP_ID_NOT_FOUND'
),

snapshot_groups as (
    -- the groups whose offsets the latest snapshot fetched without an error
    select a.group_id
    from asked_groups as a
    left anti join latest_errors as e on a.group_id = e.group_id and e.operation = 'OffsetFetch'
),

joined as (
    select
        coalesce(l.group_id, s.group_id) as group_id,
        coalesce(l.topic, s.topic) as topic,
        coalesce(l.partition_id, s.partition_id) as partition_id,
        l.is_removed,
        l.committed_offset as log_offset,
        l.leader_epoch as log_leader_epoch,
        l.metadata as log_metadata,
        l.committed_at,
        l.legacy_expires_at,
        l.committed_at_ms,
        l.legacy_expires_at_ms,
        l.appended_at,
        s.committed_offset as snapshot_offset,
        s.leader_epoch as snapshot_leader_epoch,
        s.metadata as snapshot_metadata,
        s.first_seen_at,
        s.last_unseen_at,
        (select snapshot_at from latest_snapshot) as snapshot_at,
        g.group_id is not null as snapshot_covers_group
    from log_offsets as l
    full outer join snap as s
        on l.group_id = s.group_id and l.topic = s.topic and l.partition_id = s.partition_id
    left join snapshot_groups as g on g.group_id = coalesce(l.group_id, s.group_id)
),

decided as (
    select
        *,
        case
            when log_offset is not null and snapshot_offset is not null
                then
                    case
                        when log_offset = snapshot_offset or appended_at >= snapshot_at
                            then 'log'
                        else 'snapshot'
                    end
            when snapshot_offset is not null
                then
                    case when is_removed and appended_at >= snapshot_at then 'removed' else 'snapshot' end
            when is_removed then 'removed'
            when snapshot_covers_group and appended_at < snapshot_at then 'removed'
            else 'log'
        end as taken_from
    from joined
)

select
    group_id,
    topic,
    partition_id,
    case when taken_from = 'log' then log_offset else snapshot_offset end as committed_offset,
    case when taken_from = 'log' then log_leader_epoch else snapshot_leader_epoch end as leader_epoch,
    case when taken_from = 'log' then log_metadata else snapshot_metadata end as metadata,
    case when times_from_log then committed_at end as committed_at,
    case when times_from_log then legacy_expires_at end as legacy_expires_at,
    -- not a coalesce: a log commit time outside the timestamps' range is still the commit time
    case when times_from_log then committed_at else first_seen_at end as estimated_committed_at,
    case when times_from_log then 'log' else 'snapshot' end as commit_time_source,
    case
        when log_offset is not null and snapshot_offset is not null then 'both'
        when taken_from = 'log' then 'log' else 'snapshot'
    end as seen_in,
    snapshot_at,
    case when times_from_log then committed_at_ms end as committed_at_ms,
    case when times_from_log then legacy_expires_at_ms end as legacy_expires_at_ms,
    case when times_from_log then committed_at_ms else unix_millis(first_seen_at) end
        as estimated_committed_at_ms
from (
    -- the log's commit time also holds when the snapshot shows the same offset
    select
        *,
        (taken_from = 'log' or log_offset = snapshot_offset) is true as times_from_log
    from decided
) as with_times
where taken_from <> 'removed'
