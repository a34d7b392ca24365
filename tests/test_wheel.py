"""The product as a platform team installs it: `python -m build` makes a wheel, which goes into a
fresh virtual environment outside the repository; from there, with nothing of the checkout on the
path, `install-jars` fetches the jars and builds Spark's class-data archive, the embedded broker starts, a real group's records are
ingested, a refresh runs, `groups` answers, and Dagster loads the deployment."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from offsets_platform.broker.embedded import free_loopback_port

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.integration
# what points a process at the checkout's environment, its code or its jars
CHECKOUT_ENVIRONMENT = ("PYTHONPATH", "VIRTUAL_ENV", "OFFSETS_PLATFORM_JARS", "OFFSETS_PLATFORM_DELTA_JARS",
                        "OFFSETS_PLATFORM_S3_JARS", "OFFSETS_PLATFORM_SPARK_CLASS_ARCHIVE", "OFFSETS_PLATFORM_HOME",
                        "OFFSETS_PLATFORM_BOOTSTRAP_SERVERS")


def run(command: list, cwd: Path, env: dict, timeout: float = 600) -> str:
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtual environment outside the repository with the built wheel (and its
    dependencies, at the versions constraints.txt pins) installed, and its jars fetched."""
    place = tmp_path_factory.mktemp("installed")
    env = {key: value for key, value in os.environ.items() if key not in CHECKOUT_ENVIRONMENT}
    source = copy_of_the_checkout(place / "source")
    run([sys.executable, "-m", "build", "--wheel", "--outdir", place / "dist", source], cwd=place, env=env)
    wheels = list((place / "dist").glob("offsets_platform-*.whl"))
    assert len(wheels) == 1, wheels
    venv = place / "venv"
    run([sys.executable, "-m", "venv", venv], cwd=place, env=env)
    # --no-compile: byte-compiling every dependency up front is two fifths of the install's time,
    # and Python compiles what it imports anyway
    run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-compile", "-c", ROOT / "constraints.txt",
         wheels[0]], cwd=place, env=env, timeout=1200)
    run([venv / "bin" / "offsets-platform", "install-jars"], cwd=place, env=env)
    return venv, {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}"}, place


def copy_of_the_checkout(destination: Path) -> Path:
    """The checkout's files as git sees them (tracked, and new ones not ignored), where the build
    may write its own folders without touching the checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, destination / name)
    return destination


def test_the_wheel_carries_the_product_and_leaves_the_proving_ground_out(installed):
    venv, env, place = installed
    script = ("import importlib.util, offsets_platform, offsets_platform_dagster\n"
              "from offsets_platform.models.project import default_project\n"
              "print(offsets_platform.__file__)\n"
              "print(len(default_project().models))\n"
              "print([name for name in ('proving_ground', 'assets', 'tests') if importlib.util.find_spec(name)])\n")
    module_file, models, leaked = run([venv / "bin" / "python", "-c", script], cwd=place, env=env).splitlines()
    assert Path(module_file).is_relative_to(venv), module_file
    assert int(models) > 10, "the SQL project is in the wheel"
    assert leaked == "[]"
    jars = venv / "share" / "offsets-platform"
    assert list((jars / "jars").glob("kafka_2.13-*.jar")) and list((jars / "delta-jars").glob("delta-spark_*.jar"))
    assert (jars / "spark-classes.jsa").stat().st_size > 10_000_000, "Spark's class-data archive was built"
    again = run([venv / "bin" / "offsets-platform", "install-jars"], cwd=place, env=env)
    assert again.count("already in") == 4, again


def test_dagster_loads_the_installed_deployment(installed):
    venv, env, place = installed
    output = run([venv / "bin" / "dagster", "definitions", "validate", "-m", "offsets_platform_dagster.definitions"],
                 cwd=place, env={**env, "DAGSTER_HOME": str(place)})
    assert "Validation successful" in output


def test_the_installed_product_reads_a_real_groups_offsets_and_answers(installed):
    from confluent_kafka import Consumer, Producer, TopicPartition

    venv, env, place = installed
    home = place / "home"
    port = free_loopback_port()
    address = f"127.0.0.1:{port}"
    broker = subprocess.Popen([venv / "bin" / "offsets-platform", "broker", "--port", str(port), "--data-dir",
                               place / "broker"], cwd=place, env=env, stdout=subprocess.PIPE, text=True)
    try:
        wait_for_line(broker, f"ready: {address}", timeout=120)
        producer = Producer({"bootstrap.servers": address})
        for number in range(5):
            producer.produce("orders", value=f"order {number}".encode())
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": address, "group.id": "billing", "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition("orders", 0, 3)], asynchronous=False)
        consumer.close()

        cli = venv / "bin" / "offsets-platform"
        assert "rejected 0" in run([cli, "ingest", "--bootstrap-server", address, "--home", home], place, env)
        run([cli, "snapshot", "--bootstrap-server", address, "--home", home], place, env)
        run([cli, "models", "--home", home], place, env)
        groups = run([cli, "groups", "--home", home], place, env)
        assert "billing" in groups, groups
        described = run([cli, "describe", "billing", "--home", home], place, env)
        assert "orders" in described, described
    finally:
        broker.terminate()
        broker.wait(timeout=60)


def wait_for_line(process: subprocess.Popen, expected: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            break
        seen.append(line)
        if expected in line:
            return
    pytest.fail(f"the installed broker did not print {expected!r} within {timeout:.0f} s:\n{''.join(seen)}")
