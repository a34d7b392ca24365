-- The latest offset record of every group, topic and partition in __consumer_offsets,
-- tombstones included: a tombstone row says the offset was removed and when.
-- A group's records all live in one partition of __consumer_offsets, so the highest source
-- offset is the latest record; an incremental run folds in only the newly ingested records
-- (they are all later than what the table holds).
select `group`, topic, `partition`,
       latest.tombstone as removed,
       latest.offset as committed_offset,
       latest.leader_epoch,
       latest.metadata,
       latest.commit_timestamp,
       latest.expire_timestamp,
       latest.value_version,
       latest.source_timestamp as record_timestamp,
       latest.source_partition,
       latest.source_offset
from (
    select `group`, topic, `partition`,
           max_by(named_struct(
               'tombstone', tombstone, 'offset', offset, 'leader_epoch', leader_epoch,
               'metadata', metadata, 'commit_timestamp', commit_timestamp,
               'expire_timestamp', expire_timestamp, 'value_version', value_version,
               'source_timestamp', source_timestamp, 'source_partition', source_partition,
               'source_offset', source_offset), source_offset) as latest
    from {{ source('bronze', 'offset_commit_records', new_only=true) }}
    group by `group`, topic, `partition`
)
