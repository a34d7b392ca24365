-- Which topics each group subscribes to now: the union of its members' subscribed topics
-- (consumer-protocol subscriptions and KIP-848 member records).
select `group`, topic, cast(count(distinct member_id) as int) as subscribing_members
from (
    select `group`, member_id, explode(subscribed_topics) as topic
    from {{ ref('group_members') }}
    where subscribed_topics is not null
)
group by `group`, topic
