-- Every offset tombstone in __consumer_offsets, with the commit it removed (its commit time and
-- legacy expire time) and the base time of Kafka's expiration rule for that offset, from the
-- group's state in the log at that moment: null when the offset was not a candidate.
-- coordinator_metrics decides expiration or deletion with the retention in force.
-- A tombstone's predecessor is the record before it of the same group, topic and partition
-- (a group's records all live in one partition of the log, so source_offset orders them). A full
-- run sorts the records of the partitions that ever had a tombstone. An incremental run looks
-- among the new records and, before them, at log_offset_state as this model saw it last time:
-- the latest record of every partition before the new files.
-- KIP-848 groups' subscriptions at that moment are not reconstructed: their offsets count as
-- candidates with base time = commit time.
-- Times are carried in Kafka's epoch milliseconds too (*_ms), which hold what the timestamps cannot
-- (outside the years 1-9999), so coordinator_metrics judges with the values Kafka judged with.
with new_records as (
    -- in a full run: every record
    select * from {{ source('bronze', 'offset_commit_records', new_only=true) }}
),

removed_keys as (
    -- only partitions with a tombstone need the record before it; sorting just their records
    -- instead of every commit is what keeps a full run fast
    select distinct
        `group`,
        topic,
        `partition`
    from new_records
    where tombstone
),

chain as (
    -- broadcast: a hash lookup per record in place of shuffling and sorting every commit
    select /*+ broadcast(k) */
        r.`group`,
        r.topic,
        r.`partition`,
        r.tombstone,
        r.commit_timestamp,
        r.expire_timestamp,
        r.source_timestamp,
        r.source_partition,
        r.source_offset,
        false as known_before,
        coalesce(unix_millis(r.commit_timestamp), r.commit_timestamp_out_of_range_ms) as commit_timestamp_ms,
        coalesce(unix_millis(r.expire_timestamp), r.expire_timestamp_out_of_range_ms) as expire_timestamp_ms
    from new_records as r
    left semi join removed_keys as k on r.`group` = k.`group` and r.topic = k.topic and r.`partition` = k.`partition`
    {% if is_incremental() %}
        union all
        select /*+ broadcast(k) */
            s.`group`,
            s.topic,
            s.`partition`,
            s.removed,
            s.commit_timestamp,
            s.expire_timestamp,
            s.record_timestamp,
            s.source_partition,
            s.source_offset,
            true,
            s.commit_timestamp_ms,
            s.expire_timestamp_ms
        from {{ ref('log_offset_state', at_last_run=true) }} as s
        left semi join
            removed_keys as k
            on s.`group` = k.`group` and s.topic = k.topic and s.`partition` = k.`partition`
    {% endif %}
),

records as (
    select
        *,
        lag(named_struct(
            'tombstone', tombstone, 'commit_timestamp', commit_timestamp,
            'expire_timestamp', expire_timestamp, 'commit_timestamp_ms', commit_timestamp_ms,
            'expire_timestamp_ms', expire_timestamp_ms
        ))
            over (partition by `group`, topic, `partition` order by source_offset) as previous
    from chain
),

tombstones as (
    select
        `group`,
        topic,
        `partition`,
        source_timestamp as removed_at,
        source_partition,
        source_offset,
        previous is not null and not previous.tombstone as removed_an_offset,
        if(previous.tombstone, null, previous.commit_timestamp) as commit_timestamp,
        if(previous.tombstone, null, previous.expire_timestamp) as expire_timestamp,
        if(previous.tombstone, null, previous.commit_timestamp_ms) as commit_timestamp_ms,
        if(previous.tombstone, null, previous.expire_timestamp_ms) as expire_timestamp_ms
    from records
    where tombstone and not known_before
),

stream as (
    -- tombstones interleaved with the group's records, to find the group record in force
    select
        `group`,
        source_offset,
        named_struct(
            'tombstone', tombstone, 'member_count', member_count,
            'protocol_type', protocol_type,
            'current_state_timestamp_ms', coalesce(
                unix_millis(current_state_timestamp),
                current_state_timestamp_out_of_range_ms
            ),
            'source_partition', source_partition, 'source_offset', source_offset
        ) as group_record,
        cast(null as string) as topic,
        cast(null as int) as `partition`,
        cast(null as timestamp) as removed_at,
        cast(null as int) as source_partition,
        cast(null as boolean) as removed_an_offset,
        cast(null as timestamp) as commit_timestamp,
        cast(null as timestamp) as expire_timestamp,
        cast(null as bigint) as commit_timestamp_ms,
        cast(null as bigint) as expire_timestamp_ms
    from {{ source('bronze', 'group_metadata_records') }}
    union all
    select
        `group`,
        source_offset,
        null,
        topic,
        `partition`,
        removed_at,
        source_partition,
        removed_an_offset,
        commit_timestamp,
        expire_timestamp,
        commit_timestamp_ms,
        expire_timestamp_ms
    from tombstones
),

tombstones_in_context as (
    select * from (
        select
            *,
            last(group_record, true) over (
                partition by `group` order by source_offset
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
        from {{ source('bronze', 'group_metadata_members') }}
        where subscribed_topics is not null
    )
),

kip848_since as (
    -- the group's first KIP-848 record: from then on it is a KIP-848 group
    select
        `group`,
        min(source_offset) as first_offset
    from {{ source('bronze', 'consumer_group_records') }}
    group by `group`
),

judged as (
    select
        t.`group`,
        t.topic,
        t.`partition`,
        t.removed_at,
        t.source_partition,
        t.source_offset,
        t.removed_an_offset,
        t.commit_timestamp,
        t.expire_timestamp,
        t.commit_timestamp_ms,
        t.expire_timestamp_ms,
        case
            when not t.removed_an_offset then null
            when k.`group` is not null then t.commit_timestamp_ms
            when
                t.group_then is null or t.group_then.tombstone
                or coalesce(t.group_then.protocol_type, '') = '' then t.commit_timestamp_ms
            when t.group_then.member_count = 0
                then coalesce(t.group_then.current_state_timestamp_ms, t.commit_timestamp_ms)
            when t.group_then.protocol_type = 'consumer' and s.topic is null then t.commit_timestamp_ms
        end as base_time_ms
    from tombstones_in_context as t
    left join kip848_since as k on t.`group` = k.`group` and t.source_offset > k.first_offset
    left join subscriptions_then as s
        on
            t.group_then.source_partition = s.source_partition and t.group_then.source_offset = s.source_offset
            and t.topic = s.topic
)

select
    `group`,
    topic,
    `partition`,
    removed_at,
    source_partition,
    source_offset,
    removed_an_offset,
    commit_timestamp,
    expire_timestamp,
    {{ lake_timestamp('base_time_ms') }} as base_time,
    commit_timestamp_ms,
    expire_timestamp_ms,
    base_time_ms
from judged
