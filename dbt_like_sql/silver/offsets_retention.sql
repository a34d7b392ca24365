-- The broker's offsets.retention.minutes as the latest complete snapshot recorded it (the broker's
-- own value or the fallback configured for the snapshot), else the models' fallback variable.
with latest as (
    select offsets_retention_minutes, offsets_retention_source
    from {{ source('bronze', 'broker_configs') }}
    order by snapshot_at desc limit 1
)
select coalesce((select offsets_retention_minutes from latest),
                {{ var('offsets_retention_minutes_fallback') }}) as minutes,
       coalesce((select offsets_retention_source from latest), 'models fallback') as source
