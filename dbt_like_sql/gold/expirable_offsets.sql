-- For every committed offset: whether Kafka's expiration rules (KIP-211, KIP-496) make it a
-- candidate, which rule applies, its base time and when it expires. This follows the group
-- coordinator (OffsetMetadataManager.cleanupExpiredOffsets): the group's kind picks the
-- candidates (topics the group is not subscribed to, isSubscribedToTopic) and their base time
-- (offsetExpirationCondition of ClassicGroup, ConsumerGroup, StreamsGroup); for a candidate, a
-- legacy per-offset expire timestamp replaces base + offsets.retention.minutes; an offset with a
-- pending transactional commit never expires. KIP-848 and streams groups: commit time in every
-- state, topics not subscribed (a streams group subscribes to nothing while Empty). Share groups
-- keep no committed offsets here (their state is in __share_group_state).
-- The rules compute in Kafka's epoch milliseconds (the *_ms columns), as
-- OffsetExpirationConditionImpl does, so a time outside the years 1-9999 (a client may choose any
-- retention, and so any expire timestamp) still gets Kafka's verdict; the timestamp columns show
-- those times and are null outside that range.
with offsets as (
    select * from {{ ref('committed_offsets') }}
),

groups as (
    select * from {{ ref('group_state') }}
),

subscribed as (
    select
        group_id,
        topic
    from {{ ref('group_subscriptions') }}
),

unknown_subscriptions as (
    -- consumer-protocol members whose subscription could not be read: Kafka then expires nothing
    select distinct group_id from {{ ref('group_members') }}
    where not is_subscription_decoded and subscribed_topic_regex is null
),

pending as (
    select distinct
        group_id,
        topic,
        partition_id
    from {{ ref('stg_kafka__pending_offset_commits') }}
),

retention as (
    select minutes from {{ ref('offsets_retention') }}
),

facts as (
    select
        o.*,
        coalesce(g.state, 'Empty') as group_state,
        coalesce(g.classification, 'standalone') as classification,
        g.protocol_type,
        g.count_members,
        g.current_state_at,
        g.current_state_at_ms,
        g.state_entered_at,
        g.state_source,
        s.topic is not null as topic_subscribed,
        -- a member whose subscription could not be read, or members nobody could describe
        u.group_id is not null or not coalesce(g.is_membership_known, true) as subscriptions_unknown,
        p.group_id is not null as pending_transaction,
        (select minutes from retention) as retention_minutes,
        (select minutes from retention) * 60000 as retention_ms,
        unix_millis(timestamp {{ var("as_of") | sql_string }}) as as_of_ms
    from offsets as o
    left join groups as g on o.group_id = g.group_id
    left join subscribed as s on o.group_id = s.group_id and o.topic = s.topic
    left join unknown_subscriptions as u on o.group_id = u.group_id
    left join pending as p on o.group_id = p.group_id and o.topic = p.topic and o.partition_id = p.partition_id
),

by_group as (
    select
        *,
        case
            when pending_transaction then null
            when classification = 'kip848_consumer'
                then
                    case when topic_subscribed or subscriptions_unknown then null else 'kip848_unsubscribed_topic' end
            when classification = 'streams'
                then
                    case when topic_subscribed or subscriptions_unknown then null else 'streams_unsubscribed_topic' end
            when classification = 'share' then null
            when group_state = 'Dead' or classification = 'standalone' then 'standalone'
            when group_state = 'Empty' then 'empty_group'
            when
                group_state = 'Stable' and classification = 'consumer' and not subscriptions_unknown
                and not topic_subscribed then 'unsubscribed_topic'
        end as group_rule,
        case
            when pending_transaction then 'pending transactional commit'
            when classification in ('kip848_consumer', 'streams') and topic_subscribed
                then 'topic subscribed by a member'
            when classification in ('kip848_consumer', 'streams') and subscriptions_unknown
                then 'subscriptions unknown'
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
    select
        *,
        -- A legacy expire timestamp replaces base + retention: Kafka uses no base time then (and
        -- the client's retention may be negative, putting that timestamp before the commit).
        -- An Empty group's base is when it became Empty; snapshots only bound that time.
        case
            when legacy_expires_at_ms is not null then null
            when group_rule = 'empty_group'
                then coalesce(
                    current_state_at_ms,
                    case when state_source = 'snapshot' then unix_millis(state_entered_at) end,
                    estimated_committed_at_ms
                )
            when group_rule is not null then estimated_committed_at_ms
        end as base_at_ms
    from by_group
),

ruled as (
    select
        *,
        case
            when group_rule is null then 'not_eligible'
            when legacy_expires_at_ms is not null then 'legacy_expire_timestamp'
            else group_rule
        end as rule,
        -- isOffsetExpired: now >= expireTimestampMs, else now - base >= offsetsRetentionMs in
        -- Java longs, where a base so far in the past that now - base overflows is never expired
        -- (try_subtract is null exactly where Java's subtraction overflows)
        case
            when group_rule is null then false
            when legacy_expires_at_ms is not null then as_of_ms >= legacy_expires_at_ms
            else coalesce(try_subtract(as_of_ms, base_at_ms) >= retention_ms, false)
        end as expired,
        -- the instant Kafka's check starts to hold; null when it never will
        case
            when group_rule is null then null
            when legacy_expires_at_ms is not null then legacy_expires_at_ms
            when try_subtract(as_of_ms, base_at_ms) is null then null
            else try_add(base_at_ms, retention_ms)
        end as expires_at_ms
    from timed
)

select
    group_id,
    topic,
    partition_id,
    committed_offset,
    committed_at,
    estimated_committed_at,
    commit_time_source,
    group_state,
    classification,
    rule,
    coalesce(not_eligible_reason, case when rule = 'not_eligible' then 'no rule applies' end)
        as not_eligible_reason,
    {{ lake_timestamp('base_at_ms') }} as base_at,
    -- exact when the times come from the log; from snapshots they are upper bounds
    (rule <> 'not_eligible' and (
        commit_time_source = 'snapshot'
        or (group_rule = 'empty_group' and current_state_at_ms is null and state_source = 'snapshot')
    ))
        as is_base_estimated,
    retention_minutes,
    {{ lake_timestamp('expires_at_ms') }} as expires_at,
    expired as is_expired,
    -- Abandoned: the group reads on, but none of its members subscribes to the topic any more
    -- (known subscriptions). Its offset there is left behind, not a backlog: Kafka expires it
    -- by the unsubscribed-topic rule, and the lag and losses on it are no one's.
    coalesce(
        group_rule in ('unsubscribed_topic', 'kip848_unsubscribed_topic', 'streams_unsubscribed_topic'),
        false
    ) and coalesce(count_members, 0
    ) > 0 as is_abandoned,
    round((cast(expires_at_ms as double) - as_of_ms) / 3600e3, 3) as hours_until_expiry,
    timestamp {{ var("as_of") | sql_string }} as evaluated_at,
    estimated_committed_at_ms,
    base_at_ms,
    expires_at_ms
from ruled
