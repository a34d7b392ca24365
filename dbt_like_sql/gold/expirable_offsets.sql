-- For every committed offset: whether Kafka's expiration rules (KIP-211, KIP-496) make it a
-- candidate, which rule applies, its base time and when it expires. This follows the group
-- coordinator (OffsetMetadataManager.cleanupExpiredOffsets): the group's kind picks the
-- candidates (topics the group is not subscribed to, isSubscribedToTopic) and their base time
-- (offsetExpirationCondition of ClassicGroup, ConsumerGroup, StreamsGroup); for a candidate, a
-- legacy per-offset expire timestamp replaces base + offsets.retention.minutes; an offset with a
-- pending transactional commit never expires. KIP-848 and streams groups: commit time in every
-- state, topics not subscribed (a streams group subscribes to nothing while Empty). Share groups
-- keep no committed offsets here (their state is in __share_group_state).
with offsets as (
    select * from {{ ref('committed_offsets') }}
),
groups as (
    select * from {{ ref('group_state') }}
),
subscribed as (
    select `group`, topic from {{ ref('group_subscriptions') }}
),
unknown_subscriptions as (
    -- consumer-protocol members whose subscription could not be read: Kafka then expires nothing
    select distinct `group` from {{ ref('group_members') }}
    where not subscription_decoded and subscribed_topic_regex is null
),
pending as (
    select distinct `group`, topic, `partition` from {{ source('bronze', 'pending_offset_commits') }}
),
retention as (
    select minutes from {{ ref('offsets_retention') }}
),
facts as (
    select o.*, coalesce(g.state, 'Empty') as group_state,
           coalesce(g.classification, 'standalone') as classification,
           g.protocol_type, g.current_state_timestamp, g.state_since, g.state_source,
           s.topic is not null as topic_subscribed,
           u.`group` is not null as subscriptions_unknown,
           p.`group` is not null as pending_transaction,
           (select minutes from retention) as retention_minutes
    from offsets o
    left join groups g on g.`group` = o.`group`
    left join subscribed s on s.`group` = o.`group` and s.topic = o.topic
    left join unknown_subscriptions u on u.`group` = o.`group`
    left join pending p on p.`group` = o.`group` and p.topic = o.topic and p.`partition` = o.`partition`
),
by_group as (
    select *,
           case
             when pending_transaction then null
             when classification = 'kip848_consumer' then
               case when topic_subscribed then null else 'kip848_unsubscribed_topic' end
             when classification = 'streams' then
               case when topic_subscribed then null else 'streams_unsubscribed_topic' end
             when classification = 'share' then null
             when group_state = 'Dead' or classification = 'standalone' then 'standalone'
             when group_state = 'Empty' then 'empty_group'
             when group_state = 'Stable' and classification = 'consumer' and not subscriptions_unknown
                  and not topic_subscribed then 'unsubscribed_topic'
           end as group_rule,
           case
             when pending_transaction then 'pending transactional commit'
             when classification in ('kip848_consumer', 'streams') and topic_subscribed
               then 'topic subscribed by a member'
             when classification = 'share' then 'share groups keep no committed offsets'
             when group_state in ('PreparingRebalance', 'CompletingRebalance') then 'group is rebalancing'
             when group_state = 'Stable' and classification = 'other_protocol'
               then concat('Stable group with protocol type ', protocol_type)
             when group_state = 'Stable' and subscriptions_unknown then 'subscriptions unknown'
             when group_state = 'Stable' and topic_subscribed then 'topic subscribed by a member'
           end as not_eligible_reason
    from facts
),
timed as (
    select *,
           -- An Empty group's base is when it became Empty; snapshots only bound that time.
           case when group_rule = 'empty_group'
                then coalesce(current_state_timestamp,
                              case when state_source = 'snapshot' then state_since end,
                              commit_time_estimate)
                when group_rule is not null then commit_time_estimate end as base_time
    from by_group
),
ruled as (
    select *,
           case when group_rule is null then 'not_eligible'
                when expire_timestamp is not null then 'legacy_expire_timestamp'
                else group_rule end as rule,
           case when group_rule is null then null
                when expire_timestamp is not null then expire_timestamp
                else base_time + make_dt_interval(0, 0, cast(retention_minutes as int), 0) end as expires_at
    from timed
)
select `group`, topic, `partition`, committed_offset, commit_timestamp, commit_time_estimate,
       commit_time_source, group_state, classification, rule,
       coalesce(not_eligible_reason, case when rule = 'not_eligible' then 'no rule applies' end)
           as not_eligible_reason,
       base_time,
       -- exact when the times come from the log; from snapshots they are upper bounds
       (rule <> 'not_eligible' and (commit_time_source = 'snapshot'
            or (group_rule = 'empty_group' and current_state_timestamp is null and state_source = 'snapshot')))
           as base_time_estimated,
       retention_minutes, expires_at,
       coalesce(expires_at <= timestamp {{ var("as_of") | sql_string }}, false) as expired_now,
       round((unix_micros(expires_at) - unix_micros(timestamp {{ var("as_of") | sql_string }})) / 3600e6, 3)
           as hours_until_expiry,
       timestamp {{ var("as_of") | sql_string }} as evaluated_at
from ruled
