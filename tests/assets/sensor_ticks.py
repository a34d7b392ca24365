"""One tick of a sensor that lists partitions, with its requests carried out as Dagster's daemon
carries them out: for tests that have an instance but no daemon."""

from __future__ import annotations

from dagster import (AddDynamicPartitionsRequest, DagsterInstance, DeleteDynamicPartitionsRequest, SensorDefinition,
                     build_sensor_context)


def tick(sensor: SensorDefinition, instance: DagsterInstance, resources: dict):
    """Evaluate `sensor` once on `instance`; add and delete the dynamic partitions it asks for."""
    result = sensor(build_sensor_context(instance=instance, resources=resources))
    for request in getattr(result, "dynamic_partitions_requests", None) or []:
        if isinstance(request, AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        elif isinstance(request, DeleteDynamicPartitionsRequest):
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)
    return result
