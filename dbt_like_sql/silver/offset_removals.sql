-- Every offset tombstone in __consumer_offsets, with the commit it removed (its commit time and
-- legacy expire time) and the base time of Kafka's expiration rule for that offset, from the
-- group's state in the log at that moment: null when the offset was not a candidate.
-- coordinator_metrics decides expiration or deletion with the retention in force.
-- A tombstone's predecessor is the record before it of the same group, topic and partition
-- (a group's records all live in one partition of the log, so source_offset orders them). A full
-- run sorts the records of the partitions that ever had a tombstone. An incremental run looks
-- among the new records and, before them, at log_offset_state as this model saw it last time:
-- the latest record of every partition before the new files.
-- The group record in force at the tombstone is the group's latest record that says which kind of
-- group it is: a classic group record or the group metadata record of a KIP-848, share or streams
-- group, tombstones included. Kafka converts a group between the classic and the KIP-848 protocol
-- by tombstoning the old kind's records and writing the new kind's (GroupMetadataManager
-- convertToConsumerGroup, convertToClassicGroup, maybeDeleteEmptyConsumerGroup), so a group that
-- went back to classic is judged by the classic rules again. KIP-848, share and streams groups'
-- subscriptions at that moment are not reconstructed: their offsets count as candidates with base
-- time = commit time (ModernGroup's offsetExpirationCondition).
-- Times are carried in Kafka's epoch milliseconds too (*_ms), which hold what the timestamps cannot
-- (outside the years 1-9999), so coordinator_metrics judges with the values Kafka judged with.
with new_records as (
    -- in a full run: every record
    select * from {{ ref('stg_kafka__offset_commits', new_only=true) }}
),

removed_keys as (
    -- only partitions with a tombstone need the record before it; sorting just their records
    -- instead of every commit is what keeps a full run fast
    select distinct
        group_id,
        topic,
        partition_id
    from new_records
    where is_tombstone
),

chain as (
    -- broadcast: a hash lookup per record in place of shuffling and sorting every commit
    select /*+ broadcast(k) */
        r.group_id,
        r.topic,
        r.partition_id,
        r.is_tombstone,
        r.committed_at,
        r.legacy_expires_at,
        r.appended_at,
        r.source_partition,
        r.source_offset,
        false as known_before,
        r.committed_at_ms,
        r.legacy_expires_at_ms
    from new_records as r
    left semi join
        removed_keys as k
        on r.group_id = k.group_id and r.topic = k.topic and r.partition_id = k.partition_id
    {% if is_incremental() %}
        union all
        select /*+ broadcast(k) */
            s.group_id,
            s.topic,
            s.partition_id,
            s.is_removed,
            s.committed_at,
            s.legacy_expires_at,
            s.appended_at,
            s.source_partition,
            s.source_offset,
            true,
            s.committed_at_ms,
            s.legacy_expires_at_ms
        from {{ ref('log_offset_state', at_last_run=true) }} as s
        left semi join
            removed_keys as k
            on s.group_id = k.group_id and s.topic = k.topic and s.partition_id = k.partition_id
    {% endif %}
),

records as (
    select
        *,
        lag(named_struct(
            'is_tombstone', is_tombstone, 'committed_at', committed_at,
            'legacy_expires_at', legacy_expires_at, 'committed_at_ms', committed_at_ms,
            'legacy_expires_at_ms', legacy_expires_at_ms
        ))
            over (partition by group_id, topic, partition_id order by source_offset) as previous
    from chain
),

tombstones as (
    select
        group_id,
        topic,
        partition_id,
        appended_at as removed_at,
        source_partition,
        source_offset,
        previous is not null and not previous.is_tombstone as is_offset_removed,
        if(previous.is_tombstone, null, previous.committed_at) as committed_at,
        if(previous.is_tombstone, null, previous.legacy_expires_at) as legacy_expires_at,
        if(previous.is_tombstone, null, previous.committed_at_ms) as committed_at_ms,
        if(previous.is_tombstone, null, previous.legacy_expires_at_ms) as legacy_expires_at_ms
    from records
    where is_tombstone and not known_before
),

group_records as (
    -- the records that say which kind of group a group is: classic group records first
    select
        group_id,
        source_offset,
        named_struct(
            'is_modern', false, 'is_tombstone', is_tombstone, 'count_members', count_members,
            'protocol_type', protocol_type,
            'current_state_at_ms', current_state_at_ms,
            'source_partition', source_partition, 'source_offset', source_offset
        ) as group_record
    from {{ ref('stg_kafka__group_metadata') }}
    union all
    -- the group metadata record (the group epoch) of a KIP-848, share or streams group: Kafka
    -- writes it when the group is created and tombstones it last when the group is deleted or
    -- converted; member records come and go within the group
    select
        group_id,
        source_offset,
        named_struct(
            'is_modern', true, 'is_tombstone', is_tombstone, 'count_members', cast(null as int),
            'protocol_type', cast(null as string),
            'current_state_at_ms', cast(null as bigint),
            'source_partition', source_partition, 'source_offset', source_offset
        )
    from {{ ref('stg_kafka__consumer_groups') }}
    where record_type in ('consumer_group_metadata', 'share_group_metadata', 'streams_group_metadata')
),

stream as (
    -- tombstones interleaved with the group's records, to find the group record in force
    select
        group_id,
        source_offset,
        group_record,
        cast(null as string) as topic,
        cast(null as int) as partition_id,
        cast(null as timestamp) as removed_at,
        cast(null as int) as source_partition,
        cast(null as boolean) as is_offset_removed,
        cast(null as timestamp) as committed_at,
        cast(null as timestamp) as legacy_expires_at,
        cast(null as bigint) as committed_at_ms,
        cast(null as bigint) as legacy_expires_at_ms
    from group_records
    union all
    select
        group_id,
        source_offset,
        null,
        topic,
        partition_id,
        removed_at,
        source_partition,
        is_offset_removed,
        committed_at,
        legacy_expires_at,
        committed_at_ms,
        legacy_expires_at_ms
    from tombstones
),

tombstones_in_context as (
    select * from (
        select
            *,
            last(group_record, true) over (
                partition by group_id order by source_offset
                rows between unbounded preceding and current row
            ) as group_then
        from stream
    ) as with_group_then
    where group_record is null
),

subscriptions_then as (
    select distinct
        source_partition,
        source_offset,
        topic
    from (
        select
            source_partition,
            source_offset,
            explode(subscribed_topics) as topic
        from {{ ref('stg_kafka__group_members') }}
        where subscribed_topics is not null
    )
),

judged as (
    select
        t.group_id,
        t.topic,
        t.partition_id,
        t.removed_at,
        t.source_partition,
        t.source_offset,
        t.is_offset_removed,
        t.committed_at,
        t.legacy_expires_at,
        t.committed_at_ms,
        t.legacy_expires_at_ms,
        case
            when not t.is_offset_removed then null
            -- no group, a deleted one, a KIP-848, share or streams group, or a standalone one
            when
                t.group_then is null or t.group_then.is_tombstone or t.group_then.is_modern
                or coalesce(t.group_then.protocol_type, '') = '' then t.committed_at_ms
            when t.group_then.count_members = 0
                then coalesce(t.group_then.current_state_at_ms, t.committed_at_ms)
            when t.group_then.protocol_type = 'consumer' and s.topic is null then t.committed_at_ms
        end as base_at_ms
    from tombstones_in_context as t
    left join subscriptions_then as s
        on
            t.group_then.source_partition = s.source_partition and t.group_then.source_offset = s.source_offset
            and t.topic = s.topic
)

select
    group_id,
    topic,
    partition_id,
    removed_at,
    source_partition,
    source_offset,
    is_offset_removed,
    committed_at,
    legacy_expires_at,
    {{ lake_timestamp('base_at_ms') }} as base_at,
    committed_at_ms,
    legacy_expires_at_ms,
    base_at_ms
from judged
