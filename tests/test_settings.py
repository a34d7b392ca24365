"""Settings come from the environment at run time, and secrets never show."""

from pathlib import Path

import pytest

from offsets_platform.settings import KafkaConnection, Settings

pytestmark = pytest.mark.fast  # make test-fast


def test_defaults_mean_embedded_broker_and_a_local_home():
    settings = Settings.from_env({})
    assert settings.kafka.is_embedded
    assert settings.lake_root == Path(".offsets_platform") / "lake"
    assert settings.spark_master == "local[*]"


def test_environment_overrides_and_client_configs():
    settings = Settings.from_env({
        "OFFSETS_PLATFORM_BOOTSTRAP_SERVERS": "k1:9093,k2:9093",
        "OFFSETS_PLATFORM_SECURITY_PROTOCOL": "SASL_SSL",
        "OFFSETS_PLATFORM_SASL_MECHANISM": "SCRAM-SHA-512",
        "OFFSETS_PLATFORM_SASL_USERNAME": "ops",
        "OFFSETS_PLATFORM_SASL_PASSWORD": "s3cret-value",
        "OFFSETS_PLATFORM_HOME": "/data/op",
    })
    kafka = settings.kafka
    assert not kafka.is_embedded
    assert kafka.confluent_config()["sasl.password"] == "s3cret-value"
    assert kafka.kafka_python_config()["bootstrap_servers"] == ["k1:9093", "k2:9093"]
    assert kafka.kafka_python_config()["sasl_plain_password"] == "s3cret-value"
    assert settings.lake_root == Path("/data/op/lake")


def test_password_is_never_in_printable_forms():
    kafka = KafkaConnection("k:9092", "SASL_SSL", "PLAIN", "ops", "s3cret-value")
    assert "s3cret-value" not in repr(kafka)
    assert "s3cret-value" not in kafka.describe()
    assert "s3cret-value" not in repr(Settings(kafka=kafka))
