-- The members of every group now, with what each subscribes to: the members listed in the
-- group's latest classic group record, the live KIP-848 members (latest member record not a
-- tombstone), or, when a snapshot is the newer source, the members the describe API of the
-- group's type returned (DescribeGroups, ConsumerGroupDescribe).
with groups as (
    select * from {{ ref('group_state') }}
),

classic as (
    select
        m.group_id,
        m.member_id,
        m.group_instance_id,
        m.client_id,
        m.client_host,
        m.subscribed_topics,
        cast(null as string) as subscribed_topic_regex,
        m.subscription_version is not null as is_subscription_decoded,
        'log' as source
    from groups as g
    inner join {{ ref('stg_kafka__group_members') }} as m
        on g.log_source_partition = m.source_partition and g.log_source_offset = m.source_offset
    where g.state_source = 'log' and g.log_kind = 'classic'
),

kip848_latest as (
    select
        group_id,
        member_id,
        max_by(
            struct(is_tombstone, client_id, client_host, subscribed_topic_names, subscribed_topic_regex), source_offset
        ) as r
    from {{ ref('stg_kafka__consumer_groups') }}
    where record_type = 'consumer_group_member_metadata'
    group by group_id, member_id
),

kip848 as (
    select
        k.group_id,
        k.member_id,
        cast(null as string) as group_instance_id,
        k.r.client_id,
        k.r.client_host,
        k.r.subscribed_topic_names as subscribed_topics,
        k.r.subscribed_topic_regex,
        true as is_subscription_decoded,
        'log' as source
    from kip848_latest as k
    inner join groups as g on k.group_id = g.group_id
    where not k.r.is_tombstone and g.state_source = 'log' and g.log_kind = 'kip848'
),

snapshot as (
    select
        m.group_id,
        m.member_id,
        m.group_instance_id,
        m.client_id,
        m.client_host,
        m.subscribed_topics,
        m.subscribed_topic_regex,
        m.subscribed_topics is not null or m.subscribed_topic_regex is not null as is_subscription_decoded,
        'snapshot' as source
    from groups as g
    inner join
        {{ ref('stg_snapshots__group_members') }} as m
        on g.snapshot_id = m.snapshot_id and g.group_id = m.group_id
    where g.state_source = 'snapshot'
)

select * from classic
union all
select * from kip848
union all
select * from snapshot
