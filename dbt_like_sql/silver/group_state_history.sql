-- Every observed change of a group's state, from three places:
--  * classic group records in the log: one per completed rebalance (members: Stable), per group
--    going Empty (no members), and a tombstone when the group is deleted (Dead);
--  * the records of the groups of Kafka 4.x's new protocols in the log: KIP-848 consumer groups,
--    share groups (KIP-932) and streams groups (KIP-1071). Each member has a member record, so
--    the member count changes as member records come and go (Empty at none, Stable otherwise),
--    and a tombstone of the group's metadata record deletes the group (Dead);
--  * admin-API snapshots: a row when DescribeGroups reports a state other than the group's
--    previous snapshot did (this is the only place PreparingRebalance and CompletingRebalance,
--    which Kafka never logs, can show up).
-- The column kind says which: classic, kip848, share, streams or snapshot. Kafka converts a group between
-- the classic and the KIP-848 protocol by writing the other kind's records (and tombstones for the
-- old ones), so the latest record tells the group's kind now.
with classic as (
    select
        group_id,
        appended_at as observed_at,
        case when is_tombstone then 'Dead' when count_members = 0 then 'Empty' else 'Stable' end as state,
        protocol_type,
        protocol,
        generation,
        leader,
        count_members,
        current_state_at,
        'log' as source,
        'classic' as kind,
        source_partition,
        source_offset,
        cast(null as string) as snapshot_id,
        -- as Kafka stored it, also where the timestamp cannot hold it (null there)
        current_state_at_ms
    from {{ ref('stg_kafka__group_metadata') }}
),

modern_member_records as (
    select
        group_id,
        member_id,
        is_tombstone,
        appended_at,
        source_partition,
        source_offset,
        case record_type
            when 'consumer_group_member_metadata' then 'kip848'
            when 'share_group_member_metadata' then 'share' else 'streams'
        end as kind,
        lag(is_tombstone) over (partition by group_id, record_type, member_id order by source_offset)
            as previous_tombstone
    from {{ ref('stg_kafka__consumer_groups') }}
    where record_type in (
        'consumer_group_member_metadata', 'share_group_member_metadata',
        'streams_group_member_metadata'
    )
),

modern_member_changes as (
    -- +1 when a member appears, -1 when its record is tombstoned; updates of a member are 0
    select
        *,
        case
            when not is_tombstone and coalesce(previous_tombstone, true) then 1
            when is_tombstone and previous_tombstone = false then -1
            else 0
        end as change
    from modern_member_records
),

modern_members as (
    select
        group_id,
        kind,
        appended_at as observed_at,
        cast(sum(change) over (
            partition by group_id, kind order by source_offset
            rows between unbounded preceding and current row
        ) as int) as count_members,
        source_partition,
        source_offset
    from modern_member_changes
    where change <> 0
),

modern_deleted as (
    select
        group_id,
        appended_at as observed_at,
        source_partition,
        source_offset,
        case record_type
            when 'consumer_group_metadata' then 'kip848'
            when 'share_group_metadata' then 'share' else 'streams'
        end as kind
    from {{ ref('stg_kafka__consumer_groups') }}
    where
        record_type in ('consumer_group_metadata', 'share_group_metadata', 'streams_group_metadata')
        and is_tombstone
),

modern as (
    -- protocol types as ListGroups reports them (ConsumerGroup, ShareGroup, StreamsGroup.protocolType)
    select
        group_id,
        observed_at,
        case when count_members = 0 then 'Empty' else 'Stable' end as state,
        case kind when 'kip848' then 'consumer' else kind end as protocol_type,
        cast(null as string) as protocol,
        cast(null as int) as generation,
        cast(null as string) as leader,
        count_members,
        cast(null as timestamp) as current_state_at,
        'log' as source,
        kind,
        source_partition,
        source_offset,
        cast(null as string) as snapshot_id,
        cast(null as bigint) as current_state_at_ms
    from modern_members
    union all
    select
        group_id,
        observed_at,
        'Dead',
        case kind when 'kip848' then 'consumer' else kind end,
        null,
        null,
        null,
        0,
        null,
        'log',
        kind,
        source_partition,
        source_offset,
        null,
        null
    from modern_deleted
),

snapshot_observations as (
    select
        g.group_id,
        g.snapshot_at as observed_at,
        g.state,
        g.protocol_type,
        g.protocol,
        g.count_members,
        g.snapshot_id,
        lag(g.state) over (partition by g.group_id order by g.snapshot_at) as previous_state
    from {{ ref('stg_snapshots__groups') }} as g
    inner join {{ ref('stg_snapshots__complete_snapshots') }} as b on g.snapshot_id = b.snapshot_id
),

snapshots as (
    select
        group_id,
        observed_at,
        state,
        protocol_type,
        protocol,
        cast(null as int) as generation,
        cast(null as string) as leader,
        count_members,
        cast(null as timestamp) as current_state_at,
        'snapshot' as source,
        'snapshot' as kind,
        cast(null as int) as source_partition,
        cast(null as bigint) as source_offset,
        snapshot_id,
        cast(null as bigint) as current_state_at_ms
    from snapshot_observations
    where previous_state is null or previous_state <> state
)

select
    group_id,
    observed_at,
    state,
    protocol_type,
    protocol,
    generation,
    leader,
    count_members,
    current_state_at,
    source,
    kind,
    source_partition,
    source_offset,
    snapshot_id,
    current_state_at_ms
from (
    select * from classic
    union all
    select * from modern
    union all
    select * from snapshots
) as observations
