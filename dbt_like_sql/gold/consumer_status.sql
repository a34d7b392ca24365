-- Burrow's consumer status, per group, topic and partition, over a window of the latest
-- observations of the group's committed offset (docs/consumer-status.md has the rules, the
-- window and where this differs from Burrow).
--
-- The window is consumer_observations: the latest observations of each partition's committed
-- offset (from its commits in the log, else from snapshots). The log end offset at an
-- observation's time is interpolated linearly between the snapshot before it and the one after
-- it (the rate the log grew at between them, as consumer_lag estimates write times); after the
-- latest snapshot it is that snapshot's, the latest one known (as Burrow takes the latest it
-- fetched); before the first snapshot it is unknown, and so is the lag. Nearest-snapshot joins
-- were the alternative: taking the one before makes every commit past it look caught up (lag 0,
-- so OK) when snapshots are minutes apart, taking the one after counts messages written after
-- the commit as lag.
--
-- The rules, in order (the first that holds decides; the column rule names it):
--   caught_up             lag now (consumer_lag) is 0: OK, whatever the window says. A quiet
--                         partition with no new messages is OK, not STOP.
--   not_subscribed        the group has members whose subscriptions are all known, and none of
--                         them is to this topic (expirable_offsets.is_abandoned): ABANDONED.
--                         Nobody is meant to read these offsets any more (a subscription
--                         changed); they are not a stopped consumer, and they leave the
--                         group's status alone.
--   too_few_observations  fewer than 2 observations: INCOMPLETE (no span, no direction).
--   stopped               STOP: the consumer has been silent for longer than the window spans.
--                         Silent since its last commit, or since the latest snapshot that still
--                         saw it caught up after that commit (until then there was nothing to read).
--   rewound               REWIND: an offset fell below the one before it in the window and no
--                         later offset in the window got back to it.
--   lag_zero_in_window    lag 0 at some observation: OK.
--   offsets_unchanged     STALL: the same offset throughout, with lag.
--   lag_not_decreasing    WARN: the offset moves but the lag never falls from one observation
--                         (with a known lag) to the next. With fewer than two known lags no
--                         fall is seen, so WARN too: Burrow's checkIfLagNotDecreasing holds when
--                         it has nothing to compare.
--   progressing           OK.
-- group_status is the worst partition's, STOP, STALL and REWIND counting as ERR (Burrow's group
-- status); ABANDONED partitions do not count, and INCOMPLETE only when every other partition is.
{% set window_size = var('consumer_status_window') | int %}
with clock as (
    select unix_millis(timestamp {{ var("as_of") | sql_string }}) as now_ms
),

judged as (
    -- the partitions with a committed offset now and a known log end: lag now is known
    select
        group_id,
        topic,
        partition_id,
        committed_offset,
        log_end_offset,
        lag_messages,
        measured_at
    from {{ ref('consumer_lag') }}
),

abandoned as (
    -- offsets a reading group left behind on a topic none of its members subscribes to any more
    -- (the one definition, expirable_offsets.is_abandoned)
    select
        group_id,
        topic,
        partition_id
    from {{ ref('expirable_offsets') }}
    where is_abandoned
),

observation_window as (
    select
        group_id,
        topic,
        partition_id,
        rank_from_latest as from_last,
        committed_offset,
        observed_at_ms as at_ms,
        observed_from as source
    from {{ ref('consumer_observations') }}
),

snapshots as (
    select
        snapshot_id,
        unix_millis(snapshot_at) as at_ms
    from {{ ref('stg_snapshots__complete_snapshots') }}
),

log_ends as (
    select
        e.topic,
        e.partition_id,
        e.log_end_offset,
        s.at_ms
    from {{ ref('stg_snapshots__log_offsets') }} as e
    inner join snapshots as s on e.snapshot_id = s.snapshot_id
),

observed as (
    -- each observation with its lag then: the snapshots just before (or at) and just after it,
    -- from the observations and the log ends of their partition in one order of time, a log end
    -- before an observation of the same millisecond. Windows over both, where a join would pair
    -- every observation with every snapshot of its partition, a cost that grows with the
    -- snapshots the lake holds; the observation's own columns ride along, so that nothing joins
    -- the result back to the window.
    select
        group_id,
        topic,
        partition_id,
        committed_offset,
        at_ms,
        source,
        {{ window_size }} + 1 - from_last as position_from_end,  -- ascending in time
        -- unknown before the first snapshot (greatest alone would turn that null into 0, a lag
        -- of 0 that would make the window OK)
        case
            when before is null then null
            when after is null then greatest(before.log_end - committed_offset, 0)
            else
                greatest(before.log_end + cast(floor(
                    cast(after.log_end - before.log_end as double)
                    * (at_ms - before.at_ms) / (after.at_ms - before.at_ms)
                ) as bigint) - committed_offset, 0)
        end as lag_then
    from (
        select
            group_id,
            topic,
            partition_id,
            from_last,
            committed_offset,
            at_ms,
            source,
            is_observation,
            case when at_ms is not null then last(log_end, true) over (
                partition by topic, partition_id order by at_ms, is_observation
                rows between unbounded preceding and current row
            ) end as before,
            -- the first log end after it is the last one before it in the reverse order: a frame
            -- up to the current row, as Spark recomputes one that runs to the partition's end for
            -- every row (a cost that grows with the square of the snapshots)
            case when at_ms is not null then last(log_end, true) over (
                partition by topic, partition_id order by at_ms desc, is_observation desc
                rows between unbounded preceding and current row
            ) end as after
        from (
            select
                group_id,
                topic,
                partition_id,
                from_last,
                committed_offset,
                at_ms,
                source,
                true as is_observation,
                null as log_end
            from observation_window
            union all
            select
                null,
                topic,
                partition_id,
                null,
                null,
                at_ms,
                null,
                false,
                named_struct('at_ms', at_ms, 'log_end', log_end_offset)
            from log_ends
        ) as observations_and_log_ends
    ) as in_time_order
    where is_observation
),

stepped as (
    select
        o.*,
        lag(committed_offset) over (partition by group_id, topic, partition_id order by position_from_end)
            as previous_offset,
        -- Burrow compares each known lag with the last known one before it
        last_value(lag_then, true) over (
            partition by group_id, topic, partition_id order by position_from_end
            rows between unbounded preceding and 1 preceding
        ) as previous_known_lag,
        -- from here to the window's end, in the same order as the others, so that one sort
        -- serves them all: Spark recomputes such a frame for every row, at most a window's
        -- worth (consumer_status_window) per partition
        max(committed_offset) over (
            partition by group_id, topic, partition_id order by position_from_end
            rows between current row and unbounded following
        ) as highest_from_here
    from observed as o
),

summary as (
    select
        group_id,
        topic,
        partition_id,
        cast(count(*) as int) as count_observations,
        -- log or snapshot (consumer_observations takes a partition's from one of them)
        if(bool_or(source = 'snapshot'), 'snapshot', 'log') as observations_from,
        min(at_ms) as first_at_ms,
        max(at_ms) as last_at_ms,
        min_by(committed_offset, position_from_end) as first_offset,
        max_by(committed_offset, position_from_end) as last_offset,
        min_by(lag_then, position_from_end) as first_lag,
        max_by(lag_then, position_from_end) as last_lag,
        min(lag_then) as min_lag,
        coalesce(bool_or(lag_then < previous_known_lag), false) as lag_decreased,
        min(committed_offset) = max(committed_offset) as offsets_unchanged,
        -- the first fall of the offset in the window, and whether a later offset got back
        min_by(previous_offset, position_from_end) filter (where committed_offset < previous_offset)
            as rewound_from_offset,
        min_by(committed_offset, position_from_end) filter (where committed_offset < previous_offset)
            as rewound_to_offset,
        min_by(highest_from_here >= previous_offset, position_from_end)
        filter (where committed_offset < previous_offset) as rewind_recovered
    from stepped
    group by group_id, topic, partition_id
),

caught_up_after_last as (
    -- the latest snapshot, at or after the last observation, whose log end the last offset had
    -- reached. The latest snapshot of all whose log end the last offset reached is it, when it
    -- is not before the last observation (else no later one reached it either): the last
    -- offsets and the log ends of their partition in one order of offsets, a log end before an
    -- offset equal to it, and the latest snapshot time up to each offset. One sort of both,
    -- where a join would pair every partition's last offset with every snapshot of it.
    select
        group_id,
        topic,
        partition_id,
        latest_reached_ms as caught_up_ms
    from (
        select
            group_id,
            topic,
            partition_id,
            last_at_ms,
            is_offset,
            max(log_end_at_ms) over (
                partition by topic, partition_id order by at_offset, is_offset
                rows between unbounded preceding and current row
            ) as latest_reached_ms
        from (
            select
                group_id,
                topic,
                partition_id,
                last_at_ms,
                last_offset as at_offset,
                true as is_offset,
                null as log_end_at_ms
            from summary
            union all
            select
                null,
                topic,
                partition_id,
                null,
                log_end_offset,
                false,
                at_ms
            from log_ends
        ) as offsets_and_log_ends
    ) as in_offset_order
    where is_offset and latest_reached_ms >= last_at_ms
),

evaluated as (
    select
        j.*,
        s.count_observations,
        s.observations_from,
        s.first_at_ms,
        s.last_at_ms,
        s.first_offset,
        s.last_offset,
        s.first_lag,
        s.last_lag,
        s.min_lag,
        s.rewound_from_offset,
        s.rewound_to_offset,
        c.caught_up_ms,
        n.now_ms,
        greatest(s.last_at_ms, coalesce(c.caught_up_ms, s.last_at_ms)) as silent_since_ms,
        case
            when j.lag_messages = 0 then 'caught_up'
            when a.group_id is not null then 'not_subscribed'
            when coalesce(s.count_observations, 0) < 2 then 'too_few_observations'
            when
                n.now_ms - greatest(s.last_at_ms, coalesce(c.caught_up_ms, s.last_at_ms))
                > s.last_at_ms - s.first_at_ms then 'stopped'
            when s.rewound_from_offset is not null and not s.rewind_recovered then 'rewound'
            when s.min_lag = 0 then 'lag_zero_in_window'
            when s.offsets_unchanged then 'offsets_unchanged'
            when not s.lag_decreased then 'lag_not_decreasing'
            else 'progressing'
        end as rule
    from judged as j
    cross join clock as n
    left join summary as s on j.group_id = s.group_id and j.topic = s.topic and j.partition_id = s.partition_id
    left join caught_up_after_last as c
        on j.group_id = c.group_id and j.topic = c.topic and j.partition_id = c.partition_id
    left join abandoned as a on j.group_id = a.group_id and j.topic = a.topic and j.partition_id = a.partition_id
),

statused as (
    select
        e.*,
        case rule
            when 'not_subscribed' then 'ABANDONED'
            when 'too_few_observations' then 'INCOMPLETE' when 'stopped' then 'STOP'
            when 'rewound' then 'REWIND' when 'offsets_unchanged' then 'STALL'
            when 'lag_not_decreasing' then 'WARN' else 'OK'
        end as status
    from evaluated as e
),

ranked as (
    select
        s.*,
        -- -1 ABANDONED (does not count), 0 INCOMPLETE, 1 OK, 2 WARN, 3 ERR (STOP, STALL, REWIND)
        max(case status
            when 'ABANDONED' then -1 when 'INCOMPLETE' then 0 when 'OK' then 1
            when 'WARN' then 2 else 3
        end)
            over (partition by group_id) as group_severity,
        cast(count(*) over (partition by group_id) as int) as count_group_partitions,
        cast(count_if(status = 'INCOMPLETE') over (partition by group_id) as int) as count_group_partitions_incomplete
    from statused as s
)

select
    group_id,
    topic,
    partition_id,
    status,
    rule,
    -- a group whose every partition is ABANDONED reads nothing it is behind on: OK
    case group_severity
        when 0 then 'INCOMPLETE' when -1 then 'OK' when 1 then 'OK' when 2 then 'WARN'
        else 'ERR' end
        as group_status,
    count_group_partitions,
    count_group_partitions_incomplete,
    coalesce(count_observations, 0) as count_observations,
    observations_from,
    timestamp_millis(first_at_ms) as window_start_at,
    timestamp_millis(last_at_ms) as window_end_at,
    (last_at_ms - first_at_ms) / 1e3 as window_seconds,
    first_offset,
    last_offset,
    first_lag,
    last_lag,
    min_lag,
    rewound_from_offset,
    rewound_to_offset,
    committed_offset,
    log_end_offset,
    lag_messages as current_lag,
    (now_ms - last_at_ms) / 1e3 as seconds_since_last_commit,
    timestamp_millis(caught_up_ms) as caught_up_at,
    (now_ms - silent_since_ms) / 1e3 as silent_seconds,
    measured_at,
    timestamp_millis(now_ms) as evaluated_at
from ranked
