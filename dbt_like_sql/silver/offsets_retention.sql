-- The broker's offsets.retention.minutes as the latest complete snapshot recorded it (the broker's
-- own value or the fallback configured for the snapshot), else the models' fallback variable.
with latest as (
    select
        s.offsets_retention_minutes,
        s.offsets_retention_source
    from {{ ref('stg_snapshots__complete_snapshots') }} as s
    where s.is_latest
)

select
    coalesce(
        (select offsets_retention_minutes from latest),
        {{ var('offsets_retention_minutes_fallback') }}
    ) as minutes,
    coalesce((select offsets_retention_source from latest), 'models fallback') as source
