-- Every group's state now. The log says Stable, Empty or Dead as of its latest record; a
-- snapshot newer than that record says what DescribeGroups reported (including the transitional
-- PreparingRebalance and CompletingRebalance). A group that has committed offsets but no group
-- record at all is a standalone group (assign + commit), which Kafka lists as Empty.
-- The group's kind (classification) follows its latest record: Kafka converts a group between
-- the classic and the KIP-848 protocol by writing the other protocol's records.
-- Where the snapshots and the log meet:
--  * The time a state began is the log's whenever the log's latest record wrote the state the
--    snapshot reports and no snapshot saw another state after that record. Kafka writes a group
--    record at every return to Empty (GroupMetadataManager.completeClassicGroupJoin, with the
--    currentStateTimestamp ClassicGroup.transitionTo set), so a group that ran between two
--    snapshots is Empty since its latest record, not since the first snapshot that saw it Empty.
--  * A standalone group (no protocol type) writes no group record and is always Empty: it is idle
--    since its last commit, not since a snapshot first listed it.
--  * A snapshot whose describe call failed (member_count null: ACLs, a coordinator loading or
--    moving) does not know the members. The log's members stand where the log's latest record
--    wrote the state ListGroups reports; otherwise the members are unknown (is_membership_known).
--  * A group the latest snapshot asked about by name and no describe API knew (GROUP_ID_NOT_FOUND)
--    is gone when the log's latest record of it is older: deleted since (kafka-consumer-groups
--    --delete, another tool) and its tombstones not ingested yet.
with history as (
    select * from {{ ref('group_state_history') }}
),

latest_log as (
    select
        group_id,
        max_by(struct(*), source_offset) as r
    from history
    where source = 'log'
    group by group_id
),

latest_snapshot as (
    select
        snapshot_id,
        snapshot_at
    from {{ ref('stg_snapshots__complete_snapshots') }} as s
    where s.is_latest
),

snapshot_now as (
    select
        g.group_id,
        g.group_type,
        g.state,
        g.protocol_type,
        g.protocol,
        g.count_members,
        g.snapshot_at,
        g.snapshot_id
    from {{ ref('stg_snapshots__groups') }} as g
    inner join latest_snapshot as l on g.snapshot_id = l.snapshot_id
),

snapshot_states as (
    select
        g.group_id,
        g.snapshot_at,
        g.state
    from {{ ref('stg_snapshots__groups') }} as g
    inner join {{ ref('stg_snapshots__complete_snapshots') }} as c on g.snapshot_id = c.snapshot_id
),

snapshot_last_other as (
    -- the last snapshot that saw the group in another state than the latest snapshot does
    select
        o.group_id,
        max(o.snapshot_at) as last_other_at
    from snapshot_states as o
    inner join snapshot_now as n on o.group_id = n.group_id and o.state <> n.state
    group by o.group_id
),

snapshot_gone as (
    select
        e.subject as group_id,
        e.snapshot_at
    from {{ ref('stg_snapshots__errors') }} as e
    inner join latest_snapshot as l on e.snapshot_id = l.snapshot_id
    where e.scope = 'group' and e.operation = 'DescribeGroups' and e.error_name = 'GROUP_ID_NOT_FOUND'
),

snapshot_since as (
    -- when the snapshots first saw the current state (the latest change row)
    select
        group_id,
        max(observed_at) as since
    from history
    where source = 'snapshot'
    group by group_id
),

standalone as (
    -- a standalone group has been Empty since its last commit
    select
        group_id,
        max(estimated_committed_at) as last_commit
    from {{ ref('committed_offsets') }}
    group by group_id
),

combined as (
    select
        coalesce(l.group_id, s.group_id, o.group_id) as group_id,
        case
            when x.group_id is not null and (l.group_id is null or x.snapshot_at > l.r.observed_at) then 'gone'
            when
                s.group_id is not null and (l.group_id is null or s.snapshot_at > l.r.observed_at)
                and not coalesce(s.count_members is null and s.state = l.r.state, false)
                then 'snapshot'
            when l.group_id is not null then 'log'
            else 'offsets'
        end as state_source,
        l.r as log,
        s.group_type as snapshot_group_type,
        s.state as snapshot_state,
        s.protocol_type as snapshot_protocol_type,
        s.protocol as snapshot_protocol,
        s.count_members as snapshot_count_members,
        s.snapshot_at,
        s.snapshot_id,
        ss.since as snapshot_since,
        o.last_commit,
        x.snapshot_at as gone_at,
        s.state = l.r.state and coalesce(lo.last_other_at < l.r.observed_at, true) as log_state_holds
    from latest_log as l
    full outer join snapshot_now as s on l.group_id = s.group_id
    full outer join standalone as o on o.group_id = coalesce(l.group_id, s.group_id)
    left join snapshot_since as ss on ss.group_id = coalesce(l.group_id, s.group_id, o.group_id)
    left join snapshot_last_other as lo on lo.group_id = coalesce(l.group_id, s.group_id, o.group_id)
    left join snapshot_gone as x on x.group_id = coalesce(l.group_id, s.group_id, o.group_id)
),

resolved as (
    select
        group_id,
        state_source,
        -- ListGroups' group type when a snapshot is the newer source, else the latest record's
        case
            when state_source = 'snapshot' and snapshot_group_type is not null
                then case snapshot_group_type when 'consumer' then 'kip848' else snapshot_group_type end
            else coalesce(log.kind, 'classic')
        end as kind,
        case state_source
            when 'snapshot' then snapshot_state when 'log' then log.state when 'gone' then 'Dead'
            else 'Empty'
        end as state,
        case state_source
            when 'snapshot' then snapshot_protocol_type when 'offsets' then ''
            else log.protocol_type
        end as protocol_type,
        case state_source when 'snapshot' then snapshot_protocol else log.protocol end as protocol,
        log.generation,
        log.leader,
        case state_source
            when 'snapshot' then snapshot_count_members when 'log' then log.count_members
            else 0
        end as count_members,
        -- a group with members whose describe failed: nobody can say what they subscribe to
        not coalesce(
            state_source = 'snapshot' and snapshot_count_members is null
            and snapshot_state not in ('Empty', 'Dead'),
            false
        ) as is_membership_known,
        -- The log's record of a transition is exact; a snapshot only bounds when it happened.
        -- So when a newer snapshot reports the state the latest log record wrote, and no
        -- snapshot saw another state after that record, the log's times stand.
        case when state_source = 'log' or (state_source = 'snapshot' and log_state_holds) then log.current_state_at
        end as current_state_at,
        case
            when state_source = 'log' or (state_source = 'snapshot' and log_state_holds) then log.current_state_at_ms
        end as current_state_at_ms,
        case
            when state_source = 'gone' then gone_at
            when state_source = 'log' or log_state_holds then coalesce(log.current_state_at, log.observed_at)
            when state_source = 'snapshot' then coalesce(snapshot_since, snapshot_at)
            else last_commit
        end as state_entered_at,
        last_commit,
        case state_source
            when 'snapshot' then snapshot_at when 'log' then log.observed_at when 'gone' then gone_at
        end as observed_at,
        log.kind as log_kind,
        log.source_partition as log_source_partition,
        log.source_offset as log_source_offset,
        snapshot_id
    from combined
),

classified as (
    select
        *,
        case
            when kind = 'kip848' then 'kip848_consumer'
            when kind in ('share', 'streams') then kind
            when protocol_type = 'consumer' then 'consumer'
            when protocol_type is null or protocol_type = '' then 'standalone'
            else 'other_protocol'
        end as classification
    from resolved
)

select
    group_id,
    state,
    classification,
    protocol_type,
    protocol,
    generation,
    leader,
    count_members,
    is_membership_known,
    current_state_at,
    -- A standalone group is always Empty and Kafka expires its offsets by their commit times
    -- (ClassicGroup.offsetExpirationCondition without a protocol type): idle since its last commit.
    case
        when classification = 'standalone' and state = 'Empty' then coalesce(last_commit, state_entered_at)
        else state_entered_at
    end as state_entered_at,
    state_source,
    observed_at,
    log_kind,
    log_source_partition,
    log_source_offset,
    snapshot_id,
    current_state_at_ms
from classified
