-- Which topics each group subscribes to now, as the group coordinator counts them
-- (isSubscribedToTopic of ClassicGroup, ConsumerGroup and StreamsGroup):
--  * by name: the union of its members' subscribed topics (consumer-protocol subscriptions of
--    classic members, the topic names of KIP-848 member records);
--  * by regular expression (KIP-848): the topics the coordinator resolved each expression to
--    (record type 16). ConsumerGroup.updateResolvedRegularExpression adds them to the group's
--    subscribed topic names; the coordinator tombstones the record once no member uses it;
--  * by a streams topology (KIP-1071): its source and repartition source topics, only while the
--    group has members (StreamsGroup.isSubscribedToTopic: an Empty group subscribes to nothing).
with members as (
    select * from {{ ref('group_members') }}
),

groups as (
    select * from {{ ref('group_state') }}
),

by_name as (
    select
        group_id,
        member_id as subscriber,
        explode(subscribed_topics) as topic
    from members
    where subscribed_topics is not null
),

regex_latest as (
    select
        group_id,
        regular_expression,
        max_by(struct(is_tombstone, resolved_topics), source_offset) as r
    from {{ ref('stg_kafka__consumer_groups') }}
    where record_type = 'consumer_group_regular_expression'
    group by group_id, regular_expression
),

by_regex as (
    -- each member using the expression subscribes; the expression itself counts as one subscriber
    -- when its members are not known (a snapshot that did not describe them)
    select
        x.group_id,
        coalesce(m.member_id, concat('regex ', x.regular_expression)) as subscriber,
        explode(x.r.resolved_topics) as topic
    from regex_latest as x
    inner join groups as g on x.group_id = g.group_id and g.classification = 'kip848_consumer' and g.state <> 'Dead'
    left join members as m on x.group_id = m.group_id and x.regular_expression = m.subscribed_topic_regex
    where not x.r.is_tombstone
),

topology_latest as (
    select
        group_id,
        max_by(struct(is_tombstone, source_topics), source_offset) as r
    from {{ ref('stg_kafka__consumer_groups') }}
    where record_type = 'streams_group_topology'
    group by group_id
),

by_topology as (
    select
        t.group_id,
        explode(t.r.source_topics) as topic,
        g.count_members
    from topology_latest as t
    inner join groups as g on t.group_id = g.group_id and g.classification = 'streams'
    where not t.r.is_tombstone and g.state not in ('Empty', 'Dead') and g.count_members > 0
),

counted as (
    select
        group_id,
        topic,
        count(distinct subscriber) as count_subscribing_members
    from (
        select * from by_name
        union all
        select * from by_regex
    ) as subscribers
    group by group_id, topic
    union all
    select
        group_id,
        topic,
        count_members
    from by_topology
)

select
    group_id,
    topic,
    cast(max(count_subscribing_members) as int) as count_subscribing_members
from counted
group by group_id, topic
