-- KIP-490's non-consumed-total per time bucket, topic and partition: messages deleted before a
-- watched group consumed them (summed over the watched groups), from unconsumed_messages: at most
-- (Kafka's own count would use the offset in force at the moment of deletion) and at least.
{% set bucket_seconds = var('metrics_bucket_minutes') * 60 %}
select
    timestamp_seconds(floor(unix_seconds(observed_at) / {{ bucket_seconds }}) * {{ bucket_seconds }})
        as bucket_start_at,
    {{ var('metrics_bucket_minutes') }} as bucket_minutes,
    topic,
    partition_id,
    sum(count_lost) as non_consumed_total,
    sum(count_lost_at_least) as non_consumed_at_least,
    cast(count(distinct group_id) as int) as count_groups_affected
from {{ ref('unconsumed_messages') }}
group by 1, 2, 3, 4
