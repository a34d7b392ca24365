-- KIP-496 coordinator metrics per time bucket, from the log: offset commits (one per commit
-- record, by commit time), offset expirations and offset deletions (tombstones, by the time they
-- were written) and completed rebalances (one per group record with members). Kafka writes
-- expirations and deletions alike as tombstones, so each tombstone is classified by the rules:
-- it is an expiration when the offset it removes was a candidate for expiration (by the group's
-- state in the log at that moment) and had expired by the tombstone's time; otherwise a deletion.
-- For KIP-848 groups the subscription at that moment is not reconstructed: their offsets count as
-- candidates (base time = commit time), so an administrative deletion of an old offset of a
-- subscribed topic would be counted as an expiration. Deletions the project performed itself are
-- known exactly from cleanup_audit: a tombstone within 10 minutes of one of them is a deletion,
-- and an audited OffsetDelete whose tombstone is not in the log (a cluster seen only through the
-- admin API) still counts, at the time it was sent.
{% set bucket_seconds = var('metrics_bucket_minutes') * 60 %}
with raw_tombstones as (
    select `group`, topic, `partition`, source_timestamp as removed_at, source_offset
    from {{ source('bronze', 'offset_commit_records') }} where tombstone
),
removed_keys as (
    -- only partitions that ever had a tombstone need the record before it; sorting just their
    -- records instead of every commit is what keeps this model fast
    select distinct `group`, topic, `partition` from raw_tombstones
),
records as (
    select r.`group`, r.topic, r.`partition`, r.tombstone, r.commit_timestamp, r.source_timestamp, r.source_offset,
           lag(named_struct('tombstone', r.tombstone, 'commit_timestamp', r.commit_timestamp,
                            'expire_timestamp', r.expire_timestamp))
               over (partition by r.`group`, r.topic, r.`partition` order by r.source_offset) as previous
    from {{ source('bronze', 'offset_commit_records') }} r
    left semi join removed_keys k on k.`group` = r.`group` and k.topic = r.topic and k.`partition` = r.`partition`
),
tombstones as (
    select `group`, topic, `partition`, source_timestamp as removed_at, source_offset,
           previous.commit_timestamp, previous.expire_timestamp
    from records
    where tombstone and previous is not null and not previous.tombstone
),
stream as (
    -- tombstones interleaved with the group's records, to find the group record in force
    select `group`, source_offset,
           named_struct('tombstone', tombstone, 'member_count', member_count,
                        'protocol_type', protocol_type, 'current_state_timestamp', current_state_timestamp,
                        'source_partition', source_partition, 'source_offset', source_offset) as group_record,
           cast(null as string) as topic, cast(null as int) as `partition`,
           cast(null as timestamp) as removed_at, cast(null as timestamp) as commit_timestamp,
           cast(null as timestamp) as expire_timestamp
    from {{ source('bronze', 'group_metadata_records') }}
    union all
    select `group`, source_offset, null, topic, `partition`, removed_at, commit_timestamp, expire_timestamp
    from tombstones
),
tombstones_in_context as (
    select * from (
        select *, last(group_record, true) over (partition by `group` order by source_offset
                                                 rows between unbounded preceding and current row) as group_then
        from stream
    ) where group_record is null
),
subscriptions_then as (
    select distinct source_partition, source_offset, topic
    from (select source_partition, source_offset, explode(subscribed_topics) as topic
          from {{ source('bronze', 'group_metadata_members') }} where subscribed_topics is not null)
),
kip848_groups as (
    select distinct `group` from {{ source('bronze', 'consumer_group_records') }}
),
project_deletions as (
    select `group`, topic, `partition`, action, at
    from {{ source('cleanup', 'cleanup_audit') }}
    where outcome = 'deleted'
),
tombstones_by_project as (
    -- a DeleteGroups (topic null) removes every offset of the group
    select distinct t.`group`, t.source_offset
    from raw_tombstones t
    join project_deletions d
      on d.`group` = t.`group` and (d.topic is null or (d.topic = t.topic and d.`partition` = t.`partition`))
     and abs(unix_seconds(d.at) - unix_seconds(t.removed_at)) <= 600
),
retention as (
    select minutes from {{ ref('offsets_retention') }}
),
classified as (
    select t.removed_at,
           p.source_offset is not null as by_project,
           case when k.`group` is not null then t.commit_timestamp
                when t.group_then is null or t.group_then.tombstone
                     or coalesce(t.group_then.protocol_type, '') = '' then t.commit_timestamp
                when t.group_then.member_count = 0
                     then coalesce(t.group_then.current_state_timestamp, t.commit_timestamp)
                when t.group_then.protocol_type = 'consumer' and s.topic is null then t.commit_timestamp
           end as base_time,
           t.expire_timestamp
    from tombstones_in_context t
    left join tombstones_by_project p on p.`group` = t.`group` and p.source_offset = t.source_offset
    left join kip848_groups k on k.`group` = t.`group`
    left join subscriptions_then s
      on s.source_partition = t.group_then.source_partition and s.source_offset = t.group_then.source_offset
     and s.topic = t.topic
),
events as (
    select commit_timestamp as at, 'commit' as event
    from {{ source('bronze', 'offset_commit_records') }} where not tombstone
    union all
    select removed_at,
           case when by_project then 'deletion'
                when base_time is not null and (
                  (expire_timestamp is not null and removed_at >= expire_timestamp)
                  or (expire_timestamp is null
                      and removed_at >= base_time + make_dt_interval(0, 0, cast((select minutes from retention) as int), 0)))
                then 'expiration' else 'deletion' end
    from classified
    union all
    select d.at, 'deletion'
    from project_deletions d
    left anti join raw_tombstones t
      on t.`group` = d.`group` and t.topic = d.topic and t.`partition` = d.`partition`
     and abs(unix_seconds(d.at) - unix_seconds(t.removed_at)) <= 600
    where d.action = 'OffsetDelete'
    union all
    select source_timestamp, 'rebalance'
    from {{ source('bronze', 'group_metadata_records') }} where not tombstone and member_count > 0
)
select timestamp_seconds(floor(unix_seconds(at) / {{ bucket_seconds }}) * {{ bucket_seconds }}) as bucket_start,
       {{ var('metrics_bucket_minutes') }} as bucket_minutes,
       count_if(event = 'commit') as offset_commits,
       count_if(event = 'expiration') as offset_expirations,
       count_if(event = 'deletion') as offset_deletions,
       count_if(event = 'rebalance') as group_completed_rebalances
from events
where at is not null
group by 1
