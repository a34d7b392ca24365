-- The latest offset record of every group, topic and partition in __consumer_offsets,
-- tombstones included: a tombstone row says the offset was removed and when.
-- A group's records all live in one partition of __consumer_offsets, so the highest source
-- offset is the latest record; an incremental run folds in only the newly ingested records
-- (they are all later than what the table holds).
with records as (
    select * from {{ ref('stg_kafka__offset_commits', new_only=true) }}
),

latest as (
    -- where each key's latest record sits in the log. Two numbers per key make a hash
    -- aggregate; max_by over the whole record made Spark sort every record, which took five
    -- times as long. The semi join below then keeps exactly those records: (source_partition,
    -- source_offset) identifies a record, and this result (two numbers per key) is small
    -- enough to broadcast.
    select
        max_by(source_partition, source_offset) as source_partition,
        max(source_offset) as source_offset
    from records
    group by group_id, topic, partition_id
)

select /*+ broadcast(l) */
    group_id,
    topic,
    partition_id,
    is_tombstone as is_removed,
    committed_offset,
    leader_epoch,
    metadata,
    committed_at,
    legacy_expires_at,
    value_version,
    appended_at,
    source_partition,
    source_offset,
    -- the times as Kafka stored them, also where the timestamps cannot hold them (null there)
    committed_at_ms,
    legacy_expires_at_ms
from records as r
left semi join latest as l on r.source_partition = l.source_partition and r.source_offset = l.source_offset
